"""Calls of ``solve_certified`` over the instance lower bound: how far from what no method can beat.

Usage (from the repository root, after building the extensions)::

    OMP_NUM_THREADS=1 python benchmarks/calls_over_lower_bound.py [--seeds 10] [--json out.json]

For each instance: the median calls of ``fast.solve_certified`` over the seeds
(``eps``, ``delta = 0.1``, default options), and ``instance_lower_bound`` for
both targets (docs/lower-bound.md): any method whose answer pins ``V*`` to
within ``eps / 2`` (``value``), or returns an eps-optimal policy (``policy``),
needs at least that many calls in expectation. Calls are counted, not timed, so
the numbers do not depend on the machine.
"""

import argparse
import json
import sys

import numpy as np

import fast as sspgm

DELTA = 0.1


def instances():
    """``(label, ssp, eps)``."""
    return [
        ("gridworld", sspgm.gridworld(), 0.1),
        ("chain", sspgm.chain(), 0.1),
        ("garnet(20, 4, 5)", sspgm.garnet(20, 4, 5, seed=0), 0.1),
        ("tradeoff", sspgm.tradeoff(), 0.05),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--json", default=None, help="write the rows to this file")
    args = parser.parse_args(argv)
    rows = []
    print(f"{'instance':18s} {'eps':>5s} {'median calls':>13s} {'LB value':>10s} "
          f"{'calls/LB':>9s} {'LB policy':>10s} {'calls/LB':>9s}")
    for label, ssp, eps in instances():
        calls = [sspgm.solve_certified(ssp, ssp.costs, eps, DELTA, seed=seed).n_calls
                 for seed in range(args.seeds)]
        median = float(np.median(calls))
        value = sspgm.instance_lower_bound(ssp, eps, DELTA, target="value").bound
        policy = sspgm.instance_lower_bound(ssp, eps, DELTA, target="policy").bound
        row = {"instance": label, "eps": eps, "delta": DELTA, "median_calls": median,
               "lower_bound_value": value, "lower_bound_policy": policy,
               "calls_over_value": median / value,
               "calls_over_policy": median / policy if policy > 0 else None}
        rows.append(row)
        over_policy = f"{median / policy:9.0f}" if policy > 0 else f"{'-':>9s}"
        print(f"{label:18s} {eps:5g} {median:13.0f} {value:10.0f} {median / value:9.0f} "
              f"{policy:10.0f} {over_policy}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
