"""The calculator's totals as upper bounds, and its inversion as the smallest feasible eps.

* Alg. 3's explicit total without ``D_hat`` is at least its value at every estimate
  ``D <= D_hat <= (1 + 2 eps (1 + eps))(1 + eps) D`` a run can return (a smaller
  ``D_hat`` raises ``nu``, the range bound and SEARCH's guess; a larger one lowers the
  cost floor).
* :func:`accuracy_for_budget` returns a feasible ``eps`` below which a dense grid finds
  none, also where the total steps up with ``eps``.
* Errors are :class:`ParameterError`: a total that does not depend on ``eps``, a value
  beyond the float range.
"""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import bounds
from bounds import ParameterError


@st.composite
def alg3_cases(draw):
    n_states = draw(st.integers(1, 30))
    D = draw(st.floats(1.0, 100.0))
    cmin = draw(st.sampled_from([0.0, draw(st.floats(1e-4, 1.0))]))
    params = dict(theta=draw(st.floats(1.0, 5.0)), D=D, S=n_states, A=draw(st.integers(1, 4)),
                  Gamma=draw(st.integers(1, n_states + 1)), delta=draw(st.floats(0.01, 0.5)))
    if cmin > 0:
        params.update(cmin=cmin, B=draw(st.floats(cmin, max(cmin, D))))
    return params


@settings(max_examples=60, deadline=None)
@given(params=alg3_cases(), eps=st.floats(0.01, 1.0), share=st.floats(0.0, 1.0))
def test_explicit3_bounds_every_estimate_a_run_can_return(params, eps, share):
    D = params["D"]
    upper = (1 + 2 * eps * (1 + eps)) * (1 + eps) * D
    D_hat = D + share * (upper - D)
    default = bounds.samp_comp_theta(eps, bound="explicit3", **params)
    at_D_hat = bounds.samp_comp_theta(eps, bound="explicit3", D_hat=D_hat, **params)
    assert at_D_hat <= default * (1 + 1e-12)


def test_explicit3_at_the_smallest_estimate_can_exceed_the_largest():
    """The case the default must cover: with c_min > 0 a small D_hat raises nu / c_min and
    SEARCH's guess, so D_hat = D costs more than Lemma 9's upper end."""
    params = dict(theta=1.0, D=100.0, B=2.0, cmin=0.001, S=2, A=2, Gamma=2, delta=0.1)
    eps = 1.0
    upper = (1 + 2 * eps * (1 + eps)) * (1 + eps) * params["D"]
    low = bounds.samp_comp_theta(eps, bound="explicit3", D_hat=params["D"], **params)
    high = bounds.samp_comp_theta(eps, bound="explicit3", D_hat=upper, **params)
    assert low > 2 * high
    assert bounds.samp_comp_theta(eps, bound="explicit3", **params) >= low


def _dense_totals(params, grid):
    total = sp.lambdify(bounds.eps, bounds.samp_comp_theta(None, bound="explicit3", **params),
                        "mpmath")
    return np.array([float(total(e)) for e in grid])


@pytest.mark.parametrize("cmin, B", [(0.001, 1.0), (0.002, 1.0), (0.0003, 0.5)])
def test_accuracy_for_budget_is_the_smallest_feasible_eps_across_steps(cmin, B):
    """explicit3 with c_min > 0 steps up with eps (SEARCH's guess follows nu / c_min), so the
    feasible eps form several intervals; the answer is the left end of the first."""
    params = dict(theta=1.0, D=50.0, B=B, cmin=cmin, S=3, A=2, Gamma=2, delta=0.1)
    grid = np.geomspace(1e-3, 1.0, 1500)
    totals = _dense_totals(params, grid)
    rises = np.flatnonzero(np.diff(totals) > 0)
    assert rises.size, "the total must step up somewhere for this test to mean anything"
    for budget in np.quantile(totals, [0.2, 0.5, 0.8]):
        accuracy = bounds.accuracy_for_budget(budget, bound="explicit3", **params)
        assert bounds.samp_comp_theta(accuracy, bound="explicit3", **params) <= budget * (
            1 + 1e-12)
        below = grid < accuracy * (1 - 1e-9)
        assert np.all(totals[below] > budget)


def test_accuracy_for_budget_refuses_a_total_without_eps():
    with pytest.raises(ParameterError, match="does not depend on `eps`"):
        bounds.accuracy_for_budget(1e6, bound="thm2", theta=2, D=5, B=0, S=3, A=2, Gamma=2,
                                   variant="printed")


@pytest.mark.parametrize("call", [
    lambda: bounds.samp_comp(1e-200, 1e3, 1e-3, S=10**6, A=10**6, Gamma=10**6),
    lambda: bounds.samp_comp_lower(1e-300, 1e100, S=10, A=10),
    lambda: bounds.samp_comp_theta(1e-120, 5, 1e80, S=2, A=2, Gamma=2),
    lambda: bounds.run_total(1e-200, 0.1, 10, 10, 5, 1e-200, 1e100),
])
def test_values_beyond_the_float_range_are_refused(call):
    with pytest.raises(ParameterError, match="float range"):
        call()


def test_every_error_of_the_calculators_is_a_parameter_error():
    for call in (lambda: bounds.samp_comp("0.1", 1, 0.5),
                 lambda: bounds.samp_comp_theta(0.1, 2, 5, float("nan")),
                 lambda: bounds.accuracy_for_budget(1e9, bound="thm2", theta=2, D=5, B=1),
                 lambda: bounds.run_total(0.5, 0.5, 1, 1, 3, 1.0, 1.0),
                 lambda: bounds.accuracy_for_budget(math.inf, B=1, cmin=0.5, S=1, A=1,
                                                    Gamma=1)):
        with pytest.raises(ParameterError):
            call()
