"""The text report of a sweep: a fixed-width table, its legend, and the runs to look at."""

import textwrap

from .statistics import SLOPE_LIMITS, SLOPE_TOLERANCE, above_bound, runs_to_test

__all__ = ["SUMMARY_LEGEND", "WIDTH", "format_summary"]

SUMMARY_LEGEND = (
    "One block per instance and algorithm, one line per delta. check: pass, or FAIL and the "
    "codes of the failed checks: r (rate: the failure rate's interval lies above delta), t "
    "(total: a run used more calls than its explicit total), s (slope: the slope's interval "
    f"lies above thm by more than {SLOPE_TOLERANCE:g}). runs: runs that returned a policy; "
    "raised: runs that raised (listed below, left out of the statistics); fail: runs that fail "
    "the theorem (the policy misses the guarantee, or the calls exceed the theorem's total, "
    ">thm); unc: runs whose certificate, on their own samples, does not prove eps-optimality; "
    "err/eps: the largest error in units of eps (a failure above 1). CP 95%: the Clopper-Pearson "
    "interval of the failure rate fail / runs (the guarantee: rate <= delta); *: the interval "
    "reaches above delta, too wide to test it (a record without failure tests delta from {need} "
    "runs on). N/total: the largest calls over the run's explicit total (at its own final "
    "guesses); >1: runs above it (listed below); >thm: runs above the theorem's total (Thm. 1 "
    "or 2 at the instance's B* and D), counted in fail. slope: of log(calls) against "
    "log(1/eps) over all runs, with its interval; @Dmax: over the runs that stopped at the "
    "largest guess Delta; thm: the slope of the theorem's total on the same accuracies (the "
    f"limit, {SLOPE_LIMITS[False]:g} for Thm. 1 and {SLOPE_LIMITS[True]:g} for Thm. 2, with "
    "this grid's logarithms). Thm. 1 bounds the calls from above: a steep slope with a flat "
    "@Dmax comes from runs that stopped at smaller guesses at the larger accuracies."
)
"""Printed under :func:`format_summary`'s table."""

WIDTH = 100
"""The most characters a line of :func:`format_summary`'s table takes."""

_COLUMNS = (
    ("delta", 5), ("check", 8), ("runs", 4), ("raised", 6), ("fail", 4), ("unc", 3),
    ("err/eps", 7), ("CP 95%", 12), ("N/total", 7), (">1", 2), (">thm", 4),
    ("slope [95%]", 16), ("@Dmax", 5), ("thm", 4),
)


def _interval(interval):
    return f"{interval.value:.2f} [{interval.low:.2f},{interval.high:.2f}]"


def _run(row):
    theta = "" if row.theta is None else f" theta={row.theta:g}"
    return (f"{row.instance} {row.backend}{theta} alpha={row.alpha:g} eps={row.eps:g} "
            f"delta={row.delta:g} seed={row.seed}")


def _heading(s):
    algorithm = ("Alg. 1, Thm. 1: slope limit 2" if s.theta is None
                 else f"Alg. 3, theta = {s.theta:g}, Thm. 2: slope limit 3")
    return f"{s.instance} ({algorithm}; {s.backend}, alpha = {s.alpha:g})"


def _cells(s):
    wide = "*" if s.failure.high > s.delta else " "
    return (
        f"{s.delta:g}", s.verdict, s.runs, s.errors, s.failures, s.uncertified,
        f"{s.error_over_eps_max:.2g}", f"[{s.failure.low:.2f},{s.failure.high:.2f}]{wide}",
        f"{s.calls_over_bound_max:.3f}", s.above_bound, s.above_theorem, _interval(s.slope),
        f"{s.settled_slope.value:.2f}", f"{s.theorem_slope:.2f}",
    )


def _line(cells):
    return " ".join(f"{cell:<{width}}" if name == "check" else f"{cell:>{width}}"
                    for (name, width), cell in zip(_COLUMNS, cells)).rstrip()


def _table(summary):
    header = _line([name for name, _ in _COLUMNS])
    lines = [header, "-" * len(header)]
    block = None
    for s in summary:
        key = (s.instance, s.theta, s.backend, s.alpha)
        if key != block:
            block = key
            lines.append(_heading(s))
        lines.append(_line(_cells(s)))
    return lines


def format_summary(summary, rows):
    """The summary as a text report.

    Parameters
    ----------
    summary : sequence of ConfigSummary
        From :func:`~sspgm.validation.statistics.summarize`.
    rows : sequence of Row
        The rows summarised, to list the runs above their explicit total and
        the runs that raised.

    Returns
    -------
    str
        A table at most :data:`WIDTH` characters wide (a heading per instance
        and algorithm, one line per configuration, with its verdict), its
        legend, the runs whose calls exceed their explicit total, and the runs
        that raised.

    See Also
    --------
    sspgm.validation.summarize : the summary.

    Examples
    --------
    >>> from sspgm.validation import Sweep, run_sweep
    >>> sweep = Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1))
    >>> rows = run_sweep(sweep, n_jobs=1, progress=False)
    >>> from sspgm.validation import summarize
    >>> "tradeoff" in format_summary(summarize(rows), rows)
    True
    """
    deltas = sorted({s.delta for s in summary})
    need = ", ".join(f"{runs_to_test(d)} (delta = {d:g})" for d in deltas) or "-"
    legend = textwrap.wrap(SUMMARY_LEGEND.format(need=need), WIDTH)
    lines = _table(summary) + [""] + legend + [""]
    over = above_bound(rows)
    if over:
        lines.append(f"{len(over)} run(s) above their explicit total:")
        lines += [f"  {_run(row)}: calls/bound = {row.calls_over_bound:.4g}" for row in over]
    else:
        lines.append("No run used more calls than its explicit total.")
    raised = [row for row in rows if row.exception is not None]
    if raised:
        lines.append(f"{len(raised)} run(s) raised:")
        lines += [f"  {_run(row)}: {row.exception}" for row in raised]
    return "\n".join(lines)
