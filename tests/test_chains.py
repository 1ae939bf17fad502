"""The exact chain solver of ``reference.chains`` on its fast paths, against exact arithmetic.

Small sparse blocks go to a densified LU whose answer is kept only where the
a posteriori bound certifies it; with every cost positive the infinite states
are found by two reachability searches instead of strongly connected
components. Both are checked against independent computations: Gaussian
elimination over ``fractions.Fraction`` (the helper of ``test_evaluation.py``)
and a brute-force transitive closure.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from test_evaluation import _exact_values, _relative_error

from reference import chains
from reference.kernels import NUMPY_KERNELS


def _sparse_chain(n, seed, branching=3, trap=False):
    """A random CSR chain ``(n, n+1)``: each row ``branching`` other states and the goal.

    With ``trap``, the last state loops on itself (no exit) and the first state
    moves to it with a quarter of its goal probability, keeping the rest.
    """
    rng = np.random.default_rng(seed)
    dense = np.zeros((n, n + 1))
    for s in range(n):
        nxt = rng.choice([t for t in range(n) if t != s], size=branching, replace=False)
        weights = rng.random(branching + 1) + 0.05
        dense[s, list(nxt) + [n]] = weights / weights.sum()
    if trap:
        dense[n - 1] = 0.0
        dense[n - 1, n - 1] = 1.0
        dense[0, n - 1] += 0.25 * dense[0, n]
        dense[0, n] *= 0.75
    return sp.csr_array(dense)


def _refuse_elimination(*args, **kwargs):
    raise AssertionError("the elimination ran")


@pytest.mark.shared
@pytest.mark.parametrize("seed", range(6))
def test_small_sparse_block_is_solved_by_certified_lu_to_the_promised_accuracy(
    backend, monkeypatch, seed
):
    # A sparse chain below ITERATIVE_MIN_STATES is densified for LU; the answer, certified
    # by the residual bound, is within CERTIFIED_RTOL of the exact rational solution.
    n = 12
    chain = _sparse_chain(n, seed)
    costs = np.random.default_rng(100 + seed).uniform(0.1, 1.0, n)
    solved = []
    lu_values = chains.explicit._lu_values

    def spying(Q, exits, rhs):
        solved.append(type(Q))
        return lu_values(Q, exits, rhs)

    monkeypatch.setattr(chains.explicit, "_lu_values", spying)
    monkeypatch.setattr(chains.explicit, "_gth", _refuse_elimination)
    ssp = backend.SSP(chain, costs.reshape(n, 1))
    policy = np.zeros(n, dtype=int)
    values = backend.policy_values(ssp, policy)
    assert solved == [np.ndarray]
    assert _relative_error(values, _exact_values(ssp, policy)) <= chains.CERTIFIED_RTOL


def test_restricted_block_is_dense_below_the_iterative_size_and_keeps_the_exits():
    # The dense and the sparse restriction of a block agree entry for entry, exits included.
    chain = _sparse_chain(40, 7, branching=4)
    states = np.arange(3, 40, 2)
    Q, exits, _ = chains.explicit._restricted(chain, states)
    assert isinstance(Q, np.ndarray)
    dense = chain.toarray()
    expected_q = dense[np.ix_(states, states)]
    np.fill_diagonal(expected_q, 0.0)
    outside = np.setdiff1d(np.arange(41), states)
    np.testing.assert_array_equal(Q, expected_q)
    np.testing.assert_allclose(exits, dense[np.ix_(states, outside)].sum(axis=1), rtol=1e-15)


def test_dense_and_sparse_blocks_certify_alike():
    # The rounding allowance of a dense block counts its nonzero entries per row, as for CSR.
    chain = _sparse_chain(60, 3)
    states = np.arange(60)
    Q, exits, _ = chains.explicit._restricted(chain, states)
    costs = np.linspace(0.2, 1.0, 60)
    values, times = chains.explicit._lu_values(Q.copy(), exits, costs)
    dense = chains.explicit._certified(Q, exits, costs, values, times)
    csr = chains.explicit._certified(sp.csr_array(Q), exits, costs, values, times)
    assert dense.all() and np.array_equal(dense, csr)
    assert not chains.explicit._certified(Q, exits, costs, values * (1 + 1e-8), times).any()


def _brute_force_infinite(chain, costs):
    """States reaching (in zero or more steps) a closed class with a positive cost."""
    n = chain.shape[0]
    edge = chain.toarray()[:, :n] > 0
    reach = edge | np.eye(n, dtype=bool)
    for _ in range(n):
        reach = reach | ((reach.astype(int) @ reach.astype(int)) > 0)
    exits = chain.toarray()[:, n] > 0
    closed = np.zeros(n, dtype=bool)
    for s in range(n):
        members = reach[s] & reach[:, s]
        leaves = (reach[s] & ~members).any() or exits[members].any()
        closed[s] = not leaves and (costs[members] > 0).any()
    return (reach & closed[None, :]).any(axis=1)


@pytest.mark.parametrize("seed", range(8))
def test_positive_cost_split_matches_brute_force(seed):
    # A state reaching both the goal and a trap is infinite; so is the trap.
    chain = _sparse_chain(9, seed, branching=2, trap=True)
    costs = np.full(9, 0.5)
    infinite, transient = chains.explicit._splits(chain, costs)
    expected = _brute_force_infinite(chain, costs)
    assert expected[0] and expected[-1]
    np.testing.assert_array_equal(infinite, expected)
    np.testing.assert_array_equal(transient, ~expected)
    values = chains.chain_values(chain, costs)
    np.testing.assert_array_equal(np.isinf(values), expected)
    assert np.all(values[~expected] > 0)


def _reaching_by_fixpoint(n, tails, heads, targets):
    """Nodes with a path into ``targets``, by growing the set along reversed edges."""
    mask = targets.copy()
    while True:
        grown = mask.copy()
        grown[tails[mask[heads]]] = True
        if np.array_equal(grown, mask):
            return mask
        mask = grown


@pytest.mark.parametrize("n", [1, 7, 300, 2**16 + 5])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kernel_set", ["numpy", "compiled"])
def test_reaching_against_a_fixpoint(n, seed, kernel_set):
    # Below and above 2**16 nodes (where the numpy kernel groups the edges by a 16-bit
    # radix sort or not); repeated edges, self-loops, isolated nodes; both kernel sets.
    if kernel_set == "numpy":
        reaching = NUMPY_KERNELS.reaching
    else:
        reaching = pytest.importorskip("fast.kernels").COMPILED_KERNELS.reaching
    rng = np.random.default_rng(seed)
    m = 2 * n
    tails, heads = rng.integers(0, n, m), rng.integers(0, n, m)
    tails, heads = np.concatenate([tails, tails[:3]]), np.concatenate([heads, heads[:3]])
    targets = rng.random(n) < 0.01
    want = _reaching_by_fixpoint(n, tails, heads, targets)
    none = np.zeros(n, dtype=bool)
    no_edge = np.zeros(0, dtype=np.int64)
    assert np.array_equal(reaching(tails, heads, targets), want)
    assert np.array_equal(reaching(tails, heads, none), none)
    assert np.array_equal(reaching(no_edge, no_edge, targets), targets)
