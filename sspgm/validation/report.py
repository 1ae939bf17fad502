"""The text report of a sweep: a fixed-width table, its legend, and the runs to look at."""

import textwrap

from .statistics import above_bound

__all__ = ["SUMMARY_LEGEND", "format_summary"]

SUMMARY_LEGEND = (
    "runs: runs that returned a policy; raised: runs that raised (listed below, left out of the "
    "statistics). unc: runs whose certificate, on their own samples, does not prove "
    "eps-optimality. rate: failures / runs, Clopper-Pearson interval (the guarantee: <= delta). "
    "err/eps: the largest error in units of eps (a failure above 1). calls/bound: calls over the "
    "run's explicit total, mean (max); >1: runs above it (listed below). slope: of log(calls) "
    "against log(1/eps) over all runs; @Dmax: over the runs that stopped at the largest Delta; "
    "bound: the explicit totals' slope; max: Thm. 1 (2) or Thm. 2 (3), logarithms dropped."
)
"""Printed under :func:`format_summary`'s table."""


def _interval(interval):
    return f"{interval.value:.2f} [{interval.low:.2f},{interval.high:.2f}]"


def _run(row):
    theta = "" if row.theta is None else f" theta={row.theta:g}"
    return (f"{row.instance} {row.backend}{theta} alpha={row.alpha:g} eps={row.eps:g} "
            f"delta={row.delta:g} seed={row.seed}")


def _table(summary):
    width = max([len("instance")] + [len(s.instance) for s in summary])
    header = (
        f"{'instance':<{width}} {'backend':<9} {'theta':>5} {'delta':>5} {'runs':>4} "
        f"{'raised':>6} {'fail':>4} {'unc':>4} {'rate [CP 95%]':>20} {'err/eps':>8} "
        f"{'calls/bound':>16} {'>1':>3} {'slope [95%]':>22} {'@Dmax [95%]':>22} "
        f"{'bound':>5} {'max':>3}"
    )
    lines = [header, "-" * len(header)]
    for s in summary:
        theta = "-" if s.theta is None else f"{s.theta:g}"
        ratio = f"{s.calls_over_bound_mean:.3f} (max {s.calls_over_bound_max:.3f})"
        lines.append(
            f"{s.instance:<{width}} {s.backend:<9} {theta:>5} {s.delta:>5g} {s.runs:>4} "
            f"{s.errors:>6} {s.failures:>4} {s.uncertified:>4} {_interval(s.failure):>20} "
            f"{s.error_over_eps_max:>8.2g} {ratio:>16} {s.above_bound:>3} "
            f"{_interval(s.slope):>22} {_interval(s.settled_slope):>22} "
            f"{s.bound_slope:>5.2f} {s.slope_limit:>3g}"
        )
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
        A fixed-width table (one line per configuration), its legend, the runs
        whose calls exceed their explicit total, and the runs that raised.

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
    lines = _table(summary) + [""] + textwrap.wrap(SUMMARY_LEGEND, 100) + [""]
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
