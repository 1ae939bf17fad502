"""Certified answers of the mixture boxes, both targets, checked exactly on seven instances.

A smaller version of ``benchmarks/certified_soundness.py`` (100 seeds there): at
``delta = 0.5``, where a level too low by a meaningful amount would show up as wrong answers
first, every certified answer must bracket the exact values and be eps-optimal.
"""

import runpy
from pathlib import Path

import numpy as np
import pytest

N_SEEDS = 3
"""Seeds per instance and target."""

INSTANCES = Path(__file__).resolve().parent.parent / "benchmarks" / "soundness_instances.py"


def _instances():
    import fast

    one_state_trap = runpy.run_path(str(INSTANCES))["one_state_trap"](fast)
    return [
        (fast.gridworld(), 0.5, False),
        (fast.chain(), 0.5, False),
        (fast.garnet(10, 3, 3), 0.2, False),
        (fast.tradeoff(), 0.1, False),
        (fast.trap(r=0.3), 0.5, False),
        (fast.trap(), 0.2, True),
        (one_state_trap, 1.0, False),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["value", "policy"])
def test_certified_answers_at_delta_one_half_are_right(target):
    import fast

    for ssp, eps, relative in _instances():
        exact = fast.optimal_values(ssp).values
        for seed in range(N_SEEDS):
            res = fast.solve_certified(ssp, ssp.costs, eps, 0.5, relative=relative, seed=seed,
                                       target=target)
            assert res.certified, ssp.name
            value = fast.policy_values(ssp, res.policy)
            cert = res.certificate
            slack = 1e-9 * np.maximum(1.0, exact)
            assert (cert.lower <= exact + slack).all() and (cert.upper >= value - slack).all()
            if relative:
                assert (value <= (1 + eps) * exact + slack).all(), ssp.name
            else:
                assert (value - exact).max() <= eps + slack.max(), ssp.name
            assert cert.policy_gap <= cert.gap
