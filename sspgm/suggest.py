"""The "did you mean" of every error naming something unknown (an option, a parameter, a key).

One rule everywhere: the closest name by :class:`difflib.SequenceMatcher`'s
ratio, offered when that ratio is at least :data:`CUTOFF`. This module
imports nothing heavy, like the rest of the help path.
"""

import difflib

__all__ = ["CUTOFF", "closest", "first_misspelt"]

CUTOFF = 0.6
"""The least similarity (:meth:`difflib.SequenceMatcher.ratio`) of a name offered as a guess."""


def closest(word, names):
    """The name of ``names`` closest to ``word``, or None when none is close enough.

    Parameters
    ----------
    word : str
        The unknown name, as given.
    names : iterable of str
        The known names.

    Returns
    -------
    str or None

    Examples
    --------
    >>> closest("--esp", ["--eps", "--delta"])
    '--eps'
    >>> closest("--zzzzzz", ["--eps", "--delta"]) is None
    True
    """
    close = difflib.get_close_matches(word, list(names), n=1, cutoff=CUTOFF)
    return close[0] if close else None


def first_misspelt(tokens, options):
    """The first option-like token that ``options`` lacks and that is close to one of them.

    Parameters
    ----------
    tokens : iterable of str
        Command-line tokens; those starting with ``-`` (not numbers) are
        options, and ``--flag=value`` is read as ``--flag``. A long name given
        with one dash (``-json``) is matched as if it had two.
    options : sequence of str
        The known options.

    Returns
    -------
    (str, str) or None
        The token's flag and its closest option.

    Examples
    --------
    >>> first_misspelt(["--B", "1", "--esp=0.1"], ["--B", "--eps"])
    ('--esp', '--eps')
    >>> first_misspelt(["-json", "-1"], ["--json", "--eps"])
    ('-json', '--json')
    """
    for token in tokens:
        flag = token.partition("=")[0]
        if not flag.startswith("-") or flag in options or _is_number(flag):
            continue
        long = flag if flag.startswith("--") or len(flag) <= 2 else "-" + flag
        match = long if long in options else closest(long, options)
        if match is not None:
            return flag, match
    return None


def _is_number(token):
    """Whether ``token`` reads as a number (a negative value, not an option)."""
    try:
        float(token)
    except ValueError:
        return False
    return True
