"""Exact planning tools: policy values, LP, policy iteration, value iteration, diameter, V*_theta.

Ground truth comes from hand derivations (written next to each instance) or
from the agreement of independent methods (LP, policy iteration, value
iteration, direct Bellman residuals).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.linalg import spsolve

from reference import evaluation


def _examples(n):
    """Hypothesis settings; ``backend`` is a stateless module, safe to share across examples."""
    return settings(
        max_examples=n, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )


def _chain_kernel(n, p):
    """Chain ``0..n-1``: action 0 advances w.p. ``p`` (else stays), action 1 steps back."""
    P = np.zeros((n, 2, n + 1))
    for s in range(n):
        P[s, 0, s + 1] += p
        P[s, 0, s] += 1.0 - p
        P[s, 1, max(s - 1, 0)] = 1.0
    return P


def _one_state(backend, rows, costs, **kwargs):
    """One state; ``rows[a] = (p(stay), p(goal))``."""
    P = np.asarray(rows, dtype=float).reshape(1, len(rows), 2)
    return backend.SSP(P, np.asarray(costs, dtype=float).reshape(1, -1), **kwargs)


def _bellman(P, c, V):
    """Dense Bellman operator, written independently of the package."""
    return (c + P[:, :, :-1] @ V).min(axis=1)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n, p", [(1, 1.0), (4, 0.5), (7, 0.3)])
def test_chain_values_are_n_minus_s_over_p(backend, n, p, sparse):
    # Under action 0, V(s) = 1 + p V(s+1) + (1-p) V(s) with V(n) = 0, so V(s) = (n-s)/p;
    # stepping back only adds cost, so this is V*.
    P = _chain_kernel(n, p)
    P = sp.csr_array(P.reshape(2 * n, n + 1)) if sparse else P
    ssp = backend.SSP(P, np.ones((n, 2)))
    expected = (n - np.arange(n)) / p
    np.testing.assert_allclose(backend.policy_values(ssp, np.zeros(n, int)), expected, rtol=1e-12)
    lp = backend.optimal_values(ssp)
    np.testing.assert_allclose(lp.values, expected, rtol=1e-9)
    np.testing.assert_array_equal(lp.policy, np.zeros(n))
    pi = backend.policy_iteration(ssp)
    assert pi.converged
    np.testing.assert_allclose(pi.values, expected, rtol=1e-12)
    np.testing.assert_array_equal(pi.policy, np.zeros(n))
    vi = backend.value_iteration(ssp, tol=1e-12)
    assert vi.converged
    np.testing.assert_allclose(vi.values, expected, rtol=1e-9)
    np.testing.assert_array_equal(vi.policy, np.zeros(n))


def test_chain_diameter_and_b_star(backend):
    # Unit costs: values are hitting times, D_s = (n - s)/p, D = B* = n/p.
    n, p = 6, 0.4
    ssp = backend.SSP(_chain_kernel(n, p), np.ones((n, 2)))
    result = backend.diameter(ssp)
    np.testing.assert_allclose(result.D_s, (n - np.arange(n)) / p, rtol=1e-9)
    assert result.D == pytest.approx(n / p, rel=1e-9)
    np.testing.assert_array_equal(result.policy, np.zeros(n))
    assert backend.b_star(ssp) == pytest.approx(n / p, rel=1e-9)


def test_diameter_ignores_costs(backend):
    # Half-cost chain: values halve, hitting times do not.
    n, p = 5, 0.5
    ssp = backend.SSP(_chain_kernel(n, p), np.full((n, 2), 0.5))
    assert backend.diameter(ssp).D == pytest.approx(n / p, rel=1e-9)
    assert backend.b_star(ssp) == pytest.approx(0.5 * n / p, rel=1e-9)


@pytest.mark.parametrize("cost, q", [(1.0, 1.0), (0.3, 0.25), (0.0, 0.5)])
def test_one_state_one_action(backend, cost, q):
    # V = cost + (1 - q) V  =>  V = cost / q;  E[tau] = 1 / q.
    ssp = _one_state(backend, [[1 - q, q]], [cost])
    np.testing.assert_allclose(backend.policy_values(ssp, [0]), [cost / q], rtol=1e-12)
    np.testing.assert_allclose(backend.hitting_times(ssp, [0]), [1 / q], rtol=1e-12)
    assert backend.is_proper(ssp, [0])
    np.testing.assert_allclose(backend.optimal_values(ssp).values, [cost / q], rtol=1e-9)
    np.testing.assert_allclose(backend.policy_iteration(ssp).values, [cost / q], rtol=1e-12)


def test_one_state_tradeoff(backend):
    # Action 0: cost 1, goal surely; action 1: cost 0.1, goal w.p. 0.5 -> value 0.2.
    ssp = _one_state(backend, [[0.0, 1.0], [0.5, 0.5]], [1.0, 0.1])
    for result in (backend.optimal_values(ssp), backend.policy_iteration(ssp)):
        np.testing.assert_allclose(result.values, [0.2], rtol=1e-9)
        np.testing.assert_array_equal(result.policy, [1])
    assert backend.diameter(ssp).D == pytest.approx(1.0)


def test_ties_go_to_the_lowest_action(backend):
    ssp = _one_state(backend, [[0.0, 1.0], [0.0, 1.0]], [1.0, 1.0])
    assert backend.optimal_values(ssp).policy[0] == 0
    assert backend.policy_iteration(ssp).policy[0] == 0
    assert backend.value_iteration(ssp).policy[0] == 0


def test_zero_cost_improper_loop_is_zero(backend):
    # Action 0 loops for free (improper, value 0); action 1 pays 1 to leave.
    ssp = _one_state(backend, [[1.0, 0.0], [0.0, 1.0]], [0.0, 1.0])
    assert backend.policy_values(ssp, [0])[0] == 0.0
    assert not backend.is_proper(ssp, [0])
    assert backend.hitting_times(ssp, [0])[0] == np.inf
    lp = backend.optimal_values(ssp)
    np.testing.assert_allclose(lp.values, [1.0], rtol=1e-9)
    np.testing.assert_array_equal(lp.policy, [1])
    assert "proper" in lp.which
    np.testing.assert_allclose(backend.policy_iteration(ssp).values, [1.0], rtol=1e-12)
    vi = backend.value_iteration(ssp)
    assert vi.converged
    assert vi.values[0] == 0.0
    assert vi.policy[0] == 0
    assert not backend.is_proper(ssp, vi.policy)


def test_positive_cost_improper_loop_is_infinite(backend):
    ssp = _one_state(backend, [[1.0, 0.0], [0.0, 1.0]], [0.2, 1.0])
    assert backend.policy_values(ssp, [0])[0] == np.inf
    assert backend.policy_values(ssp, [1])[0] == 1.0


def test_free_cycle_between_two_states(backend):
    # Action 0 moves to the other state for free, action 1 pays 1 to reach g.
    # Best proper: one state exits, the other walks to it for free: [1, 1];
    # the improper "always move" policy costs 0, which is what VI finds.
    P = np.zeros((2, 2, 3))
    P[0, 0, 1] = P[1, 0, 0] = 1.0
    P[:, 1, 2] = 1.0
    ssp = backend.SSP(P, [[0.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(backend.policy_values(ssp, [0, 0]), [0.0, 0.0])
    np.testing.assert_allclose(backend.policy_values(ssp, [0, 1]), [1.0, 1.0], rtol=1e-12)
    lp = backend.optimal_values(ssp)
    pi = backend.policy_iteration(ssp)
    np.testing.assert_allclose(lp.values, [1.0, 1.0], rtol=1e-9)
    np.testing.assert_allclose(pi.values, [1.0, 1.0], rtol=1e-12)
    assert backend.is_proper(ssp, lp.policy)
    assert backend.is_proper(ssp, pi.policy)
    np.testing.assert_array_equal(backend.value_iteration(ssp).values, [0.0, 0.0])


def _leaky_model(backend, leak):
    """Six states under action 0 (action 1 pays 1 to reach the goal everywhere).

    0: cost 0, goal w.p. 1 - leak, else state 1;  {1, 2}: a closed cycle, state 2 costs 1;
    3: cost 1, goal or state 4 w.p. 1/2 each;  4: free self-loop (closed, zero cost);
    5: cost 0.5, goal or state 3 w.p. 1/2 each.
    By hand: V = [inf, inf, inf, 1, 0, 0.5 + 0.5 * 1 = 1];
    E[tau] = inf on 0..4 (each reaches a closed class), and E[tau](5) = inf too.
    """
    S = 6
    P = np.zeros((S, 2, S + 1))
    P[0, 0, S], P[0, 0, 1] = 1.0 - leak, leak
    P[1, 0, 2] = P[2, 0, 1] = 1.0
    P[3, 0, S] = P[3, 0, 4] = 0.5
    P[4, 0, 4] = 1.0
    P[5, 0, S] = P[5, 0, 3] = 0.5
    P[:, 1, S] = 1.0
    c = np.ones((S, 2))
    c[:, 0] = [0.0, 0.0, 1.0, 1.0, 0.0, 0.5]
    return backend.SSP(P, c)


@pytest.mark.parametrize("leak", [0.5, 1e-3, 1e-15])
def test_leak_into_costly_closed_class_is_infinite(backend, leak):
    ssp = _leaky_model(backend, leak)
    policy = np.zeros(6, int)
    values = backend.policy_values(ssp, policy)
    np.testing.assert_array_equal(values[:3], np.inf)
    np.testing.assert_allclose(values[3:], [1.0, 0.0, 1.0], rtol=1e-12)
    np.testing.assert_array_equal(backend.hitting_times(ssp, policy), np.full(6, np.inf))
    assert not backend.is_proper(ssp, policy)
    assert backend.is_proper(ssp, np.ones(6, int))


def test_policy_values_sparse_never_densified(backend, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a CSR kernel was densified")

    ssp = backend.garnet(60, 3, 4, seed=3, sparse=True)
    expected_lp = backend.optimal_values(backend.garnet(60, 3, 4, seed=3)).values
    for cls in (sp.csr_array, sp.csr_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    monkeypatch.setattr(type(ssp), "kernel_dense", refuse)
    lp = backend.optimal_values(ssp)
    pi = backend.policy_iteration(ssp)
    vi = backend.value_iteration(ssp, tol=1e-11)
    assert backend.is_proper(ssp, pi.policy)
    np.testing.assert_allclose(lp.values, expected_lp, rtol=1e-9)
    np.testing.assert_allclose(pi.values, expected_lp, rtol=1e-9)
    np.testing.assert_allclose(backend.policy_values(ssp, pi.policy), pi.values, rtol=1e-12)
    np.testing.assert_allclose(vi.values, expected_lp, rtol=1e-6)


garnet_params = st.tuples(
    st.integers(1, 7),
    st.integers(1, 3),
    st.integers(0, 10**6),
    st.booleans(),
)


def _garnet(backend, params, branching_frac, c_min):
    S, A, seed, sparse = params
    branching = 1 + int(branching_frac * S)
    return backend.garnet(S, A, branching, c_min=c_min, seed=seed, sparse=sparse)


def _dense_values(ssp, policy):
    """Values of a proper policy by a dense LAPACK solve, written independently of the package."""
    S = ssp.n_states
    P = ssp.kernel_dense()[np.arange(S), policy, :S]
    return np.linalg.solve(np.eye(S) - P, ssp.costs[np.arange(S), policy])


def _random_walk(backend, n):
    """One action: from ``s`` to ``s + 1`` or ``max(s - 1, 0)`` w.p. 1/2 each; the goal is ``n``.

    By hand, ``E[tau](s) = (n - s)(n + s + 1)``: it satisfies
    ``f(s) = 1 + (f(s+1) + f(s-1))/2`` inside, ``f(0) = 1 + (f(1) + f(0))/2`` and ``f(n) = 0``.
    """
    states = np.arange(n)
    rows = np.repeat(states, 2)
    cols = np.stack([states + 1, np.maximum(states - 1, 0)], axis=1).ravel()
    P = sp.csr_array((np.full(2 * n, 0.5), (rows, cols)), shape=(n, n + 1))
    return backend.SSP(P, np.ones((n, 1)))


def _refuse(*args, **kwargs):
    raise AssertionError("the sparse LU ran")


def test_large_garnet_is_solved_iteratively(backend, monkeypatch):
    # Above ITERATIVE_MIN_STATES (default) on a random sparse graph, BiCGSTAB alone answers.
    S = 2 * evaluation.ITERATIVE_MIN_STATES
    ssp = backend.garnet(S, 2, 5, seed=4, sparse=True)
    policy = np.zeros(S, dtype=np.int64)
    expected = _dense_values(ssp, policy)
    monkeypatch.setattr(evaluation, "spsolve", _refuse)
    np.testing.assert_allclose(backend.policy_values(ssp, policy), expected, rtol=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_iterative_and_direct_solves_agree(backend, monkeypatch, sparse):
    ssp = backend.garnet(300, 3, 4, seed=5, sparse=sparse)
    policy = backend.policy_iteration(ssp).policy
    expected = _dense_values(ssp, policy)
    direct = backend.policy_values(ssp, policy)
    monkeypatch.setattr(evaluation, "ITERATIVE_MIN_STATES", 1)
    monkeypatch.setattr(evaluation, "spsolve", _refuse)
    iterative = backend.policy_values(ssp, policy)
    np.testing.assert_allclose(direct, expected, rtol=1e-9)
    np.testing.assert_allclose(iterative, expected, rtol=1e-9)


@_examples(40)
@given(params=garnet_params, frac=st.floats(0, 1), policy_seed=st.integers(0, 10**6),
       zero_rate=st.sampled_from([0.0, 0.5]))
def test_iterative_path_keeps_the_support_semantics(
    backend, monkeypatch, params, frac, policy_seed, zero_rate
):
    # Random (possibly improper) policies, some zero costs: the iterative path gives the same
    # +inf / 0 / finite split as the direct one, and the same finite values.
    base = _garnet(backend, params, frac, 0.1)
    rng = np.random.default_rng(policy_seed)
    ssp = backend.SSP(base.P, np.where(rng.random(base.costs.shape) < zero_rate, 0.0, base.costs))
    policy = rng.integers(0, ssp.n_actions, ssp.n_states)
    with monkeypatch.context() as patch:
        patch.setattr(evaluation, "ITERATIVE_MIN_STATES", 10**9)
        direct = backend.policy_values(ssp, policy)
    with monkeypatch.context() as patch:
        patch.setattr(evaluation, "ITERATIVE_MIN_STATES", 1)
        iterative = backend.policy_values(ssp, policy)
    np.testing.assert_array_equal(np.isinf(iterative), np.isinf(direct))
    np.testing.assert_array_equal(iterative == 0.0, direct == 0.0)
    np.testing.assert_allclose(iterative, direct, rtol=1e-9)


def test_slow_chain_falls_back_to_sparse_lu(backend, monkeypatch):
    # A random walk needs about n BiCGSTAB iterations, more than KRYLOV_MAXITER: LU answers.
    n = 2 * evaluation.KRYLOV_MAXITER
    ssp = _random_walk(backend, n)
    calls = []

    def counting_spsolve(*args):
        calls.append(args[0].shape)
        return spsolve(*args)

    monkeypatch.setattr(evaluation, "ITERATIVE_MIN_STATES", 1)
    monkeypatch.setattr(evaluation, "spsolve", counting_spsolve)
    s = np.arange(n)
    np.testing.assert_allclose(
        backend.policy_values(ssp, np.zeros(n, int)), (n - s) * (n + s + 1), rtol=1e-9
    )
    assert calls == [(n, n)]


@pytest.mark.filterwarnings("ignore::scipy.sparse.linalg.MatrixRankWarning")
@pytest.mark.parametrize("threshold", [1, 10**9])
def test_system_singular_in_double_precision_raises(backend, monkeypatch, threshold):
    # p(goal) = 1e-17 next to p(stay) = 1: transient on the support graph, but 1 - Q = 0 in
    # floating point, so no finite answer is right.
    monkeypatch.setattr(evaluation, "ITERATIVE_MIN_STATES", threshold)
    ssp = _one_state(backend, [[1.0, 1e-17]], [1.0])
    assert backend.is_proper(ssp, [0])
    with pytest.raises(backend.ConvergenceError, match="singular in double precision"):
        backend.policy_values(ssp, [0])


@_examples(40)
@given(params=garnet_params, frac=st.floats(0, 1), c_min=st.sampled_from([0.05, 0.3, 1.0]))
def test_lp_pi_vi_agree_on_garnets(backend, params, frac, c_min):
    ssp = _garnet(backend, params, frac, c_min)
    lp = backend.optimal_values(ssp)
    pi = backend.policy_iteration(ssp)
    vi = backend.value_iteration(ssp, tol=1e-12)
    scale = max(1.0, np.abs(lp.values).max())
    assert pi.converged and vi.converged
    np.testing.assert_allclose(pi.values, lp.values, atol=1e-9 * scale, rtol=0)
    np.testing.assert_allclose(vi.values, lp.values, atol=1e-7 * scale, rtol=0)


@_examples(40)
@given(
    params=garnet_params,
    frac=st.floats(0, 1),
    zero_seed=st.integers(0, 10**6),
    zero_rate=st.sampled_from([0.0, 0.5, 0.9]),
)
def test_best_proper_values_with_zero_costs(backend, params, frac, zero_seed, zero_rate):
    # Zero-cost cycles: LP and PI both return the best proper value (a Bellman fixpoint
    # attained by a proper policy); VI from 0 stays below it.
    base = _garnet(backend, params, frac, 0.0)
    rng = np.random.default_rng(zero_seed)
    costs = np.where(rng.random(base.costs.shape) < zero_rate, 0.0, base.costs)
    ssp = backend.SSP(base.P, costs)
    lp = backend.optimal_values(ssp)
    pi = backend.policy_iteration(ssp)
    scale = max(1.0, np.abs(lp.values).max())
    assert pi.converged
    np.testing.assert_allclose(pi.values, lp.values, atol=1e-9 * scale, rtol=0)
    residual = _bellman(ssp.kernel_dense(), costs, lp.values) - lp.values
    assert np.abs(residual).max() <= 1e-9 * scale
    for result in (lp, pi):
        assert backend.is_proper(ssp, result.policy)
        np.testing.assert_allclose(
            backend.policy_values(ssp, result.policy), lp.values, atol=1e-9 * scale, rtol=0
        )
    vi = backend.value_iteration(ssp, tol=1e-10, max_iter=20_000)
    assert np.all(vi.values <= lp.values + 1e-9 * scale)


@_examples(30)
@given(params=garnet_params, frac=st.floats(0, 1))
def test_optimal_policy_attains_bellman_fixpoint(backend, params, frac):
    ssp = _garnet(backend, params, frac, 0.1)
    lp = backend.optimal_values(ssp)
    scale = max(1.0, np.abs(lp.values).max())
    residual = _bellman(ssp.kernel_dense(), ssp.costs, lp.values) - lp.values
    assert np.abs(residual).max() <= 1e-9 * scale
    np.testing.assert_allclose(
        backend.policy_values(ssp, lp.policy), lp.values, atol=1e-9 * scale, rtol=0
    )
    restarted = backend.policy_iteration(ssp, policy=lp.policy)
    assert restarted.n_iter == 1
    np.testing.assert_array_equal(restarted.policy, lp.policy)


@_examples(40)
@given(params=garnet_params, frac=st.floats(0, 1), policy_seed=st.integers(0, 10**6))
def test_hitting_times_are_unit_cost_values(backend, params, frac, policy_seed):
    ssp = _garnet(backend, params, frac, 0.1)
    unit = backend.SSP(ssp.P, np.ones(ssp.costs.shape))
    policy = np.random.default_rng(policy_seed).integers(0, ssp.n_actions, ssp.n_states)
    times = backend.hitting_times(ssp, policy)
    np.testing.assert_allclose(times, backend.policy_values(unit, policy), rtol=1e-12)
    assert backend.is_proper(ssp, policy) == bool(np.isfinite(times).all())
    D_s = backend.diameter(ssp).D_s
    assert np.all(D_s <= times * (1 + 1e-9))
    assert np.all(D_s >= 1 - 1e-9)


def test_policy_iteration_from_a_given_proper_policy(backend):
    # Chain where action 1 also advances, with probability p/2: every policy is proper.
    # Starting from "always action 1" (values 2(n-s)/p), PI must switch to action 0.
    n, p = 5, 0.5
    P = _chain_kernel(n, p)
    P[:, 1] = _chain_kernel(n, p / 2)[:, 0]
    ssp = backend.SSP(P, np.ones((n, 2)))
    start = np.ones(n, int)
    np.testing.assert_allclose(
        backend.policy_values(ssp, start), 2 * (n - np.arange(n)) / p, rtol=1e-12
    )
    result = backend.policy_iteration(ssp, policy=start)
    assert result.converged
    assert result.n_iter >= 2
    np.testing.assert_array_equal(result.policy, np.zeros(n))
    np.testing.assert_allclose(result.values, (n - np.arange(n)) / p, rtol=1e-12)


def test_theta_example(backend):
    # One state: action 0 exits for 1/2; action 1 is free and reaches g w.p. 0.05
    # (E[tau] = 20). D = 1. theta = 5 excludes action 1: V*_theta = 0.5, although
    # the free action, outside Pi_5, has value 0 (docs/semantics.md, Thm. 2).
    ssp = _one_state(backend, [[0.0, 1.0], [0.95, 0.05]], [0.5, 0.0])
    restricted = backend.restricted_optimal_values(ssp, 5)
    np.testing.assert_allclose(restricted.values, [0.5], rtol=1e-12)
    np.testing.assert_array_equal(restricted.policies, [[0]])
    np.testing.assert_allclose(restricted.D_s, [1.0], rtol=1e-12)
    assert (restricted.n_policies, restricted.n_feasible) == (2, 1)
    assert backend.policy_values(ssp, [1])[0] == 0.0
    np.testing.assert_allclose(backend.optimal_values(ssp).values, [0.0], atol=1e-12)
    assert backend.restricted_optimal_values(ssp, 19).values[0] == pytest.approx(0.5)
    assert backend.restricted_optimal_values(ssp, 20).values[0] == pytest.approx(0.0, abs=1e-12)
    unrestricted = backend.restricted_optimal_values(ssp, np.inf)
    assert unrestricted.values[0] == pytest.approx(0.0, abs=1e-12)


def test_restricted_values_are_per_state_minima(backend):
    # State 0: action 0 exits for cost 1 in one step, action 1 goes to state 1 for free.
    # State 1: action 0 exits for cost 1; action 1 is free, reaching g w.p. 0.1 (E[tau] = 10).
    # D_s = [1, 1]. theta = 3: policies with pi(1) = 1 are excluded (E[tau](1) = 10),
    # so Pi_3 = {(0, 0), (1, 0)} and V*_3 = [1, 1]. theta = 11: (1, 1) has E[tau] = [11, 10]
    # and values [0, 0]; in enumeration order (0, 0), (0, 1), (1, 0), (1, 1) the first
    # minimiser is (1, 1) for state 0 but (0, 1) for state 1.
    P = np.zeros((2, 2, 3))
    P[0, 0, 2] = 1.0
    P[0, 1, 1] = 1.0
    P[1, 0, 2] = 1.0
    P[1, 1, 1], P[1, 1, 2] = 0.9, 0.1
    ssp = backend.SSP(P, [[1.0, 0.0], [1.0, 0.0]])
    strict = backend.restricted_optimal_values(ssp, 3)
    np.testing.assert_allclose(strict.values, [1.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(strict.D_s, [1.0, 1.0], rtol=1e-12)
    assert strict.n_feasible == 2
    loose = backend.restricted_optimal_values(ssp, 11)
    np.testing.assert_allclose(loose.values, [0.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(loose.policies, [[1, 1], [0, 1]])


@_examples(15)
@given(params=st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(0, 10**6)))
def test_restricted_values_match_best_proper_for_large_theta(backend, params):
    # For c_min > 0 every proper policy has finite hitting times, so for theta large
    # enough Pi_theta holds the optimal policy: V*_theta = V*.
    S, A, seed = params
    ssp = backend.garnet(S, A, min(2, S + 1), c_min=0.2, seed=seed)
    lp = backend.optimal_values(ssp)
    result = backend.restricted_optimal_values(ssp, np.inf)
    np.testing.assert_allclose(result.values, lp.values, rtol=1e-9)
    assert result.n_policies == A**S
    one = backend.restricted_optimal_values(ssp, 1)
    assert np.all(one.values >= lp.values - 1e-9)


def test_restricted_values_refuse_too_many_policies(backend):
    ssp = backend.SSP(_chain_kernel(5, 0.5), np.ones((5, 2)))
    assert backend.restricted_optimal_values(ssp, 2, max_policies=32).n_policies == 32
    with pytest.raises(backend.TooLargeError, match=r"2\*\*5 = 32.*`max_policies` = 31"):
        backend.restricted_optimal_values(ssp, 2, max_policies=31)


def test_value_iteration_reports_divergence_without_proper_policy(backend):
    # Empirical-looking model: every action stays put with positive cost, V_k = k c.
    ssp = _one_state(backend, [[1.0, 0.0], [1.0, 0.0]], [1.0, 0.5], require_proper=False)
    result = backend.value_iteration(ssp, max_iter=300)
    assert not result.converged
    assert result.n_iter == 300
    assert result.residual == pytest.approx(0.5)
    assert "Assumption 1" in result.message
    assert result.values[0] == pytest.approx(0.5 * 299)


def test_value_iteration_stops_at_max_iter(backend):
    ssp = backend.SSP(_chain_kernel(6, 0.2), np.ones((6, 2)))
    result = backend.value_iteration(ssp, tol=1e-12, max_iter=3)
    assert not result.converged
    assert result.n_iter == 3
    assert "`max_iter`" in result.message


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda b, m: b.policy_values(m, [0, 0]), "ShapeError", "`policy`"),
        (lambda b, m: b.policy_values(m, [0, 2, 0]), "ParameterError", "`policy`"),
        (lambda b, m: b.hitting_times(m, [0.5, 0, 0]), "ParameterError", "`policy`"),
        (lambda b, m: b.is_proper(m, [[0, 0, 0]]), "ShapeError", "`policy`"),
        (lambda b, m: b.policy_values("ssp", [0, 0, 0]), "ParameterError", "`ssp`"),
        (lambda b, m: b.optimal_values(None), "ParameterError", "`ssp`"),
        (lambda b, m: b.value_iteration(m, tol=0.0), "ParameterError", "`tol`"),
        (lambda b, m: b.value_iteration(m, tol=-1e-3), "ParameterError", "`tol`"),
        (lambda b, m: b.value_iteration(m, tol="small"), "ParameterError", "`tol`"),
        (lambda b, m: b.value_iteration(m, tol=np.nan), "ParameterError", "`tol`"),
        (lambda b, m: b.value_iteration(m, tol=np.inf), "ParameterError", "`tol`"),
        (lambda b, m: b.value_iteration(m, max_iter=0), "ParameterError", "`max_iter`"),
        (lambda b, m: b.value_iteration(m, max_iter=2.5), "ParameterError", "`max_iter`"),
        (lambda b, m: b.policy_iteration(m, max_iter=0), "ParameterError", "`max_iter`"),
        (lambda b, m: b.policy_iteration(m, policy=[1, 1, 1]), "ParameterError", "`policy`"),
        (lambda b, m: b.policy_iteration(m, policy=[0, 3, 0]), "ParameterError", "`policy`"),
        (lambda b, m: b.restricted_optimal_values(m, 0.5), "ParameterError", "`theta`"),
        (lambda b, m: b.restricted_optimal_values(m, np.nan), "ParameterError",
         r"`theta` must lie in [1, inf]; got nan"),
        (lambda b, m: b.restricted_optimal_values(m, 2, 0), "ParameterError", "`max_policies`"),
    ],
)
def test_bad_input_names_the_argument(backend, call, error, name):
    ssp = backend.SSP(_chain_kernel(3, 0.5), np.ones((3, 2)))
    with pytest.raises(getattr(backend, error)) as info:
        call(backend, ssp)
    assert isinstance(info.value, ValueError)
    assert name in str(info.value)


@pytest.mark.parametrize("name", ["optimal_values", "policy_iteration", "diameter", "b_star"])
def test_exact_solvers_refuse_models_without_proper_policy(backend, name):
    ssp = _one_state(backend, [[1.0, 0.0]], [1.0], require_proper=False)
    with pytest.raises(backend.NoProperPolicyError, match="`ssp`"):
        getattr(backend, name)(ssp)
