"""What a sweep runs: run specs, grids of them, the standard sweeps, and their validation.

:func:`check_runs` checks a whole list of runs before the first one starts,
so that a typo in the tenth configuration is reported at once rather than
after an hour of sweeping.
"""

import dataclasses
import itertools
import math
import numbers

__all__ = [
    "RunSpec",
    "Sweep",
    "STANDARD_SWEEPS",
    "parse_instance",
    "as_runs",
    "check_runs",
]


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One run of a sweep.

    Attributes
    ----------
    instance : str
        Instance spec, ``"name"`` or ``"name:key=value,key=value"`` (see
        :func:`parse_instance`).
    eps : float
        Accuracy.
    delta : float
        Confidence level.
    seed : int
        Seed of the generative model's samples.
    backend : str
        ``"reference"`` or ``"fast"``.
    theta : float or None
        ``None`` runs Alg. 1 (needs ``c_min > 0``), a number ``>= 1`` Alg. 3.
    alpha : float
        Constant of the allocation function (eq. 6).
    """

    instance: str
    eps: float
    delta: float
    seed: int
    backend: str = "reference"
    theta: float | None = None
    alpha: float = 1.0


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A grid of runs: every combination of the listed values.

    Attributes
    ----------
    instances : tuple of str
        Instance specs.
    eps : tuple of float
        Accuracies.
    seeds : tuple of int
        Seeds.
    deltas : tuple of float
        Confidence levels.
    backends : tuple of str
        Backends.
    thetas : tuple of (float or None)
        ``None`` for Alg. 1, numbers for Alg. 3.
    alpha : float
        Constant of the allocation function.
    """

    instances: tuple
    eps: tuple
    seeds: tuple
    deltas: tuple = (0.1,)
    backends: tuple = ("reference",)
    thetas: tuple = (None,)
    alpha: float = 1.0

    def runs(self):
        """The runs of the grid, instance-major, then backend, theta, delta, eps, seed."""
        return [
            RunSpec(instance, eps, delta, seed, backend, theta, self.alpha)
            for instance, backend, theta, delta, eps, seed in itertools.product(
                self.instances, self.backends, self.thetas, self.deltas, self.eps, self.seeds
            )
        ]


STANDARD_SWEEPS = (
    Sweep(
        instances=(
            "chain:n=4",
            "tradeoff",
            "gridworld",
            "garnet:n_states=10,n_actions=2,branching=3",
            "cliffwalking",
            "frozenlake",
            "taxi",
        ),
        eps=(0.2, 0.1, 0.05, 0.025),
        seeds=tuple(range(20)),
        deltas=(0.05, 0.1, 0.2),
    ),
    Sweep(
        instances=("theta_example", "tradeoff", "chain:n=3"),
        eps=(0.2, 0.1, 0.05, 0.025),
        seeds=tuple(range(20)),
        deltas=(0.05, 0.1, 0.2),
        thetas=(3.0,),
    ),
)
"""The standard sweeps of ``sspgm validate``. Alg. 1 on a 4-state chain,
the one-state trade-off, the 3x4 grid world, a 10-state garnet, and
gymnasium's CliffWalking, FrozenLake (4x4, slippery) and Taxi; Alg. 3
(``theta = 3``) on the ``theta`` example of docs/semantics.md ("Guarantees")
(the free action takes 20 steps, outside ``Pi_3``), the trade-off (its slow
action, 2 steps, inside) and a 3-state chain. Each configuration (instance,
algorithm, confidence level) has 4 accuracies x 20 seeds = 80 runs, so that
80 runs without failure put the Clopper-Pearson upper end (0.045) below every
``delta`` of the grid, the smallest 0.05 included (72 runs are needed there,
:func:`~sspgm.validation.statistics.runs_to_test`). The backend is set by the
caller (``sspgm validate`` uses ``fast`` when it is built)."""


def _error(text):
    """A :class:`~reference.errors.ParameterError` saying ``text``.

    The class is imported on use, so that importing this module imports no
    numpy: the command line shows the standard sweeps in its help.
    """
    from reference.errors import ParameterError

    return ParameterError(text)


def parse_instance(spec):
    """Split an instance spec ``"name:key=value,..."`` into the name and its parameter tokens.

    The spec language of every command, :func:`sspgm.instance_spec.parse_spec`:
    the tokens are the ``--key value`` pairs :func:`sspgm.instances.build_instance`
    parses (values typed after the builder's defaults; ``seed=N`` is the
    instance's seed), so a spec names the same instance as ``sspgm solve SPEC``.

    Parameters
    ----------
    spec : str

    Returns
    -------
    name : str
    tokens : list of str

    Examples
    --------
    >>> parse_instance("garnet:n_states=6,n_actions=2")
    ('garnet', ['--n_states', '6', '--n_actions', '2'])
    """
    from sspgm.instance_spec import parse_spec

    return parse_spec(spec)


def as_runs(runs):
    """Flatten a :class:`Sweep`, or a sequence of sweeps and run specs, into run specs.

    Parameters
    ----------
    runs : Sweep, or sequence of Sweep and RunSpec

    Returns
    -------
    list of RunSpec

    See Also
    --------
    check_runs : checks the runs before a sweep starts.

    Examples
    --------
    Two accuracies times three seeds:

    >>> runs = as_runs(Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1, 2)))
    >>> len(runs), runs[0]
    (6, RunSpec(instance='tradeoff', eps=0.2, delta=0.1, seed=0, backend='reference', theta=None, alpha=1.0))
    """
    if isinstance(runs, Sweep):
        return runs.runs()
    out = []
    for item in runs:
        if isinstance(item, Sweep):
            out.extend(item.runs())
        elif isinstance(item, RunSpec):
            out.append(item)
        else:
            raise _error(
                f"`runs` must hold Sweep or RunSpec objects; got {type(item).__name__}."
            )
    return out


def _real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _spec_problems(spec, backends):
    """What is wrong with one run spec's own values (not its instance), as sentences."""
    problems = []
    if not (_real(spec.eps) and 0 < spec.eps <= 1):
        problems.append(f"`eps` must be a real in (0, 1]; got {spec.eps!r}")
    if not (_real(spec.delta) and 0 < spec.delta < 1):
        problems.append(f"`delta` must be a real in (0, 1); got {spec.delta!r}")
    if not (isinstance(spec.seed, numbers.Integral) and not isinstance(spec.seed, bool)
            and spec.seed >= 0):
        problems.append(f"`seed` must be an integer >= 0; got {spec.seed!r}")
    if spec.backend not in backends:
        problems.append(f"`backend` must be one of {backends}; got {spec.backend!r}")
    if spec.theta is not None and not (_real(spec.theta) and spec.theta >= 1):
        problems.append(f"`theta` must be None or a real >= 1; got {spec.theta!r}")
    if not (_real(spec.alpha) and spec.alpha > 0):
        problems.append(f"`alpha` must be a real > 0; got {spec.alpha!r}")
    return problems


def _build(instance, build):
    """``(ssp, None)``, or ``(None, why)`` when ``build`` cannot build ``instance``."""
    try:
        name, tokens = parse_instance(instance)
        ssp, _ = build(name, tokens)
    except (ValueError, ImportError) as exc:
        return None, f"instance {instance!r}: {exc}"
    return ssp, None


def check_runs(runs):
    """Validate every run of a sweep before any of them starts.

    Each run's own values are checked (``eps`` in (0, 1], ``delta`` in
    (0, 1), ``seed`` an integer >= 0, a known backend that imports, ``theta``
    None or >= 1, ``alpha`` > 0), every distinct instance spec is built once,
    and Alg. 1 runs (``theta`` None) need an instance with ``c_min > 0``.

    Parameters
    ----------
    runs : Sweep, or sequence of Sweep and RunSpec
        Flattened by :func:`as_runs`.

    Returns
    -------
    list of RunSpec
        The runs, duplicates dropped (first occurrence kept).

    Raises
    ------
    ParameterError
        Listing every invalid configuration (instance, parameter and why),
        when any run is invalid; or when there is no run at all (a grid with
        an empty list of values).

    See Also
    --------
    as_runs : the flattening.
    sspgm.validation.run_sweep : which checks its runs this way first.

    Examples
    --------
    Alg. 1 needs ``c_min > 0``, which ``zero_cost_loop`` does not have:

    >>> len(check_runs(Sweep(instances=("tradeoff",), eps=(0.2,), seeds=(0, 1))))
    2
    >>> check_runs(Sweep(instances=("zero_cost_loop",), eps=(0.2,), seeds=(0,)))
    Traceback (most recent call last):
    ...
    reference.errors.ParameterError: ...zero_cost_loop...
    """
    from sspgm import BACKENDS, load_backend
    from sspgm.instances import build_instance

    specs = list(dict.fromkeys(as_runs(runs)))
    if not specs:
        raise _error("the sweep holds no run: every list of values (instances, eps, deltas, "
                     "seeds, backends, thetas) must hold at least one.")
    problems = {}
    for spec in specs:
        for text in _spec_problems(spec, BACKENDS):
            problems.setdefault(text, None)
    for name in sorted({spec.backend for spec in specs if spec.backend in BACKENDS}):
        try:
            load_backend(name)
        except ImportError as exc:
            problems.setdefault(f"backend {name!r} does not import: {exc}", None)
    built = {}
    for instance in dict.fromkeys(spec.instance for spec in specs):
        built[instance], problem = _build(instance, build_instance)
        if problem is not None:
            problems.setdefault(problem, None)
    for spec in specs:
        ssp = built[spec.instance]
        if spec.theta is None and ssp is not None and not ssp.c_min > 0:
            problems.setdefault(
                f"instance {spec.instance!r} has c_min = 0: Alg. 1 needs c_min > 0 "
                f"(give a `theta` to run Alg. 3)", None,
            )
    if problems:
        listed = "; ".join(problems)
        raise _error(
            f"the sweep has {len(problems)} invalid configuration(s), nothing was run: {listed}."
        )
    return specs
