"""The SSP model: input validation, Assumption 1, sizes, and the DMDP conversion."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import reference


def _to_goal(S, A):
    """Kernel of shape (S, A, S+1) where every pair goes to the goal surely."""
    P = np.zeros((S, A, S + 1))
    P[:, :, S] = 1.0
    return P


def _as_csr(P):
    S, A = P.shape[:2]
    return sp.csr_array(P.reshape(S * A, S + 1))


@pytest.mark.shared
@pytest.mark.parametrize(
    "shape",
    [(2, 3), (2, 2, 2), (2, 2, 4), (0, 2, 1), (2, 0, 3), (1, 2, 2, 1)],
    ids=["2d", "no-goal-column", "too-many-columns", "no-states", "no-actions", "4d"],
)
def test_dense_kernel_of_wrong_shape_is_rejected(backend, shape):
    with pytest.raises(backend.ShapeError, match=r"`P` must have shape \(S, A, S\+1\)") as info:
        backend.SSP(np.ones(shape), np.ones((2, 2)))
    assert str(shape) in str(info.value)


@pytest.mark.shared
def test_non_numeric_kernel_is_rejected(backend):
    with pytest.raises(backend.ShapeError, match="`P` must be a numeric array"):
        backend.SSP([[["a", "b"]]], [[1.0]])


@pytest.mark.shared
def test_sparse_kernel_of_wrong_shape_is_rejected(backend):
    with pytest.raises(backend.ShapeError, match=r"`P` must have shape \(S\*A, S\+1\)"):
        backend.SSP(sp.csr_array(np.ones((5, 3)) / 3), np.ones((2, 2)))


@pytest.mark.shared
@pytest.mark.parametrize("shape", [(2,), (3, 2), (2, 3), (2, 2, 1)])
def test_costs_of_wrong_shape_are_rejected(backend, shape):
    pattern = r"`c` must have shape \(S, A\) = \(2, 2\), the sizes of the kernel `P`"
    with pytest.raises(backend.ShapeError, match=pattern) as info:
        backend.SSP(_to_goal(2, 2), np.ones(shape))
    assert str(shape) in str(info.value)


@pytest.mark.shared
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_kernel_is_rejected(backend, bad):
    P = _to_goal(2, 2)
    P[1, 0, 0] = bad
    pattern = rf"`P` must be finite; got {bad} at \(s, a, s'\) = \(1, 0, 0\)"
    with pytest.raises(backend.NotFiniteError, match=pattern):
        backend.SSP(P, np.ones((2, 2)))


@pytest.mark.shared
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_sparse_kernel_is_rejected(backend, bad):
    P = _to_goal(2, 2)
    P[1, 1, 0] = bad
    pattern = rf"`P` must be finite; got {bad} at \(s, a, s'\) = \(1, 1, 0\)"
    with pytest.raises(backend.NotFiniteError, match=pattern):
        backend.SSP(_as_csr(P), np.ones((2, 2)))


@pytest.mark.shared
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_costs_are_rejected(backend, bad):
    c = np.ones((2, 2))
    c[0, 1] = bad
    pattern = rf"`c` must be finite; got {bad} at index \(0, 1\)"
    with pytest.raises(backend.NotFiniteError, match=pattern):
        backend.SSP(_to_goal(2, 2), c)


@pytest.mark.shared
def test_negative_probability_is_rejected(backend):
    P = _to_goal(2, 2)
    P[1, 1] = [0.5, 0.7, -0.2]
    pattern = r"`P`.*>= 0; got -0\.2 at \(s, a, s'\) = \(1, 1, 2\)"
    with pytest.raises(backend.ProbabilityError, match=pattern):
        backend.SSP(P, np.ones((2, 2)))


@pytest.mark.shared
def test_negative_sparse_probability_is_rejected(backend):
    P = _to_goal(2, 2)
    P[1, 0] = [0.5, 0.7, -0.2]
    pattern = r"`P`.*>= 0; got -0\.2 at \(s, a, s'\) = \(1, 0, 2\)"
    with pytest.raises(backend.ProbabilityError, match=pattern):
        backend.SSP(_as_csr(P), np.ones((2, 2)))


@pytest.mark.shared
def test_first_row_not_summing_to_one_is_named(backend):
    P = _to_goal(3, 2)
    P[1, 0, 3] = 0.9
    P[2, 1, 3] = 0.5
    with pytest.raises(backend.ProbabilityError, match=r"\(s, a\) = \(1, 0\) sums to 0\.9"):
        backend.SSP(P, np.ones((3, 2)))


@pytest.mark.shared
def test_first_sparse_row_not_summing_to_one_is_named(backend):
    P = _to_goal(3, 2)
    P[1, 1, 3] = 1.2
    P[2, 0, 3] = 0.5
    with pytest.raises(backend.ProbabilityError, match=r"\(s, a\) = \(1, 1\) sums to 1\.2"):
        backend.SSP(_as_csr(P), np.ones((3, 2)))


@pytest.mark.shared
def test_row_sum_within_tolerance_is_accepted(backend):
    P = _to_goal(1, 1)
    P[0, 0] = [0.3, 0.7 + 1e-12]
    assert backend.SSP(P, [[1.0]]).n_states == 1


@pytest.mark.shared
@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_costs_outside_unit_interval_are_rejected(backend, bad):
    c = np.full((2, 2), 0.5)
    c[1, 0] = bad
    pattern = rf"`c` must lie in \[0, 1\]; got c\[1, 0\] = {bad}"
    with pytest.raises(backend.CostError, match=pattern):
        backend.SSP(_to_goal(2, 2), c)


@pytest.mark.shared
def test_every_validation_error_is_a_value_error(backend):
    for error in (backend.ShapeError, backend.NotFiniteError, backend.ProbabilityError,
                  backend.CostError, backend.NoProperPolicyError, backend.ParameterError,
                  backend.TooLargeError):
        assert issubclass(error, ValueError)


@pytest.mark.shared
def test_no_proper_policy_names_the_first_bad_state(backend):
    P = _to_goal(3, 2)
    P[1, :, :] = 0.0
    P[1, :, 1] = 1.0
    with pytest.raises(backend.NoProperPolicyError, match=r"from state 1 .*1 such state"):
        backend.SSP(P, np.ones((3, 2)))


def _positive_but_not_almost_sure():
    """State 0 reaches the goal w.p. 1/2 and otherwise falls into the absorbing state 1."""
    P = np.zeros((2, 1, 3))
    P[0, 0] = [0.0, 0.5, 0.5]
    P[1, 0] = [0.0, 1.0, 0.0]
    return P


@pytest.mark.shared
def test_positive_probability_of_reaching_the_goal_is_not_enough(backend):
    with pytest.raises(backend.NoProperPolicyError, match="from state 0"):
        backend.SSP(_positive_but_not_almost_sure(), np.ones((2, 1)))
    ssp = backend.SSP(_positive_but_not_almost_sure(), np.ones((2, 1)), require_proper=False)
    assert ssp.proper_states().tolist() == [False, False]


@pytest.mark.shared
def test_a_second_action_restores_assumption_1(backend):
    P = np.array([
        [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]],
        [[0.0, 1.0, 0.0], [0.0, 0.999, 0.001]],
    ])
    ssp = backend.SSP(P, np.ones((2, 2)))
    assert ssp.proper_states().tolist() == [True, True]


@pytest.mark.shared
def test_only_a_reachable_dead_end_breaks_assumption_1(backend):
    P = np.zeros((3, 2, 4))
    P[0, 0] = [0.0, 0.5, 0.5, 0.0]
    P[0, 1] = [0.0, 0.0, 0.0, 1.0]
    P[1, :, 1] = 1.0
    P[2, 0] = [0.0, 0.1, 0.0, 0.9]
    P[2, 1] = [0.0, 0.0, 1.0, 0.0]
    ssp = backend.SSP(P, np.ones((3, 2)), require_proper=False)
    assert ssp.proper_states().tolist() == [True, False, False]


def _brute_force_proper_states(P):
    """States from which some deterministic policy reaches the goal almost surely.

    In the chain of a policy, the goal is reached a.s. from ``s`` iff every
    state reachable from ``s`` can still reach the goal.
    """
    S, A = P.shape[:2]
    found = np.zeros(S, dtype=bool)
    for policy in itertools.product(range(A), repeat=S):
        edges = P[np.arange(S), policy] > 0
        reach = np.zeros((S + 1, S + 1), dtype=bool)
        reach[:S] = edges
        reach[S, S] = True
        reach |= np.eye(S + 1, dtype=bool)
        for _ in range(S + 1):
            reach = reach | ((reach.astype(int) @ reach.astype(int)) > 0)
        to_goal = reach[:, S]
        found |= np.array([to_goal[reach[s]].all() for s in range(S)])
    return found


@st.composite
def _support_kernels(draw):
    S = draw(st.integers(1, 4))
    A = draw(st.integers(1, 2))
    mask = np.array(draw(st.lists(st.booleans(), min_size=S * A * (S + 1),
                                  max_size=S * A * (S + 1)))).reshape(S, A, S + 1)
    mask[:, :, 0] |= ~mask.any(axis=2)
    return mask / mask.sum(axis=2, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(P=_support_kernels())
def test_proper_states_match_enumeration_of_policies(P):
    ssp = reference.SSP(P, np.ones(P.shape[:2]), require_proper=False)
    expected = _brute_force_proper_states(P)
    assert ssp.proper_states().tolist() == expected.tolist()
    sparse = reference.SSP(_as_csr(P), np.ones(P.shape[:2]), require_proper=False)
    assert sparse.proper_states().tolist() == expected.tolist()


@pytest.mark.shared
def test_branching_and_c_min_are_read_from_the_model(backend):
    P = np.array([
        [[0.2, 0.3, 0.5], [0.0, 0.0, 1.0]],
        [[0.0, 0.4, 0.6], [0.5, 0.0, 0.5]],
    ])
    c = [[0.3, 0.9], [0.25, 1.0]]
    for kernel in (P, _as_csr(P)):
        ssp = backend.SSP(kernel, c)
        assert ssp.branching == 3
        assert ssp.c_min == 0.25
        support, probs = ssp.row(1, 0)
        assert support.tolist() == [1, 2]
        assert probs.tolist() == [0.4, 0.6]


@pytest.mark.shared
@pytest.mark.parametrize("s, a", [(2, 0), (0, 2), (-1, 0), (0, 1.0)])
def test_row_rejects_pairs_out_of_range(backend, s, a):
    P = np.zeros((2, 2, 3))
    P[:, :, 2] = 1.0
    for kernel in (P, _as_csr(P)):
        with pytest.raises(backend.ParameterError, match=r"`(\(s, a\)|s|a)` must be"):
            backend.SSP(kernel, np.ones((2, 2))).row(s, a)


@pytest.mark.shared
def test_explicit_zeros_do_not_count_in_sparse_branching(backend):
    P = _to_goal(2, 1)
    csr = sp.csr_array((np.array([0.0, 1.0, 0.0, 1.0]), np.array([0, 2, 1, 2]),
                        np.array([0, 2, 4])), shape=(2, 3))
    ssp = backend.SSP(csr, np.ones((2, 1)))
    assert ssp.branching == 1
    assert np.array_equal(ssp.kernel_dense(), P)


@pytest.mark.shared
def test_huge_sparse_model_is_validated_without_densifying(backend):
    ssp = backend.garnet(100_000, 4, 5, sparse=True, seed=1)
    assert ssp.is_sparse
    assert ssp.kernel_csr().nnz == 100_000 * 4 * 5
    assert ssp.branching == 5
    with pytest.raises(backend.TooLargeError, match=r"\(100000, 4, 100001\).*GiB"):
        ssp.kernel_dense()


@pytest.mark.shared
def test_kernel_dense_honours_the_byte_limit(backend):
    ssp = backend.garnet(10, 2, 3, sparse=True)
    with pytest.raises(backend.TooLargeError, match="above the limit"):
        ssp.kernel_dense(max_bytes=8 * 10 * 2 * 11 - 1)
    assert ssp.kernel_dense(max_bytes=8 * 10 * 2 * 11).shape == (10, 2, 11)


@pytest.mark.shared
@pytest.mark.parametrize("gamma", [0.0, 1.0, 1.5, -0.1, np.nan, np.inf])
def test_discount_outside_open_unit_interval_is_rejected(backend, gamma):
    P = np.full((2, 2, 2), 0.5)
    with pytest.raises(backend.ParameterError, match=rf"`gamma` must lie in \(0, 1\); got {gamma}"):
        backend.SSP.from_discounted(P, np.ones((2, 2)), gamma)


@pytest.mark.shared
def test_discounted_kernel_is_validated(backend):
    with pytest.raises(backend.ShapeError, match=r"`P` must have shape \(S, A, S\)"):
        backend.SSP.from_discounted(np.full((2, 2, 3), 1 / 3), np.ones((2, 2)), 0.9)
    P = np.full((2, 2, 2), 0.5)
    P[1, 0] = [0.5, 0.6]
    with pytest.raises(backend.ProbabilityError, match=r"\(1, 0\) sums to 1\.1"):
        backend.SSP.from_discounted(P, np.ones((2, 2)), 0.9)


@pytest.mark.shared
def test_sparse_discounted_kernel_names_the_first_bad_pair(backend):
    P = np.full((2, 3, 2), 0.5)
    P[1, 2] = [0.5, 0.4]
    csr = sp.csr_array(P.reshape(6, 2))
    with pytest.raises(backend.ProbabilityError, match=r"\(s, a\) = \(1, 2\) sums to 0\.9"):
        backend.SSP.from_discounted(csr, np.ones((2, 3)), 0.9)


@pytest.mark.shared
def test_model_keeps_its_own_read_only_copy_of_the_costs(backend):
    c = np.ones((2, 2))
    ssp = backend.SSP(_to_goal(2, 2), c)
    assert c.flags.writeable
    c[0, 0] = 0.5
    assert ssp.costs[0, 0] == 1.0
    with pytest.raises(ValueError):
        ssp.costs[0, 0] = 0.0


def _discounted_values(P, c, gamma, policy):
    S = P.shape[0]
    states = np.arange(S)
    return np.linalg.solve(np.eye(S) - gamma * P[states, policy], c[states, policy])


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_ssp_values_of_a_converted_dmdp_are_its_discounted_values(backend, sparse):
    rng = np.random.default_rng(7)
    S, A, gamma = 5, 3, 0.8
    P = rng.random((S, A, S))
    P /= P.sum(axis=2, keepdims=True)
    c = rng.random((S, A))
    kernel = sp.csr_array(P.reshape(S * A, S)) if sparse else P
    ssp = backend.SSP.from_discounted(kernel, c, gamma)
    assert ssp.n_states == S and ssp.is_sparse == sparse
    assert np.allclose(ssp.kernel_dense()[:, :, S], 1 - gamma)
    for _ in range(5):
        policy = rng.integers(0, A, size=S)
        expected = _discounted_values(P, c, gamma, policy)
        assert np.allclose(backend.policy_values(ssp, policy), expected, rtol=1e-10, atol=0)
