"""The instance lower bound: hand-derived cases, alternatives checked independently, monotone."""

import itertools

import numpy as np
import pytest
from scipy.special import rel_entr

NO_TILTS = ("goal", "away", "high", "high-next", "low-next")


def _kl(p, q):
    """Bernoulli KL, independently of the package."""
    return float(rel_entr(p, q) + rel_entr(1 - p, 1 - q))


def _one_pair(backend, p_goal):
    """One state, one action, unit cost, goal with probability ``p_goal``: ``V* = 1 / p_goal``."""
    return backend.SSP(np.array([[[1 - p_goal, p_goal]]]), np.ones((1, 1)))


@pytest.mark.parametrize(("p_goal", "eps", "delta"), [(0.5, 0.5, 0.1), (0.2, 1.0, 0.05)])
def test_one_pair_value_bound_matches_the_hand_derivation(backend, p_goal, eps, delta):
    """Right answers are disjoint iff ``|1/p' - 1/p| > eps``; the cheaper side binds:
    ``E[N] >= kl(delta, 1 - delta) / min(kl(p, 1 / (1/p - eps)), kl(p, 1 / (1/p + eps)))``."""
    res = backend.instance_lower_bound(_one_pair(backend, p_goal), eps, delta)
    v = 1 / p_goal
    cheapest = min(_kl(p_goal, 1 / (v - eps)), _kl(p_goal, 1 / (v + eps)))
    hand = _kl(delta, 1 - delta) / cheapest
    assert hand * (1 - 1e-4) <= res.bound <= hand * (1 + 1e-9)
    assert res.calls.sum() == pytest.approx(res.bound, rel=1e-6)
    assert res.kl_delta == pytest.approx(_kl(delta, 1 - delta))


def test_one_state_policy_bound_matches_the_hand_derivation(backend):
    """Two actions, unit costs, goal w.p. 1/2 (V = 2) and 2/5 (V = 2.5), eps = 0.2: an answer is
    wrong in an alternative only when action 1 is no longer the sole eps-optimal one there,
    by pushing action 0 above 2.7 (p0' < 1/2.7) or action 1 below 1.8 (p1' > 1/1.8); each move
    touches one pair, so the program adds the two."""
    ssp = backend.SSP(np.array([[[0.5, 0.5], [0.6, 0.4]]]), np.ones((1, 2)))
    delta = 0.1
    K = _kl(delta, 1 - delta)
    hand = K / _kl(0.5, 1 / 2.7) + K / _kl(0.4, 1 / 1.8)
    res = backend.instance_lower_bound(ssp, 0.2, delta, target="policy", moves=NO_TILTS)
    assert hand * (1 - 1e-4) <= res.bound <= hand * (1 + 1e-9)
    full = backend.instance_lower_bound(ssp, 0.2, delta, target="policy")
    assert full.bound >= res.bound * (1 - 1e-9)


def _policies(S, A):
    return [np.array(pi) for pi in itertools.product(range(A), repeat=S)]


@pytest.mark.parametrize("target", ["value", "policy"])
def test_every_alternative_is_checked_wrong_independently(backend, target):
    ssp = backend.garnet(3, 2, 2, seed=1)
    eps = 0.1
    res = backend.instance_lower_bound(ssp, eps, 0.1, target=target)
    assert res.alternatives and res.bound > 0
    v = backend.optimal_values(ssp).values
    policies = _policies(ssp.n_states, ssp.n_actions)
    good = [(backend.policy_values(ssp, pi) <= v + eps).all() for pi in policies]
    for alt in res.alternatives:
        other = backend.SSP(alt.P, ssp.costs)
        v_alt = backend.optimal_values(other).values
        kl = np.where(ssp.P > 0, rel_entr(ssp.P, np.where(ssp.P > 0, alt.P, 1.0)), 0.0)
        np.testing.assert_allclose(alt.kl, kl.sum(axis=-1), rtol=1e-9, atol=1e-15)
        if target == "value":
            assert np.abs(v_alt - v).max() > eps
        else:
            both = [g and (backend.policy_values(other, pi) <= v_alt + eps).all()
                    for g, pi in zip(good, policies)]
            assert not any(both), alt.move


def test_the_program_and_its_dual(backend):
    ssp = backend.garnet(3, 2, 2, seed=1)
    res = backend.instance_lower_bound(ssp, 0.1, 0.1)
    kl = np.array([alt.kl.ravel() for alt in res.alternatives])
    assert (kl.T @ res.weights <= 1 + 1e-12).all() and (res.weights >= 0).all()
    assert (kl @ res.calls.ravel() >= res.kl_delta * (1 - 1e-7)).all()
    assert res.bound <= res.calls.sum() * (1 + 1e-7)


def test_bound_is_monotone_in_delta(backend):
    ssp = backend.tradeoff()
    bounds = [backend.instance_lower_bound(ssp, 0.05, d).bound for d in (0.01, 0.05, 0.2, 0.4)]
    assert all(a > b > 0 for a, b in zip(bounds, bounds[1:]))


@pytest.mark.parametrize("target", ["value", "policy"])
def test_weaker_alternative_sets_give_smaller_bounds(backend, target):
    ssp = backend.garnet(3, 2, 2, seed=1)
    full = backend.instance_lower_bound(ssp, 0.1, 0.1, target=target).bound
    fewer = backend.instance_lower_bound(ssp, 0.1, 0.1, target=target, moves=NO_TILTS).bound
    least = backend.instance_lower_bound(ssp, 0.1, 0.1, target=target, moves=("goal",)).bound
    assert least <= fewer * (1 + 1e-9) and fewer <= full * (1 + 1e-9)


def test_bad_input_is_refused(backend):
    ssp = backend.tradeoff()
    with pytest.raises(backend.ParameterError, match="`delta`"):
        backend.instance_lower_bound(ssp, 0.1, 0.5)
    with pytest.raises(backend.ParameterError, match="`target`"):
        backend.instance_lower_bound(ssp, 0.1, 0.1, target="values")
    with pytest.raises(backend.ParameterError, match="`moves`"):
        backend.instance_lower_bound(ssp, 0.1, 0.1, moves=("sideways",))
    with pytest.raises(backend.ParameterError, match="c_min"):
        backend.instance_lower_bound(backend.theta_example(), 0.1, 0.1)
