"""The instance names and the ``--help`` text listing them, without importing the builders.

``sspgm info --help`` and ``sspgm solve --help`` list every instance with its
parameters and defaults. The builders live in :mod:`reference.envs` and
:mod:`sspgm.gym_adapter`, whose import loads numpy and scipy (about a second of
CPU time); this module reads their signatures and docstrings from the source
files instead (:mod:`ast`), so that the help costs no numerical import.
:mod:`sspgm.instances` builds its registry from :data:`BUILDERS`, and the tests
check that the text read here matches the imported builders.
"""

import ast
import importlib.util
import inspect
import os

from sspgm.plain_text import plain

__all__ = [
    "BUILDERS", "DEFAULT_INSTANCE", "INSTANCE_SEED", "builder_signature",
    "describe_instance_help", "option_flag", "time_uniform_box_kinds",
]

BUILDERS = {
    "gridworld": ("reference.envs.grid", "gridworld"),
    "exit_grid": ("reference.envs.exits", "exit_grid"),
    "chain": ("reference.envs.small", "chain"),
    "tradeoff": ("reference.envs.small", "tradeoff"),
    "zero_cost_loop": ("reference.envs.small", "zero_cost_loop"),
    "theta_example": ("reference.envs.small", "theta_example"),
    "garnet": ("reference.envs.randomized", "garnet"),
    "trap": ("reference.envs.small", "trap"),
    "random_discounted": ("reference.envs.randomized", "random_discounted"),
    "cliffwalking": ("sspgm.gym_adapter", "cliff_walking"),
    "frozenlake": ("sspgm.gym_adapter", "frozen_lake"),
    "taxi": ("sspgm.gym_adapter", "taxi"),
}
"""Instance name -> ``(module, function)`` of its builder, in the order the help lists them."""

DEFAULT_INSTANCE = "gridworld"

INSTANCE_SEED = "--instance-seed"
"""The command-line option of a random instance's ``seed`` parameter."""


def _source_path(module):
    """The file of ``module`` (dotted name), found without importing any package it lies in."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    return os.path.join(spec.submodule_search_locations[0], *rest) + ".py"


def time_uniform_box_kinds():
    """The names of the time-uniform box kinds of :data:`reference.box_kinds.KINDS`, from source.

    Read from the records (``BoxKind(name=..., time_uniform=True, ...)``) of
    ``reference/box_kinds.py`` without importing it, so that the command
    line's help loads no numerical library.

    Returns
    -------
    tuple of str
        In the order of the records.

    Examples
    --------
    >>> "kl" in time_uniform_box_kinds() and "paper" not in time_uniform_box_kinds()
    True
    """
    with open(_source_path("reference.box_kinds"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    names = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "BoxKind"):
            fields = {k.arg: k.value for k in node.keywords}
            if ast.literal_eval(fields["time_uniform"]):
                names.append(ast.literal_eval(fields["name"]))
    return tuple(names)


def builder_signature(name):
    """The summary line and the keyword parameters of instance ``name``'s builder, from source.

    Parameters
    ----------
    name : str
        A key of :data:`BUILDERS`.

    Returns
    -------
    summary : str
        The first line of the builder's docstring.
    parameters : dict
        Parameter name -> default, in signature order; a required parameter
        maps to ``inspect.Parameter.empty`` (as :func:`sspgm.instances.instance_parameters`).

    Examples
    --------
    >>> summary, parameters = builder_signature("tradeoff")
    >>> summary
    'One state with a fast expensive action and a slow cheap one.'
    >>> parameters
    {'cost': 0.1, 'q': 0.5}
    """
    module, function = BUILDERS[name]
    with open(_source_path(module), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    args = node.args.args
    defaults = [inspect.Parameter.empty] * (len(args) - len(node.args.defaults))
    defaults += [ast.literal_eval(d) for d in node.args.defaults]
    parameters = {arg.arg: default for arg, default in zip(args, defaults)}
    for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
        parameters[arg.arg] = (inspect.Parameter.empty if default is None
                               else ast.literal_eval(default))
    return ast.get_docstring(node).splitlines()[0], parameters


def option_flag(name):
    """The command-line option of the builder parameter ``name``: ``--`` and ``-`` for ``_``.

    The parameter ``seed`` is :data:`INSTANCE_SEED`, since ``--seed`` is the seed of a
    run (:mod:`sspgm.instance_spec`).

    See Also
    --------
    sspgm.instances.build_instance : parses the options back.

    Examples
    --------
    >>> option_flag("n_states"), option_flag("seed")
    ('--n-states', '--instance-seed')
    """
    return INSTANCE_SEED if name == "seed" else "--" + name.replace("_", "-")


def _format_default(default):
    """A builder default written the way the command line accepts it."""
    if default is inspect.Parameter.empty:
        return "REQUIRED"
    if default is None:
        return "none"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, tuple):
        if default and isinstance(default[0], tuple):
            return ";".join(_format_default(cell) for cell in default)
        return ",".join(str(x) for x in default)
    return str(default)


def describe_instance_help():
    """Text listing every instance with its parameters and defaults, for ``--help``.

    Returns
    -------
    str
        Two lines per instance: its name and summary, then ``--flag default``
        pairs (``REQUIRED`` for parameters without default).

    Examples
    --------
    >>> print(describe_instance_help().splitlines()[1])
      gridworld: A grid world with slippery moves, a goal cell and walls.
    """
    lines = [f"instances (default: {DEFAULT_INSTANCE}) and their parameters:"]
    for name in BUILDERS:
        summary, parameters = builder_signature(name)
        parts = [f"{option_flag(key)} {_format_default(default)}"
                 for key, default in parameters.items()]
        lines.append(f"  {name}: {plain(summary)}")
        lines.append(f"      {' '.join(parts) if parts else '(no parameters)'}")
    return "\n".join(lines)
