"""The validation harness: run the algorithms on real instances and check the theorems.

A sweep runs ``solve`` over instances x accuracies x confidence levels x
seeds (x backends, x ``theta`` for Alg. 3), evaluates every returned policy
exactly, and records one row per run. The harness is split by responsibility:

* :mod:`~sspgm.validation.spec` -- what to run (:class:`RunSpec`,
  :class:`Sweep`, :data:`STANDARD_SWEEPS`) and :func:`check_runs`;
* :mod:`~sspgm.validation.rows` -- :class:`Row`, the CSV schema, and the
  append-only rows file :class:`RowLog`;
* :mod:`~sspgm.validation.runner` -- :func:`run_one` and :func:`run_sweep`;
* :mod:`~sspgm.validation.statistics` -- :func:`summarize` and its estimators;
* :mod:`~sspgm.validation.theorem` -- the theorems' totals for a configuration;
* :mod:`~sspgm.validation.report` -- :func:`format_summary`, the text summary;
* :mod:`~sspgm.validation.export` -- :func:`summary_json`, the JSON summary.

The names below are imported from those modules on first use, so that
``import sspgm.validation.spec`` (for the command line's help) stays light.
"""

import importlib

_EXPORTS = {
    "spec": ("RunSpec", "Sweep", "STANDARD_SWEEPS", "parse_instance", "as_runs", "check_runs"),
    "rows": ("Row", "COLUMNS", "KEY_COLUMNS", "CONFIG_COLUMNS", "TIMING_COLUMNS", "RowLog",
             "read_rows", "posix_lock"),
    "runner": ("run_one", "run_sweep"),
    "statistics": ("Interval", "ConfigSummary", "SLOPE_LIMITS", "SLOPE_TOLERANCE", "CHECKS",
                   "failure_interval", "runs_to_test", "loglog_slope", "theorem_slope",
                   "above_bound", "summarize"),
    "report": ("SUMMARY_LEGEND", "WIDTH", "format_summary"),
    "export": ("summary_json", "summary_record"),
    "theorem": ("theorem_total", "diameter_total", "fails_theorem"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = list(_MODULE_OF)


def __getattr__(name):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
