"""Each step of Alg. 4, SEARCH, Alg. 3 and EVI's stopping rule against a hand computation.

On a deterministic model every sample of a pair lands on its one next state, so the
counts of a run are its calls per pair times the 0/1 kernel: the run's confidence boxes,
and so every EVI it made, can be rebuilt from the result alone. The tests recompute
from docs/semantics.md ("Algorithms"):

* Alg. 4's sampling: each pair ends with the first power of two whose radius sum
  ``4 sqrt(L / N) + 28 (S + 1) L / N`` (one next state) is at most ``eta / 2``;
* Alg. 4's EVI at ``mu = eps / 2`` and its output
  ``D_hat = (1 + 2 eta (1 + eps) ||v||) (1 + eps) ||v||``;
* SEARCH's EVI at ``mu = iota eps / (6 Delta)`` and its allocation ``ceil(phi)``;
* Alg. 3's SEARCH on ``max(c, nu)``, ``nu = eps / (2 theta D_hat)``, at accuracy ``eps / 2``;
* on a one-state loop, where EVI converges geometrically, Alg. 4's EVI accuracy (from the
  counts a recording simulator saw) and EVI's stopping index and value in closed form.

And erratum 1's counterexample (docs/semantics.md, "Errata", 1) as it fires.
"""

import math

import numpy as np
import pytest


def _radius_sum(N, S, A, delta):
    """Lemma 5's radius summed over the next states of a pair whose samples all hit one state."""
    L = math.log(S * A * N / delta)
    return 4 * math.sqrt(L / N) + 28 * (S + 1) * L / N


def _alg4_count(S, A, delta, bound):
    """Alg. 4's count of a pair: doubling from 1 until the radius sum is at most ``bound``."""
    N = 1
    while _radius_sum(N, S, A, delta) > bound:
        N *= 2
    return N


def _phi(X, y, eps, delta, S, A, Gamma):
    """Eq. 6 with ``alpha = 1``."""
    l1 = math.log(X * S * A / (y * eps * delta))
    l2 = math.log(X * S * A / (y * delta))
    return X**3 * Gamma / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1 + X**2 * Gamma / y**2 * l2**2


def _counts(ssp, calls):
    P = ssp.P if isinstance(ssp.P, np.ndarray) else ssp.P.toarray().reshape(calls.shape + (-1,))
    assert set(np.unique(P)) <= {0.0, 1.0}
    return calls[..., None] * P


CHAINS = [(1, 1, 0.5), (2, 2, 0.3), (3, 1, 0.3), (3, 2, 0.25), (5, 2, 0.6)]


@pytest.mark.parametrize("n, n_actions, eps", CHAINS)
def test_alg4_steps_by_hand(backend, n, n_actions, eps):
    delta = 0.1
    ssp = backend.chain(n, p=1.0, n_actions=n_actions)
    S, A = ssp.n_states, ssp.n_actions
    out = backend.estimate_diameter(ssp, eps, delta, seed=0)
    W = out.W
    assert W == 2.0 ** (len(out.history) - 1)
    assert np.all(out.calls == _alg4_count(S, A, delta, eps / W / 2))
    v = backend.extended_value_iteration(_counts(ssp, out.calls), np.ones((S, A)), delta,
                                         eps / 2).v_tilde.max()
    assert out.v_tilde_max == pytest.approx(v, rel=1e-12)
    assert out.v_tilde_max <= W and (W == 1 or out.history[-2].v_tilde_max > W / 2)
    eta = eps / W
    assert out.eta == eta
    assert out.D_hat == pytest.approx((1 + 2 * eta * (1 + eps) * v) * (1 + eps) * v, rel=1e-12)
    assert out.D_listing == pytest.approx((1 + 2 * eta * v) * v, rel=1e-12)
    assert n <= out.D_hat


def test_erratum_1_listing_below_the_diameter(backend):
    """One state, one action, unit cost, ``p(g) = 0.3``, ``eps = 1``: ``D = 10/3``.

    Round one (``W = 1``, ``eta = 1``) samples until the box lets the optimistic goal
    probability ``q`` reach ``1/2``; EVI from ``v_0 = 0`` gives ``v_1 = 1`` and
    ``v_2 = 2 - q``, so it stops at ``j = 1`` (``1 - q <= mu = 1/2``) with ``||v|| = 1 <= W``.
    The listing returns ``(1 + 2) 1 = 3 < D``; the proof's value is ``(1 + 4) 2 = 10``.
    """
    ssp = backend.SSP(np.array([[[0.7, 0.3]]]), np.ones((1, 1)))
    D = float(backend.diameter(ssp).D)
    assert D == pytest.approx(10 / 3, rel=1e-12)
    out = backend.estimate_diameter(ssp, 1.0, 0.01, seed=0)
    assert (out.W, out.eta, out.v_tilde_max) == (1.0, 1.0, 1.0)
    assert out.D_listing == 3.0 < D
    assert out.D_hat == 10.0 >= D


@pytest.mark.filterwarnings("ignore:The returned policy is not certified")
@pytest.mark.parametrize("n, n_actions, eps, cost", [(1, 1, 0.5, 0.5), (3, 2, 0.3, 0.5),
                                                     (4, 1, 0.2, 0.5), (2, 1, 0.1, 1.0),
                                                     (3, 1, 0.1, 0.5)])
def test_search_steps_by_hand(backend, n, n_actions, eps, cost):
    """Alg. 1 on a chain: ``Delta`` doubles from 1 until ``max v_tilde <= Delta``, the final
    allocation is ``ceil(phi(Delta, c_min))`` and the final EVI runs at
    ``mu = c_min eps / (6 Delta)``."""
    delta = 0.1
    ssp = backend.chain(n, p=1.0, n_actions=n_actions)
    S, A = ssp.n_states, ssp.n_actions
    costs = np.full((S, A), cost)
    out = backend.solve(ssp, costs, eps, delta, seed=0)
    Delta = out.Delta_final
    assert np.all(out.calls == math.ceil(_phi(Delta, cost, eps, delta, S, A, 1)))
    evi = backend.extended_value_iteration(_counts(ssp, out.calls), costs, delta,
                                           cost * eps / (6 * Delta))
    np.testing.assert_allclose(out.v_tilde, evi.v_tilde, rtol=1e-12)
    rounds = [r for r in out.history if r.phase == "search"]
    assert [r.scale for r in rounds] == [2.0**k for k in range(len(rounds))]
    assert all(r.v_tilde_max > r.scale for r in rounds[:-1])
    assert out.v_tilde.max() == rounds[-1].v_tilde_max <= Delta


def _recording_loop(backend, p_goal, counts):
    """A simulator of one state and one action reaching the goal with probability ``p_goal``
    (staying otherwise) that adds every sample to ``counts`` (shape (1, 1, 2))."""

    def step(s, a, rng):
        nxt = int(rng.random() < p_goal)
        counts[0, 0, nxt] += 1
        return nxt

    return backend.SimulatorGenerativeModel(step, 1, 1)


@pytest.mark.parametrize("p_goal, eps", [(0.3, 0.8), (0.3, 1.0), (0.5, 0.7), (0.6, 1.0)])
def test_alg4_evi_accuracy_and_sampling_on_a_loop(backend, p_goal, eps):
    """One state that stays with probability ``1 - p_goal``: EVI converges geometrically, so
    its stopping sweep depends on ``mu``. The recorded counts give the last round's EVI at
    ``mu = eps / 2`` and its sampling test ``sum_s' beta <= eta / 2``."""
    delta = 0.1
    counts = np.zeros((1, 1, 2))
    out = backend.estimate_diameter(_recording_loop(backend, p_goal, counts), eps, delta, seed=1)
    assert counts.sum() == out.n_calls
    evi = backend.extended_value_iteration(counts, np.ones((1, 1)), delta, eps / 2)
    assert evi.n_iter == out.history[-1].evi_n_iter
    assert out.v_tilde_max == pytest.approx(float(evi.v_tilde.max()), rel=1e-12)
    assert backend.bernstein_radius_sum(counts, delta)[0, 0] <= eps / out.W / 2


@pytest.mark.parametrize("n, n_actions, eps, theta", [(1, 1, 0.5, 1.0), (3, 2, 0.3, 2.0),
                                                      (2, 2, 0.6, 1.5)])
def test_alg3_steps_by_hand(backend, n, n_actions, eps, theta):
    """Alg. 3 on a chain with zero costs but one: Alg. 4 at ``eps``, then SEARCH on
    ``max(c, nu)`` at ``eps / 2``, sharing the samples."""
    delta = 0.1
    ssp = backend.chain(n, p=1.0, n_actions=n_actions)
    S, A = ssp.n_states, ssp.n_actions
    costs = np.zeros((S, A))
    costs[S - 1, 0] = 1.0
    out = backend.solve(ssp, costs, eps, delta, theta=theta, seed=0)
    alg4 = [r for r in out.history if r.phase == "diameter"]
    W = alg4[-1].scale
    nu = eps / (2 * theta * out.D_hat)
    assert out.nu == pytest.approx(nu, rel=1e-15)
    Delta = out.Delta_final
    floor = max(0.0, nu)
    expected = max(_alg4_count(S, A, delta, eps / W / 2),
                   math.ceil(_phi(Delta, floor, eps / 2, delta, S, A, 1)))
    assert np.all(out.calls == expected)
    perturbed = np.maximum(costs, nu)
    evi = backend.extended_value_iteration(_counts(ssp, out.calls), perturbed, delta,
                                           nu * (eps / 2) / (6 * Delta))
    np.testing.assert_allclose(out.v_tilde, evi.v_tilde, rtol=1e-12)


@pytest.mark.parametrize("p_goal, n, mu", [(0.3, 10**4, 0.012), (0.5, 10**5, 1e-4),
                                           (0.2, 10**6, 0.03)])
def test_evi_stopping_rule_by_hand_on_a_loop(backend, p_goal, n, mu):
    """One state staying with probability ``1 - p_goal``, ``n`` samples. The optimistic goal
    probability is ``q = p_goal + min(beta_goal, beta_stay)`` (the goal at its upper end,
    or the stay at its lower end), so ``v_j = (1 - (1 - q)^j) / q`` and
    ``|v_(j+1) - v_j| = (1 - q)^j``: EVI stops at the first ``j`` with ``(1 - q)^j <= mu``
    and returns ``v_j``."""
    delta = 0.1
    counts = np.array([[[n * (1 - p_goal), n * p_goal]]])
    L = math.log(n / delta)
    beta = [4 * math.sqrt(x * L / n) + 28 * L / n for x in (1 - p_goal, p_goal)]
    q = p_goal + min(beta)
    j = next(k for k in range(10**4) if (1 - q) ** k <= mu)
    assert min(abs((1 - q) ** k - mu) for k in range(j + 2)) > 1e-6 * mu
    out = backend.extended_value_iteration(counts, np.ones((1, 1)), delta, mu)
    assert out.n_iter == j + 1 and out.converged
    assert out.v_tilde[0] == pytest.approx((1 - (1 - q) ** j) / q, rel=1e-10)
    assert out.residual == pytest.approx((1 - q) ** j, rel=1e-8)


def test_alg3_certified_flag_is_the_certificate_at_half_eps(backend):
    """A run whose certificate gap lies between eps / 2 and eps: Alg. 3's flag tests the
    perturbed problem's certificate at eps / 2 (App. E), so it is not certified and warns."""
    ssp = backend.theta_example()
    eps = 0.4
    with pytest.warns(backend.NotCertifiedWarning):
        out = backend.solve(ssp, ssp.costs, eps, 0.1, theta=2.0, seed=0)
    assert eps / 2 < out.certificate.gap <= eps
    assert out.certified is False
