"""The paper's lemmas as checked properties, in the corrected forms of docs/semantics.md ("Errata").

* Lemma 2 (simulation lemma), under ``eta ||V'|| <= c_min / 2``, in exact rational
  arithmetic on small chains, with the worst perturbation; the printed condition's
  counterexample pinned, with a proper policy in both models.
* Lemma 4 (EVI's optimism and the ``1 + 2 mu / c_min`` factor) on random counts, under
  the event that the true kernel lies in the confidence boxes.
* Lemma 5 (coverage of the Bernstein boxes) by simulation, against its rate ``delta``, and
  its radius by hand where the square-root term dominates.
* Lemma 7 (goal-reaching tail) against exact tail probabilities of the cost to go,
  computed level by level over the costs.
* Lemma 9 (the diameter estimate) in its corrected form over many random instances, the
  range of ``eps`` where its lower side is proved, and the printed iteration count's
  counterexample pinned.
"""

from fractions import Fraction
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binom
import sympy

SIMULATION_CONDITION = Fraction(1, 2)
"""Lemma 2 holds for ``eta ||V'|| <= SIMULATION_CONDITION * c_min`` (the paper prints 2)."""

TAIL_CONSTANT = 4
"""Lemma 7: ``P(cost > m) <= 2 exp(-m / (TAIL_CONSTANT d))``."""

FIXTURE = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _exact_values(Q, cost):
    """Solve ``(I - Q) V = cost`` exactly (Gauss-Jordan over Fractions); ``Q`` is (S, S)."""
    n = len(cost)
    rows = [[(1 if i == j else 0) - Q[i][j] for j in range(n)] + [cost[i]] for i in range(n)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        rows[col] = [x / rows[col][col] for x in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col])]
    return [rows[i][n] for i in range(n)]


@st.composite
def rational_chains(draw):
    """A proper chain over ``S <= 3`` states (goal last), costs in ``(0, 1]``: rows of Fractions."""
    n = draw(st.integers(1, 3))
    rows = []
    for _ in range(n):
        weights = [draw(st.integers(0, 6)) for _ in range(n)] + [draw(st.integers(1, 6))]
        rows.append([Fraction(w, sum(weights)) for w in weights])
    cost = [Fraction(draw(st.integers(1, 8)), 8) for _ in range(n)]
    return rows, cost


def _worst_perturbation(row, values, eta):
    """Move ``eta / 2`` of mass (L1 distance ``eta``) from the cheapest next states to the dearest.

    ``values`` are the values of the next states, the goal last with value 0; the mass
    comes from the goal first.
    """
    order = sorted(range(len(row)), key=lambda k: (values[k], k != len(row) - 1))
    target = max(range(len(row)), key=lambda k: values[k])
    new, left = list(row), eta / 2
    for k in order:
        if k == target or left == 0:
            continue
        taken = min(new[k], left)
        new[k] -= taken
        new[target] += taken
        left -= taken
    return new


def _ssp(backend, rows, cost):
    P = np.array([[[float(x) for x in row]] for row in rows])
    c = np.array([[float(x)] for x in cost])
    return backend.SSP(P, c, require_proper=False)


@pytest.mark.shared
@settings(FIXTURE, max_examples=60)
@given(chain=rational_chains(), share=st.integers(1, 16).map(lambda k: Fraction(k, 16)))
def test_simulation_lemma_under_the_corrected_condition(backend, chain, share):
    rows, cost = chain
    n = len(cost)
    c_min = min(cost)
    V_prime = _exact_values([row[:n] for row in rows], cost)
    norm = max(V_prime)
    eta = share * SIMULATION_CONDITION * c_min / norm
    perturbed = [_worst_perturbation(row, V_prime + [0], eta) for row in rows]
    assert all(sum(abs(a - b) for a, b in zip(p, q)) <= eta for p, q in zip(perturbed, rows))
    policy = np.zeros(n, dtype=np.int64)
    true_model = _ssp(backend, perturbed, cost)
    assert backend.is_proper(true_model, policy)
    V = _exact_values([row[:n] for row in perturbed], cost)
    x = eta * norm / c_min
    assert all(v <= (1 + 2 * x) * vp for v, vp in zip(V, V_prime))
    assert all(vp <= (1 + x) * v for v, vp in zip(V, V_prime))
    assert backend.policy_values(true_model, policy) == pytest.approx([float(v) for v in V],
                                                                      rel=1e-9)


@pytest.mark.shared
def test_simulation_lemma_as_printed_fails_with_a_proper_policy_in_both_models(backend):
    """One state, two actions of unit cost; action 1 reaches the goal surely in both models,
    so both have a proper policy, as the lemma requires. Under ``p'`` action 0 reaches the
    goal w.p. ``1/4``: ``V' = 4`` for the policy playing it, and ``eta = 1/2`` gives
    ``eta V' = 2 = 2 c_min``; under ``p`` (L1 distance ``1/2``) it never reaches the goal."""
    row_prime = [Fraction(3, 4), Fraction(1, 4)]
    cost = [Fraction(1)]
    (V_prime,) = _exact_values([[Fraction(3, 4)]], cost)
    eta = Fraction(1, 2)
    assert V_prime == 4 and eta * V_prime <= 2 * min(cost)
    assert not eta * V_prime <= SIMULATION_CONDITION * min(cost)
    true_row = _worst_perturbation(row_prime, [V_prime, 0], eta)
    assert true_row == [1, 0]
    assert sum(abs(a - b) for a, b in zip(true_row, row_prime)) == eta
    exit_row = [0.0, 1.0]
    P_prime = np.array([[[float(x) for x in row_prime], exit_row]])
    P = np.array([[[float(x) for x in true_row], exit_row]])
    costs = np.ones((1, 2))
    model_prime, true_model = backend.SSP(P_prime, costs), backend.SSP(P, costs)
    exit_policy, pi = np.array([1]), np.array([0])
    assert backend.is_proper(model_prime, exit_policy) and backend.is_proper(true_model,
                                                                             exit_policy)
    assert backend.policy_values(model_prime, pi)[0] == pytest.approx(4.0)
    assert not backend.is_proper(true_model, pi)
    assert backend.policy_values(true_model, pi)[0] == math.inf


def _random_model(seed, n_states, n_actions, c_min):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(n_states + 1), size=(n_states, n_actions))
    P[..., n_states] += 0.05
    P /= P.sum(axis=2, keepdims=True)
    costs = rng.uniform(c_min, 1.0, size=(n_states, n_actions))
    costs.flat[0] = c_min
    return P, costs, rng


@settings(FIXTURE, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 4), n_actions=st.integers(1, 3),
       n_samples=st.sampled_from([3, 30, 300]), c_min=st.floats(0.05, 1.0),
       share=st.floats(0.01, 1.0))
def test_lemma_4_optimism_under_the_event(backend, seed, n_states, n_actions, n_samples, c_min,
                                          share):
    P, costs, rng = _random_model(seed, n_states, n_actions, c_min)
    counts = rng.multinomial(n_samples, P.reshape(-1, n_states + 1)).reshape(P.shape)
    delta = 0.1
    lo, hi = backend.confidence_box(counts, delta)
    assume(np.all((lo <= P) & (P <= hi)))
    mu = share * c_min / 2
    out = backend.extended_value_iteration(counts, costs, delta, mu)
    v_star = backend.optimal_values(backend.SSP(P, costs)).values
    assert np.all(out.v_tilde <= v_star + 1e-9)
    kernel = out.p_tilde.toarray()
    states = np.arange(n_states)
    assert np.all(lo[states, out.policy] - 1e-12 <= kernel)
    assert np.all(kernel <= hi[states, out.policy] + 1e-12)
    optimistic = np.linalg.solve(np.eye(n_states) - kernel[:, :n_states],
                                 costs[states, out.policy])
    assert np.all(optimistic <= (1 + 2 * mu / c_min) * out.v_tilde + 1e-9)


@pytest.mark.shared
@settings(FIXTURE, max_examples=8)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 3), n_actions=st.integers(1, 2))
def test_lemma_5_coverage_at_the_promised_rate(backend, seed, n_states, n_actions):
    """The true kernel stays in every box along a sampling sequence, but in at most a delta share."""
    P, _, rng = _random_model(seed, n_states, n_actions, 0.5)
    flat = P.reshape(-1, n_states + 1)
    delta, trials = 0.2, 150
    failures = 0
    for _ in range(trials):
        counts = np.zeros_like(flat, dtype=np.int64)
        covered = True
        for batch in (1, 1, 2, 4, 8, 16, 32, 64, 128):
            counts += rng.multinomial(batch, flat)
            lo, hi = backend.confidence_box(counts.reshape(P.shape), delta)
            covered = covered and bool(np.all((lo <= P) & (P <= hi)))
        failures += not covered
    assert binom.sf(failures - 1, trials, delta) > 1e-4


@pytest.mark.parametrize("n, p_goal", [(10**7, 0.5), (10**9, 0.3), (4 * 10**5, 0.8)])
def test_lemma_5_radius_where_the_square_root_dominates(backend, n, p_goal):
    """The radius ``4 sqrt(p_hat L / N) + 28 L / N``, ``L = log(S A N / delta)``, by hand,
    at sample sizes where the square-root term is most of it: in the box, in the radius
    sum Alg. 4 tests, and in the optimistic kernel EVI builds.

    The coverage simulation cannot see a smaller constant: the box is wider than the
    sampling error by many standard deviations at every ``N``, so a halved square-root
    term still covers. This pins the constants instead."""
    S, A, delta = 1, 1, 0.1
    goal_samples = round(n * p_goal)
    p_goal = goal_samples / n
    counts = np.array([[[n - goal_samples, goal_samples]]], dtype=float)
    L = math.log(S * A * n / delta)
    beta = [4 * math.sqrt(q * L / n) + 28 * L / n for q in (1 - p_goal, p_goal)]
    assert 4 * math.sqrt(min(p_goal, 1 - p_goal) * L / n) > 10 * 28 * L / n
    lo, hi = backend.confidence_box(counts, delta)
    np.testing.assert_allclose(lo[0, 0], [1 - p_goal - beta[0], p_goal - beta[1]], rtol=1e-12)
    np.testing.assert_allclose(hi[0, 0], [1 - p_goal + beta[0], p_goal + beta[1]], rtol=1e-12)
    total = backend.bernstein_radius_sum(counts, delta)
    assert float(total[0, 0]) == pytest.approx(sum(beta), rel=1e-12)
    out = backend.extended_value_iteration(counts, np.ones((1, 1)), delta, 1e-6)
    kernel = out.p_tilde.toarray()[0]
    goal = p_goal + min(beta)  # the goal's upper end, or all the mass the stay's lower end leaves
    assert kernel[1] == pytest.approx(goal, rel=1e-12)
    assert out.v_tilde[0] == pytest.approx(1 / goal, rel=1e-5)


def _tail_probabilities(Q, units, levels):
    """``T[u, s] = P(cost to go from s > u units)`` for ``u = 0 .. levels - 1``, one chain.

    ``Q`` (S, S) is the chain between non-goal states and ``units`` the whole number of
    cost units of each state (0 allowed). Level by level,
    ``T_u(s) = sum_s' Q(s, s') T_{u - c(s)}(s')``, with ``T_v = 1`` everywhere for
    ``v < 0`` (every cost to go is ``>= 0 > v``) and 0 at the goal for ``v >= 0``. Zero-cost
    states need their own level: ``(I - Q_zz) T_u(z) = Q_zp T_u(p)``, solvable because the
    chain is proper.
    """
    zero, paid = np.flatnonzero(units == 0), np.flatnonzero(units > 0)
    T = np.zeros((levels, len(units)))
    for u in range(levels):
        for s in paid:
            v = u - units[s]
            T[u, s] = 1.0 if v < 0 else Q[s] @ T[v]
        if zero.size:
            system = np.eye(zero.size) - Q[np.ix_(zero, zero)]
            T[u, zero] = np.linalg.solve(system, Q[np.ix_(zero, paid)] @ T[u, paid])
    return T


@pytest.mark.shared
@settings(FIXTURE, max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 4), K=st.sampled_from([1, 2, 4]),
       goal_floor=st.floats(0.02, 0.5))
def test_lemma_7_goal_reaching_tail_against_exact_tails(backend, seed, n_states, K, goal_floor):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(n_states + 1), size=(n_states, 1))
    P[..., n_states] = np.maximum(P[..., n_states], goal_floor)
    P /= P.sum(axis=2, keepdims=True)
    units = rng.integers(0, K + 1, size=n_states)
    assume(units.any())
    costs = (units / K)[:, None]
    V = backend.policy_values(backend.SSP(P, costs), np.zeros(n_states, dtype=np.int64))
    d = float(V.max())
    levels = math.ceil(K * 4 * d * math.log(2e13)) + 1
    T = _tail_probabilities(P[:, 0, :n_states], units, levels)
    # P(cost > m) is constant on [u/K, (u+1)/K); the bound is smallest at its right end
    right_ends = (np.arange(levels) + 1) / K
    bound = 2 * np.exp(-right_ends / (TAIL_CONSTANT * d))
    assert np.all(T <= bound[:, None] * (1 + 1e-9))
    # E[cost] = (1/K) sum_u P(cost > u/K): the tails agree with the backend's values
    assert T.sum(axis=0) / K == pytest.approx(V, rel=1e-9, abs=1e-9)


def _lemma_9_upper(eps):
    return (1 + 2 * eps * (1 + eps)) * (1 + eps)


LEMMA_9_PROVED_EPS = (math.sqrt(3) - 1) / 2
"""Lemma 9's lower side ``D <= D_hat`` is proved for ``eps <= (sqrt(3) - 1) / 2 = 0.366``."""


@settings(FIXTURE, max_examples=120)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 5), n_actions=st.integers(1, 3),
       goal=st.floats(0.02, 0.5), eps=st.floats(0.1, LEMMA_9_PROVED_EPS))
def test_lemma_9_over_many_random_instances(backend, seed, n_states, n_actions, goal, eps):
    """``D <= D_hat <= (1 + 2 eps (1 + eps))(1 + eps) D`` where proved, with ``D_hat`` the
    proof's value of the last round's ``||v||`` and ``eta = eps / W``, in at most
    ``ceil(log2 D) + 1`` rounds: the last ``W`` is at most the first power of two at least
    ``D``."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(n_states + 1, 0.5), size=(n_states, n_actions))
    P[..., n_states] += goal
    P /= P.sum(axis=2, keepdims=True)
    ssp = backend.SSP(P, np.ones((n_states, n_actions)))
    D = float(backend.diameter(ssp).D)
    out = backend.estimate_diameter(ssp, eps, 0.1, seed=seed)
    v, eta = out.v_tilde_max, eps / out.W
    assert out.D_hat == pytest.approx((1 + 2 * eta * (1 + eps) * v) * (1 + eps) * v, rel=1e-14)
    assert v <= D * (1 + 1e-12)
    assert D * (1 - 1e-12) <= out.D_hat <= _lemma_9_upper(eps) * D * (1 + 1e-12)
    rounds = round(math.log2(out.W)) + 1
    assert rounds == len(out.history) <= max(math.ceil(math.log2(D)), 0) + 1


def test_lemma_9_lower_side_is_proved_up_to_the_root_of_eps_one_plus_eps_is_one_half():
    """Lemma 9's step (a) applies the corrected Lemma 2 with ``eta ||V'|| <= eps (1 + eps)``,
    which must be at most ``1/2``: exactly ``eps <= (sqrt(3) - 1) / 2``. Thm. 2 (App. E) uses
    ``D <= D_hat``, so it is proved only there too (docs/semantics.md, "Errata", 9)."""
    x = sympy.symbols("x", positive=True)
    (root,) = sympy.solve(sympy.Eq(x * (1 + x), sympy.Rational(1, 2)), x)
    assert sympy.simplify(root - (sympy.sqrt(3) - 1) / 2) == 0
    assert float(root) == pytest.approx(LEMMA_9_PROVED_EPS, rel=1e-15)
    assert float(root) == pytest.approx(0.366, abs=5e-4)


@settings(FIXTURE, max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 4), n_actions=st.integers(1, 2),
       eps=st.floats(LEMMA_9_PROVED_EPS, 1.0, exclude_min=True))
def test_lemma_9_lower_side_observed_above_the_proved_range(backend, seed, n_states, n_actions,
                                                            eps):
    """Above ``eps = 0.366`` ``D <= D_hat`` is not proved; it is observed on random instances
    (an observation this test keeps watching, not a guarantee)."""
    P, costs, _ = _random_model(seed, n_states, n_actions, 0.5)
    ssp = backend.SSP(P, np.ones_like(costs))
    D = float(backend.diameter(ssp).D)
    out = backend.estimate_diameter(ssp, eps, 0.1, seed=seed)
    assert D * (1 - 1e-12) <= out.D_hat <= _lemma_9_upper(eps) * D * (1 + 1e-12)


def test_lemma_9_printed_iteration_count_fails_on_a_chain(backend):
    """``chain(3)``: ``D = 3``; Alg. 4 needs ``W = 4``, its third round, while the printed
    count allows ``log2(D (1 + eps)) + 1 < 3`` rounds."""
    ssp = backend.chain(3)
    eps = 0.3
    out = backend.estimate_diameter(ssp, eps, 0.1, seed=0)
    rounds = round(math.log2(out.W)) + 1
    assert rounds == 3 == math.ceil(math.log2(3)) + 1
    assert rounds > math.log2(3 * (1 + eps)) + 1
    assert 3 <= out.D_hat <= _lemma_9_upper(eps) * 3
