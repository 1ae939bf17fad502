"""Certified answers checked against exact values: how many are wrong, over many seeds.

Runs ``solve_certified`` (fast backend, default mixture boxes) for every seed on fifteen
small configurations (absolute and relative accuracy, with and without ``theta``; the
exit-or-chain instance of docs/certified-soundness.md among them), at every ``delta``, stopping
on the values (``target="value"``) and on the policy (``target="policy"``; not offered with
``theta``), and checks every certified answer exactly against ``V = V*`` (``optimal_values``)
or, with ``theta``, ``V = V*_theta`` (``restricted_optimal_values``):

- the policy's values ``V^pi`` (``policy_values``) are finite (the policy is proper);
- the bracket: ``lower <= V`` and ``upper >= V^pi`` in every state;
- the policy's error: ``V^pi <= V + eps``, or ``V^pi <= (1 + eps) V`` when relative.

A certified run whose answer fails one of them is wrong. The guarantee allows a share
``delta`` of wrong answers; the boxes are conservative, so 0 is what we expect to see.
Uncertified runs (budget spent) are counted apart.

Usage (from the repository root, after building the extensions)::

    OMP_NUM_THREADS=1 python benchmarks/certified_soundness.py [--seeds 100]
        [--deltas 0.1 0.5] [--target value|policy ...]

``--target`` may be given twice (default: both). It prints one row per configuration, delta
and target (runs, certified, wrong, median calls, CPU seconds per run), then the wrong answers
(configuration, delta, target, seed and the checks failed) and their total; the exit status is
1 when any certified answer is wrong.
"""

import argparse
import sys
import time
import warnings

import numpy as np

import fast
from soundness_instances import exit_or_chain, one_state_trap

TOLERANCE = 1e-9
"""Relative slack of the exact comparisons (the exact solvers' own accuracy is 1e-10)."""


def configurations():
    """``(label, ssp, eps, options)``: the configurations of the sweep."""
    return [
        ("gridworld", fast.gridworld(), 0.5, {}),
        ("chain", fast.chain(), 0.5, {}),
        ("chain(4, 0.7)", fast.chain(4, 0.7), 0.5, {}),
        ("chain(4, 0.7) relative", fast.chain(4, 0.7), 0.3, {"relative": True}),
        ("garnet(10, 3, 3)", fast.garnet(10, 3, 3), 0.2, {}),
        ("garnet(4, 2, 2, seed=1)", fast.garnet(4, 2, 2, seed=1), 0.2, {}),
        ("tradeoff", fast.tradeoff(), 0.1, {}),
        ("tradeoff", fast.tradeoff(), 0.2, {}),
        ("trap(r=0.3)", fast.trap(r=0.3), 0.5, {}),
        ("trap relative", fast.trap(), 0.1, {"relative": True}),
        ("one-state trap", one_state_trap(fast), 1.0, {}),
        ("theta_example theta=5", fast.theta_example(), 0.2, {"theta": 5.0}),
        ("zero_cost_loop theta=5", fast.zero_cost_loop(), 0.5, {"theta": 5.0}),
        ("exit-or-chain relative theta=12", exit_or_chain(fast), 0.5,
         {"theta": 12.0, "relative": True, "budget": 400_000}),
        ("exit-or-chain relative theta=20", exit_or_chain(fast), 0.2,
         {"theta": 20.0, "relative": True, "budget": 400_000}),
    ]


def failed_checks(ssp, res, eps, relative, best):
    """The names of the exact checks a certified result fails (see the module docstring).

    ``best`` is ``V*`` or ``V*_theta``, shape ``(S,)``.
    """
    value = fast.policy_values(ssp, res.policy)
    if not np.isfinite(value).all():
        return ["proper"]
    cert = res.certificate
    slack = TOLERANCE * np.maximum(1.0, np.abs(best))
    failed = []
    if (cert.lower > best + slack).any():
        failed.append("lower <= V")
    if (cert.upper < value - slack).any():
        failed.append("upper >= V^pi")
    limit = (1.0 + eps) * best if relative else best + eps
    if (value > limit + slack).any():
        failed.append("relative error" if relative else "error")
    return failed


def sweep(n_seeds, deltas, targets, out=sys.stdout):
    """Run the sweep, printing its table; return the wrong answers as
    ``(label, eps, delta, target, seed, failed checks)``."""
    wrong_answers = []
    print("| instance | eps | delta | target | runs | certified | wrong | median calls | s/run |",
          file=out)
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", file=out)
    for label, ssp, eps, options in configurations():
        theta, relative = options.get("theta"), options.get("relative", False)
        best = (fast.optimal_values(ssp).values if theta is None
                else fast.restricted_optimal_values(ssp, theta).values)
        for delta in deltas:
            for target in targets:
                if theta is not None and target != "value":
                    continue
                calls, certified, wrong = [], 0, 0
                start = time.process_time()
                for seed in range(n_seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", fast.NotCertifiedWarning)
                        res = fast.solve_certified(ssp, ssp.costs, eps, delta, seed=seed,
                                                   target=target, **options)
                    calls.append(res.n_calls)
                    if res.certified:
                        certified += 1
                        failed = failed_checks(ssp, res, eps, relative, best)
                        if failed:
                            wrong += 1
                            wrong_answers.append((label, eps, delta, target, seed, failed))
                seconds = (time.process_time() - start) / n_seeds
                print(f"| {label} | {eps:g} | {delta:g} | {target} | {n_seeds} | {certified} "
                      f"| {wrong} | {int(np.median(calls)):,} | {seconds:.2f} |", file=out,
                      flush=True)
    return wrong_answers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds per row (default 100)")
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.1, 0.5],
                        help="confidence levels (default 0.1 0.5)")
    parser.add_argument("--target", choices=("value", "policy"), action="append",
                        help="stopping target, may be repeated (default: both)")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1; got {args.seeds}")
    start = time.perf_counter()
    targets = tuple(dict.fromkeys(args.target or ("value", "policy")))
    wrong = sweep(args.seeds, args.deltas, targets)
    for label, eps, delta, target, seed, failed in wrong:
        print(f"wrong: {label}, eps {eps:g}, delta {delta:g}, target {target}, seed {seed}: "
              f"fails {', '.join(failed)}")
    print(f"certified answers that are wrong: {len(wrong)} "
          f"({time.perf_counter() - start:.0f} s)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
