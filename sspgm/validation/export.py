"""The summary of a sweep as JSON (``sspgm validate --json``).

The record holds what :func:`~sspgm.validation.report.format_summary` prints,
with every number at full precision: one object per configuration (its
verdict, failure rate, calls and slopes), the runs above their explicit total
and the runs that raised. It is written by the writer of every ``--json``
document (:mod:`sspgm._json`), with the same conventions: it starts with
``schema_version``, ``command`` (``"validate"``) and ``sspgm_version``, and
numbers JSON cannot hold (a slope from one accuracy, the rate of a
configuration without runs) are the strings ``"nan"``, ``"inf"`` or
``"-inf"``. The schema is described field by field in docs/validate.md
("The JSON summary"); a field is never renamed or given another meaning
without a new ``schema_version``.
"""

import math

from sspgm._json import SCHEMA_VERSIONS, dumps, envelope, to_json

from .statistics import CHECKS, above_bound

__all__ = ["summary_record", "summary_json"]


def _interval(interval):
    return {"value": interval.value, "low": interval.low, "high": interval.high}


def _run(row):
    return {"instance": row.instance, "backend": row.backend, "theta": row.theta,
            "alpha": row.alpha, "eps": row.eps, "delta": row.delta, "seed": row.seed}


def _configuration(s):
    return {
        "instance": s.instance,
        "algorithm": "Alg. 1" if s.theta is None else "Alg. 3",
        "theorem": "Thm. 1" if s.theta is None else "Thm. 2",
        "backend": s.backend,
        "theta": s.theta,
        "alpha": s.alpha,
        "delta": s.delta,
        "verdict": "pass" if not s.failed else "fail",
        "failed": list(s.failed),
        "runs": s.runs,
        "raised": s.errors,
        "failures": s.failures,
        "uncertified": s.uncertified,
        "failure_rate": _interval(s.failure),
        "interval_tests_delta": (None if math.isnan(s.failure.high)
                                 else bool(s.failure.high <= s.delta)),
        "runs_needed": s.runs_needed,
        "error_over_eps_max": s.error_over_eps_max,
        "calls_over_total": {"mean": s.calls_over_bound_mean,
                             "max": s.calls_over_bound_max},
        "above_total": s.above_bound,
        "above_theorem_total": s.above_theorem,
        "accuracies": s.n_eps,
        "slope": _interval(s.slope),
        "settled_slope": _interval(s.settled_slope),
        "Delta_max": s.Delta_max,
        "total_slope": s.bound_slope,
        "slope_limit": s.slope_limit,
        "theorem_slope": s.theorem_slope,
    }


def summary_record(summary, rows, level=0.95):
    """The summary of a sweep as the JSON document's data (a dict of plain JSON values).

    Parameters
    ----------
    summary : sequence of ConfigSummary
        From :func:`~sspgm.validation.statistics.summarize` at ``level``.
    rows : sequence of Row
        The rows summarised.
    level : float, default 0.95
        The coverage ``summary`` was computed at.

    Returns
    -------
    dict
        ``schema_version``, ``command``, ``sspgm_version``, ``level``, ``checks``
        (code -> rule), ``runs``, ``raised``, ``verdict`` (``"pass"`` when every
        configuration passes), ``configurations``, ``above_total`` and ``raised_runs``
        (docs/validate.md lists every field).

    Examples
    --------
    >>> from sspgm.validation import Row, summarize
    >>> rows = [Row("tradeoff", "fast", None, 1.0, 0.1, 0.1, 0, success=True, error=0.0,
    ...             calls=10, bound=10.0, calls_over_bound=1.0, uncertified=False,
    ...             Delta_final=1.0)]
    >>> record = summary_record(summarize(rows), rows)
    >>> record["command"], record["verdict"], record["configurations"][0]["runs_needed"]
    ('validate', 'pass', 36)
    >>> record["configurations"][0]["slope"]["value"]
    'nan'
    """
    configurations = [_configuration(s) for s in summary]
    return to_json({
        **envelope("validate", SCHEMA_VERSIONS["validate"]),
        "level": level,
        "checks": dict(CHECKS),
        "runs": len(rows),
        "raised": sum(row.exception is not None for row in rows),
        "verdict": "pass" if all(c["verdict"] == "pass" for c in configurations) else "fail",
        "configurations": configurations,
        "above_total": [dict(_run(row), calls_over_total=row.calls_over_bound)
                        for row in above_bound(rows)],
        "raised_runs": [dict(_run(row), exception=row.exception)
                        for row in rows if row.exception is not None],
    })


def summary_json(summary, rows, level=0.95):
    """:func:`summary_record` as JSON text (indented; strict JSON, without ``NaN`` tokens).

    Parameters
    ----------
    summary : sequence of ConfigSummary
    rows : sequence of Row
    level : float, default 0.95

    Returns
    -------
    str

    Examples
    --------
    >>> import json
    >>> from sspgm.validation import summarize
    >>> from sspgm.validation import Sweep, run_sweep
    >>> rows = run_sweep(Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1)),
    ...                  n_jobs=1, progress=False)
    >>> document = json.loads(summary_json(summarize(rows), rows))
    >>> len(document["configurations"])
    1
    """
    return dumps(summary_record(summary, rows, level), indent=1)
