"""Named SSP instances for the command line, and the text drawing of grid-world policies.

An instance is chosen by name (a key of :data:`INSTANCES`) and configured in
the spec language of :mod:`sspgm.instance_spec` (``NAME:key=value,...`` or
``--key value`` pairs naming the builder's keyword arguments; ``-`` and ``_``
are interchangeable; the parameter ``seed`` is ``--instance-seed``). Values
are parsed after the builder's default:

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
from sspgm.instance_spec import INSTANCE_SEED, RUN_SEED, SpecKey, split_instance_args
from sspgm.suggest import closest

__all__ = [
    "INSTANCES",
    "DEFAULT_INSTANCE",
    "build_instance",
    "split_instance_args",
    "instance_parameters",
    "instance_label",
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


_FORMS = {
    int: "an integer",
    float: "a real number",
    _parse_bool: "true or false",
    _parse_cell: "a cell `row,col`",
    _parse_cells: "cells `row,col;row,col` or `none`",
    _parse_any: "an integer, a real, a cell `row,col` or `none`",
}
"""The values each text parser of a parameter accepts, as an error names them."""


def _parser_for(default, documented=""):
    """The text parser matching the type of a builder default; for a required parameter
    (no default), the type its docstring gives (``documented``: ``int ...``, ``float ...``)."""
    if default is inspect.Parameter.empty:
        kind = documented.split(" ")[0]
        return {"int": int, "float": float}.get(kind, _parse_any)
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


def _unknown(token, name, params, options):
    """The error for an option that is neither the command's nor a parameter of the instance."""
    flags = {_flag(p): f"a parameter of instance {name!r}" for p in params}
    flags.update({option: "an option of the command" for option in options})
    close = closest(token, flags)
    if close in options:
        return ParameterError(f"unknown option {token}; did you mean {close} "
                              f"({flags[close]})?")
    hint = f"; did you mean {close} ({flags[close]})?" if close else "."
    return ParameterError(
        f"unknown option {token}{hint} Parameters of instance {name!r}: "
        f"{_accepted(params) or 'none'}."
    )


def _unknown_key(key, spec, name, params):
    """The error for a ``key=value`` item of ``spec`` whose key the instance lacks."""
    close = closest(key.replace("-", "_"), params)
    if key == "instance_seed" and "seed" in params:
        close = "seed"
    hint = f"; did you mean {close}?" if close else "."
    return ParameterError(
        f"unknown key {key!r} in instance spec {spec!r}{hint} Keys of instance {name!r}: "
        f"{', '.join(params) or 'none'}."
    )


def _key(token, name, params, options):
    """The builder parameter that the option ``token`` (``--key`` or ``--key=value``) names."""
    flag = token.partition("=")[0]
    key = flag[2:].replace("-", "_")
    if flag == INSTANCE_SEED or (key == "instance_seed" and not isinstance(token, SpecKey)):
        if "seed" not in params:
            random = [n for n in INSTANCES if "seed" in instance_parameters(n)]
            raise ParameterError(
                f"instance {name!r} takes no seed ({INSTANCE_SEED} chooses a random "
                f"instance: {', '.join(random)})."
            )
        return "seed"
    if key == "seed":
        raise ParameterError(
            f"{RUN_SEED} is the seed of a run (`sspgm solve`), not of the instance: write the "
            f"seed of instance {name!r} as {INSTANCE_SEED} N (or {name}:seed=N)."
        )
    if key not in params:
        if isinstance(token, SpecKey):
            raise _unknown_key(flag[2:], token.spec, name, params)
        raise _unknown(flag, name, params, options)
    return key


def _pairs(name, tokens, params, options=()):
    """Split ``--param value`` tokens into (parameter, text) pairs, booleans allowing no value."""
    pairs, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--"):
            raise ParameterError(
                f"unexpected argument {token!r} for instance {name!r}; expected "
                f"`--param value` pairs ({_accepted(params)})."
            )
        key = _key(token, name, params, options)
        _, has_value, value = token.partition("=")
        if not has_value:
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                i += 1
                value = tokens[i]
            elif isinstance(params[key], bool):
                value = "true"
            else:
                raise ParameterError(f"parameter {_flag(key)} of {name!r} needs a value.")
        pairs.append((key, value, token))
        i += 1
    return pairs


def _documented_type(name, key):
    """The type the builder's docstring gives ``key`` (``n_states : int >= 1`` -> ``int >= 1``)."""
    import re

    found = re.search(rf"^{key} : (.*)$", inspect.getdoc(_builder(name)) or "", re.M)
    return found.group(1) if found else ""


def _unparsed(name, key, text, token, parser):
    """The error for the value ``text`` of parameter ``key`` that ``parser`` refused."""
    form = _FORMS.get(parser, "a value of its type")
    if isinstance(token, SpecKey):
        written = "seed" if token == INSTANCE_SEED else token[2:]
        return ParameterError(f"key {written}={text} in {token.spec!r}: expected {form}.")
    return ParameterError(f"parameter {_flag(key)} of {name!r}: cannot parse {text!r} "
                          f"(expected {form}).")


def build_instance(name, extra_args=(), options=()):
    """Build instance ``name`` from ``--param value`` command-line tokens.

    Parameters
    ----------
    name : str
        A key of :data:`INSTANCES`.
    extra_args : sequence of str
        Tokens such as ``["--rows", "4", "--goal", "0,3"]``
        (:func:`sspgm.instance_spec.split_instance_args` makes them from a spec).
    options : sequence of str, default ()
        The options of the command reading the tokens, offered with the
        instance's parameters as the close match of an unknown option.

    Returns
    -------
    ssp : SSP
        The instance.
    kwargs : dict
        The keyword arguments passed to the builder.

    Raises
    ------
    ParameterError
        On an unknown instance or option (the message suggests the closest
        option or parameter and lists the accepted parameters), ``--seed``
        (the run's seed, never the instance's), ``--instance-seed`` for an
        instance without a seed, a value that does not parse, a repeated
        parameter, or a required parameter left out. Invalid values raise the builder's own
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
    for key, text, token in _pairs(name, list(extra_args), params, options):
        if key in kwargs:
            raise ParameterError(f"parameter {_flag(key)} of {name!r} given twice.")
        parser = _parser_for(params[key], _documented_type(name, key))
        try:
            kwargs[key] = parser(text)
        except ValueError:
            raise _unparsed(name, key, text, token, parser) from None
    missing = [p for p, d in params.items() if d is inspect.Parameter.empty and p not in kwargs]
    if missing:
        raise ParameterError(
            f"instance {name!r} needs {', '.join(_flag(p) for p in missing)}."
        )
    return builder(**kwargs), kwargs


def instance_label(name, kwargs):
    """``name(key=value, ...)`` of the parameters given, and the seed of a random instance.

    The seed is shown even when left at its default, so that the instance a
    run used can be told from its output.

    Parameters
    ----------
    name : str
        A key of :data:`INSTANCES`.
    kwargs : dict
        The parameters given (as :func:`build_instance` returns them).

    Returns
    -------
    str

    Examples
    --------
    >>> instance_label("garnet", {"n_states": 6})
    'garnet(n_states=6, seed=0)'
    >>> instance_label("chain", {})
    'chain()'
    """
    params = instance_parameters(name)
    shown = dict(kwargs)
    if "seed" in params and "seed" not in shown:
        shown["seed"] = params["seed"]
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


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
