"""The paper's lemmas as checked properties, in the corrected forms of docs/semantics.md ("Errata").

* Lemma 2 (simulation lemma), under ``eta ||V'|| <= c_min / 2``, in exact rational
  arithmetic on small chains, with the worst perturbation; the printed condition's
  counterexample pinned.
* Lemma 4 (EVI's optimism and the ``1 + 2 mu / c_min`` factor) on random counts, under
  the event that the true kernel lies in the confidence boxes.
* Lemma 5 (coverage of the Bernstein boxes) by simulation, against its rate ``delta``.
* Lemma 7 (goal-reaching tail) against exact tail probabilities of the cost to go,
  computed level by level over the costs.
* Lemma 9 (the diameter estimate) in its corrected form, and the printed iteration
  count's counterexample pinned.
"""

from fractions import Fraction
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

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
def test_simulation_lemma_as_printed_fails_on_one_state(backend):
    """One state, ``eta = 1/2``, ``V' = 4``: ``eta V' = 2 = 2 c_min`` yet the policy is improper."""
    model_prime = [[Fraction(3, 4), Fraction(1, 4)]]
    cost = [Fraction(1)]
    (V_prime,) = _exact_values([[Fraction(3, 4)]], cost)
    eta = Fraction(1, 2)
    assert V_prime == 4 and eta * V_prime <= 2 * min(cost)
    assert not eta * V_prime <= SIMULATION_CONDITION * min(cost)
    true_row = _worst_perturbation(model_prime[0], [V_prime, 0], eta)
    assert true_row == [1, 0]
    true_model = _ssp(backend, [true_row], cost)
    policy = np.zeros(1, dtype=np.int64)
    assert not backend.is_proper(true_model, policy)
    assert backend.policy_values(true_model, policy)[0] == math.inf


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


@settings(FIXTURE, max_examples=6)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(1, 3), n_actions=st.integers(1, 2),
       eps=st.sampled_from([0.25, 0.3, 0.36]))
def test_lemma_9_corrected(backend, seed, n_states, n_actions, eps):
    """``D <= D_hat <= (1 + 2 eps (1 + eps))(1 + eps) D`` where proved (``eps <= 0.366``),
    in at most ``ceil(log2 D) + 1`` rounds: the last ``W`` is at most the first power of two
    at least ``D``."""
    P, costs, _ = _random_model(seed, n_states, n_actions, 0.5)
    ssp = backend.SSP(P, costs)
    D = float(backend.diameter(ssp).D)
    out = backend.estimate_diameter(ssp, eps, 0.1, seed=seed)
    assert D * (1 - 1e-12) <= out.D_hat <= _lemma_9_upper(eps) * D * (1 + 1e-12)
    rounds = round(math.log2(out.W)) + 1
    assert rounds <= max(math.ceil(math.log2(D)), 0) + 1


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
