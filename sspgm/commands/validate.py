"""``sspgm validate``: check the theorems on real instances.

Runs ``solve`` over instances x eps x delta x seeds (x backend, x theta for
Alg. 3), evaluates every policy exactly, appends one row per run to a CSV
file (runs it already records are skipped, so an interrupted sweep resumes),
and prints one summary line per configuration: the failure rate with its
Clopper-Pearson interval against delta, calls over the explicit bound, and
the log-log slope of calls against 1/eps. Without --instances it runs the
standard sweep (sspgm.validation.STANDARD_SWEEPS); the other grid options
override the standard values.
"""

import dataclasses

from sspgm import BACKENDS
from sspgm.validation import STANDARD_SWEEPS, format_summary, run_sweep, summarize


def register(subparsers):
    """Add the ``validate`` parser to ``subparsers``."""
    p = subparsers.add_parser(
        "validate",
        help="check the theorems on instances (sweep, summary, plots)",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("--instances", nargs="+", metavar="SPEC",
                   help="instance specs NAME or NAME:key=value,key=value "
                   "(e.g. garnet:n_states=6,n_actions=2,branching=2); default: the standard set")
    p.add_argument("--eps", nargs="+", type=float, help="accuracies (default 0.4 0.2 0.1)")
    p.add_argument("--delta", nargs="+", type=float, help="confidence levels (default 0.1)")
    p.add_argument("--seeds", type=int, help="number of seeds per configuration (default 5)")
    p.add_argument("--theta", nargs="+", type=_theta,
                   help="theta values for Alg. 3; `none` runs Alg. 1 (default none)")
    p.add_argument("--backend", nargs="+", choices=BACKENDS, help="backends (default reference)")
    p.add_argument("--alpha", type=float, help="constant of the allocation function (default 1)")
    p.add_argument("--csv", default="validation.csv",
                   help="rows file, appended to and resumed from (default validation.csv)")
    p.add_argument("--plot", metavar="DIR", help="write calls.png, failures.png, diameter.png here")
    p.add_argument("--jobs", type=int, default=-1,
                   help="local worker processes (default -1: one per core; 1: no subprocess)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster, e.g. tcp://10.0.0.1:8786")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(run=run)


def _theta(text):
    return None if text.lower() == "none" else float(text)


def _sweeps(args):
    """The standard sweeps, or one sweep over ``--instances``, with the given overrides."""
    overrides = {
        "eps": args.eps,
        "deltas": args.delta,
        "seeds": None if args.seeds is None else range(args.seeds),
        "thetas": args.theta,
        "backends": args.backend,
    }
    overrides = {k: tuple(v) for k, v in overrides.items() if v is not None}
    if args.alpha is not None:
        overrides["alpha"] = args.alpha
    if args.instances:
        base = dataclasses.replace(STANDARD_SWEEPS[0], instances=tuple(args.instances))
        return [dataclasses.replace(base, **overrides)]
    return [dataclasses.replace(sweep, **overrides) for sweep in STANDARD_SWEEPS]


def run(args):
    """Run the sweep, print the summary, optionally plot; returns the exit status."""
    rows = run_sweep(
        _sweeps(args), csv_path=args.csv, n_jobs=args.jobs, scheduler=args.scheduler,
        progress=not args.no_progress,
    )
    print(format_summary(summarize(rows)))
    print(f"\n{len(rows)} runs; rows in {args.csv}")
    if args.plot:
        from sspgm.plots import plot_all

        for path in plot_all(rows, args.plot):
            print(f"wrote {path}")
    return 0
