"""Exact planning tools against a plain numpy policy iteration, and at scale.

Run with ``python -m pytest benchmarks/bench_toolkit.py --benchmark-only -q``.

- ``peer dense-200``: random discounted MDPs (S = 200, A = 4, gamma = 0.95, each
  row uniform on the simplex). The peer is the policy iteration of the common MDP
  toolboxes: dense ``np.linalg.solve`` on ``I - gamma P_pi``, from the all-zero
  policy, until the policy is stable. sspgm's ``policy_iteration``, alone and
  after ``SSP.from_discounted``, is timed interleaved with the peer in one loop
  (the least disturbed of :data:`ROUNDS` rounds each), and the ratios are stored
  in ``extra_info``: ``pi / peer`` and ``convert+pi / peer``, target 2.
- ``sparse-S``: discounted MDPs with CSR kernels (branching 5) up to S = 10^5,
  where a dense solve does not fit: conversion and policy iteration.
- ``elimination``: the subtraction-free evaluation of "up everywhere" on a
  slippery grid (values about 1e34 and beyond, no certified floating-point solve
  exists), with its fill-in in ``extra_info``.
"""

import time

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from reference import chains

N_ACTIONS = 4
GAMMA = 0.95
ROUNDS = 100
SPARSE_SIZES = (10_000, 100_000)
GRID_SHAPES = ((40, 25), (100, 100))


def _random_discounted(n_states, seed):
    rng = np.random.default_rng(seed)
    P = rng.random((n_states, N_ACTIONS, n_states))
    P /= P.sum(axis=2, keepdims=True)
    return P, rng.random((n_states, N_ACTIONS))


def numpy_policy_iteration(P, c, gamma):
    """The peer: plain policy iteration with a dense solve per evaluation."""
    S = c.shape[0]
    states = np.arange(S)
    policy = np.zeros(S, dtype=np.int64)
    while True:
        values = np.linalg.solve(np.eye(S) - gamma * P[states, policy], c[states, policy])
        improved = (c + gamma * P @ values).argmin(axis=1)
        if np.array_equal(improved, policy):
            return values, policy
        policy = improved


def _least_times(functions, rounds):
    """The least time of each function over ``rounds`` interleaved rounds."""
    best = [np.inf] * len(functions)
    for _ in range(rounds):
        for i, function in enumerate(functions):
            start = time.perf_counter()
            function()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_policy_iteration_against_numpy(benchmark, backend):
    benchmark.group = "peer dense-200"
    sspgm = pytest.importorskip(backend)
    P, c = _random_discounted(200, seed=0)
    ssp = sspgm.SSP.from_discounted(P, c, GAMMA)
    peer_values, peer_policy = numpy_policy_iteration(P, c, GAMMA)

    def convert_and_solve():
        return sspgm.policy_iteration(sspgm.SSP.from_discounted(P, c, GAMMA))

    peer, alone, both = _least_times(
        (lambda: numpy_policy_iteration(P, c, GAMMA), lambda: sspgm.policy_iteration(ssp),
         convert_and_solve), ROUNDS,
    )
    benchmark.extra_info.update({"pi / peer": alone / peer, "convert+pi / peer": both / peer})
    result = benchmark.pedantic(convert_and_solve, rounds=ROUNDS, iterations=1)
    assert result.converged
    np.testing.assert_array_equal(result.policy, peer_policy)
    np.testing.assert_allclose(result.values, peer_values, rtol=1e-12)


def _sparse_discounted(n_states, seed):
    rng = np.random.default_rng(seed)
    rows = n_states * N_ACTIONS
    cols = rng.integers(0, n_states, (rows, 5))
    P = sp.csr_array((rng.random(rows * 5), (np.repeat(np.arange(rows), 5), cols.ravel())),
                     shape=(rows, n_states))
    P.sum_duplicates()
    P = sp.csr_array(sp.diags_array(1.0 / P.sum(axis=1)) @ P)
    return P, rng.random((n_states, N_ACTIONS))


@pytest.fixture(params=SPARSE_SIZES, ids=[f"S={s}" for s in SPARSE_SIZES], scope="module")
def sparse_mdp(request):
    return _sparse_discounted(request.param, seed=0)


def test_sparse_conversion_and_policy_iteration(benchmark, sparse_mdp):
    P, c = sparse_mdp
    benchmark.group = f"sparse-{c.shape[0]}"
    result = benchmark.pedantic(
        lambda: reference.policy_iteration(reference.SSP.from_discounted(P, c, GAMMA)),
        rounds=1, iterations=1,
    )
    benchmark.extra_info["n_iter"] = result.n_iter
    assert result.converged


def _up_everywhere_chain(rows, cols):
    """The chain of "up everywhere" on the tests' slippery grid (success 0.7), CSR."""
    goal = (rows - 1) * cols
    S = rows * cols - 1
    cells = np.delete(np.arange(rows * cols), goal)
    index = np.full(rows * cols, -1)
    index[cells] = np.arange(S)
    index[goal] = S
    r, k = divmod(cells, cols)
    entries = []
    for (dr, dc), prob in zip(((-1, 0), (1, 0), (0, -1), (0, 1)), (0.7, 0.1, 0.1, 0.1)):
        nr, nc = r + dr, k + dc
        inside = (nr >= 0) & (nr < rows) & (nc >= 0) & (nc < cols)
        target = np.where(inside, nr * cols + nc, cells)
        entries.append((np.arange(S), index[target], np.full(S, prob)))
    i, j, v = (np.concatenate(parts) for parts in zip(*entries))
    chain = sp.csr_array((v, (i, j)), shape=(S, S + 1))
    chain.sum_duplicates()
    return chain


@pytest.mark.parametrize("shape", GRID_SHAPES, ids=[f"{r}x{c}" for r, c in GRID_SHAPES])
def test_elimination_fill_in(benchmark, shape):
    benchmark.group = "elimination"
    chain = _up_everywhere_chain(*shape)
    S = chain.shape[0]
    states = np.arange(S)
    Q = sp.csr_array(chain[:, :S])
    exits = chain[:, [S]].toarray().ravel()
    values, stats = benchmark.pedantic(
        chains.explicit._gth, args=(Q, exits, np.ones((S, 1)), states), rounds=1, iterations=1
    )
    benchmark.extra_info.update({
        "stored entries": int(Q.nnz), "largest stored": max(stats["nnz"]),
        "rounds": stats["levels"], "dense block": stats["dense"],
    })
    assert np.all(values > 1e30)
