"""Tests of the ``bounds`` package: sympy cross-checks against the paper and the backends."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bounds
from bounds import A, B, D, D_hat, Delta, Gamma, S, X, alpha, cmin, delta, eps, theta, y
from reference.errors import ParameterError
from sspgm.instances import INSTANCES

PHI_ARGS = (X, y, eps, delta, S, A, Gamma, alpha)
SMALL = settings(max_examples=60, deadline=None)

unit = st.floats(1e-3, 1.0)


@st.composite
def allocation_args(draw):
    n_states = draw(st.integers(1, 500))
    return dict(
        X=draw(st.floats(1.0, 1024.0)),
        y=draw(unit),
        eps=draw(unit),
        delta=draw(st.floats(1e-3, 0.999)),
        n_states=n_states,
        n_actions=draw(st.integers(1, 20)),
        gamma_hat=draw(st.integers(1, n_states + 1)),
        alpha=draw(st.floats(0.1, 10.0)),
    )


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=allocation_args())
def test_allocation_equals_lambdified_phi(backend, args):
    phi = sp.lambdify(PHI_ARGS, bounds.phi(X, y), "math")
    expected = phi(args["X"], args["y"], args["eps"], args["delta"], args["n_states"],
                   args["n_actions"], args["gamma_hat"], args["alpha"])
    assert backend.allocation(**args) == pytest.approx(expected, rel=1e-12)


def test_phi_reduces_to_theorem_1():
    reduced = bounds.o_tilde_terms(S * A * bounds.phi(B, cmin))
    assert set(reduced) == set(bounds.THM1.terms)
    assert len(reduced) == len(bounds.THM1.terms)


def test_phi_reduces_to_theorem_2_up_to_its_middle_term():
    nu = eps / (2 * theta * D)
    reduced = bounds.o_tilde_terms(S * A * bounds.phi(B, nu, eps / 2))
    first, middle, last = bounds.THM2.terms
    assert first in reduced and last in reduced
    (derived_middle,) = set(reduced) - {first, last}
    assert sp.simplify(derived_middle / middle) == B


def test_explicit_totals_reduce_to_their_theorems_at_delta_equal_b():
    thm1 = bounds.o_tilde_terms(bounds.EXPLICIT_CMIN.total.subs(Delta, B))
    assert set(thm1) == set(bounds.THM1.terms)
    thm2 = bounds.o_tilde_terms(bounds.EXPLICIT_THETA.total.subs({Delta: B, D_hat: D}))
    assert set(bounds.THM2.terms) - set(thm2) == {bounds.THM2.terms[1]}


def test_lower_bound_below_theorem_1_at_unit_cost_symbolically():
    slack = sp.Symbol("t", nonnegative=True)
    gap = bounds.THM1.total - bounds.LOWER_BOUND.total
    gap = sp.expand(gap.subs({cmin: 1, Gamma: 1 + slack}))
    assert gap.is_positive


def test_lower_bound_below_theorem_1_at_unit_cost_on_a_grid():
    args = (eps, B, S, A, Gamma)
    upper = sp.lambdify(args, bounds.THM1.total.subs(cmin, 1), "numpy")
    lower = sp.lambdify(args, bounds.LOWER_BOUND.total, "numpy")
    e, b, s, a = np.meshgrid(np.geomspace(1e-3, 1, 7), np.geomspace(1, 1e3, 7),
                             [1, 5, 50, 500], [1, 3, 10], indexing="ij")
    for g in (1, 2, 6):
        assert np.all(lower(e, b, s, a, g) <= upper(e, b, s, a, np.minimum(g, s + 1)))


def test_simulation_route_over_theorem_1_is_b_over_cmin():
    assert bounds.ratio(bounds.SIMULATION_CMIN, bounds.THM1) == B / cmin
    limit = sp.limit(bounds.SIMULATION_CMIN.total / bounds.THM1.total, eps, 0)
    assert sp.simplify(limit - B / cmin) == 0


def test_simulation_route_over_theorem_2_gains_a_power_of_eps():
    assert sp.simplify(bounds.ratio(bounds.SIMULATION_THETA, bounds.THM2)
                       - theta * D * B / eps) == 0


def test_full_ratio_of_equal_bounds_is_one():
    assert bounds.ratio(bounds.THM2, list(reversed(bounds.THM2.terms)), leading=False) == 1


@pytest.mark.parametrize("key, exponent", [
    ("thm1", 2), ("thm2", 3), ("eq4", 2), ("eq5", 4), ("lower", 2), ("lemma9", 2),
    ("explicit1", 2), ("explicit3", 3),
])
def test_leading_exponent_in_one_over_eps(key, exponent):
    bound = bounds.BOUNDS[key]
    assert bounds.leading_exponent(bound) == exponent
    by_limit = sp.limit(sp.log(bounds.drop_logs(bound.total)) / sp.log(1 / eps), eps, 0)
    assert by_limit == exponent


def test_eps_exponent_refuses_a_non_monomial():
    with pytest.raises(ParameterError, match="monomial"):
        bounds.eps_exponent(1 / (1 + eps))


def test_dominant_term_at_given_values():
    small_eps = {eps: 1e-3, B: 2, cmin: 0.5, S: 10, A: 2, Gamma: 2}
    assert bounds.dominant_term(bounds.THM1, small_eps) == bounds.THM1.terms[0]
    tiny_cost = {eps: 1, B: 1, cmin: 0.01, S: 1, A: 1, Gamma: 1}
    assert bounds.dominant_term(bounds.THM1, tiny_cost) == bounds.THM1.terms[2]
    with pytest.raises(ParameterError, match="missing"):
        bounds.dominant_term(bounds.THM1, {eps: 0.1})


def test_theorem_1_by_hand():
    # B^3 Gamma S A / (cmin eps^2) = 1000 * 3 * 20 * 4 / (0.5 * 0.01), etc.
    terms = bounds.samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3, terms=True)
    assert terms == pytest.approx((4.8e7, 3.2e6, 9.6e4), rel=1e-12)
    assert bounds.samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3) == pytest.approx(51_296_000)


def test_explicit_total_by_hand():
    # Delta = 16, y = cmin = 1/2, eps = 1/2, delta = 1/2, S = A = Gamma = 1, alpha = 1:
    # l1 = log(16 / (1/8)) = log 128, l2 = log(16 / (1/4)) = log 64.
    l1, l2 = math.log(128), math.log(64)
    expected = 16**3 / (0.5 * 0.25) * l1 + 16**2 / 0.25 * l1 + 16**2 / 0.25 * l2**2
    value = bounds.samp_comp(0.5, 10, 0.5, S=1, A=1, Gamma=1, delta=0.5, bound="explicit1")
    assert value == pytest.approx(expected, rel=1e-12)


def test_samp_comp_is_symbolic_in_missing_parameters():
    expr = bounds.samp_comp(0.1, 10, 0.5)
    assert expr.free_symbols == {S, A, Gamma}
    assert bounds.samp_comp_theta(0.1, 2, 5, 10).free_symbols == {S, A, Gamma}
    assert bounds.samp_comp(None, 10, 0.5, S=1, A=1, Gamma=1).free_symbols == {eps}


@st.composite
def parameters(draw):
    n_states = draw(st.integers(1, 200))
    c = draw(unit)
    return dict(
        eps=draw(unit), cmin=c, B=draw(st.floats(c, 1e3)), S=n_states,
        A=draw(st.integers(1, 10)), Gamma=draw(st.integers(1, n_states + 1)),
        delta=draw(st.floats(1e-3, 0.999)), theta=draw(st.floats(1.0, 10.0)),
        D=draw(st.floats(1.0, 1e3)),
    )


def _call(key, p, **missing):
    given = dict(p, **missing)
    if key in ("thm1", "eq4", "explicit1"):
        return bounds.samp_comp(given["eps"], given["B"], given["cmin"], S=given["S"],
                                A=given["A"], Gamma=given["Gamma"], delta=given["delta"],
                                bound=key)
    return bounds.samp_comp_theta(given["eps"], given["theta"], given["D"], given["B"],
                                  S=given["S"], A=given["A"], Gamma=given["Gamma"],
                                  delta=given["delta"], bound=key)


@SMALL
@given(p=parameters(), key=st.sampled_from(["thm1", "eq4", "explicit1", "thm2", "eq5",
                                            "explicit3"]))
def test_substituting_into_the_symbolic_result_gives_the_float(p, key):
    value = _call(key, p)
    expr = _call(key, p, S=None, A=None, Gamma=None, delta=None)
    substituted = expr.subs({S: p["S"], A: p["A"], Gamma: p["Gamma"], delta: p["delta"]})
    assert isinstance(value, float)
    assert float(substituted) == pytest.approx(value, rel=1e-10)


def test_explicit_total_is_symbolic_in_b_through_the_final_delta():
    expr = bounds.samp_comp(0.1, None, 0.5, S=2, A=2, Gamma=2, delta=0.1, bound="explicit1")
    assert float(expr.subs(B, 5)) == pytest.approx(
        bounds.samp_comp(0.1, 5, 0.5, S=2, A=2, Gamma=2, delta=0.1, bound="explicit1"))


def test_terms_sum_to_the_total():
    for key in ("thm1", "explicit1"):
        parts = bounds.samp_comp(0.2, 4, 0.3, S=5, A=2, Gamma=3, delta=0.05, bound=key,
                                 terms=True)
        total = bounds.samp_comp(0.2, 4, 0.3, S=5, A=2, Gamma=3, delta=0.05, bound=key)
        assert sum(parts) == pytest.approx(total, rel=1e-12)


def test_default_d_hat_is_lemma_9_upper_bound():
    common = dict(S=5, A=2, Gamma=3, delta=0.05, bound="explicit3")
    d_hat = (1 + 2 * 0.1 * 1.1) * 1.1 * 7
    assert bounds.samp_comp_theta(0.1, 2, 7, 4, **common) == pytest.approx(
        bounds.samp_comp_theta(0.1, 2, 7, 4, D_hat=d_hat, **common), rel=1e-12)


@pytest.mark.parametrize("b, expected", [(0.3, 1), (1, 1), (1.5, 2), (8.0, 8), (8.0001, 16),
                                         (1000, 1024)])
def test_final_delta(b, expected):
    assert bounds.final_delta(b) == expected
    assert bounds.final_delta(B).subs(B, b) == expected


@given(b=st.floats(1.0, 1e12))
def test_final_delta_is_the_first_power_of_two_at_least_b(b):
    value = bounds.final_delta(b)
    assert b <= value < 2 * b
    assert value & (value - 1) == 0


BUDGET_CASES = [
    ("thm1", 1e9, dict(B=10, cmin=0.5, S=20, A=4, Gamma=3)),
    ("eq4", 1e11, dict(B=10, cmin=0.5, S=20, A=4, Gamma=3)),
    ("explicit1", 1e11, dict(B=10, cmin=0.5, S=20, A=4, Gamma=3, delta=0.1)),
    ("thm2", 1e11, dict(theta=2, D=5, B=10, S=20, A=4, Gamma=3)),
    ("explicit3", 1e14, dict(theta=2, D=5, B=10, S=20, A=4, Gamma=3, delta=0.1)),
    ("lemma9", 1e8, dict(D=5, S=20, A=4, Gamma=3)),
    ("lower", 1e8, dict(B=10, S=20, A=4)),
]


@pytest.mark.parametrize("key, n, params", BUDGET_CASES, ids=[c[0] for c in BUDGET_CASES])
def test_accuracy_for_budget_inverts_samp_comp(key, n, params):
    calculator = {"thm1": bounds.samp_comp, "eq4": bounds.samp_comp,
                  "explicit1": bounds.samp_comp, "thm2": bounds.samp_comp_theta,
                  "explicit3": bounds.samp_comp_theta, "lemma9": bounds.samp_comp_diameter,
                  "lower": bounds.samp_comp_lower}[key]
    extra = {"bound": key} if key not in ("lemma9", "lower") else {}
    accuracy = bounds.accuracy_for_budget(n, bound=key, **params)
    assert 0 < accuracy < 1
    assert calculator(eps=accuracy, **params, **extra) == pytest.approx(n, rel=1e-9)
    assert calculator(eps=accuracy * (1 - 1e-6), **params, **extra) > n


def test_accuracy_for_budget_of_the_lower_bound_by_hand():
    # S A B^3 / eps^2 = n  <=>  eps = sqrt(S A B^3 / n)
    accuracy = bounds.accuracy_for_budget(1e8, bound="lower", B=10, S=20, A=4)
    assert accuracy == pytest.approx(math.sqrt(20 * 4 * 1000 / 1e8), rel=1e-10)


def test_accuracy_for_budget_finds_the_smallest_crossing_of_a_non_monotone_total():
    params = dict(theta=1, D=1, B=1, S=1, A=1, Gamma=1, delta=0.5)
    grid = np.linspace(0.01, 1, 500)
    total = bounds.samp_comp_theta(None, bound="explicit3", **params)
    values = sp.lambdify(eps, total, "numpy")(grid)
    budget = (values.min() + values[-1]) / 2
    assert values[-1] > budget
    accuracy = bounds.accuracy_for_budget(budget, bound="explicit3", **params)
    assert bounds.samp_comp_theta(accuracy, bound="explicit3", **params) == pytest.approx(budget)
    assert np.all(values[grid < accuracy * (1 - 1e-3)] > budget)


def test_accuracy_for_budget_errors():
    with pytest.raises(ParameterError, match="for every eps in \\(0, 1\\]"):
        bounds.accuracy_for_budget(10, B=10, cmin=0.5, S=20, A=4, Gamma=3)
    with pytest.raises(ParameterError, match="missing Gamma"):
        bounds.accuracy_for_budget(1e9, B=10, cmin=0.5, S=20, A=4)
    with pytest.raises(ParameterError, match="`bound`"):
        bounds.accuracy_for_budget(1e9, bound="thm9", B=10, cmin=0.5, S=20, A=4, Gamma=3)
    with pytest.raises(ParameterError, match="`n`"):
        bounds.accuracy_for_budget(-1, B=10, cmin=0.5, S=20, A=4, Gamma=3)


@pytest.mark.parametrize("call, match", [
    (lambda: bounds.samp_comp(0, 10, 0.5), r"`eps` must lie in \(0, 1\]; got 0"),
    (lambda: bounds.samp_comp(1.5, 10, 0.5), r"`eps` must lie in \(0, 1\]; got 1.5"),
    (lambda: bounds.samp_comp(0.1, 10, 0), r"`cmin` must lie in \(0, 1\]; got 0"),
    (lambda: bounds.samp_comp(0.1, 10, 1.2), r"`cmin` must lie in \(0, 1\]"),
    (lambda: bounds.samp_comp(0.1, 0.2, 0.5), r"`B` must be >= `cmin` = 0.5.*got 0.2"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, S=0), r"`S` must be an integer >= 1; got 0"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, A=2.5), r"`A` must be an integer; got 2.5"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, S=3, Gamma=5), r"`Gamma` must lie in \[1, S \+ 1\]"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, delta=1), r"`delta` must lie in \(0, 1\)"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, alpha=0), r"`alpha` must lie in \(0, inf\)"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, Delta=0.5, bound="explicit1"), r"`Delta`"),
    (lambda: bounds.samp_comp(0.1, 10, 0.5, bound="thm2"), r"`bound` must be one of"),
    (lambda: bounds.samp_comp_theta(0.1, 0.5, 5, 10), r"`theta` must lie in \[1, inf\)"),
    (lambda: bounds.samp_comp_theta(0.1, 2, 0.5, 10), r"`D` must lie in \[1, inf\)"),
    (lambda: bounds.samp_comp_theta(0.1, 2, 5, 0), r"`B` must lie in \(0, inf\)"),
    (lambda: bounds.samp_comp_lower(0.1, 0.5), r"`B` must lie in \[1, inf\)"),
    (lambda: bounds.samp_comp_diameter(0.1, 0), r"`D` must lie in \[1, inf\)"),
])
def test_argument_errors_name_the_argument(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


def test_latex():
    text = bounds.to_latex(bounds.THM1)
    assert r"\frac{A B^{3} \Gamma S}{c_{min} \epsilon^{2}}" in text
    assert r"\log" in bounds.to_latex(bounds.EXPLICIT_CMIN)
    assert bounds.to_latex(bounds.samp_comp(0.1, 10, 0.5)) == r"200400 A \Gamma S + 2000 A S^{2}"


def _standard_instances():
    named = [(name, INSTANCES[name]()) for name in ("gridworld", "chain", "tradeoff", "trap")]
    return named + [("garnet", INSTANCES["garnet"](6, 2, 3, c_min=0.2, seed=1))]


@pytest.mark.parametrize("accuracy", [1.0, 0.5])
@pytest.mark.filterwarnings("ignore:The confidence sets are vacuous")
def test_alg1_calls_within_explicit_total_at_final_delta(backend, accuracy):
    for name, ssp in _standard_instances():
        run = backend.solve(ssp, ssp.costs, accuracy, 0.1, seed=0)
        pairs = ssp.n_states * ssp.n_actions
        total = bounds.samp_comp(accuracy, None, ssp.c_min, S=ssp.n_states, A=ssp.n_actions,
                                 Gamma=ssp.branching, delta=0.1, Delta=run.delta_final,
                                 bound="explicit1")
        assert run.n_calls <= pairs * math.ceil(total / pairs), name


@pytest.mark.parametrize("name", ["zero_cost_loop", "theta_example"])
def test_alg3_search_calls_within_explicit_total_at_final_delta(backend, name):
    ssp = INSTANCES[name]()
    run = backend.solve(ssp, ssp.costs, 0.5, 0.1, theta=2.0, seed=0)
    diameter_calls = [r.n_calls for r in run.history if r.phase == "diameter"][-1]
    pairs = ssp.n_states * ssp.n_actions
    total = bounds.samp_comp_theta(0.5, 2.0, None, None, S=ssp.n_states, A=ssp.n_actions,
                                   Gamma=ssp.branching, delta=0.1, Delta=run.delta_final,
                                   D_hat=run.d_hat, bound="explicit3")
    assert run.n_calls - diameter_calls <= pairs * math.ceil(total / pairs)
