"""Exact planning tools: policy values, LP, policy iteration, value iteration, diameter, V*_theta.

Ground truth comes from hand derivations (written next to each instance), exact
rational arithmetic (``fractions.Fraction``) on small ill-conditioned chains, an
independent subtraction-free elimination written here on large ones, or the
agreement of independent methods (LP, policy iteration, value iteration, direct
Bellman residuals).
"""

import functools
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import chains


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


def _drift(backend, n, p, sparse):
    """The drift chain: states ``0..n-1`` on a line, the goal left of 0, unit costs.

    Action 0 moves right w.p. ``p`` and left w.p. ``1 - p``; action 1 the reverse.
    Moving right from ``n - 1`` stays put (the right end reflects).
    """
    rows, cols, probs = [], [], []
    for s in range(n):
        for a, right in enumerate((p, 1.0 - p)):
            rows += [2 * s + a] * 2
            cols += [min(s + 1, n - 1), s - 1 if s > 0 else n]
            probs += [right, 1.0 - right]
    P = sp.csr_array((probs, (rows, cols)), shape=(2 * n, n + 1))
    P.sum_duplicates()
    P = P if sparse else P.toarray().reshape(n, 2, n + 1)
    return backend.SSP(P, np.ones((n, 2)))


def _slippery_grid(backend, rows, cols, success, sparse):
    """A grid with the goal in the bottom-left cell; actions up, down, left, right, unit costs.

    The intended move happens w.p. ``success`` and each of the three others w.p.
    ``(1 - success) / 3``; a move into the border stays put. Every policy is proper, and
    "up everywhere" pushes away from the goal: its values grow like
    ``(3 success / (1 - success)) ** rows`` (about 1e34 on 40 x 25 at ``success = 0.7``).
    """
    goal = (rows - 1) * cols
    S = rows * cols - 1

    def index(r, c):
        k = r * cols + c
        return S if k == goal else k - (k > goal)

    moves = ((-1, 0), (1, 0), (0, -1), (0, 1))
    entries = []
    for r in range(rows):
        for c in range(cols):
            if r * cols + c == goal:
                continue
            for a in range(4):
                for b, (dr, dc) in enumerate(moves):
                    nr, nc = r + dr, c + dc
                    if not (0 <= nr < rows and 0 <= nc < cols):
                        nr, nc = r, c
                    prob = success if a == b else (1.0 - success) / 3
                    entries.append((4 * index(r, c) + a, index(nr, nc), prob))
    i, j, v = zip(*entries)
    P = sp.csr_array((v, (i, j)), shape=(4 * S, S + 1))
    P.sum_duplicates()
    P = P if sparse else P.toarray().reshape(S, 4, S + 1)
    return backend.SSP(P, np.ones((S, 4)))


def _exact_values(ssp, policy):
    """Values of a proper policy with positive costs in exact rational arithmetic.

    The chain is read as stored: state ``s`` leaves with the summed probability of its
    goal entry and of its moves to other states, ``d(s)``, and
    ``d(s) V(s) - sum_{s' != s} P(s'|s) V(s') = c(s)`` is solved by Gaussian elimination
    over ``fractions.Fraction``.
    """
    S = ssp.n_states
    chain = ssp.kernel_csr()[np.arange(S) * ssp.n_actions + np.asarray(policy)].toarray()
    M = [[Fraction(0)] * S + [Fraction(float(ssp.costs[s, policy[s]]))] for s in range(S)]
    for s in range(S):
        off = [Fraction(float(x)) for x in chain[s]]
        M[s][s] = sum(off[t] for t in range(S + 1) if t != s)
        for t in range(S):
            if t != s:
                M[s][t] = -off[t]
    for k in range(S):
        pivot = next(r for r in range(k, S) if M[r][k] != 0)
        M[k], M[pivot] = M[pivot], M[k]
        for r in range(k + 1, S):
            if M[r][k] != 0:
                ratio = M[r][k] / M[k][k]
                M[r] = [x - ratio * y for x, y in zip(M[r], M[k])]
    V = [Fraction(0)] * S
    for k in range(S - 1, -1, -1):
        V[k] = (M[k][S] - sum(M[k][t] * V[t] for t in range(k + 1, S))) / M[k][k]
    return V


def _relative_error(values, exact):
    """Largest relative error of floats against exact rationals, computed exactly."""
    return float(max(abs(Fraction(float(v)) - x) / x for v, x in zip(values, exact)))


def _drift_by_recursion(n, p):
    """Values of "always action 0" on the drift chain, written independently and subtraction-free.

    Eliminating the states from the right end, state ``s`` keeps only its move left (w.p.
    ``q = 1 - p``) and a cost ``a(s) = 1 + (p / q) a(s + 1)``, ``a(n - 1) = 1``; so
    ``V(s) = V(s - 1) + a(s) / q`` with ``V(-1) = 0``.
    """
    q = 1.0 - p
    a = np.empty(n)
    a[-1] = 1.0
    for s in range(n - 2, -1, -1):
        a[s] = 1.0 + (p / q) * a[s + 1]
    return np.cumsum(a / q)


def _dense_elimination(ssp, policy):
    """Values of a proper policy with positive costs by textbook dense GTH, in state order.

    Written independently of the package: the leaving probability of each state is summed
    from the goal and the states not yet eliminated, never taken as ``1 - P(s|s)``.
    """
    S = ssp.n_states
    chain = ssp.kernel_csr()[np.arange(S) * ssp.n_actions + np.asarray(policy)].toarray()
    Q, exits = chain[:, :S].copy(), chain[:, S].copy()
    cost = ssp.costs[np.arange(S), policy].astype(float)
    leave = np.empty(S)
    for k in range(S):
        leave[k] = exits[k] + Q[k, k + 1:].sum()
        w = Q[k + 1:, k] / leave[k]
        Q[k + 1:, k + 1:] += np.outer(w, Q[k, k + 1:])
        exits[k + 1:] += w * exits[k]
        cost[k + 1:] += w * cost[k]
    V = np.empty(S)
    for k in range(S - 1, -1, -1):
        V[k] = (cost[k] + Q[k, k + 1:] @ V[k + 1:]) / leave[k]
    return V


def _relative_bellman_residual(ssp, values):
    """``max_s |min_a Q(s, a) - V(s)| / V(s)``, from the CSR kernel, written independently."""
    S, A = ssp.n_states, ssp.n_actions
    q = ssp.costs + (ssp.kernel_csr() @ np.append(values, 0.0)).reshape(S, A)
    return float(np.max(np.abs(q.min(axis=1) - values) / values))


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


@pytest.mark.shared
def test_chain_diameter_and_b_star(backend):
    # Unit costs: values are hitting times, D_s = (n - s)/p, D = B* = n/p.
    n, p = 6, 0.4
    ssp = backend.SSP(_chain_kernel(n, p), np.ones((n, 2)))
    result = backend.diameter(ssp)
    np.testing.assert_allclose(result.D_s, (n - np.arange(n)) / p, rtol=1e-9)
    assert result.D == pytest.approx(n / p, rel=1e-9)
    np.testing.assert_array_equal(result.policy, np.zeros(n))
    assert backend.b_star(ssp) == pytest.approx(n / p, rel=1e-9)


@pytest.mark.shared
def test_diameter_ignores_costs(backend):
    # Half-cost chain: values halve, hitting times do not.
    n, p = 5, 0.5
    ssp = backend.SSP(_chain_kernel(n, p), np.full((n, 2), 0.5))
    assert backend.diameter(ssp).D == pytest.approx(n / p, rel=1e-9)
    assert backend.b_star(ssp) == pytest.approx(0.5 * n / p, rel=1e-9)


@pytest.mark.shared
@pytest.mark.parametrize("cost, q", [(1.0, 1.0), (0.3, 0.25), (0.0, 0.5)])
def test_one_state_one_action(backend, cost, q):
    # V = cost + (1 - q) V  =>  V = cost / q;  E[tau] = 1 / q.
    ssp = _one_state(backend, [[1 - q, q]], [cost])
    np.testing.assert_allclose(backend.policy_values(ssp, [0]), [cost / q], rtol=1e-12)
    np.testing.assert_allclose(backend.hitting_times(ssp, [0]), [1 / q], rtol=1e-12)
    assert backend.is_proper(ssp, [0])
    np.testing.assert_allclose(backend.optimal_values(ssp).values, [cost / q], rtol=1e-9)
    np.testing.assert_allclose(backend.policy_iteration(ssp).values, [cost / q], rtol=1e-12)


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
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
    # Small reduced blocks of one policy may go dense; the (S*A, S+1) kernel never does.
    ssp = backend.garnet(60, 3, 4, seed=3, sparse=True)
    expected_lp = backend.optimal_values(backend.garnet(60, 3, 4, seed=3)).values

    def guarded(original):
        def densify(self, *args, **kwargs):
            if self.shape == ssp.kernel_csr().shape:
                raise AssertionError("a CSR kernel was densified")
            return original(self, *args, **kwargs)
        return densify

    for cls in (sp.csr_array, sp.csr_matrix):
        monkeypatch.setattr(cls, "toarray", guarded(cls.toarray))
        monkeypatch.setattr(cls, "todense", guarded(cls.todense))
    monkeypatch.setattr(type(ssp), "kernel_dense", guarded(type(ssp).kernel_dense))
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


def _refuse_elimination(*args, **kwargs):
    raise AssertionError("the elimination ran")


@pytest.mark.shared
def test_large_garnet_is_solved_iteratively(backend, monkeypatch):
    # Above ITERATIVE_MIN_STATES on a random sparse graph, certified BiCGSTAB alone answers.
    S = 2 * chains.ITERATIVE_MIN_STATES
    ssp = backend.garnet(S, 2, 5, seed=4, sparse=True)
    policy = np.zeros(S, dtype=np.int64)
    expected = _dense_values(ssp, policy)
    monkeypatch.setattr(chains.explicit, "_gth", _refuse_elimination)
    np.testing.assert_allclose(backend.policy_values(ssp, policy), expected, rtol=1e-12)


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
def test_the_three_solvers_agree(backend, monkeypatch, sparse):
    # Dense LU (dense model), BiCGSTAB (sparse model, forced) and elimination (forced by a
    # certificate nothing passes) give the same values as an independent LAPACK solve.
    ssp = backend.garnet(300, 3, 4, seed=5, sparse=sparse)
    policy = backend.policy_iteration(ssp).policy
    expected = _dense_values(ssp, policy)
    direct = backend.policy_values(ssp, policy)
    monkeypatch.setattr(chains.explicit, "ITERATIVE_MIN_STATES", 1)
    monkeypatch.setattr(chains.explicit, "_gth", _refuse_elimination)
    certified = backend.policy_values(ssp, policy)
    monkeypatch.undo()
    monkeypatch.setattr(chains.explicit, "CERTIFIED_RTOL", 0.0)
    eliminated = backend.policy_values(ssp, policy)
    for values in (direct, certified, eliminated):
        np.testing.assert_allclose(values, expected, rtol=1e-12)


@pytest.mark.shared
def test_slow_chain_is_eliminated(backend, monkeypatch):
    # A random walk needs about n BiCGSTAB iterations, more than KRYLOV_MAXITER: the
    # elimination answers, exactly up to rounding.
    n = 2 * chains.KRYLOV_MAXITER
    ssp = _random_walk(backend, n)
    calls = []
    eliminate = chains.explicit._gth

    def counting(*args):
        calls.append(args[0].shape)
        return eliminate(*args)

    monkeypatch.setattr(chains.explicit, "ITERATIVE_MIN_STATES", 1)
    monkeypatch.setattr(chains.explicit, "_gth", counting)
    s = np.arange(n)
    np.testing.assert_allclose(
        backend.policy_values(ssp, np.zeros(n, int)), (n - s) * (n + s + 1), rtol=1e-13
    )
    assert calls == [(n, n)]


@pytest.mark.shared
def test_tiny_exit_is_read_from_the_goal_entry(backend):
    # p(goal) = 1e-17 next to p(stay) = 1: 1 - p(stay) rounds to 0, but the chain leaves with
    # probability 1e-17 per step, so the expected cost is 1e17 (the row's rounding defect,
    # within the validation tolerance, is attributed to staying put).
    ssp = _one_state(backend, [[1.0, 1e-17]], [1.0])
    assert backend.is_proper(ssp, [0])
    np.testing.assert_allclose(backend.policy_values(ssp, [0]), [1e17], rtol=1e-15)
    np.testing.assert_allclose(backend.hitting_times(ssp, [0]), [1e17], rtol=1e-15)


@pytest.mark.shared
def test_values_beyond_float64_raise_naming_the_states(backend):
    # Drift chain with p = 0.9 towards the wall: V grows like 9**N, beyond 1e308 at N = 400.
    ssp = _drift(backend, 400, 0.9, sparse=True)
    with pytest.raises(backend.ConvergenceError, match=r"state \d+ .*float64 range"):
        backend.policy_values(ssp, np.zeros(400, int))


@_examples(40)
@given(params=garnet_params, frac=st.floats(0, 1), c_min=st.sampled_from([0.05, 0.3, 1.0]))
def test_lp_pi_vi_agree_on_garnets(backend, params, frac, c_min):
    ssp = _garnet(backend, params, frac, c_min)
    lp = backend.optimal_values(ssp)
    pi = backend.policy_iteration(ssp)
    vi = backend.value_iteration(ssp, tol=1e-12)
    scale = max(1.0, np.abs(lp.values).max())
    assert pi.converged
    np.testing.assert_allclose(pi.values, lp.values, atol=1e-9 * scale, rtol=0)
    if vi.converged:
        np.testing.assert_allclose(vi.values, lp.values, atol=1e-7 * scale, rtol=0)
    else:
        # A slow chain (values of thousands at c_min = 0.05) can outlast the sweep budget:
        # VI must then say so, and its iterates from 0 stay below V* (T is monotone, T V* = V*).
        assert vi.n_iter == 100_000 and vi.residual > 1e-12
        assert np.all(vi.values <= lp.values + 1e-9 * scale)


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


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
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


@pytest.mark.shared
@pytest.mark.parametrize("name", ["optimal_values", "policy_iteration", "diameter", "b_star"])
def test_exact_solvers_refuse_models_without_proper_policy(backend, name):
    ssp = _one_state(backend, [[1.0, 0.0]], [1.0], require_proper=False)
    with pytest.raises(backend.NoProperPolicyError, match="`ssp`"):
        getattr(backend, name)(ssp)


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n, p", [(25, 0.52), (25, 0.9), (18, 0.9), (30, 0.7)])
def test_drift_chain_matches_exact_arithmetic(backend, n, p, sparse):
    # Both constant policies, values up to 9**25 ~ 7e23: relative error at rounding level.
    ssp = _drift(backend, n, p, sparse)
    for action in (0, 1):
        policy = np.full(n, action)
        exact = _exact_values(ssp, policy)
        assert _relative_error(backend.policy_values(ssp, policy), exact) <= 1e-13
        assert _relative_error(backend.hitting_times(ssp, policy), exact) <= 1e-13


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
def test_slippery_grid_matches_exact_arithmetic(backend, sparse):
    # 6 x 4 grid, 23 states: "up everywhere" costs about 1e10, the optimal policy about 10.
    ssp = _slippery_grid(backend, 6, 4, 0.97, sparse)
    up = np.zeros(ssp.n_states, int)
    exact = _exact_values(ssp, up)
    assert float(max(exact)) > 1e9
    assert _relative_error(backend.policy_values(ssp, up), exact) <= 1e-13
    best = backend.optimal_values(ssp)
    assert _relative_error(best.values, _exact_values(ssp, best.policy)) <= 1e-13


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
def test_drift_chain_999_states_matches_an_independent_elimination(backend, sparse):
    # The instance on which a backward-error-checked solve returned 1.2e16 for 1.7e37.
    n, p = 999, 0.52
    ssp = _drift(backend, n, p, sparse)
    values = backend.policy_values(ssp, np.zeros(n, int))
    np.testing.assert_allclose(values, _drift_by_recursion(n, p), rtol=1e-12)
    assert values.max() > 1e37


@pytest.mark.shared
def test_drift_chain_large_sparse(backend):
    # 20000 states, values up to 1e18: the sparse elimination against the recursion.
    n, p = 20_000, 0.5003
    ssp = _drift(backend, n, p, sparse=True)
    np.testing.assert_allclose(
        backend.policy_values(ssp, np.zeros(n, int)), _drift_by_recursion(n, p), rtol=1e-11
    )


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
def test_ill_conditioned_grid_matches_an_independent_elimination(backend, sparse):
    # 30 x 20 grid, success 0.7: "up everywhere" costs about 1e25.
    ssp = _slippery_grid(backend, 30, 20, 0.7, sparse)
    up = np.zeros(ssp.n_states, int)
    values = backend.policy_values(ssp, up)
    assert values.min() > 1e24
    np.testing.assert_allclose(values, _dense_elimination(ssp, up), rtol=1e-12)


PATHS = {
    "default": {},
    "krylov": {"ITERATIVE_MIN_STATES": 1, "DENSE_MAX_STATES": 0},
    "csr": {"DENSE_MAX_STATES": 0},
    "elimination": {"CERTIFIED_RTOL": 0.0},
    "sparse elimination": {"CERTIFIED_RTOL": 0.0, "DENSE_MAX_STATES": 0,
                           "DENSE_SWITCH_STATES": 1, "DENSE_SWITCH_FILL": 1.0},
}
"""Settings of :mod:`reference.chains` that send a block down each solve path: the default
choice by storage and size; BiCGSTAB on every block (dense ones stored as CSR first); CSR
storage of every block; the elimination alone (a certificate nothing passes), dense, or in
sparse rounds down to one state."""


@st.composite
def _stiff_chains(draw):
    """One-action chains on 1..6 states with probabilities spread over 15 orders of magnitude.

    Exits of ``1e-15`` next to self-loops of ``1`` make near-singular systems (values near
    ``1e15``); zero costs and missing exits make zero and infinite values.
    """
    S = draw(st.integers(1, 6))
    weights = np.array(draw(st.lists(
        st.sampled_from([0.0, 0.0, 1.0, 1e-3, 1e-6, 1e-9, 1e-12]),
        min_size=S * (S + 1), max_size=S * (S + 1),
    ))).reshape(S, S + 1)
    weights[:, S] = np.maximum(weights[:, S], draw(st.sampled_from([0.0, 1e-15, 1e-12, 1e-6])))
    weights[np.arange(S), np.arange(S)] += draw(st.sampled_from([0.0, 1.0]))
    weights[weights.sum(axis=1) == 0, S] = 1.0
    costs = np.array(draw(st.lists(st.sampled_from([0.0, 1e-9, 0.5, 1.0]),
                                   min_size=S, max_size=S)))
    return weights / weights.sum(axis=1, keepdims=True), costs


def _support_split(chain, costs):
    """Masks ``(infinite, zero)`` of a chain ``(S, S+1)`` from its support, by plain search.

    ``V(s) = 0`` when no state reachable from ``s`` has a positive cost; ``V(s) = +inf`` when
    ``s`` reaches a state ``t`` of a closed class (every state reachable from ``t`` reaches
    ``t`` back, and the goal is not reachable) in which some state has a positive cost.
    """
    S = chain.shape[0]
    reach = []
    for s in range(S):
        seen, todo = {s}, [s]
        while todo:
            for t in np.flatnonzero(chain[todo.pop()]):
                if int(t) not in seen:
                    seen.add(int(t))
                    if t < S:
                        todo.append(int(t))
        reach.append(seen)
    closed = [S not in reach[t] and all(t in reach[u] for u in reach[t]) for t in range(S)]
    costly = [any(costs[u] > 0 for u in reach[t] if u < S) for t in range(S)]
    infinite = np.array([any(closed[t] and costly[t] for t in reach[s] if t < S)
                         for s in range(S)], dtype=bool)
    return infinite, ~np.array(costly, dtype=bool)


def _exact_chain_values(chain, costs, states):
    """Exact values on ``states`` (each finite and positive) of a chain ``(S, S+1)``.

    The chain is read as stored: ``d(s) V(s) - sum_{t in states, t != s} P(t|s) V(t) = c(s)``
    with ``d(s)`` the summed probability of every move of ``s`` to another state or the goal
    (the other states have value 0), solved by Gaussian elimination over
    ``fractions.Fraction`` without pivoting (the matrix is a non-singular M-matrix).
    """
    index = {int(s): i for i, s in enumerate(states)}
    rows, rhs = [], []
    for i, s in enumerate(states):
        row = {i: Fraction(0)}
        for t in np.flatnonzero(chain[s]):
            if t != s:
                p = Fraction(float(chain[s, t]))
                row[i] += p
                if int(t) in index:
                    row[index[int(t)]] = -p
        rows.append(row)
        rhs.append(Fraction(float(costs[s])))
    n = len(rows)
    for k in range(n):
        for r in range(k + 1, n):
            if k in rows[r]:
                factor = rows[r].pop(k) / rows[k][k]
                for j, v in rows[k].items():
                    if j != k:
                        rows[r][j] = rows[r].get(j, Fraction(0)) - factor * v
                rhs[r] -= factor * rhs[k]
    values = [Fraction(0)] * n
    for k in range(n - 1, -1, -1):
        tail = sum((v * values[j] for j, v in rows[k].items() if j != k), Fraction(0))
        values[k] = (rhs[k] - tail) / rows[k][k]
    return values


@pytest.mark.shared
@_examples(30)
@given(chain=_stiff_chains())
def test_every_path_is_exact_to_1e10_on_stiff_chains(backend, monkeypatch, chain):
    # Every solve path, on dense and CSR storage, through policy_values and chain_values:
    # +inf and 0 exactly where the support says, the other values within the promised
    # 1e-10 relative of exact rational arithmetic.
    P, costs = chain
    S = P.shape[0]
    infinite, zero = _support_split(P, costs)
    finite = np.flatnonzero(~infinite & ~zero)
    exact = _exact_chain_values(P, costs, finite)
    dense = backend.SSP(P.reshape(S, 1, S + 1), costs.reshape(S, 1), require_proper=False)
    csr = backend.SSP(sp.csr_array(P), costs.reshape(S, 1), require_proper=False)
    for name, settings_ in PATHS.items():
        with monkeypatch.context() as patch:
            for constant, value in settings_.items():
                patch.setattr(chains.explicit, constant, value)
            answers = [backend.policy_values(ssp, np.zeros(S, int)) for ssp in (dense, csr)]
            answers += [chains.chain_values(chain_, costs) for chain_ in (P, sp.csr_array(P))]
        for values in answers:
            np.testing.assert_array_equal(np.isinf(values), infinite, err_msg=name)
            np.testing.assert_array_equal(values == 0.0, zero, err_msg=name)
            if finite.size:
                assert _relative_error(values[finite], exact) <= 1e-10, name


@functools.lru_cache(maxsize=None)
def _exact_drift(n, right, left):
    """Exact values of a drift chain whose every state moves right w.p. ``right`` and left
    w.p. ``left`` (the goal left of 0, the right end reflecting), unit costs.

    Eliminating the states from the right end (subtraction-free, see
    :func:`_drift_by_recursion`): ``V(s) = V(s - 1) + a(s) / left`` with
    ``a(s) = 1 + (right / left) a(s + 1)``, ``a(n - 1) = 1``. With ``right = R / D`` and
    ``left = L / D`` for integers (``D`` a power of two: both are floats),
    ``a(s) = A(s) / L^(n-1-s)`` where ``A(n-1) = 1`` and ``A(s) = L^(n-1-s) + R A(s+1)``,
    and ``V(s) L^n = D sum_{r <= s} A(r) L^r``: integers throughout (rational arithmetic
    without the gcd of every step, which makes ``fractions.Fraction`` slow at 1000 states).

    Returns
    -------
    numerators : list of int
    denominator : int
        ``V(s) = numerators[s] / denominator``.
    """
    D = max(Fraction(right).denominator, Fraction(left).denominator)
    R, L = int(Fraction(right) * D), int(Fraction(left) * D)
    A, power = [1] * n, 1
    for s in range(n - 2, -1, -1):
        power *= L
        A[s] = power + R * A[s + 1]
    numerators, total, power = [], 0, 1
    for s in range(n):
        total += D * A[s] * power
        power *= L
        numerators.append(total)
    return numerators, power


def _relative_error_over(values, numerators, denominator):
    """Largest relative error of floats against ``numerators / denominator``, in integers."""
    errors = []
    for value, exact in zip(values, numerators):
        a, b = float(value).as_integer_ratio()
        errors.append(abs(a * denominator - exact * b) / (exact * b))
    return max(errors)


@pytest.mark.shared
@pytest.mark.parametrize("action", [0, 1])
def test_exact_drift_is_the_rational_elimination(backend, action):
    # The integer recursion behind the long drift chains against Gaussian elimination over
    # fractions.Fraction, on both constant policies of a short chain.
    n, p = 12, 0.52
    ssp = _drift(backend, n, p, sparse=True)
    right = p if action == 0 else 1.0 - p
    numerators, denominator = _exact_drift(n, right, 1.0 - right)
    assert [Fraction(x, denominator) for x in numerators] == _exact_values(ssp, [action] * n)


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n", [40, 400, 1200])
@pytest.mark.parametrize("p", [0.52, 0.5003, 0.3])
def test_drift_chains_are_exact_to_1e10_at_every_size(backend, n, p, sparse):
    # Sizes on both sides of the thresholds that choose the path (dense LU up to 1000 states,
    # sparse elimination in rounds from 300, BiCGSTAB from 1000), drifting away from the goal
    # (values up to 1e41), nearly balanced (about n^2) and towards it.
    ssp = _drift(backend, n, p, sparse)
    values = backend.policy_values(ssp, np.zeros(n, int))
    assert _relative_error_over(values, *_exact_drift(n, p, 1.0 - p)) <= 1e-10


@_examples(40)
@given(chain=_stiff_chains())
def test_certified_lu_answers_are_within_certified_rtol(chain):
    # The certificate never accepts an LU answer further than CERTIFIED_RTOL from exact.
    P, costs = chain
    S = P.shape[0]
    infinite, zero = _support_split(P, costs)
    if infinite.any() or zero.any():
        return
    exact = _exact_chain_values(P, costs, np.arange(S))
    Q, exits = P[:, :S].copy(), P[:, S].copy()
    np.fill_diagonal(Q, 0.0)
    lu, times = chains.explicit._lu_values(Q.copy(), exits, costs)
    accepted = chains.explicit._certified(Q, exits, costs, lu, times)
    if accepted.any():
        assert _relative_error(lu[accepted], np.array(exact)[accepted]) <= chains.CERTIFIED_RTOL


@pytest.mark.shared
def test_too_large_elimination_raises_naming_the_states(backend, monkeypatch):
    # With no certified solve and a dense block above the limit, the answer is refused.
    ssp = _drift(backend, 60, 0.9, sparse=False)
    monkeypatch.setattr(chains.explicit, "CERTIFIED_RTOL", 0.0)
    monkeypatch.setattr(chains.explicit, "ELIMINATION_MAX_STATES", 10)
    with pytest.raises(backend.ConvergenceError, match=r"60 states \[0, 1, .*\].*dense block"):
        backend.policy_values(ssp, np.zeros(60, int))


@pytest.mark.shared
@pytest.mark.parametrize("p", [0.52, 0.7])
def test_policy_iteration_reaches_v_star_on_the_drift_chain(backend, p):
    # With p > 1/2, action 1 (left w.p. p) is optimal everywhere.
    n = 999
    ssp = _drift(backend, n, p, sparse=True)
    result = backend.policy_iteration(ssp)
    assert result.converged
    np.testing.assert_array_equal(result.policy, np.ones(n))
    np.testing.assert_allclose(result.values, backend.policy_values(ssp, np.ones(n, int)),
                               rtol=1e-15)
    assert _relative_bellman_residual(ssp, result.values) <= 1e-12


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
def test_policy_iteration_and_polished_lp_reach_v_star_on_the_grid(backend, sparse):
    ssp = _slippery_grid(backend, 40, 25, 0.7, sparse)
    pi = backend.policy_iteration(ssp)
    best = backend.optimal_values(ssp)
    assert pi.converged and best.converged
    assert best.lp_gap <= 1e-6
    np.testing.assert_allclose(pi.values, best.values, rtol=1e-12)
    for result in (pi, best):
        assert _relative_bellman_residual(ssp, result.values) <= 1e-12
        np.testing.assert_allclose(backend.policy_values(ssp, result.policy), result.values,
                                   rtol=1e-15)
    assert pi.values.max() < 200


@pytest.mark.shared
@_examples(25)
@given(params=garnet_params, frac=st.floats(0, 1), c_min=st.sampled_from([0.05, 1.0]))
def test_polished_lp_satisfies_bellman_to_1e12(backend, params, frac, c_min):
    ssp = _garnet(backend, params, frac, c_min)
    best = backend.optimal_values(ssp)
    assert best.converged
    assert _relative_bellman_residual(ssp, best.values) <= 1e-12
    np.testing.assert_array_equal(backend.policy_values(ssp, best.policy), best.values)


@pytest.mark.shared
def test_policy_iteration_max_iter_returns_the_last_evaluated_policy(backend):
    # From "always action 0" (the bad one) on the drift chain, PI needs two evaluations.
    n, p = 50, 0.6
    ssp = _drift(backend, n, p, sparse=False)
    start = np.zeros(n, int)
    one = backend.policy_iteration(ssp, policy=start, max_iter=1)
    assert not one.converged and one.n_iter == 1
    assert "`max_iter` = 1" in one.message
    np.testing.assert_array_equal(one.policy, start)
    np.testing.assert_array_equal(one.values, backend.policy_values(ssp, start))
    full = backend.policy_iteration(ssp, policy=start)
    assert full.converged and full.n_iter == 2
    np.testing.assert_array_equal(full.policy, np.ones(n))
    np.testing.assert_array_equal(full.values, backend.policy_values(ssp, full.policy))


def test_results_are_read_only(backend):
    ssp = _drift(backend, 5, 0.6, sparse=False)
    results = (backend.policy_iteration(ssp), backend.optimal_values(ssp),
               backend.value_iteration(ssp), backend.diameter(ssp),
               backend.restricted_optimal_values(ssp, 2.0))
    for result in results:
        assert isinstance(result.converged, bool) and isinstance(result.message, str)
        for name in result.keys():
            value = getattr(result, name)
            if isinstance(value, np.ndarray):
                with pytest.raises(ValueError, match="read-only"):
                    value[...] = 0
