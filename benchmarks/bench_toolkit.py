"""Exact planning tools on garnets of growing size (A = 4, branching 5, CSR kernels).

Run with ``python -m pytest benchmarks/bench_toolkit.py --benchmark-only -q``.
The LP (HiGHS) and policy iteration share a group per size, so their times
sit side by side in the table.
"""

import numpy as np
import pytest

from reference import envs, evaluation

SIZES = (50, 200, 1000)
N_ACTIONS = 4
BRANCHING = 5


def _rounds(n_states):
    """Few rounds for the large instances, so each benchmark stays within seconds."""
    return 3 if n_states >= 1000 else 10


@pytest.fixture(params=SIZES, ids=[f"S={s}" for s in SIZES], scope="module")
def garnet(request):
    return envs.garnet(request.param, N_ACTIONS, BRANCHING, c_min=0.1, seed=0, sparse=True)


def test_policy_values(benchmark, garnet):
    benchmark.group = "policy_values"
    policy = np.zeros(garnet.n_states, dtype=np.int64)
    values = benchmark(evaluation.policy_values, garnet, policy)
    assert np.isfinite(values).all()


def test_optimal_values_lp(benchmark, garnet):
    benchmark.group = f"optimal S={garnet.n_states}"
    result = benchmark.pedantic(
        evaluation.optimal_values, args=(garnet,), rounds=_rounds(garnet.n_states), iterations=1
    )
    assert result.status == 0


def test_optimal_values_policy_iteration(benchmark, garnet):
    benchmark.group = f"optimal S={garnet.n_states}"
    result = benchmark.pedantic(
        evaluation.policy_iteration, args=(garnet,), rounds=_rounds(garnet.n_states), iterations=1
    )
    assert result.converged


def test_value_iteration(benchmark, garnet):
    benchmark.group = "value_iteration"
    result = benchmark.pedantic(
        evaluation.value_iteration, args=(garnet,), rounds=_rounds(garnet.n_states), iterations=1
    )
    assert result.converged
