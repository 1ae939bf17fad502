"""Docstring text as plain text, for ``--help``: the command line reuses docstrings.

reST inline markup reads badly in a terminal (````n```` for ``n``,
``:func:`~reference.solve``` for ``solve``), so every piece of help text taken
from a docstring goes through :func:`plain`. This module imports nothing
heavy, like the rest of the help path.
"""

import re

__all__ = ["plain"]

_ROLE = re.compile(r":[a-z:]+:`(~?)([^`<]*?)\s*(?:<([^>]*)>)?`")
_LITERAL = re.compile(r"``(.+?)``")
_INTERPRETED = re.compile(r"(?<![\w`])`([^`]+)`(?!`)")


def _role_text(match):
    """The text a role shows: its title, or its target (the last part after ``~``)."""
    tilde, title, target = match.groups()
    if target is not None:
        return title or target
    return title.rsplit(".", 1)[-1] if tilde else title


def plain(text):
    r"""``text`` without reST inline markup: roles, double and single backquotes.

    Parameters
    ----------
    text : str
        A piece of a docstring.

    Returns
    -------
    str
        The same text as a terminal should show it: ````x```` becomes ``x``,
        ``:func:`~pkg.f``` becomes ``f``, ``:mod:`pkg.m``` becomes ``pkg.m``,
        ``:math:`\\nu``` becomes ``\\nu`` and ```title <target>``` becomes
        ``title``. Line breaks and spacing are kept.

    See Also
    --------
    sspgm.cli.build_parser : the parser whose help texts this cleans.

    Examples
    --------
    >>> plain("A chain of ``n`` states; see :func:`~reference.solve` and :mod:`bounds`.")
    'A chain of n states; see solve and bounds.'
    >>> plain("``--cmin`` selects the ``c_min > 0`` family")
    '--cmin selects the c_min > 0 family'
    """
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(r"\1", text)
    return _INTERPRETED.sub(r"\1", text)
