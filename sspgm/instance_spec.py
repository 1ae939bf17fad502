"""The instance spec language of ``sspgm solve``, ``sspgm info`` and ``sspgm validate``.

An instance is named, and configured, in one language everywhere:

- ``NAME`` alone: the builder's defaults (``gridworld``);
- ``NAME:key=value,key=value`` (``garnet:n_states=30,seed=3``): the form of
  ``sspgm validate --instances``, accepted by ``solve`` and ``info`` too;
- on the command line of ``solve`` and ``info``, ``--key value`` pairs may
  follow the name (``garnet --n-states 30 --instance-seed 3``); ``-`` and
  ``_`` are interchangeable in keys. A key given twice is an error.

**Seeds.** The builder parameter ``seed`` of a random instance (``garnet``,
``random_discounted``) chooses the instance; it is written ``seed=N`` in a spec
and ``--instance-seed N`` on the command line. ``--seed`` is always the seed of
the run (the samples of ``sspgm solve``), never the instance's, and it is
refused where the instance's parameters are read, with a message saying so.

This module parses text only (no numerical import), so that the command line's
help stays fast; :func:`sspgm.instances.build_instance` types the values after
the builder's defaults and builds the instance.
"""

from sspgm.instance_help import DEFAULT_INSTANCE, INSTANCE_SEED

__all__ = ["INSTANCE_SEED", "RUN_SEED", "parse_spec", "split_instance_args"]

RUN_SEED = "--seed"
"""The command-line option of a run's seed (``sspgm solve``), which never reaches the instance."""


class SpecKey(str):
    """The ``--key`` token of a spec's ``key=value`` item, which remembers the spec it came from.

    It is the string ``--key``, so the tokens of a spec and of a command line
    are read alike; :func:`sspgm.instances.build_instance` uses :attr:`spec` to
    name an unknown key as the spec's, not as an option.

    Examples
    --------
    >>> token = SpecKey("--n_action", "garnet:n_action=3")
    >>> token == "--n_action", token.spec
    (True, 'garnet:n_action=3')
    """

    def __new__(cls, token, spec):
        self = super().__new__(cls, token)
        self.spec = spec
        return self

    def __getnewargs__(self):
        return str(self), self.spec


def _error(text):
    from reference.errors import ParameterError

    return ParameterError(text)


def parse_spec(spec):
    """Split an instance spec ``"NAME:key=value,..."`` into the name and ``--key value`` tokens.

    Parameters
    ----------
    spec : str
        ``NAME`` or ``NAME:key=value,key=value`` (spaces around items ignored).

    Returns
    -------
    name : str
    tokens : list of str
        The command-line tokens naming the same instance (``seed=N`` becomes
        ``--instance-seed N``), for :func:`sspgm.instances.build_instance`;
        each key is a :class:`SpecKey`.

    Raises
    ------
    ParameterError
        On an empty spec or an item that is not ``key=value``.

    Examples
    --------
    >>> parse_spec("garnet:n_states=6,n_actions=2")
    ('garnet', ['--n_states', '6', '--n_actions', '2'])
    >>> parse_spec("garnet:seed=3")
    ('garnet', ['--instance-seed', '3'])
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _error(f"`instance` must be a non-empty string; got {spec!r}.")
    name, _, rest = spec.partition(":")
    tokens = []
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise _error(
                f"instance parameters must read key=value; got {item!r} in {spec!r}."
            )
        tokens += [SpecKey(INSTANCE_SEED if key == "seed" else "--" + key, spec), value.strip()]
    return name.strip(), tokens


def split_instance_args(tokens, default=DEFAULT_INSTANCE):
    """Split ``[SPEC] [--key value ...]`` into the instance name and its parameter tokens.

    The spec is the first token when it does not start with ``-``
    (:func:`parse_spec`; its ``key=value`` items come first among the
    tokens); otherwise the instance is ``default``. Commands take the instance
    from their leftover arguments this way because an optional positional
    declared to argparse would swallow the value of a leading ``--key value``
    pair.

    Parameters
    ----------
    tokens : sequence of str
        The leftover command-line arguments.
    default : str, default DEFAULT_INSTANCE
        Instance used when no name is given.

    Returns
    -------
    name : str
    rest : list of str
        The ``--key value`` tokens.

    Examples
    --------
    >>> split_instance_args(["garnet:n_states=8", "--instance-seed", "2"])
    ('garnet', ['--n_states', '8', '--instance-seed', '2'])
    >>> split_instance_args(["--rows", "4"])
    ('gridworld', ['--rows', '4'])
    """
    tokens = list(tokens)
    if tokens and not tokens[0].startswith("-"):
        name, spec_tokens = parse_spec(tokens[0])
        return name, spec_tokens + tokens[1:]
    return default, tokens
