r"""Statistics of a sweep: failure rates against ``delta``, calls against the explicit total, slopes.

:func:`summarize` reduces the rows of a sweep to one :class:`ConfigSummary`
per configuration: the failure rate with its exact (Clopper-Pearson)
interval, the calls over the explicit total, and the slope of
``log(calls)`` against ``log(1/eps)`` with its t-interval (Thm. 1 predicts at
most 2, Thm. 2 at most 3, up to logarithmic factors), and a verdict: the
checks of :data:`CHECKS` that the configuration fails.
"""

import dataclasses
import math
import typing

import numpy as np
from scipy import stats

from reference.errors import ParameterError

from .rows import CONFIG_COLUMNS
from .theorem import fails_theorem, theorem_total

__all__ = ["Interval", "ConfigSummary", "SLOPE_LIMITS", "SLOPE_TOLERANCE", "CHECKS",
           "failure_interval", "runs_to_test", "loglog_slope", "theorem_slope", "above_bound",
           "summarize"]

SLOPE_LIMITS = {False: 2.0, True: 3.0}
"""Largest exponent of ``1/eps`` the theorems allow: Thm. 1 (``theta`` unset) and Thm. 2."""

SLOPE_TOLERANCE = 0.05
"""How far above the theorem's slope a slope's interval may lie before check ``s`` fails:
slopes are printed to two decimals, and the calls are integers."""

CHECKS = {
    "r": "rate: the failure rate's interval lies above delta (its lower end > delta)",
    "t": "total: a run used more calls than its explicit total",
    "s": f"slope: the slope's interval lies above the theorem's (its lower end > "
         f"{SLOPE_TOLERANCE:g} + the larger of the limit and the slope of the theorem's total on "
         f"the same accuracies)",
}
"""The checks of a configuration's verdict: code -> the rule that fails it."""


class Interval(typing.NamedTuple):
    """An estimate with the ends of its confidence interval (all NaN when undefined)."""

    value: float
    low: float
    high: float


_UNDEFINED = Interval(math.nan, math.nan, math.nan)


def failure_interval(failures, n, level=0.95):
    r"""The failure rate ``failures / n`` with its exact (Clopper-Pearson) interval.

    Parameters
    ----------
    failures : int
        Number of failures ``k``.
    n : int
        Number of runs, at least 1.
    level : float in (0, 1)
        Coverage.

    Returns
    -------
    Interval
        ``k / n`` and the ends of ``scipy.stats.binomtest(k, n)
        .proportion_ci(level, method="exact")``: with :math:`a = 1 -
        \mathrm{level}` and Beta quantiles,

        .. math::

            \Big(\mathrm{Beta}^{-1}\big(\tfrac a2; k, n-k+1\big),\;
            \mathrm{Beta}^{-1}\big(1-\tfrac a2; k+1, n-k\big)\Big),

        the lower end 0 when ``k = 0`` and the upper end 1 when ``k = n``.

    Examples
    --------
    No failure in 40 runs: the upper end is :math:`1 - 0.025^{1/40}`.

    >>> rate, low, high = failure_interval(0, 40)
    >>> rate, low, round(high, 4)
    (0.0, 0.0, 0.0881)
    """
    if not (isinstance(n, (int, np.integer)) and isinstance(failures, (int, np.integer))
            and n >= 1 and 0 <= failures <= n):
        raise ParameterError(
            f"need integers 0 <= failures <= n and n >= 1; got failures={failures!r}, n={n!r}."
        )
    ci = stats.binomtest(int(failures), int(n)).proportion_ci(level, method="exact")
    return Interval(failures / n, float(ci.low), float(ci.high))


_MOST_RUNS = 1e9
"""The most runs :func:`runs_to_test` answers with."""


def runs_to_test(delta, level=0.95):
    r"""The fewest runs whose interval, when none fails, lies below ``delta``.

    With no failure in ``n`` runs the Clopper-Pearson upper end is
    :math:`1 - (a/2)^{1/n}`, :math:`a = 1 - \mathrm{level}`; it is at most
    ``delta`` from :math:`n = \lceil \log(a/2) / \log(1 - \delta) \rceil` on.
    With fewer runs, even a clean record cannot show ``rate <= delta``.

    Parameters
    ----------
    delta : float in (0, 1)
    level : float in (0, 1)

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        When ``delta`` or ``level`` is not a real in (0, 1), or when more than
        10^9 runs would be needed.

    Examples
    --------
    >>> runs_to_test(0.05), runs_to_test(0.1), runs_to_test(0.2)
    (72, 36, 17)
    """
    for name, value in (("delta", delta), ("level", level)):
        if not (isinstance(value, (int, float, np.integer, np.floating))
                and not isinstance(value, bool) and 0 < value < 1):
            raise ParameterError(f"`{name}` must be a real in (0, 1); got {value!r}.")
    delta, level = float(delta), float(level)
    estimate = math.log((1 - level) / 2) / math.log1p(-delta)
    if not estimate <= _MOST_RUNS:
        raise ParameterError(f"`delta` = {delta!r} at `level` = {level!r} needs more than "
                             f"{_MOST_RUNS:.0e} runs; give a larger delta or a smaller level.")
    n = max(1, math.ceil(estimate))
    while n > 1 and 1 - ((1 - level) / 2) ** (1 / (n - 1)) <= delta:
        n -= 1
    while 1 - ((1 - level) / 2) ** (1 / n) > delta:
        n += 1
    return n


def loglog_slope(eps, calls, level=0.95):
    r"""Least-squares slope of ``log(calls)`` against ``log(1/eps)`` with a t-interval.

    .. math::

        \log N_i = a + b \log(1/\epsilon_i) + e_i, \qquad
        b \pm t_{n-2,\,(1+\mathrm{level})/2}\ \mathrm{se}(b).

    Parameters
    ----------
    eps, calls : sequences of the same length n
        One entry per run (repeated ``eps`` values are fine).
    level : float in (0, 1)

    Returns
    -------
    Interval
        Slope and the ends of its interval; all NaN when fewer than three runs
        or fewer than two distinct ``eps``.

    See Also
    --------
    summarize : the slope of every configuration.

    Examples
    --------
    Calls growing exactly as ``eps^-2`` have slope 2:

    >>> slope = loglog_slope([0.2, 0.1, 0.05], [100, 400, 1600])
    >>> round(slope.value, 6)
    2.0
    """
    eps = np.asarray(eps, dtype=float)
    if eps.size < 3 or np.unique(eps).size < 2:
        return _UNDEFINED
    fit = _loglog_fit(eps, calls)
    half = float(stats.t.ppf((1 + level) / 2, eps.size - 2) * fit.stderr)
    return Interval(float(fit.slope), float(fit.slope - half), float(fit.slope + half))


def _loglog_fit(eps, values):
    """The least-squares line of ``log(values)`` against ``log(1/eps)`` (at least two eps)."""
    return stats.linregress(-np.log(np.asarray(eps, dtype=float)),
                            np.log(np.asarray(values, dtype=float)))


def theorem_slope(row, eps):
    """The slope of ``log(theorem_total)`` against ``log(1/eps)`` over the accuracies ``eps``.

    The exponent of ``1/eps`` the theorem allows on this grid, its logarithms
    included (a little above 2 for Thm. 1, above 3 for Thm. 2 when its
    ``eps^-3`` term dominates); the same least-squares fit as :func:`loglog_slope`,
    over the totals (:func:`~sspgm.validation.theorem.theorem_total`).

    Parameters
    ----------
    row : Row
        Any run of the configuration.
    eps : sequence of float
        The accuracies of the grid (at least two distinct).

    Returns
    -------
    float
        NaN with fewer than two distinct accuracies or when ``row`` raised.

    Examples
    --------
    With two accuracies, the slope through the two totals:

    >>> import math
    >>> from sspgm.validation import RunSpec, run_one
    >>> row = run_one(RunSpec("tradeoff", eps=0.2, delta=0.1, seed=0))
    >>> totals = theorem_total(row, 0.1), theorem_total(row, 0.2)
    >>> math.isclose(theorem_slope(row, [0.2, 0.1]), math.log(totals[0] / totals[1]) / math.log(2))
    True
    """
    grid = sorted(set(float(e) for e in eps))
    totals = [theorem_total(row, e) for e in grid]
    if len(grid) < 2 or any(math.isnan(total) for total in totals):
        return math.nan
    return float(_loglog_fit(grid, totals).slope)


@dataclasses.dataclass(frozen=True)
class ConfigSummary:
    """The statistics of one configuration (:data:`~sspgm.validation.rows.CONFIG_COLUMNS`).

    Attributes
    ----------
    instance, backend : str
    theta : float or None
    alpha, delta : float
    runs : int
        Runs that returned a policy.
    errors : int
        Runs that raised (recorded with their exception, left out of every
        statistic below).
    failures : int
        Runs that fail their theorem (:func:`~sspgm.validation.theorem.fails_theorem`):
        the policy misses the guarantee, or the calls exceed the theorem's
        total.
    uncertified : int
        Runs whose certificate does not prove eps-optimality.
    failure : Interval
        Failure rate with its Clopper-Pearson interval.
    consistent : bool or None
        ``failure.low <= delta``: the failures do not refute the guarantee
        (None without runs).
    error_over_eps_max : float
        The largest error in units of ``eps`` (above 1 is a failure).
    calls_over_bound_mean, calls_over_bound_max : float
        Calls over the explicit total.
    above_bound : int
        Runs whose calls exceed their explicit total.
    above_theorem : int
        Runs whose calls exceed the theorem's total
        (:func:`~sspgm.validation.theorem.theorem_total`), which the theorem
        allows only outside the event of Lemma 5 (probability at most
        ``delta``).
    n_eps : int
        Distinct accuracies.
    slope : Interval
        Of ``log(calls)`` against ``log(1/eps)``, over all runs.
    bound_slope : float
        The same fit of the explicit totals: the exponent the allocation
        function gives on this grid, logarithms included.
    Delta_max : float
        The largest final ``Delta``.
    settled_slope : Interval
        The slope over the runs that stopped at ``Delta_max`` (small
        accuracies push SEARCH to larger guesses, which steepens the raw
        slope; Thm. 1 holds ``Delta <= 2 B`` fixed).
    slope_limit : float
        2 for Thm. 1, 3 for Thm. 2: the asymptotic exponent once logarithms
        are dropped.
    theorem_slope : float
        The slope of the theorem's total over the same accuracies
        (:func:`theorem_slope`): the limit with the
        grid's logarithms.
    runs_needed : int
        Runs needed for a clean record to show ``rate <= delta``
        (:func:`runs_to_test`); ``failure.high > delta`` means the interval is
        too wide to test ``delta``.
    failed : str
        The codes of :data:`CHECKS` the configuration fails, e.g. ``"rs"``;
        empty when it passes.
    """

    instance: str
    backend: str
    theta: float | None
    alpha: float
    delta: float
    runs: int
    errors: int
    failures: int
    uncertified: int
    failure: Interval
    consistent: bool | None
    error_over_eps_max: float
    calls_over_bound_mean: float
    calls_over_bound_max: float
    above_bound: int
    above_theorem: int
    n_eps: int
    slope: Interval
    bound_slope: float
    Delta_max: float
    settled_slope: Interval
    slope_limit: float
    theorem_slope: float
    runs_needed: int
    failed: str

    @property
    def verdict(self):
        """``"pass"``, or ``"FAIL "`` followed by the failed checks' codes."""
        return "pass" if not self.failed else f"FAIL {self.failed}"


def _failed(fields, slope_limit, theorem_slope, delta):
    """The codes of :data:`CHECKS` that the statistics ``fields`` fail."""
    codes = ""
    if fields["failure"].low > delta:
        codes += "r"
    if fields["above_bound"] > 0:
        codes += "t"
    allowed = slope_limit if math.isnan(theorem_slope) else max(slope_limit, theorem_slope)
    if fields["slope"].low > allowed + SLOPE_TOLERANCE:
        codes += "s"
    return codes


def above_bound(rows):
    """The rows whose calls exceed their explicit total (``calls_over_bound > 1``).

    See Also
    --------
    summarize : counts them per configuration.

    Examples
    --------
    Alg. 1 never uses more calls than its explicit total:

    >>> from sspgm.validation import Sweep, run_sweep
    >>> sweep = Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1))
    >>> rows = run_sweep(sweep, n_jobs=1, progress=False)
    >>> above_bound(rows)
    []
    """
    return [row for row in rows if row.calls_over_bound is not None and row.calls_over_bound > 1]


def _statistics(members, delta, level):
    """The fields of :class:`ConfigSummary` computed from runs that returned a policy."""
    if not members:
        return dict(
            failures=0, uncertified=0, failure=_UNDEFINED, consistent=None,
            error_over_eps_max=math.nan, calls_over_bound_mean=math.nan,
            calls_over_bound_max=math.nan, above_bound=0, above_theorem=0, n_eps=0,
            slope=_UNDEFINED, bound_slope=math.nan, Delta_max=math.nan,
            settled_slope=_UNDEFINED,
        )
    failures = sum(fails_theorem(row) for row in members)
    failure = failure_interval(failures, len(members), level)
    ratios = [row.calls_over_bound for row in members]
    eps = [row.eps for row in members]
    top = max(row.Delta_final for row in members)
    settled = [row for row in members if row.Delta_final == top]
    return dict(
        failures=failures,
        uncertified=sum(row.uncertified for row in members),
        failure=failure,
        consistent=failure.low <= delta,
        error_over_eps_max=max(row.error / row.eps for row in members),
        calls_over_bound_mean=float(np.mean(ratios)),
        calls_over_bound_max=float(np.max(ratios)),
        above_bound=len(above_bound(members)),
        above_theorem=sum(row.calls > theorem_total(row, row.eps) for row in members),
        n_eps=len(set(eps)),
        slope=loglog_slope(eps, [row.calls for row in members], level),
        bound_slope=loglog_slope(eps, [row.bound for row in members], level).value,
        Delta_max=top,
        settled_slope=loglog_slope(
            [row.eps for row in settled], [row.calls for row in settled], level
        ),
    )


def summarize(rows, level=0.95):
    """One :class:`ConfigSummary` per configuration, in the order first seen.

    Parameters
    ----------
    rows : sequence of Row
        Rows as returned by :func:`~sspgm.validation.runner.run_sweep` or
        :func:`~sspgm.validation.rows.read_rows`.
    level : float in (0, 1)
        Coverage of the intervals.

    Returns
    -------
    list of ConfigSummary
        The statistics of a configuration do not depend on the order of its
        rows (they are read in the order of their ``eps`` and ``seed``), so a
        resumed sweep, whose rows file holds them in the order they completed,
        summarises to the same floats as an uninterrupted one.

    See Also
    --------
    sspgm.validation.format_summary : the report of a summary.

    Examples
    --------
    >>> from sspgm.validation import Sweep, run_sweep
    >>> sweep = Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1))
    >>> rows = run_sweep(sweep, n_jobs=1, progress=False)
    >>> (config,) = summarize(rows)
    >>> config.runs, config.failures, config.n_eps
    (4, 0, 2)
    """
    groups = {}
    for row in rows:
        groups.setdefault(row.config, []).append(row)
    out = []
    for config, members in groups.items():
        fields = dict(zip(CONFIG_COLUMNS, config))
        ran = sorted((row for row in members if row.exception is None),
                     key=lambda row: (-row.eps, row.seed))
        statistics = _statistics(ran, fields["delta"], level)
        limit = SLOPE_LIMITS[fields["theta"] is not None]
        slope = theorem_slope(ran[0], [row.eps for row in ran]) if ran else math.nan
        out.append(ConfigSummary(
            **fields,
            runs=len(ran),
            errors=len(members) - len(ran),
            **statistics,
            slope_limit=limit,
            theorem_slope=slope,
            runs_needed=runs_to_test(fields["delta"], level),
            failed=_failed(statistics, limit, slope, fields["delta"]),
        ))
    return out
