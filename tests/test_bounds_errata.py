"""The errata of docs/semantics.md about the bounds, each by its counterexample or derivation.

* 8: Thm. 1 as printed vanishes with ``B*`` while SEARCH's first round does not; the bound
  with ``max(B*, 1/2)`` covers every run.
* 4: the condition under which Lemma 9's terms are subsumed in Thm. 2 is sufficient, not
  necessary.
* 10: with unit costs the SSP of a discounted MDP is trivial, so the lower bound of Sec. 5
  cannot be a unit-cost bound.
"""

from itertools import product
import math
import warnings

import numpy as np
import pytest

import bounds


def _phi(X, y, eps, delta, S, A, Gamma):
    l1 = math.log(X * S * A / (y * eps * delta))
    l2 = math.log(X * S * A / (y * delta))
    return X**3 * Gamma / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1 + X**2 * Gamma / y**2 * l2**2


def test_erratum_8_thm1_vanishes_with_b_star_while_search_does_not(backend):
    """One state, one action to the goal at cost ``c``: ``B* = c_min = c``, ``Gamma = 1``.
    SEARCH stops at ``Delta = 1`` after drawing ``ceil(phi(1, c))``; Thm. 1 as printed is at
    most 3, so the ratio of calls to it grows at least like ``1 / c^2``."""
    eps, delta = 0.5, 0.1
    ratios = []
    for c in (0.2, 0.05, 0.0125):
        ssp = backend.SSP(np.array([[[0.0, 1.0]]]), np.full((1, 1), c))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", backend.NotCertifiedWarning)
            out = backend.solve(ssp, ssp.costs, eps, delta, seed=0)
        assert out.Delta_final == 1.0
        assert out.n_calls == math.ceil(_phi(1, c, eps, delta, 1, 1, 1))
        printed = bounds.samp_comp(eps, c, c, S=1, A=1, Gamma=1, variant="printed")
        assert printed == pytest.approx(c**2 / eps**2 + c / eps + 1, rel=1e-12) and printed <= 3
        ratios.append(out.n_calls / printed)
        proved = bounds.samp_comp(eps, c, c, S=1, A=1, Gamma=1)
        assert proved == pytest.approx(0.125 / (c * eps**2) + 0.25 / (c * eps) + 0.25 / c**2,
                                       rel=1e-12)
    assert ratios[1] > 4**2 * ratios[0] / 2 and ratios[2] > 4**2 * ratios[1] / 2


def test_erratum_8_on_tradeoff(backend):
    """``tradeoff()``: ``B* = 0.2``, ``c_min = 0.1``; at ``eps = delta = 0.1`` Thm. 1 as printed
    is 56 (``32 + 8 + 16``) while a run makes 43,154 calls, the first round's allocation."""
    ssp = backend.tradeoff()
    assert float(backend.optimal_values(ssp).values.max()) == pytest.approx(0.2)
    printed = bounds.samp_comp(0.1, 0.2, 0.1, S=1, A=2, Gamma=2, variant="printed")
    assert printed == pytest.approx(56.0, rel=1e-12)
    out = backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0)
    assert out.Delta_final == 1.0
    assert out.n_calls == 2 * math.ceil(_phi(1, 0.1, 0.1, 0.1, 1, 2, 2)) == 43154


def test_erratum_4_subsumption_condition_is_only_sufficient():
    """``theta = 1``, ``B = 1/2``, ``D = 1``, ``eps = 0.1``: ``theta B = 1/2 < 1``, yet
    Lemma 9's terms are below Thm. 2's first term and its middle term as proved
    (``theta D B^2 S^2 A / eps^2``)."""
    eps, theta, D, B = 0.1, 1.0, 1.0, 0.5
    sizes = dict(S=4, A=3, Gamma=2)
    first = bounds.samp_comp_theta(eps, theta, D, B, variant="printed", terms=True, **sizes)[0]
    lemma9 = bounds.samp_comp_diameter(eps, D, terms=True, **sizes)
    GSA, S2A = 2 * 4 * 3, 16 * 3
    assert first == pytest.approx(125 * GSA) and lemma9[0] == pytest.approx(100 * GSA)
    middle_proved = theta * D * B**2 * 16 * 3 / eps**2
    assert middle_proved == pytest.approx(25 * S2A) and lemma9[1] == pytest.approx(10 * S2A)
    assert theta * B < 1
    assert lemma9[0] <= first and lemma9[1] <= middle_proved


def test_erratum_10_unit_costs_make_a_discounted_mdp_trivial(backend):
    """Footnote 1 with unit costs: every deterministic policy has the value ``1 / (1 - gamma)``
    in every state, so every policy is optimal and no sample is needed; with the instance's
    own costs in ``[0, 1]`` the policies differ."""
    gamma = 0.8
    ssp = backend.random_discounted(3, 2, gamma=gamma, seed=4)
    unit = backend.SSP(ssp.P, np.ones((3, 2)))
    own = []
    for actions in product(range(2), repeat=3):
        policy = np.array(actions)
        assert np.allclose(backend.policy_values(unit, policy), 1 / (1 - gamma), rtol=1e-12)
        own.append(backend.policy_values(ssp, policy))
    own = np.array(own)
    assert np.ptp(own, axis=0).max() > 0.1
    assert own.max() <= 1 / (1 - gamma) + 1e-12
