"""``sspgm validate``: check the theorems on real instances.

Runs solve over instances x eps x delta x seeds (x theta for Alg. 3),
evaluates every policy exactly, and writes into the --out directory: the
rows file (one row per run, appended as runs complete; a sweep restarted on
the same directory runs only what is missing), summary.txt (one line per
configuration: the failure rate with its Clopper-Pearson interval against
delta, calls over the explicit total, the log-log slope of calls against
1/eps and a pass/fail verdict), summary.json with --json, and the plots.
Without --instances it runs the standard sweeps (their gymnasium instances
are skipped, with a notice, when gymnasium is not installed); the other grid
options override their values. The rows file is locked with flock, so
the command needs a POSIX system (Linux, macOS).
"""

import argparse
import dataclasses
import importlib.util
import os
import sys
import time

from sspgm import BACKENDS
from sspgm.cli import default_backend, import_extra
from sspgm.instance_help import BUILDERS
from sspgm.plain_text import plain
from sspgm.validation.spec import STANDARD_SWEEPS

ROWS_FILE = "validation.csv"
SUMMARY_FILE = "summary.txt"
JSON_FILE = "summary.json"

GYM_INSTANCES = tuple(name for name, (module, _) in BUILDERS.items()
                      if module == "sspgm.gym_adapter")
"""The instances built from gymnasium's tables (the ``gym`` extra)."""


def _values(name, sweeps=STANDARD_SWEEPS):
    """The values of the field ``name`` in ``sweeps``, as the help shows them."""
    values = dict.fromkeys(v for sweep in sweeps for v in getattr(sweep, name))
    return " ".join("none" if v is None else f"{v:g}" for v in values)


def register(subparsers):
    """Add the ``validate`` parser to ``subparsers``."""
    standard = STANDARD_SWEEPS[0]
    p = subparsers.add_parser(
        "validate",
        help="check the theorems on instances (sweep, summary, plots)",
        description=plain(__doc__.split("\n\n")[1]),
    )
    p.add_argument("--instances", nargs="+", metavar="SPEC",
                   help="instance specs NAME or NAME:key=value,key=value "
                   "(e.g. garnet:n_states=6,n_actions=2,branching=2); default: the standard "
                   f"sweeps, Alg. 1 on {' '.join(standard.instances)} and Alg. 3 (theta "
                   f"{_values('thetas', STANDARD_SWEEPS[1:])}) on "
                   f"{' '.join(STANDARD_SWEEPS[1].instances)}")
    p.add_argument("--eps", nargs="+", type=float, help=f"accuracies (default {_values('eps')})")
    p.add_argument("--delta", nargs="+", type=float,
                   help=f"confidence levels (default {_values('deltas')})")
    p.add_argument("--seeds", type=_positive,
                   help=f"number of seeds per configuration (default {len(standard.seeds)})")
    p.add_argument("--theta", nargs="+", type=_theta,
                   help="theta values for Alg. 3; `none` runs Alg. 1 (default: as the standard "
                   "sweeps, or none with --instances)")
    p.add_argument("--backend", nargs="+", choices=BACKENDS,
                   help="backends (default fast when its compiled extension is built, else "
                   "reference)")
    p.add_argument("--alpha", type=float,
                   help=f"constant of the allocation function (default {standard.alpha:g})")
    p.add_argument("--out", metavar="DIR",
                   help=f"directory for {ROWS_FILE}, {SUMMARY_FILE} and the plots; an existing "
                   "one resumes its sweep (default: a new directory sspgm-validation-DATE-TIME "
                   "under the current one)")
    p.add_argument("--csv", metavar="FILE",
                   help=f"rows file, appended to and resumed from (default OUT/{ROWS_FILE})")
    p.add_argument("--json", action="store_true",
                   help=f"also write the summary as JSON into OUT/{JSON_FILE} (schema in "
                   "docs/validate.md)")
    p.add_argument("--no-plot", action="store_true",
                   help="skip the plots (calls.png, calls_over_bound.png, failures.png, "
                   "diameter.png)")
    p.add_argument("--jobs", type=_jobs, default=-1,
                   help="local worker processes (default -1: one per core; 1: no subprocess)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster, e.g. tcp://10.0.0.1:8786")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.set_defaults(run=run)


def _positive(text):
    """An integer >= 1, or the ``argparse`` error that names the option."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {value}")
    return value


def _jobs(text):
    """``-1`` or an integer >= 1."""
    value = int(text)
    if value != -1 and value < 1:
        raise argparse.ArgumentTypeError(f"must be -1 (one per core) or >= 1; got {value}")
    return value


def _theta(text):
    return None if text.lower() == "none" else float(text)


def _gymnasium_missing():
    """True when gymnasium cannot be found (the ``gym`` extra is not installed)."""
    try:
        return importlib.util.find_spec("gymnasium") is None
    except (ImportError, ValueError):
        return True


def _without_gym(sweeps):
    """``sweeps`` without their gymnasium instances, and the names left out.

    A sweep left with no instance is dropped.
    """
    kept, skipped = [], []
    for sweep in sweeps:
        names = tuple(i for i in sweep.instances if i.partition(":")[0] not in GYM_INSTANCES)
        skipped += [i for i in sweep.instances if i not in names and i not in skipped]
        if names:
            kept.append(dataclasses.replace(sweep, instances=names))
    return kept, skipped


def _sweeps(args, backends):
    """The standard sweeps, or one sweep over ``--instances``, with the given overrides.

    Without ``--instances`` and without gymnasium, the standard sweeps' gymnasium
    instances are left out with a one-line notice on stderr (instances named
    with ``--instances`` are never left out: a missing extra is then an error).
    """
    overrides = {
        "eps": args.eps,
        "deltas": args.delta,
        "seeds": None if args.seeds is None else range(args.seeds),
        "thetas": args.theta,
        "backends": backends,
    }
    overrides = {k: tuple(v) for k, v in overrides.items() if v is not None}
    if args.alpha is not None:
        overrides["alpha"] = args.alpha
    if args.instances:
        base = dataclasses.replace(STANDARD_SWEEPS[0], instances=tuple(args.instances))
        return [dataclasses.replace(base, **overrides)]
    sweeps = [dataclasses.replace(sweep, **overrides) for sweep in STANDARD_SWEEPS]
    if _gymnasium_missing():
        sweeps, skipped = _without_gym(sweeps)
        if skipped:
            print(f"note: gymnasium is not installed, so the standard sweep skips "
                  f"{', '.join(skipped)} (`pip install 'sspgm[gym]'` runs them).",
                  file=sys.stderr, flush=True)
    return sweeps


def _import_extras(args):
    """Import the optional modules this invocation needs, or fail naming the extra to install."""
    needed = []
    if not args.no_progress:
        needed.append(("tqdm.auto", "validate"))
    if not args.no_plot:
        needed.append(("matplotlib.figure", "validate"))
    if args.scheduler:
        needed += [("joblib", "validate"), ("dask.distributed", "dask")]
    for module, extra in needed:
        import_extra(module, extra)


def _new_directory():
    """Create and return a new directory ``sspgm-validation-DATE-TIME[-N]`` under the current one."""
    stem = time.strftime("sspgm-validation-%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        path = stem if n == 1 else f"{stem}-{n}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"every directory {stem}-N under {os.getcwd()} exists")


def run(args):
    """Run the sweep, write the rows, summary and plots; returns the exit status."""
    _import_extras(args)
    from sspgm.validation import (check_runs, format_summary, posix_lock, run_sweep, summarize,
                                  summary_json)

    posix_lock()

    backends = " ".join(args.backend or [default_backend(None)])
    runs = check_runs(_sweeps(args, backends.split()))
    out = args.out or _new_directory()
    os.makedirs(out, exist_ok=True)
    csv_path = args.csv or os.path.join(out, ROWS_FILE)
    print(f"{len(runs)} runs on {backends}; writing into {out}", flush=True)
    rows = run_sweep(runs, csv_path=csv_path, n_jobs=args.jobs, scheduler=args.scheduler,
                     progress=not args.no_progress)
    summary = summarize(rows)
    report = format_summary(summary, rows)
    summary_path = os.path.join(out, SUMMARY_FILE)
    with open(summary_path, "w") as handle:
        handle.write(f"{report}\n\n{len(rows)} runs on {backends}.\n")
    print(report)
    print(f"\n{len(rows)} runs; rows in {csv_path}; summary in {summary_path}")
    if args.json:
        json_path = os.path.join(out, JSON_FILE)
        with open(json_path, "w") as handle:
            handle.write(summary_json(summary, rows) + "\n")
        print(f"JSON summary in {json_path}")
    if not args.no_plot:
        from sspgm.plots import plot_all

        for path in plot_all(rows, out):
            print(f"wrote {path}")
    return 0
