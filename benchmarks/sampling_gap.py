"""The relative gap of ``fast.solve_certified`` against its calls, round by round.

Usage (from the repository root, after building the extensions)::

    OMP_NUM_THREADS=1 python benchmarks/sampling_gap.py exit_grid 40 40 4 0.6 --budget 4e6
    OMP_NUM_THREADS=1 python benchmarks/sampling_gap.py garnet 2000 4 3 --sparse --seed 1 \\
        --budget 3e7 --sampling adaptive uniform
    OMP_NUM_THREADS=1 python benchmarks/sampling_gap.py gridworld --eps 0.1

The instance is ``reference.exit_grid(rows, cols, spacing, success)``,
``reference.garnet(S, A, branching, seed=, sparse=)`` or ``reference.gridworld()``.
Each sampling runs ``fast.solve_certified`` (relative ``--eps``, default 0.5, ``delta = 0.1``,
run seed ``--run-seed``, default 0, until certified or ``--budget`` calls) and prints its
calls, whether it certified, and the relative gap at five rounds (the first, the quartiles,
the last) as ``calls:gap``. Calls are counted, not timed. The adaptive sampling's rule is the
one of the checked-out commit: compare commits by running the script on each.
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fast  # noqa: E402
import reference  # noqa: E402


def instance(args):
    """The SSP the arguments name."""
    if args.kind == "exit_grid":
        rows, cols, spacing, success = args.params
        return reference.exit_grid(int(rows), int(cols), spacing=int(spacing),
                                   success=float(success))
    if args.kind == "garnet":
        S, A, branching = (int(p) for p in args.params)
        return reference.garnet(S, A, branching, seed=args.seed, sparse=args.sparse)
    return reference.gridworld()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["exit_grid", "garnet", "gridworld"])
    parser.add_argument("params", nargs="*", help="the instance's numbers, in its order")
    parser.add_argument("--seed", type=int, default=0, help="the garnet's seed")
    parser.add_argument("--sparse", action="store_true", help="a sparse garnet")
    parser.add_argument("--eps", type=float, default=0.5)
    parser.add_argument("--budget", type=float, default=None)
    parser.add_argument("--run-seed", type=int, default=0)
    parser.add_argument("--sampling", nargs="+", default=["adaptive"],
                        choices=["adaptive", "uniform"])
    args = parser.parse_args(argv)
    ssp = instance(args)
    budget = None if args.budget is None else int(args.budget)
    for sampling in args.sampling:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", reference.NotCertifiedWarning)
            res = fast.solve_certified(ssp, ssp.costs, args.eps, 0.1, relative=True,
                                       budget=budget, seed=args.run_seed, sampling=sampling)
        history = res.history
        picks = sorted({0, len(history) // 4, len(history) // 2, 3 * len(history) // 4,
                        len(history) - 1})
        print(f"{args.kind} {' '.join(args.params)} S={ssp.n_states} {sampling}: "
              f"certified {res.certified}, {res.n_calls:,} calls | "
              + " ".join(f"{history[i].n_calls:,}:{history[i].relative_gap:.3g}"
                         for i in picks), flush=True)


if __name__ == "__main__":
    main()
