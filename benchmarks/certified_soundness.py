"""Certified answers checked against exact values: how many are wrong, over many seeds.

Runs ``solve_certified`` (fast backend, default mixture boxes) on seven instances, for every
seed, at ``delta`` = 0.1 and 0.5, stopping on the values (``target="value"``) and on the
policy (``target="policy"``), and checks every certified answer exactly:

- ``lower <= V*`` and ``upper >= V^pi`` in every state (``optimal_values``,
  ``policy_values``);
- the policy's error: ``max (V^pi - V*) <= eps``, or ``V^pi <= (1 + eps) V*`` when relative.

A run whose answer fails one of them is wrong. The guarantee allows a share ``delta`` of
wrong answers; the boxes are conservative, so 0 is what we expect to see.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/certified_soundness.py [N_SEEDS] [--target value|policy]

It prints one row per instance, delta and target: runs, certified, wrong, median calls.
"""

import argparse
import sys
import time
import warnings

import numpy as np

import fast

TOLERANCE = 1e-9
"""Relative slack of the exact comparisons (the exact solvers' own accuracy is 1e-10)."""


def one_state_trap():
    """One state: a cost-0.5 self-loop reaching the goal w.p. 0.01, a cost-1 exit w.p. 0.05."""
    return fast.SSP(np.array([[[0.99, 0.01], [0.95, 0.05]]]), np.array([[0.5, 1.0]]),
                    name="one-state trap")


def instances():
    """``(label, ssp, eps, relative)`` of the seven instances."""
    return [
        ("gridworld", fast.gridworld(), 0.5, False),
        ("chain", fast.chain(), 0.5, False),
        ("garnet(10,3,3)", fast.garnet(10, 3, 3), 0.2, False),
        ("tradeoff", fast.tradeoff(), 0.1, False),
        ("trap(r=0.3)", fast.trap(r=0.3), 0.5, False),
        ("trap, relative", fast.trap(), 0.1, True),
        ("one-state trap", one_state_trap(), 1.0, False),
    ]


def is_wrong(ssp, res, eps, relative, exact):
    """Whether a certified result's answer fails an exact check (see the module docstring)."""
    value = fast.policy_values(ssp, res.policy)
    cert = res.certificate
    scale = TOLERANCE * np.maximum(1.0, np.abs(exact))
    if (cert.lower > exact + scale).any() or (cert.upper < value - scale).any():
        return True
    if relative:
        if (value > (1 + eps) * exact + scale).any():
            return True
    return bool((value - exact).max() > eps + scale.max())


def sweep(n_seeds, deltas, targets, out=sys.stdout):
    """Run the sweep; return the total number of wrong certified answers."""
    total_wrong = 0
    print("| instance | eps | delta | target | runs | certified | wrong | median calls |",
          file=out)
    print("| --- | --- | --- | --- | --- | --- | --- | --- |", file=out)
    for label, ssp, eps, relative in instances():
        exact = fast.optimal_values(ssp).values
        for delta in deltas:
            for target in targets:
                calls, certified, wrong = [], 0, 0
                for seed in range(n_seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = fast.solve_certified(ssp, ssp.costs, eps, delta,
                                                   relative=relative, seed=seed, target=target)
                    calls.append(res.n_calls)
                    if res.certified:
                        certified += 1
                        wrong += is_wrong(ssp, res, eps, relative, exact)
                total_wrong += wrong
                print(f"| {label} | {eps:g} | {delta:g} | {target} | {n_seeds} | {certified} "
                      f"| {wrong} | {int(np.median(calls)):,} |", file=out, flush=True)
    return total_wrong


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n_seeds", nargs="?", type=int, default=100)
    parser.add_argument("--target", choices=("value", "policy"), action="append")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    wrong = sweep(args.n_seeds, (0.1, 0.5), tuple(args.target or ("value", "policy")))
    print(f"wrong certified answers: {wrong} ({time.perf_counter() - start:.0f} s)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
