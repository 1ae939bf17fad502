"""Values and occupancies of chains given as a ``PouredKernel``, never expanded above
``DENSE_MAX_STATES`` states (``reference.chains.poured_values``, ``poured_occupancy``).

The ground truth is the explicit path: the kernel expanded by ``tocsr`` (or
``toarray``) and solved by :func:`reference.chains.chain_values` (LU or GTH,
certified), by a sparse LU (``spsolve``, :func:`_explicit_occupancy`) or by
Gaussian elimination in exact fractions (:func:`_rational_values`). The
iterative path runs on small hypothesis-generated kernels by lowering
``DENSE_MAX_STATES``.
"""

import tracemalloc
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.linalg import spsolve

from reference import chains
from reference.errors import ConvergenceError, ParameterError, ShapeError
from reference.poured import PouredKernel

SETTINGS = settings(max_examples=150, deadline=None)


@st.composite
def poured_chains(draw, max_states=7, max_stored=3):
    """A valid square ``PouredKernel`` ``(S, S+1)`` and costs in ``{0, 0.25, 1}``.

    Rows mix stored entries (some of probability 0, some on the diagonal), a
    common width (0 or positive), reaches from 0 to ``S+1`` (the whole order)
    and partials (also where the reach falls on a stored entry, which the
    kernel ignores). A row without mass becomes an absorbing self-loop, so
    goal-unreachable closed classes are frequent.
    """
    S = draw(st.integers(1, max_states))
    n_next = S + 1
    order = np.array(draw(st.permutations(range(n_next))))
    rank = np.empty(n_next, dtype=np.int64)
    rank[order] = np.arange(n_next)
    indptr, indices, data, width, reach, partial = [0], [], [], [], [], []
    for s in range(S):
        stored = sorted(draw(st.sets(st.integers(0, S), max_size=max_stored)))
        raw = [draw(st.integers(0, 3)) for _ in stored]
        r = draw(st.integers(0, n_next))
        unit = draw(st.integers(0, 3))
        share = draw(st.sampled_from([0.0, 0.5, 1.0]))
        unseen = r - sum(int(rank[j] < r) for j in stored)
        partial_counts = r <= S and int(order[min(r, S)]) not in stored
        total = sum(raw) + unit * unseen + (share * unit if partial_counts else 0.0)
        if total == 0:
            stored, raw, unit, share, total = [s], [1], 0, 0.0, 1.0
        indices += stored
        data += [w / total for w in raw]
        indptr.append(len(indices))
        width.append(unit / total)
        reach.append(r)
        partial.append(share * unit / total)
    kernel = PouredKernel(order, indptr, indices, data, width, reach, partial)
    costs = np.array(draw(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=S, max_size=S)))
    return kernel, costs


def _random_kernel(S, seed, branching=3, reach_max=None, unseen_mass=0.3):
    """A random square ``PouredKernel``: ``branching`` stored next states a row (goal
    included), reaches uniform in ``0 .. reach_max`` (``S // 2`` by default) sharing
    ``unseen_mass``, half a width at the reach when it falls on an unseen next state."""
    rng = np.random.default_rng(seed)
    n_next = S + 1
    order = rng.permutation(n_next)
    rank = np.empty(n_next, dtype=np.int64)
    rank[order] = np.arange(n_next)
    keys = np.unique(np.repeat(np.arange(S), branching) * n_next
                     + rng.integers(0, n_next, size=S * branching))
    rows, cols = keys // n_next, keys % n_next
    reach = rng.integers(0, (S // 2 if reach_max is None else reach_max) + 1, size=S)
    unseen = reach - np.bincount(rows[rank[cols] < reach[rows]], minlength=S)
    stored_at = (reach > S) | np.isin(np.arange(S) * n_next + order[np.minimum(reach, S)], keys)
    width = np.where(unseen > 0, unseen_mass / np.maximum(unseen, 1), 0.0)
    partial = np.where(~stored_at & (unseen > 0), 0.5 * width, 0.0)
    data = rng.random(keys.size) + 0.05
    data *= (1.0 - width * unseen - partial)[rows] / np.bincount(rows, weights=data)[rows]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=S))])
    return PouredKernel(order, indptr, cols, data, width, reach, partial)


def _dense_residual(kernel, costs, values):
    """``max |c + P V - V|`` over the finite positive values, from the dense kernel."""
    S = costs.size
    finite = np.isfinite(values) & (values > 0)
    flow = kernel.toarray()[:, :S] @ np.where(np.isfinite(values), values, 0.0)
    return float(np.abs(costs + flow - values)[finite].max(initial=0.0))


def _iterative(function, *args, **kwargs):
    """``function(*args)`` with ``DENSE_MAX_STATES = 0``: the path of large chains."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chains.explicit, "DENSE_MAX_STATES", 0)
        for name, value in kwargs.items():
            owner = chains.poured if hasattr(chains.poured, name) else chains.explicit
            patch.setattr(owner, name, value)
        return function(*args)


def _failed_bicgstab(*args, **kwargs):
    return None


def _failed_gmres(system, rhs, **kwargs):
    return np.full(rhs.size, np.nan), 1


def _assert_values_match(values, exact):
    np.testing.assert_array_equal(np.isinf(values), np.isinf(exact))
    np.testing.assert_array_equal(values == 0.0, exact == 0.0)
    finite = np.isfinite(exact)
    np.testing.assert_allclose(values[finite], exact[finite], rtol=1e-9, atol=0.0)


@SETTINGS
@given(poured_chains())
def test_iterative_values_match_the_expanded_chain(case):
    # Same infinite and zero states exactly, finite values to 1e-9, and the residual
    # returned is the one of the dense kernel.
    kernel, costs = case
    exact = chains.chain_values(kernel.tocsr(), costs)
    values, residual = _iterative(chains.poured_values, kernel, costs)
    _assert_values_match(values, exact)
    scale = max(1.0, float(values[np.isfinite(values)].max(initial=0.0)))
    assert abs(residual - _dense_residual(kernel, costs, values)) <= 1e-13 * scale
    assert residual <= 1e-12 * scale


@SETTINGS
@given(poured_chains())
def test_graph_split_matches_the_expanded_support_graph(case):
    # With the costs drawn (components) and with every cost positive (two searches).
    kernel, costs = case
    for c in (costs, np.ones(costs.size)):
        got = chains.poured.poured_splits(kernel, c)
        expected = chains.explicit._splits(kernel.tocsr(), c)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])


@SETTINGS
@given(poured_chains(max_states=24, max_stored=8))
def test_graph_steps_through_auxiliary_nodes_are_the_rows_supports(case):
    # From each state, the states (and the goal) met first on paths through auxiliary
    # nodes only are exactly the positive entries of its row: prefixes, segment-tree
    # runs between stored zeros before the reach, partials, stored entries.
    kernel, _ = case
    S = kernel.shape[0]
    n_nodes, tails, heads, exits = chains.poured._poured_graph(kernel)
    assert n_nodes <= 3 * S + 3 and tails.size <= 5 * (S + 1) + kernel.indices.size * (
        2 * int(np.log2(S + 1)) + 3)
    successors = [[] for _ in range(n_nodes)]
    for tail, head in zip(tails, heads):
        successors[tail].append(head)
    dense = kernel.toarray()
    for s in range(S):
        met, seen, stack = set(), set(), list(successors[s])
        goal = bool(exits[s])
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node < S:
                met.add(node)
            else:
                assert node > S
                goal |= bool(exits[node])
                stack.extend(successors[node])
        expected = set(np.flatnonzero(dense[s] > 0))
        assert met | ({S} if goal else set()) == expected


@SETTINGS
@given(poured_chains(max_states=12, max_stored=5), st.integers(0, 2**32 - 1))
def test_leaving_and_off_diagonal_products_match_the_dense_kernel(case, seed):
    kernel, _ = case
    S = kernel.shape[0]
    off = kernel.toarray()
    off[np.arange(S), np.arange(S)] = 0.0
    np.testing.assert_allclose(chains.poured._poured_leaving(kernel), off.sum(axis=1), rtol=1e-14,
                               atol=0.0)
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=S + 1), rng.normal(size=S)
    forward, backward = chains.poured._offdiagonal_products(kernel)
    scale = 1e-13 * (np.abs(x).sum() + np.abs(y).sum())
    np.testing.assert_allclose(forward(x), off @ x, rtol=0.0, atol=scale)
    np.testing.assert_allclose(backward(y), y @ off, rtol=0.0, atol=scale)


def _explicit_occupancy(explicit, start):
    """Expected visits ``start^T (I - Q)^{-1}`` of a proper chain, CSR ``(S, S+1)``, by a
    sparse LU."""
    S = explicit.shape[0]
    return np.atleast_1d(spsolve((sp.identity(S, format="csc") - explicit[:, :S].T).tocsc(),
                                 start))


def _rational_values(dense, costs, states):
    """The solution on ``states`` of ``d_s V_s - sum_{j != s} P[s, j] V_j = c_s`` (``d_s`` the
    row's off-diagonal mass, goal included), by Gaussian elimination in exact fractions of
    the dense kernel's entries (the other states' values taken as 0)."""
    n = states.size
    P = [[Fraction(float(dense[s, j])) for j in range(dense.shape[1])] for s in states]
    system = []
    for a, s in enumerate(states):
        leaving = sum(P[a][j] for j in range(dense.shape[1]) if j != s)
        row = [leaving if b == a else -P[a][t] for b, t in enumerate(states)]
        system.append(row + [Fraction(float(costs[s]))])
    for k in range(n):
        pivot = next(i for i in range(k, n) if system[i][k] != 0)
        system[k], system[pivot] = system[pivot], system[k]
        for i in range(n):
            if i != k and system[i][k] != 0:
                factor = system[i][k] / system[k][k]
                system[i] = [x - factor * y for x, y in zip(system[i], system[k])]
    return np.array([float(system[k][n] / system[k][k]) for k in range(n)])


@settings(max_examples=40, deadline=None)
@given(poured_chains())
def test_small_chains_keep_the_exact_answer(case):
    kernel, costs = case
    # The split as the CSR path decides it; the finite positive values as exact rational
    # elimination gives them; the residual as the dense kernel's product gives it.
    values, residual = chains.poured_values(kernel, costs, start=np.ones(costs.size))
    sparse = chains.chain_values(kernel.tocsr(), costs)
    np.testing.assert_array_equal(np.isinf(values), np.isinf(sparse))
    np.testing.assert_array_equal(values == 0.0, sparse == 0.0)
    solved = np.flatnonzero(np.isfinite(values) & (values > 0))
    exact = _rational_values(kernel.toarray(), costs, solved)
    np.testing.assert_allclose(values[solved], exact, rtol=1e-10, atol=0.0)
    scale = max(1.0, float(values[solved].max(initial=0.0)))
    assert abs(residual - _dense_residual(kernel, costs, values)) <= 1e-13 * scale


@SETTINGS
@given(poured_chains(), st.integers(0, 2**32 - 1))
def test_occupancy_matches_the_explicit_solve(case, seed):
    # Proper chains: the sparse LU of I - Q^T; otherwise zeros.
    kernel, _ = case
    S = kernel.shape[0]
    start = np.random.default_rng(seed).random(S)
    proper = not chains.explicit._splits(kernel.tocsr(), np.ones(S))[0].any()
    for visits in (chains.poured_occupancy(kernel, start),
                   _iterative(chains.poured_occupancy, kernel, start)):
        if proper:
            expected = _explicit_occupancy(kernel.tocsr(), start)
            np.testing.assert_allclose(visits, expected, rtol=1e-9, atol=1e-12 * expected.max())
            assert np.all(visits >= start * (1.0 - 1e-12))
        else:
            np.testing.assert_array_equal(visits, np.zeros(S))


def test_leaving_probability_is_summed_not_one_minus_the_self_loop():
    # A self-loop of 1 next to a goal probability of 1e-17: 1e17 expected steps.
    kernel = PouredKernel(order=[2, 0, 1], indptr=[0, 2, 2], indices=[0, 2], data=[1.0, 1e-17],
                          width=[0.0, 0.5], reach=[0, 2], partial=[0.0, 0.0])
    costs = np.ones(2)
    exact = chains.chain_values(kernel.tocsr(), costs)
    np.testing.assert_allclose(exact, [1e17, 1.0 + 0.5e17], rtol=1e-15)
    values, _ = _iterative(chains.poured_values, kernel, costs)
    np.testing.assert_allclose(values, exact, rtol=1e-12)
    visits = _iterative(chains.poured_occupancy, kernel, np.array([0.0, 1.0]))
    np.testing.assert_allclose(visits, [0.5e17, 1.0], rtol=1e-12)


def test_thousands_of_states_match_a_sparse_lu_of_the_expanded_kernel():
    # S = 3000 with reaches up to 300: the explicit chain holds about 450k entries.
    S = 3000
    kernel = _random_kernel(S, 11, reach_max=300)
    costs = np.random.default_rng(12).uniform(0.1, 1.0, S)
    explicit = kernel.tocsr()
    Q, exits, _ = chains.explicit._restricted(explicit, np.arange(S))
    exact = spsolve((sp.diags_array(exits + chains.explicit._row_sums(Q)) - Q).tocsc(), costs)
    values, residual = chains.poured_values(kernel, costs)
    np.testing.assert_allclose(values, exact, rtol=1e-9)
    assert residual <= 1e-13 * values.max()
    start = np.random.default_rng(13).random(S)
    np.testing.assert_allclose(chains.poured_occupancy(kernel, start),
                               _explicit_occupancy(explicit, start), rtol=1e-9)


def test_a_warm_start_is_used_and_a_bad_one_is_harmless():
    S = 300
    kernel = _random_kernel(S, 3)
    costs = np.random.default_rng(4).uniform(0.0, 1.0, S)
    exact = chains.chain_values(kernel.tocsr(), costs)
    for start in (exact * (1.0 + 1e-3), np.full(S, 1e9), np.full(S, np.inf)):
        _assert_values_match(_iterative(chains.poured_values, kernel, costs, start)[0], exact)
    # With every Krylov solver failing, the exact values as a start are kept.
    values, residual = _iterative(chains.poured_values, kernel, costs, exact,
                                  _bicgstab=_failed_bicgstab, gmres=_failed_gmres)
    np.testing.assert_allclose(values, exact, rtol=1e-12)
    assert residual <= 1e-12 * exact.max()


def test_fallbacks_return_the_best_candidate_with_its_honest_residual():
    S = 300
    kernel = _random_kernel(S, 5, reach_max=20, unseen_mass=0.5)
    costs = np.random.default_rng(6).uniform(0.1, 1.0, S)
    exact = chains.chain_values(kernel.tocsr(), costs)
    values, residual = _iterative(chains.poured_values, kernel, costs,
                                  _bicgstab=_failed_bicgstab)
    _assert_values_match(values, exact)
    assert residual <= 1e-12 * exact.max()
    # Thirty Jacobi sweeps leave a backward error of about 1e-2: an error by default, the
    # best candidate when the threshold is lifted.
    with pytest.raises(ConvergenceError, match="backward error"):
        _iterative(chains.poured_values, kernel, costs, _bicgstab=_failed_bicgstab,
                   gmres=_failed_gmres, JACOBI_SWEEPS=30)
    values, residual = _iterative(chains.poured_values, kernel, costs,
                                  _bicgstab=_failed_bicgstab, gmres=_failed_gmres,
                                  JACOBI_SWEEPS=30, POURED_FAIL=1.0)
    assert np.all(np.isfinite(values)) and np.all(values > 0)
    assert residual == pytest.approx(_dense_residual(kernel, costs, values), rel=1e-9)
    assert residual < costs.max()
    assert np.all(values <= exact * (1 + 1e-12))


def test_a_hopeless_iterative_solve_raises_where_the_dense_path_is_exact():
    # Two states feeding each other, goal probability 1e-300: V = 2e300 (1, 1). The
    # expansion gets it; the iterative solve's best candidate is (500, 500) after the Jacobi
    # sweeps, residual 1, backward error 1e-3: an error, not values.
    kernel = PouredKernel([0, 1, 2], [0, 1, 3], [1, 0, 2], [1.0, 1.0 - 1e-300, 1e-300],
                          [0.0, 0.0], [0, 0], [0.0, 0.0])
    costs = np.ones(2)
    values, _ = chains.poured_values(kernel, costs)
    np.testing.assert_allclose(values, [2e300, 2e300], rtol=1e-12)
    with pytest.raises(ConvergenceError, match=r"2 transient state\(s\).*best has 0\.001"):
        _iterative(chains.poured_values, kernel, costs)
    # With the threshold lifted, the candidate it refused.
    values, residual = _iterative(chains.poured_values, kernel, costs, POURED_FAIL=1.0)
    np.testing.assert_array_equal(values, [500.0, 500.0])
    assert residual == 1.0


def test_memory_stays_linear_in_the_pieces_where_the_expanded_chain_is_quadratic():
    # S = 20000, reaches uniform up to S: the explicit chain would hold ~S^2/4 entries.
    S = 20_000
    kernel = _random_kernel(S, 7, reach_max=S)
    assert kernel.nnz > S**2 / 5
    costs = np.random.default_rng(8).uniform(0.1, 1.0, S)
    pieces = (S + kernel.indices.size) * 8
    tracemalloc.start()
    try:
        values, residual = chains.poured_values(kernel, costs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * pieces
    assert np.all(np.isfinite(values)) and residual <= 1e-13 * values.max()


def test_arguments_are_checked():
    kernel = _random_kernel(5, 0)
    with pytest.raises(ParameterError, match="`kernel`"):
        chains.poured_values(kernel.tocsr(), np.ones(5))
    with pytest.raises(ShapeError, match="`costs`"):
        chains.poured_values(kernel, np.ones(4))
    with pytest.raises(ShapeError, match="`start`"):
        chains.poured_occupancy(kernel, np.ones(6))
    with pytest.raises(ShapeError, match=r"\(S, S\+1\)"):
        chains.poured_values(kernel[np.arange(4)], np.ones(4))


def _compiled(kernel, costs, start):
    from fast.kernels import COMPILED_KERNELS

    return COMPILED_KERNELS.poured_chain_values(kernel, costs, start)


@SETTINGS
@given(poured_chains(), st.sampled_from(["zero", "ones", "exact", "huge"]))
def test_compiled_candidates_match_the_exact_path(case, start):
    # The compiled kernel's split and values against the explicit chain (CSR, certified LU
    # or GTH), from several starts; its residual as the dense kernel's product gives it.
    kernel, costs = case
    S = costs.size
    exact = chains.chain_values(kernel.tocsr(), costs)
    guess = {"zero": np.zeros(S), "ones": np.ones(S), "huge": np.full(S, 1e12),
             "exact": np.where(np.isfinite(exact), exact, np.inf)}[start]
    values, residual = _compiled(kernel, costs, guess)
    _assert_values_match(values, exact)
    scale = max(1.0, float(values[np.isfinite(values)].max(initial=0.0)))
    assert abs(residual - _dense_residual(kernel, costs, values)) <= 1e-13 * scale


def test_compiled_candidates_at_five_hundred_states_match_the_dense_lu():
    # S = 500, reaches up to 250 (about 60k expanded entries): the compact BiCGSTAB agrees with
    # the certified dense LU of the expanded chain to a few ulps of the conditioning, cold or
    # warm; a start of 1e9 everywhere is harmless.
    S = 500
    kernel = _random_kernel(S, 21)
    costs = np.random.default_rng(22).uniform(0.1, 1.0, S)
    exact = chains.chain_values(kernel.toarray(), costs)

    def no_fallback(*args):
        raise AssertionError("the compiled solve fell back to the expanded chain")

    for start in (np.zeros(S), exact * (1.0 + 1e-6), np.full(S, 1e9)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(chains.poured, "poured_values", no_fallback)
            values, residual = _compiled(kernel, costs, start)
        np.testing.assert_allclose(values, exact, rtol=1e-12)
        assert residual <= 1e-13 * exact.max()


@SETTINGS
@given(poured_chains(), st.integers(0, 2**32 - 1))
def test_compiled_visits_match_the_explicit_solve(case, seed):
    # The compiled kernel poured_chain_visits (BiCGSTAB on the transposed products, or the
    # numpy occupancy when the goal search fails): the sparse LU of I - Q^T on proper chains,
    # zeros otherwise.
    from fast.kernels import COMPILED_KERNELS

    kernel, _ = case
    S = kernel.shape[0]
    start = np.random.default_rng(seed).random(S)
    visits = COMPILED_KERNELS.poured_chain_visits(kernel, start)
    if chains.explicit._splits(kernel.tocsr(), np.ones(S))[0].any():
        np.testing.assert_array_equal(visits, np.zeros(S))
    else:
        expected = _explicit_occupancy(kernel.tocsr(), start)
        np.testing.assert_allclose(visits, expected, rtol=1e-9, atol=1e-12 * expected.max())


def test_compiled_visits_at_two_thousand_states_need_no_fallback():
    # S = 2000, reaches up to 300: the transposed products by suffix sums over the reaches
    # agree with a sparse LU of the expanded chain, without the numpy occupancy.
    import fast.kernels

    S = 2000
    kernel = _random_kernel(S, 31, reach_max=300)
    start = np.random.default_rng(32).random(S)

    def no_fallback(*args):
        raise AssertionError("the compiled visits fell back to the numpy occupancy")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chains.poured, "poured_occupancy", no_fallback)
        visits = fast.kernels.COMPILED_KERNELS.poured_chain_visits(kernel, start)
    np.testing.assert_allclose(visits, _explicit_occupancy(kernel.tocsr(), start), rtol=1e-10)


def test_a_compiled_solve_short_of_its_tolerance_gives_the_exact_answer():
    # V = 2e300 (1, 1) (goal probability 1e-300): BiCGSTAB reaches no acceptable backward
    # error, so the kernel answers with the expanded chain's exact values; with the large-chain
    # path, with the error of the iterative solve.
    kernel = PouredKernel([0, 1, 2], [0, 1, 3], [1, 0, 2], [1.0, 1.0 - 1e-300, 1e-300],
                          [0.0, 0.0], [0, 0], [0.0, 0.0])
    costs = np.ones(2)
    values, _ = _compiled(kernel, costs, np.zeros(2))
    np.testing.assert_allclose(values, [2e300, 2e300], rtol=1e-12)
    with pytest.raises(ConvergenceError, match="backward error"):
        _iterative(_compiled, kernel, costs, np.zeros(2))


@SETTINGS
@given(poured_chains())
def test_goal_exits_match_the_expanded_goal_column(case):
    kernel, costs = case
    np.testing.assert_array_equal(chains.poured._poured_exits(kernel), kernel.toarray()[:, -1] > 0)
    # The split without a search (every cost positive, every row exiting) is the search's.
    positive = np.ones(costs.size)
    if chains.poured._poured_exits(kernel).all():
        infinite, transient = chains.explicit._splits(kernel.tocsr(), positive)
        assert not infinite.any() and transient.all()
    for got, want in zip(chains.poured.poured_splits(kernel, positive),
                         chains.explicit._splits(kernel.tocsr(), positive)):
        np.testing.assert_array_equal(got, want)


@SETTINGS
@given(poured_chains())
def test_compiled_goal_search_only_answers_when_every_state_reaches_the_goal(case):
    # fast._poured.reaches_goal, on a subgraph of the support: True only where the expanded
    # chain's split with positive costs has no infinite state, and True whenever every row
    # exits (the reference's shortcut).
    from fast import _poured

    kernel, costs = case
    arrays = (kernel.order, kernel.rank, kernel.indptr, kernel.indices, kernel.data,
              kernel.width, kernel.reach, kernel.partial)
    positive = np.ones(costs.size)
    infinite, transient = chains.explicit._splits(kernel.tocsr(), positive)
    if _poured.reaches_goal(*arrays):
        assert not infinite.any() and transient.all()
    if chains.poured._poured_exits(kernel).all():
        assert _poured.reaches_goal(*arrays)


def test_compiled_goal_search_follows_chains_of_stored_and_partial_moves():
    # 0 -> 1 (stored), 1 -> 2 (the partial at the reach, unseen), 2 -> goal: all reach it;
    # without the goal entry of 2 (a self-loop instead), none does.
    from fast import _poured

    order = np.array([2, 3, 0, 1])
    for goal_prob, expected in ((1.0, True), (0.0, False)):
        kernel = PouredKernel(order, [0, 1, 2, 4], [1, 1, 2, 3],
                              [1.0, 0.5, 1.0 - goal_prob, goal_prob], [0.5, 0.5, 0.0],
                              [0, 0, 4], [0.0, 0.5, 0.0])
        got = _poured.reaches_goal(kernel.order, kernel.rank, kernel.indptr, kernel.indices,
                                   kernel.data, kernel.width, kernel.reach, kernel.partial)
        assert got is expected
        infinite = chains.poured.poured_splits(kernel, np.ones(3))[0]
        assert infinite.any() != expected


@SETTINGS
@given(poured_chains(), st.integers(0, 2**32 - 1))
def test_compiled_products_are_the_numpy_products_bit_for_bit(case, seed):
    from fast.kernels import CompiledPouredKernel

    kernel, _ = case
    compiled = CompiledPouredKernel.along(
        kernel.order, kernel.rank, (kernel.indptr, kernel.indices, kernel.data, kernel.width,
                                    kernel.reach, kernel.partial), kernel.descending)
    rng = np.random.default_rng(seed)
    x = rng.random(kernel.shape[1]) * 10.0 ** rng.integers(-5, 5, kernel.shape[1])
    x[rng.random(x.size) < 0.2] = -0.0
    assert np.array_equal(compiled.finite_product(x).view(np.uint64), kernel.finite_product(x).view(np.uint64))
    x[rng.integers(0, x.size)] = np.inf
    np.testing.assert_array_equal(compiled @ x, kernel @ x)


@pytest.mark.parametrize("signs", ["positive", "mixed", "zero start"])
def test_compiled_solve_residual_is_that_of_the_candidates_positive_part(signs):
    # fast._poured.poured_solve's residual max |b + P V - V| over V = max(x, 0) > 0, against the
    # dense kernel: with a positive candidate it reuses the candidate's own product Q |x|, with
    # negative entries (a right-hand side of both signs) it forms Q V afresh, and an inactive
    # row (identity, x = 0 there) counts for neither.
    from fast import _poured
    from fast.kernels import _chain_arrays

    S = 300
    kernel = _random_kernel(S, 41)
    rng = np.random.default_rng(42)
    rhs = rng.uniform(0.1, 1.0, S) * (rng.choice([-1.0, 1.0], S) if signs == "mixed" else 1.0)
    active = np.ones(S, dtype=np.int8)
    active[rng.integers(0, S, 10)] = 0
    rhs[active == 0] = 0.0
    # Inactive rows stand for states of value 0: their columns are dropped from the check.
    dense = kernel.toarray()[:, :S] * (active == 1)
    x = np.zeros(S) if signs == "zero start" else np.full(S, 1.0)
    x[active == 0] = 0.0
    omega, residual = _poured.poured_solve(*_chain_arrays(kernel), active, rhs, x, 1e-14, 12, 200)
    assert omega <= 1e-11
    assert (x < 0).any() == (signs == "mixed")
    positive = np.where((active == 1) & (x > 0), x, 0.0)
    expected = np.abs(rhs + dense @ positive - positive)[positive > 0].max()
    assert abs(residual - expected) <= 1e-12 * max(1.0, np.abs(x).max())


@pytest.mark.parametrize("rounds", [2, 12])
@pytest.mark.parametrize("maxiter", [2, 3, 200])
def test_compiled_solve_residual_is_that_of_the_candidate_kept(maxiter, rounds):
    # Few BiCGSTAB steps leave refinements that do not halve the backward error, or that
    # are rejected: the candidate kept is the best seen (each more round can only lower its
    # backward error, recomputed densely), and the residual is the one of that candidate,
    # whose product Q V is either kept from its own backward error or formed afresh, never
    # one of a rejected candidate. Against the dense kernel, to a small fraction of the
    # residual.
    from fast import _poured
    from fast.kernels import _chain_arrays

    S = 300
    kernel = _random_kernel(S, 41)
    rng = np.random.default_rng(42)
    rhs = rng.uniform(0.1, 1.0, S)
    active = np.ones(S, dtype=np.int8)
    active[rng.integers(0, S, 10)] = 0
    rhs[active == 0] = 0.0
    dense = kernel.toarray()[:, :S] * (active == 1)
    off = dense * (1.0 - np.eye(S))
    diagonal = np.where(active == 1, 1.0 - np.diag(dense), 1.0)
    rows = active == 1

    def backward_error(x):
        gap = np.abs(rhs - diagonal * x + off @ x)[rows]
        scale = (np.abs(rhs) + diagonal * np.abs(x) + off @ np.abs(x))[rows]
        return np.max(np.where(gap == 0.0, 0.0, gap / np.where(gap == 0.0, 1.0, scale)))

    start = np.where(rows, 1.0, 0.0)
    best = min(backward_error(start), 1.0)
    for limit in range(rounds + 1):
        x = start.copy()
        omega, residual = _poured.poured_solve(*_chain_arrays(kernel), active, rhs, x, 1e-14,
                                               limit, maxiter)
        assert abs(omega - backward_error(x)) <= 1e-6 * omega + 1e-15
        assert omega <= best * (1.0 + 1e-9)
        best = omega
        positive = np.where(rows & (x > 0), x, 0.0)
        expected = np.abs(rhs + dense @ positive - positive)[positive > 0].max()
        assert abs(residual - expected) <= 1e-9 * expected + 1e-13 * max(1.0, np.abs(x).max())


def test_compiled_solve_of_no_state():
    # No row: nothing to solve, backward error 0; the residual is a max over no row (0), NaN
    # for the transposed system.
    from fast import _poured

    empty_i, empty_d = np.zeros(0, dtype=np.int64), np.zeros(0)
    arrays = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
              np.zeros(1, dtype=np.int64), empty_i, empty_d, empty_d, empty_i, empty_d,
              np.zeros(0, dtype=np.int8), empty_d, np.zeros(0))
    assert _poured.poured_solve(*arrays, 1e-12, 4, 10) == (0.0, 0.0)
    omega, residual = _poured.poured_solve(*arrays, 1e-12, 4, 10, True)
    assert omega == 0.0 and np.isnan(residual)
