"""The validation harness: run the algorithms on real instances and check the theorems.

A sweep runs :func:`solve` over instances x accuracies x confidence levels x
seeds (x backends, x ``theta`` for Alg. 3), evaluates every returned policy
exactly, and records one row per run:

* **success** -- Thm. 1: :math:`\\|V^\\pi - V^\\star\\|_\\infty \\le \\epsilon`;
  Thm. 2 in the one-sided form docs/semantics.md fixes (App. E proves no
  more): :math:`V^\\pi \\le V^\\star_\\theta + \\epsilon` componentwise.
* **error** -- the left-hand side: :math:`\\|V^\\pi - V^\\star\\|_\\infty`, or
  :math:`\\max_s (V^\\pi(s) - V^\\star_\\theta(s))` (negative when the policy
  beats :math:`V^\\star_\\theta`); ``inf`` for an improper policy.
* **calls** and **bound** -- the calls made and the explicit total of the
  allocation function at the run's final ``Delta`` (``bounds.samp_comp``
  with ``bound="explicit1"`` / ``"explicit3"``).

Rows go to a CSV file as they complete, so an interrupted sweep restarted on
the same file only runs what is missing. :func:`summarize` reduces rows to
one line per configuration: the failure rate with its Clopper-Pearson
interval against ``delta``, calls over the bound, and the slope of
``log(calls)`` against ``log(1/eps)`` with its t-interval (Thm. 1 predicts
at most 2, Thm. 2 at most 3, up to logarithmic factors).
"""

import csv
import dataclasses
import functools
import itertools
import math
import os
import textwrap
import time
import warnings

import numpy as np
from scipy import stats

import bounds
from reference.errors import ParameterError
from sspgm import load_backend

__all__ = [
    "COLUMNS",
    "KEY_COLUMNS",
    "TIMING_COLUMNS",
    "CONFIG_COLUMNS",
    "RunSpec",
    "Sweep",
    "STANDARD_SWEEPS",
    "parse_instance",
    "run_one",
    "run_sweep",
    "read_rows",
    "clopper_pearson",
    "loglog_slope",
    "summarize",
    "format_summary",
    "SUMMARY_LEGEND",
]

COLUMNS = {
    "instance": str,
    "backend": str,
    "theta": float,
    "alpha": float,
    "eps": float,
    "delta": float,
    "seed": int,
    "success": bool,
    "error": float,
    "calls": int,
    "calls_diameter": int,
    "bound": float,
    "calls_over_bound": float,
    "rounds": int,
    "uncertified": bool,
    "Delta_final": float,
    "D_hat": float,
    "eps_diameter": float,
    "D": float,
    "B_star": float,
    "n_states": int,
    "n_actions": int,
    "branching": int,
    "c_min": float,
    "seconds": float,
}
"""Every column of a row, in CSV order, with its type; ``theta``, ``D_hat`` and
``eps_diameter`` (the accuracy Alg. 3 ran its diameter subroutine at) are
``None`` (an empty CSV cell) for Alg. 1 runs."""

KEY_COLUMNS = ("instance", "backend", "theta", "alpha", "eps", "delta", "seed")
"""The columns that identify a run (the resume key)."""

CONFIG_COLUMNS = ("instance", "backend", "theta", "alpha", "delta")
"""The columns of a configuration: a run's key without ``eps`` and ``seed``."""

TIMING_COLUMNS = ("seconds",)
"""Columns that differ between repeated runs of the same key."""

SLOPE_LIMITS = {False: 2.0, True: 3.0}
"""Largest exponent of ``1/eps`` the theorems allow: Thm. 1 (``theta`` unset) and Thm. 2."""


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

    def key(self):
        """The resume key: the values of :data:`KEY_COLUMNS`, normalised as in a CSV row."""
        return _row_key(_normalise(dataclasses.asdict(self)))


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
        seeds=tuple(range(10)),
        deltas=(0.05, 0.1, 0.2),
    ),
    Sweep(
        instances=("theta_example", "tradeoff", "chain:n=3"),
        eps=(0.2, 0.1, 0.05, 0.025),
        seeds=tuple(range(10)),
        deltas=(0.05, 0.1, 0.2),
        thetas=(3.0,),
    ),
)
"""The standard instances of ``sspgm validate``. Alg. 1 on a 4-state chain,
the one-state trade-off, the 3x4 grid world, a 10-state garnet, and
gymnasium's CliffWalking, FrozenLake (4x4, slippery) and Taxi; Alg. 3
(``theta = 3``) on the ``theta`` example of docs/semantics.md ("Guarantees") (the free
action takes 20 steps, outside ``Pi_3``), the trade-off (its slow action, 2
steps, inside) and a 3-state chain. Each configuration has 4 accuracies x 10
seeds x 3 confidence levels, so that 40 runs without failure put the
Clopper-Pearson upper end below ``delta = 0.1``."""


def parse_instance(spec):
    """Split an instance spec ``"name:key=value,..."`` into the name and its parameter tokens.

    The tokens are the ``--key value`` pairs :func:`sspgm.instances.build_instance`
    parses (values typed after the builder's defaults), so a spec names the
    same instance as ``sspgm solve name --key value``.

    Parameters
    ----------
    spec : str

    Returns
    -------
    name : str
    tokens : list of str
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ParameterError(f"`instance` must be a non-empty string; got {spec!r}.")
    name, _, rest = spec.partition(":")
    tokens = []
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError(
                f"`instance` parameters must read key=value; got {item!r} in {spec!r}."
            )
        tokens += ["--" + key.strip(), value.strip()]
    return name.strip(), tokens


@functools.lru_cache(maxsize=64)
def _truth(instance, backend_name, theta):
    """The instance and its exact reference quantities, computed once per process.

    Returns
    -------
    ssp : SSP
    target : ndarray of shape (S,)
        :math:`V^\\star` (``theta`` is None) or :math:`V^\\star_\\theta`.
    D : float
        The SSP-diameter.
    B_star : float
        :math:`B_\\star`.
    """
    from sspgm.instances import build_instance

    name, tokens = parse_instance(instance)
    ssp, _ = build_instance(name, tokens)
    backend = load_backend(backend_name)
    if theta is None:
        target = backend.optimal_values(ssp).values
    else:
        target = backend.restricted_optimal_values(ssp, theta).values
    return ssp, np.asarray(target), float(backend.diameter(ssp).D), float(backend.b_star(ssp))


def _explicit_bound(ssp, spec, delta_final, d_hat, D, B_star):
    """The explicit total of the allocation function at the run's final ``Delta``.

    Alg. 1: ``S A phi(Delta, c_min)`` at accuracy ``eps``; Alg. 3: Alg. 4's
    total up to ``W = final_delta(D)`` plus ``S A phi(Delta, max(c_min, nu))``
    at accuracy ``eps / 2`` with the run's own ``D_hat``
    (``bounds.samp_comp(_theta)``, ``"explicit1"`` / ``"explicit3"``). Both
    depend on the range of the values only through ``Delta``, which is given.
    """
    common = dict(
        S=ssp.n_states, A=ssp.n_actions, Gamma=ssp.branching, delta=spec.delta,
        alpha=spec.alpha, Delta=max(delta_final, 1.0),
    )
    if spec.theta is None:
        return bounds.samp_comp(
            spec.eps, B=None, cmin=ssp.c_min, bound="explicit1",
            **common,
        )
    return bounds.samp_comp_theta(
        spec.eps, theta=spec.theta, D=D, D_hat=d_hat, cmin=ssp.c_min,
        bound="explicit3", **common,
    )


def run_one(spec, progress=False):
    """Run ``solve`` once, evaluate the policy exactly, and return the row.

    Parameters
    ----------
    spec : RunSpec
    progress : bool, default False
        Show a tqdm bar over the rounds of ``solve``.

    Returns
    -------
    dict
        One value per column of :data:`COLUMNS`, normalised as a CSV round trip
        would (so rows compare equal whether fresh or read back).

    Notes
    -----
    ``calls`` counts every call of the run; ``calls_diameter`` those made by
    Alg. 3's diameter subroutine (0 for Alg. 1). Alg. 3's explicit total
    includes the subroutine's, so ``calls_over_bound = calls / (calls_diameter
    + bound)`` counts the subroutine twice and understates the ratio. Alg. 3 runs the
    subroutine at accuracy ``eps_diameter = eps``.

    ``uncertified`` is True when the result's certificate, computed on the
    run's own samples, does not prove the policy eps-optimal
    (``not result.certificate.certified(eps)``; ``solve`` warns, the row
    records it).
    """
    ssp, target, D, B_star = _truth(spec.instance, spec.backend, spec.theta)
    backend = load_backend(spec.backend)
    model = backend.TabularGenerativeModel(ssp)
    bar = _rounds_bar(spec, progress)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = backend.solve(
                model, ssp.costs, spec.eps, spec.delta, theta=spec.theta, alpha=spec.alpha,
                seed=spec.seed, callback=_round_callback(bar),
            )
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    values = backend.policy_values(ssp, result.policy)
    gap = values - target
    error = float(np.max(np.abs(gap)) if spec.theta is None else np.max(gap))
    d_hat = None if spec.theta is None else float(result.D_hat)
    delta_final = float(result.Delta_final)
    bound = float(_explicit_bound(ssp, spec, delta_final, d_hat, D, B_star))
    diameter_rounds = [r for r in result.history if r.phase == "diameter"]
    calls_diameter = diameter_rounds[-1].n_calls if diameter_rounds else 0
    row = {
        **dataclasses.asdict(spec),
        "success": bool(error <= spec.eps),
        "error": error,
        "calls": int(result.n_calls),
        "calls_diameter": int(calls_diameter),
        "bound": bound,
        "calls_over_bound": int(result.n_calls) / (calls_diameter + bound),
        "rounds": sum(r.phase == "search" for r in result.history),
        "uncertified": not result.certificate.certified(spec.eps),
        "Delta_final": delta_final,
        "D_hat": d_hat,
        "eps_diameter": None if spec.theta is None else spec.eps,
        "D": D,
        "B_star": B_star,
        "n_states": ssp.n_states,
        "n_actions": ssp.n_actions,
        "branching": ssp.branching,
        "c_min": ssp.c_min,
        "seconds": seconds,
    }
    return _normalise(row)


def _rounds_bar(spec, enabled):
    from tqdm.auto import tqdm

    return tqdm(desc=f"{spec.instance} eps={spec.eps:g} seed={spec.seed}", unit="round",
                disable=not enabled, leave=False)


def _round_callback(bar):
    """A ``solve`` callback that advances ``bar`` once per round and shows its guess and calls."""

    def callback(round_):
        bar.set_postfix_str(f"{round_.phase} scale={round_.scale:g} calls={round_.n_calls:.3g}")
        bar.update(1)

    return callback


def _format_cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _parse_cell(kind, text):
    if text == "":
        return None
    if kind is bool:
        if text not in ("True", "False"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "True"
    return kind(text)


def _normalise(row):
    """Give every column its type (``None`` stays ``None``), as a CSV round trip does."""
    return {
        name: None if row.get(name) is None else _parse_cell(kind, _format_cell(kind(row[name])))
        for name, kind in COLUMNS.items()
        if name in row
    }


def _row_key(row):
    return tuple(row[name] for name in KEY_COLUMNS)


def read_rows(path):
    """Read the complete rows of a sweep CSV; a truncated last line is ignored.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    list of dict
        Typed rows (see :data:`COLUMNS`); empty if the file does not exist.
    """
    if not os.path.exists(path):
        return []
    with open(path, newline="") as handle:
        text = handle.read()
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()
    reader = csv.DictReader(lines)
    if reader.fieldnames is not None and list(reader.fieldnames) != list(COLUMNS):
        raise ParameterError(
            f"`{path}` is not a sweep CSV of this version: its columns are "
            f"{reader.fieldnames}, expected {list(COLUMNS)}."
        )
    rows = []
    for record in reader:
        try:
            rows.append({name: _parse_cell(kind, record[name]) for name, kind in COLUMNS.items()})
        except (TypeError, ValueError):
            continue
    return rows


def _prepare_csv(path):
    """Make ``path`` end with a complete line (or hold just the header) and return its rows."""
    rows = read_rows(path)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow([_format_cell(row[name]) for name in COLUMNS])
    return rows


def _execute(runs, n_jobs, scheduler, progress):
    """Yield the rows of ``runs`` as they complete (any order).

    In-process runs (``n_jobs = 1``, no scheduler) show a bar over each
    run's rounds when ``progress`` is set.
    """
    if not runs:
        return
    if n_jobs == 1 and scheduler is None:
        yield from (run_one(run, progress) for run in runs)
        return
    import joblib

    tasks = (joblib.delayed(run_one)(run) for run in runs)
    if scheduler is None:
        yield from joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)
        return
    from dask.distributed import Client

    with Client(scheduler), joblib.parallel_config(backend="dask"):
        yield from joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)


def run_sweep(runs, csv_path=None, n_jobs=-1, scheduler=None, progress=True):
    """Run every configuration of a sweep, skipping the runs a CSV already records.

    Parameters
    ----------
    runs : Sweep, sequence of Sweep, or sequence of RunSpec
        What to run.
    csv_path : str or os.PathLike, optional
        File the rows are appended to as they complete. Runs whose key
        (:data:`KEY_COLUMNS`) it already holds are not run again; a
        truncated last line (an interrupted write) is dropped.
    n_jobs : int, default -1
        joblib worker processes (-1: one per core; 1: run in this process).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:port``): the runs go to the
        cluster through dask.distributed's joblib backend instead.
    progress : bool, default True
        Show a tqdm progress bar over the runs and, for in-process runs, one
        over the rounds of the current ``solve``.

    Returns
    -------
    list of dict
        One row per run, in the order of ``runs``.
    """
    specs = _as_runs(runs)
    done = {}
    if csv_path is not None:
        done = {_row_key(row): row for row in _prepare_csv(csv_path)}
    wanted = {spec.key() for spec in specs}
    todo = [spec for spec in dict.fromkeys(specs) if spec.key() not in done]
    bar = _progress_bar(len(wanted), len(wanted) - len(todo), progress)
    handle = None if csv_path is None else open(csv_path, "a", newline="")
    try:
        writer = None if handle is None else csv.writer(handle)
        for row in _execute(todo, n_jobs, scheduler, progress):
            done[_row_key(row)] = row
            if writer is not None:
                writer.writerow([_format_cell(row[name]) for name in COLUMNS])
                handle.flush()
            bar.update(1)
    finally:
        bar.close()
        if handle is not None:
            handle.close()
    return [done[spec.key()] for spec in specs]


def _as_runs(runs):
    if isinstance(runs, Sweep):
        return runs.runs()
    out = []
    for item in runs:
        if isinstance(item, Sweep):
            out.extend(item.runs())
        elif isinstance(item, RunSpec):
            out.append(item)
        else:
            raise ParameterError(
                f"`runs` must hold Sweep or RunSpec objects; got {type(item).__name__}."
            )
    return out


def _progress_bar(total, initial, enabled):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="sweep", unit="run")


def clopper_pearson(failures, n, level=0.95):
    """Exact (Clopper-Pearson) two-sided interval for a binomial proportion.

    Parameters
    ----------
    failures : int
        Number of failures ``k``.
    n : int
        Number of runs.
    level : float in (0, 1)
        Coverage.

    Returns
    -------
    (float, float)
        With :math:`a = 1 - \\mathrm{level}` and ``Beta`` quantiles,

        .. math::

            \\Big(\\mathrm{Beta}^{-1}\\big(\\tfrac a2; k, n-k+1\\big),\\;
            \\mathrm{Beta}^{-1}\\big(1-\\tfrac a2; k+1, n-k\\big)\\Big),

        the lower end 0 when ``k = 0`` and the upper end 1 when ``k = n``.
    """
    if n < 1 or not 0 <= failures <= n:
        raise ParameterError(f"need 0 <= failures <= n and n >= 1; got failures={failures}, n={n}.")
    a = 1.0 - level
    low = 0.0 if failures == 0 else float(stats.beta.ppf(a / 2, failures, n - failures + 1))
    high = 1.0 if failures == n else float(stats.beta.ppf(1 - a / 2, failures + 1, n - failures))
    return low, high


def loglog_slope(eps, calls, level=0.95):
    """Least-squares slope of ``log(calls)`` against ``log(1/eps)`` with a t-interval.

    .. math::

        \\log N_i = a + b \\log(1/\\epsilon_i) + e_i, \\qquad
        b \\pm t_{n-2,\\,(1+\\mathrm{level})/2}\\ \\mathrm{se}(b).

    Parameters
    ----------
    eps, calls : sequences of the same length n
        One entry per run (repeated ``eps`` values are fine).
    level : float in (0, 1)

    Returns
    -------
    (float, float, float)
        Slope, lower and upper ends; all NaN when fewer than three runs or
        fewer than two distinct ``eps``.
    """
    x = -np.log(np.asarray(eps, dtype=float))
    y = np.log(np.asarray(calls, dtype=float))
    if x.size < 3 or np.unique(x).size < 2:
        return math.nan, math.nan, math.nan
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf((1 + level) / 2, x.size - 2) * fit.stderr)
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def summarize(rows, level=0.95):
    """One summary line per configuration (:data:`CONFIG_COLUMNS`).

    Parameters
    ----------
    rows : sequence of dict
        Rows as returned by :func:`run_sweep` or :func:`read_rows`.
    level : float in (0, 1)
        Coverage of the intervals.

    Returns
    -------
    list of dict
        Keys: the configuration columns, ``runs``, ``failures``, ``uncertified``
        (runs whose certificate does not prove eps-optimality),
        ``failure_rate``, ``failure_low`` / ``failure_high`` (Clopper-Pearson),
        ``consistent`` (``failure_low <= delta``: the observed failures do
        not refute the guarantee), ``error_over_eps_max`` (the largest
        error in units of ``eps``; above 1 is a failure),
        ``calls_over_bound_mean`` / ``_max``,
        ``n_eps``, ``slope`` / ``slope_low`` / ``slope_high``,
        ``bound_slope`` (the same fit of the explicit bound: the exponent the
        allocation function gives on this grid, logarithms included),
        ``Delta_max`` (the largest final ``Delta``) with ``settled_slope`` /
        ``_low`` / ``_high`` (the fit over the runs that stopped at
        ``Delta_max``: small accuracies push SEARCH to larger guesses, which
        steepens the raw slope; Thm. 1 holds ``Delta <= 2 B`` fixed) and
        ``slope_limit`` (2 for Thm. 1, 3 for Thm. 2: the asymptotic exponent
        once logarithms are dropped).
    """
    groups = {}
    for row in rows:
        groups.setdefault(tuple(row[name] for name in CONFIG_COLUMNS), []).append(row)
    out = []
    for config, members in groups.items():
        line = dict(zip(CONFIG_COLUMNS, config))
        failures = sum(not row["success"] for row in members)
        low, high = clopper_pearson(failures, len(members), level)
        ratios = [row["calls_over_bound"] for row in members]
        eps = [row["eps"] for row in members]
        slope, slope_low, slope_high = loglog_slope(eps, [row["calls"] for row in members], level)
        top = max(row["Delta_final"] for row in members)
        settled = [row for row in members if row["Delta_final"] == top]
        settled_slope = loglog_slope(
            [row["eps"] for row in settled], [row["calls"] for row in settled], level
        )
        line.update(
            runs=len(members),
            failures=failures,
            uncertified=sum(row["uncertified"] for row in members),
            failure_rate=failures / len(members),
            failure_low=low,
            failure_high=high,
            consistent=low <= line["delta"],
            error_over_eps_max=max(row["error"] / row["eps"] for row in members),
            calls_over_bound_mean=float(np.mean(ratios)),
            calls_over_bound_max=float(np.max(ratios)),
            n_eps=len({row["eps"] for row in members}),
            slope=slope,
            slope_low=slope_low,
            slope_high=slope_high,
            bound_slope=loglog_slope(eps, [row["bound"] for row in members], level)[0],
            Delta_max=top,
            settled_slope=settled_slope[0],
            settled_slope_low=settled_slope[1],
            settled_slope_high=settled_slope[2],
            slope_limit=SLOPE_LIMITS[line["theta"] is not None],
        )
        out.append(line)
    return out


SUMMARY_LEGEND = (
    "unc: runs whose certificate, on their own samples, does not prove eps-optimality. "
    "rate: failures / runs, Clopper-Pearson interval (the guarantee: <= delta). "
    "err/eps: the largest error in units of eps (a failure above 1). "
    "calls/bound: calls over the explicit total at the final Delta (Alg. 3: plus the "
    "diameter phase's calls). slope: of log(calls) against log(1/eps) over all runs; "
    "@Dmax: over the runs that stopped at the largest Delta; bound: the explicit total's "
    "slope; max: Thm. 1 (2) or Thm. 2 (3), logarithms dropped."
)
"""Printed under :func:`format_summary`'s table."""


def format_summary(summary):
    """The summary as a fixed-width text table, one line per configuration, and a legend."""
    width = max([len("instance")] + [len(s["instance"]) for s in summary])
    header = (
        f"{'instance':<{width}} {'backend':<9} {'theta':>5} {'delta':>5} {'runs':>4} "
        f"{'fail':>4} {'unc':>4} {'rate [CP 95%]':>20} {'err/eps':>8} {'calls/bound':>16} "
        f"{'slope [95%]':>22} {'@Dmax [95%]':>22} {'bound':>5} {'max':>3}"
    )
    lines = [header, "-" * len(header)]
    for s in summary:
        theta = "-" if s["theta"] is None else f"{s['theta']:g}"
        rate = f"{s['failure_rate']:.2f} [{s['failure_low']:.2f},{s['failure_high']:.2f}]"
        ratio = f"{s['calls_over_bound_mean']:.3f} (max {s['calls_over_bound_max']:.3f})"
        slope = _interval(s["slope"], s["slope_low"], s["slope_high"])
        settled = _interval(s["settled_slope"], s["settled_slope_low"], s["settled_slope_high"])
        lines.append(
            f"{s['instance']:<{width}} {s['backend']:<9} {theta:>5} {s['delta']:>5g} "
            f"{s['runs']:>4} {s['failures']:>4} {s['uncertified']:>4} {rate:>20} "
            f"{s['error_over_eps_max']:>8.2g} {ratio:>16} {slope:>22} {settled:>22} "
            f"{s['bound_slope']:>5.2f} {s['slope_limit']:>3g}"
        )
    return "\n".join(lines + [""] + textwrap.wrap(SUMMARY_LEGEND, 100))


def _interval(value, low, high):
    return f"{value:.2f} [{low:.2f},{high:.2f}]"
