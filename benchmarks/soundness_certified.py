"""Certified answers that are wrong: ``solve_certified`` over seeds, every answer checked exactly.

Usage (from the repository root, after building the extensions)::

    OMP_NUM_THREADS=1 python benchmarks/soundness_certified.py [--seeds 100] [--deltas 0.1 0.5]

For each instance, accuracy and ``delta``, the runs' policies are evaluated
exactly (``policy_values``) against ``V*`` (``optimal_values``) or, with
``theta``, ``V*_theta`` (``restricted_optimal_values``), in the target's own
terms: absolute ``V^pi <= V + eps`` or relative ``V^pi <= (1 + eps) V``. A
certified answer that fails is a soundness bug (docs/certified-soundness.md);
uncertified runs (budget spent) are counted apart. Prints one line per
configuration and exits with status 1 when any certified answer is wrong.
"""

import argparse
import sys
import time
import warnings

import numpy as np

import fast as sspgm


def exit_or_chain(n=10, exit_cost=0.001):
    """State 0: an exit to the goal at ``exit_cost`` or a free chain of ``n`` states to the goal."""
    S = n + 1
    P = np.zeros((S, 2, S + 1))
    costs = np.zeros((S, 2))
    P[0, 0, S], costs[0, 0] = 1.0, exit_cost
    P[0, 1, 1] = 1.0
    for s in range(1, S):
        P[s, :, s + 1] = 1.0
    return sspgm.SSP(P, costs, name="exit-or-chain")


def one_state_trap():
    """One state: a cost-0.5 self-loop reaching the goal w.p. 0.01, a cost-1 exit w.p. 0.05."""
    return sspgm.SSP(np.array([[[0.99, 0.01], [0.95, 0.05]]]), np.array([[0.5, 1.0]]),
                     name="one-state-trap")


def configurations():
    """``(label, ssp, eps, options)``: the instances of the sweep."""
    return [
        ("tradeoff", sspgm.tradeoff(), 0.2, {}),
        ("chain(4, 0.7)", sspgm.chain(4, 0.7), 0.5, {}),
        ("chain(4, 0.7) relative", sspgm.chain(4, 0.7), 0.3, {"relative": True}),
        ("garnet(4, 2, 2)", sspgm.garnet(4, 2, 2, seed=1), 0.2, {}),
        ("trap(r=0.3)", sspgm.trap(r=0.3), 0.5, {}),
        ("one-state trap", one_state_trap(), 1.0, {}),
        ("gridworld", sspgm.gridworld(), 0.5, {}),
        ("theta_example theta=5", sspgm.theta_example(), 0.2, {"theta": 5.0}),
        ("zero_cost_loop theta=5", sspgm.zero_cost_loop(), 0.5, {"theta": 5.0}),
        ("exit-or-chain relative theta=12", exit_or_chain(), 0.5,
         {"theta": 12.0, "relative": True, "budget": 400_000}),
        ("exit-or-chain relative theta=20", exit_or_chain(), 0.2,
         {"theta": 20.0, "relative": True, "budget": 400_000}),
    ]


def is_wrong(ssp, res, eps, theta, relative):
    """Whether the exact values of ``res.policy`` miss the target."""
    value = sspgm.policy_values(ssp, res.policy)
    if theta is None:
        best = sspgm.optimal_values(ssp).values
    else:
        best = sspgm.restricted_optimal_values(ssp, theta).values
    if not np.isfinite(value).all():
        return True
    limit = (1.0 + eps) * best if relative else best + eps
    return bool((value > limit + 1e-12 * np.maximum(1.0, np.abs(best))).any())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.1, 0.5])
    args = parser.parse_args(argv)
    total_wrong = 0
    print(f"{'instance':34s} {'eps':>5s} {'delta':>5s} {'runs':>5s} {'certified':>9s} "
          f"{'wrong':>5s} {'median calls':>13s} {'s/run':>6s}")
    for label, ssp, eps, options in configurations():
        for delta in args.deltas:
            certified = wrong = 0
            calls = []
            start = time.process_time()
            for seed in range(args.seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", sspgm.NotCertifiedWarning)
                    res = sspgm.solve_certified(ssp, ssp.costs, eps, delta, seed=seed, **options)
                calls.append(res.n_calls)
                if res.certified:
                    certified += 1
                    wrong += is_wrong(ssp, res, eps, options.get("theta"),
                                      options.get("relative", False))
            total_wrong += wrong
            seconds = (time.process_time() - start) / args.seeds
            print(f"{label:34s} {eps:5g} {delta:5g} {args.seeds:5d} {certified:9d} {wrong:5d} "
                  f"{int(np.median(calls)):13d} {seconds:6.2f}", flush=True)
    print(f"certified answers that are wrong: {total_wrong}")
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
