"""Named SSP instances for the command line, and the text drawing of grid-world policies.

An instance is chosen by name (a key of :data:`INSTANCES`) and configured by
``--param value`` pairs naming the builder's keyword arguments (``-`` and
``_`` are interchangeable). Values are parsed after the builder's default:

- ``int``, ``float``: ``--n 5``, ``--p 0.5``;
- ``bool``: ``--sparse`` alone, or ``--sparse true|false|1|0|yes|no``;
- a cell: ``--goal 0,3``;
- a list of cells: ``--walls "1,1;2,2"`` (``--walls none`` for no walls);
- a parameter without default, or with default ``None``: an integer, a real,
  a cell, or ``none``.
"""

import importlib
import inspect

from reference.errors import ParameterError
from sspgm.instance_help import BUILDERS, DEFAULT_INSTANCE, describe_instance_help
from sspgm.instance_help import option_flag as _flag

__all__ = [
    "INSTANCES",
    "DEFAULT_INSTANCE",
    "build_instance",
    "split_instance_args",
    "instance_parameters",
    "describe_instance_help",
    "draw_grid",
    "draw_grid_policy",
]

INSTANCES = {
    name: getattr(importlib.import_module(module), function)
    for name, (module, function) in BUILDERS.items()
}
"""Instance name -> builder (:data:`sspgm.instance_help.BUILDERS`): those of
:mod:`reference.envs`, then the gymnasium tables of :mod:`sspgm.gym_adapter`
(built only when asked for, and only with gymnasium installed)."""

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_GRID_ARROWS = "^>v<"


def _builder(name):
    if name not in INSTANCES:
        raise ParameterError(
            f"unknown instance {name!r}; available: {', '.join(INSTANCES)}."
        )
    return INSTANCES[name]


def instance_parameters(name):
    """Keyword parameters of instance ``name`` as a dict parameter -> default.

    Parameters
    ----------
    name : str
        A key of :data:`INSTANCES`.

    Returns
    -------
    dict
        Parameter name -> default, in signature order; a required parameter
        maps to ``inspect.Parameter.empty``.

    Raises
    ------
    ParameterError
        On an unknown instance (the message lists the available ones).

    See Also
    --------
    build_instance : builds an instance from its parameters.

    Examples
    --------
    >>> instance_parameters("tradeoff")
    {'cost': 0.1, 'q': 0.5}
    """
    signature = inspect.signature(_builder(name))
    return {p.name: p.default for p in signature.parameters.values()}


def _parse_bool(text):
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError("expected true or false")


def _parse_cell(text):
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError("expected a cell `row,col`")
    return tuple(int(x) for x in parts)


def _parse_cells(text):
    if text.strip().lower() in ("", "none"):
        return ()
    return tuple(_parse_cell(part) for part in text.split(";"))


def _parse_any(text):
    if text.lower() == "none":
        return None
    for parse in (int, float, _parse_cell):
        try:
            return parse(text)
        except ValueError:
            continue
    raise ValueError("expected an integer, a real, a cell `row,col` or `none`")


def _parser_for(default):
    """The text parser matching the type of a builder default."""
    if isinstance(default, bool):
        return _parse_bool
    if isinstance(default, int):
        return int
    if isinstance(default, float):
        return float
    if isinstance(default, tuple):
        return _parse_cells if default and isinstance(default[0], tuple) else _parse_cell
    return _parse_any


def _accepted(params):
    return ", ".join(_flag(p) for p in params)


def _pairs(name, tokens, params):
    """Split ``--param value`` tokens into (parameter, text) pairs, booleans allowing no value."""
    pairs, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--"):
            raise ParameterError(
                f"unexpected argument {token!r} for instance {name!r}; expected "
                f"`--param value` pairs ({_accepted(params)})."
            )
        key, has_value, value = token[2:].partition("=")
        key = key.replace("-", "_")
        if key not in params:
            raise ParameterError(
                f"unknown parameter {_flag(key)} for instance {name!r}; accepted: "
                f"{_accepted(params) or 'none'}."
            )
        if not has_value:
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                i += 1
                value = tokens[i]
            elif isinstance(params[key], bool):
                value = "true"
            else:
                raise ParameterError(f"parameter {_flag(key)} of {name!r} needs a value.")
        pairs.append((key, value))
        i += 1
    return pairs


def build_instance(name, extra_args=()):
    """Build instance ``name`` from ``--param value`` command-line tokens.

    Parameters
    ----------
    name : str
        A key of :data:`INSTANCES`.
    extra_args : sequence of str
        Tokens such as ``["--rows", "4", "--goal", "0,3"]``.

    Returns
    -------
    ssp : SSP
        The instance.
    kwargs : dict
        The keyword arguments passed to the builder.

    Raises
    ------
    ParameterError
        On an unknown instance or parameter (the message lists the accepted
        ones), a value that does not parse, a repeated parameter, or a
        required parameter left out. Invalid values raise the builder's own
        :class:`ValueError` subclass.

    See Also
    --------
    split_instance_args : separates the name from its options.
    instance_parameters : the parameters and defaults of an instance.

    Examples
    --------
    A 2 x 4 grid world without walls: 8 cells less the goal.

    >>> ssp, kwargs = build_instance("gridworld", ["--rows", "2", "--walls", "none"])
    >>> ssp.n_states, kwargs
    (7, {'rows': 2, 'walls': ()})
    """
    builder = _builder(name)
    params = instance_parameters(name)
    kwargs = {}
    for key, text in _pairs(name, list(extra_args), params):
        if key in kwargs:
            raise ParameterError(f"parameter {_flag(key)} of {name!r} given twice.")
        try:
            kwargs[key] = _parser_for(params[key])(text)
        except ValueError as exc:
            raise ParameterError(
                f"parameter {_flag(key)} of {name!r}: cannot parse {text!r} ({exc})."
            ) from None
    missing = [p for p, d in params.items() if d is inspect.Parameter.empty and p not in kwargs]
    if missing:
        raise ParameterError(
            f"instance {name!r} needs {', '.join(_flag(p) for p in missing)}."
        )
    return builder(**kwargs), kwargs


def split_instance_args(tokens, default=DEFAULT_INSTANCE):
    """Split ``[NAME] [--param value ...]`` into the instance name and its parameter tokens.

    The name is the first token when it does not start with ``-``; otherwise
    ``default``. Commands take the instance from their leftover arguments
    this way because an optional positional declared to argparse would
    swallow the value of a leading ``--param value`` pair.

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
        The ``--param value`` tokens.

    See Also
    --------
    build_instance : builds the instance from the two parts.

    Examples
    --------
    >>> split_instance_args(["chain", "--n", "5"])
    ('chain', ['--n', '5'])
    >>> split_instance_args(["--n", "5"])
    ('gridworld', ['--n', '5'])
    """
    tokens = list(tokens)
    if tokens and not tokens[0].startswith("-"):
        return tokens[0], tokens[1:]
    return default, tokens


def draw_grid(ssp, labels):
    """Lay per-state labels out on the grid of a grid-world instance.

    Parameters
    ----------
    ssp : SSP
        An instance built by :func:`reference.envs.gridworld` (its ``meta``
        holds the layout).
    labels : sequence of str, length S
        Text of each state's cell.

    Returns
    -------
    str
        ``rows`` lines of ``cols`` right-aligned columns; walls are ``#`` and
        the goal ``G``.

    See Also
    --------
    draw_grid_policy : draws a policy as arrows.

    Examples
    --------
    The default grid world's state numbers:

    >>> from reference import gridworld
    >>> ssp = gridworld()
    >>> print(draw_grid(ssp, [str(s) for s in range(ssp.n_states)]))
    0 1 2 G
    3 # 4 5
    6 7 8 9
    """
    meta = ssp.meta
    if "state_to_cell" not in meta:
        raise ParameterError(f"instance {ssp.name!r} has no grid layout to draw.")
    if len(labels) != ssp.n_states:
        raise ParameterError(
            f"`labels` must have one entry per state ({ssp.n_states}); got {len(labels)}."
        )
    grid = [["#"] * meta["cols"] for _ in range(meta["rows"])]
    r, c = meta["goal"]
    grid[r][c] = "G"
    for (r, c), label in zip(meta["state_to_cell"], labels):
        grid[r][c] = str(label)
    width = max(len(text) for row in grid for text in row)
    return "\n".join(" ".join(text.rjust(width) for text in row) for row in grid)


def draw_grid_policy(ssp, policy):
    """A grid-world policy as arrows (``^ > v <``), ``#`` for walls and ``G`` for the goal.

    Parameters
    ----------
    ssp : SSP
        A grid-world instance (see :func:`draw_grid`).
    policy : sequence of int, length S
        Action of each state, in :data:`reference.envs.GRID_ACTIONS` order.

    Returns
    -------
    str
        The drawing of :func:`draw_grid`.

    See Also
    --------
    draw_grid : the layout.

    Examples
    --------
    An optimal policy of the default grid world: around the wall, then up to the goal.

    >>> from reference import gridworld, optimal_values
    >>> ssp = gridworld()
    >>> print(draw_grid_policy(ssp, optimal_values(ssp).policy))
    > > > G
    ^ # ^ ^
    > > ^ ^
    """
    return draw_grid(ssp, [_GRID_ARROWS[a] for a in policy])
