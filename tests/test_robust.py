"""Pessimistic and optimistic values over confidence boxes, against LPs and vertex brute force."""

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from reference import chains
from reference import robust as reference_robust
from reference.robust import optimal
from reference.errors import ConvergenceError


def _kernel_sets():
    import fast.kernels
    import reference.kernels

    return {"reference": reference.kernels.NUMPY_KERNELS, "fast": fast.kernels.COMPILED_KERNELS}


KERNELS = _kernel_sets()

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def _box_and_values(draw):
    k = draw(st.integers(2, 6))
    lo = np.array(draw(st.lists(st.integers(0, 4), min_size=k, max_size=k)), dtype=float) / 16
    width = np.array(draw(st.lists(st.integers(0, 12), min_size=k, max_size=k)), dtype=float) / 16
    hi = np.minimum(1.0, lo + width)
    assume(lo.sum() <= 1 <= hi.sum())
    v = np.array(draw(st.lists(st.integers(0, 3), min_size=k, max_size=k)), dtype=float)
    v[-1] = 0.0
    return lo, hi, v


@pytest.mark.shared
@SETTINGS
@given(case=_box_and_values())
def test_pessimistic_inner_solves_the_lp(backend, case):
    lo, hi, v = case
    p = backend.pessimistic_inner(lo, hi, v)
    lp = linprog(-v, A_eq=np.ones((1, v.size)), b_eq=[1.0], bounds=list(zip(lo, hi)),
                 method="highs")
    assert lp.status == 0
    assert p @ v == pytest.approx(-lp.fun, abs=1e-12)
    assert (p >= lo - 1e-15).all() and (p <= hi + 1e-15).all() and p.sum() == pytest.approx(1.0)


@pytest.mark.shared
def test_pessimistic_inner_fills_the_goal_last(backend):
    lo = np.array([0.0, 0.0, 0.0])
    hi = np.array([0.5, 0.5, 1.0])
    # Ties at value 0 between state 1 and the goal: the goal gets mass last.
    p = backend.pessimistic_inner(lo, hi, np.array([2.0, 0.0, 0.0]))
    assert p.tolist() == [0.5, 0.5, 0.0]
    with pytest.raises(backend.ParameterError, match="simplex"):
        backend.pessimistic_inner(lo, np.array([0.1, 0.1, 0.1]), np.zeros(3))


@st.composite
def _sparse_counts(draw):
    S = draw(st.integers(1, 6))
    A = draw(st.integers(1, 3))
    values = draw(st.lists(st.sampled_from([0, 0, 0, 0, 1, 3, 50, 400]), min_size=S * A * (S + 1),
                           max_size=S * A * (S + 1)))
    v = np.array(draw(st.lists(st.integers(0, 4), min_size=S, max_size=S)), dtype=float)
    return np.array(values, dtype=float).reshape(S, A, S + 1), np.append(v, 0.0)


@SETTINGS
@given(case=_sparse_counts(), kind=st.sampled_from(["kl", "bernstein", "paper"]))
def test_sparse_pour_equals_the_dense_greedy_both_ways(backend, case, kind):
    counts, v_ext = case
    S, A = counts.shape[:2]
    boxes = backend.confidence_boxes(sp.csr_array(counts.reshape(S * A, S + 1)), 0.1, kind=kind)
    lo, hi = boxes.to_dense()
    rows = np.arange(S * A)
    for descending, dense in ((True, backend.pessimistic_inner(lo, hi, v_ext)),
                              (False, backend.optimistic_inner(lo, hi, v_ext))):
        kernel = KERNELS[backend.__name__].pour_kernel(boxes, rows, v_ext, descending)
        values = KERNELS[backend.__name__].pour_values(boxes, rows, v_ext, descending)
        assert kernel.descending == descending
        assert np.allclose(kernel @ v_ext, values, rtol=1e-12, atol=1e-12)
        assert np.allclose(kernel.toarray(), dense.reshape(S * A, S + 1), atol=1e-14)
        assert np.allclose(values, dense.reshape(S * A, S + 1) @ v_ext, atol=1e-12)


def _vertices(lo, hi):
    """Vertices of {p : lo <= p <= hi, sum p = 1}, exactly (dyadic ends)."""
    lo = [Fraction(x) for x in lo]
    hi = [Fraction(x) for x in hi]
    found = set()
    k = len(lo)
    for free in range(k):
        others = [i for i in range(k) if i != free]
        for ends in itertools.product((0, 1), repeat=k - 1):
            p = [None] * k
            for i, e in zip(others, ends):
                p[i] = hi[i] if e else lo[i]
            p[free] = 1 - sum(p[i] for i in others)
            if lo[free] <= p[free] <= hi[free]:
                found.add(tuple(p))
    return [np.array([float(x) for x in p]) for p in found]


def _boxes_from_dense(backend, lo, hi):
    """ConfidenceBoxes storing every entry of dense boxes ``(S, A, S+1)``."""
    S, A = lo.shape[:2]
    rows = S * A
    return backend.ConfidenceBoxes(
        n_states=S, n_actions=A, indptr=np.arange(rows + 1, dtype=np.int64) * (S + 1),
        indices=np.tile(np.arange(S + 1, dtype=np.int64), rows), lo=lo.ravel(), hi=hi.ravel(),
        hi_unseen=np.zeros(rows), p_hat=np.full(rows * (S + 1), 1.0 / (S + 1)),
        n=np.ones(rows), kind="kl", delta=0.1,
    )


@st.composite
def _dyadic_boxes(draw, n_actions=1, goal_open=False, cost_values=(0.0, 0.5, 1.0)):
    S = draw(st.integers(1, 2))
    lo = np.zeros((S, n_actions, S + 1))
    hi = np.zeros((S, n_actions, S + 1))
    for s in range(S):
        for a in range(n_actions):
            low = np.array(draw(st.lists(st.sampled_from([0, 0, 1, 2]), min_size=S + 1,
                                         max_size=S + 1)), dtype=float)
            width = np.array(draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=S + 1,
                                           max_size=S + 1)), dtype=float)
            if goal_open:
                width[S] = max(width[S], 1)
            up = np.minimum(8.0, low + width)
            j = draw(st.integers(0, S))
            up[j] += max(0.0, 8.0 - up.sum())
            lo[s, a], hi[s, a] = low / 8, up / 8
    costs = np.array(draw(st.lists(st.sampled_from(cost_values), min_size=S * n_actions,
                                   max_size=S * n_actions))).reshape(S, n_actions)
    return lo, hi, costs


def _brute_values(backend, lo, hi, costs, policy):
    """Max over vertex kernels (one per state) of the exact value of ``policy``."""
    S = lo.shape[0]
    choices = [_vertices(lo[s, policy[s]], hi[s, policy[s]]) for s in range(S)]
    best = np.full(S, -np.inf)
    for rows in itertools.product(*choices):
        ssp = backend.SSP(np.array(rows)[:, None, :], costs[np.arange(S), policy][:, None],
                          require_proper=False)
        best = np.maximum(best, backend.policy_values(ssp, np.zeros(S, dtype=int)))
    return best


@SETTINGS
@given(case=_dyadic_boxes())
def test_infinity_is_decided_exactly_and_values_match_brute_force(backend, case):
    lo, hi, costs = case
    S = lo.shape[0]
    boxes = _boxes_from_dense(backend, lo, hi)
    policy = np.zeros(S, dtype=np.int64)
    brute = _brute_values(backend, lo, hi, costs, policy)
    infinite = reference_robust._infinite_states(boxes, policy, costs[:, 0])
    assert np.array_equal(infinite, np.isinf(brute))
    U = reference_robust._robust_values(KERNELS[backend.__name__], boxes, costs[:, 0], policy)[0]
    assert (U >= brute).all()
    if (costs > 0).all():
        finite = np.isfinite(brute)
        assert np.array_equal(np.isfinite(U), finite)
        assert np.allclose(U[finite], brute[finite], rtol=1e-9)


@SETTINGS
@given(case=_dyadic_boxes(n_actions=2, goal_open=True, cost_values=(0.5, 1.0)))
def test_optimistic_and_robust_optimal_values_match_brute_force(backend, case):
    lo, hi, costs = case
    S = lo.shape[0]
    boxes = _boxes_from_dense(backend, lo, hi)
    per_policy = {policy: _brute_values(backend, lo, hi, costs, np.array(policy))
                  for policy in itertools.product(range(2), repeat=S)}
    robust_best = np.min(np.array(list(per_policy.values())), axis=0)
    U, policy = reference_robust._robust_policy(
        KERNELS[backend.__name__], boxes, costs, np.zeros(S, dtype=np.int64))[:2]
    assert np.allclose(U, robust_best, rtol=1e-9) or np.array_equal(U, robust_best)
    assert np.array_equal(U, per_policy[tuple(policy)]) or np.allclose(
        U, per_policy[tuple(policy)], rtol=1e-9)
    lowest = np.full(S, np.inf)
    for policy in itertools.product(range(2), repeat=S):
        choices = [_vertices(lo[s, policy[s]], hi[s, policy[s]]) for s in range(S)]
        for rows in itertools.product(*choices):
            ssp = backend.SSP(np.array(rows)[:, None, :], costs[np.arange(S), policy][:, None],
                              require_proper=False)
            lowest = np.minimum(lowest, backend.policy_values(ssp, np.zeros(S, dtype=int)))
    L = reference_robust._optimistic(
        KERNELS[backend.__name__], boxes, costs, np.zeros(S, dtype=np.int64))[0]
    assert (L <= lowest).all()
    assert np.allclose(L, lowest, rtol=1e-9)


def _counts(backend, ssp, n, seed):
    store = backend.SampleStore(ssp.n_states, ssp.n_actions)
    store.top_up(backend.TabularGenerativeModel(ssp), n, np.random.default_rng(seed))
    return store.counts_csr()


@pytest.mark.parametrize("kind", ["kl", "bernstein", "paper"])
def test_bounds_sandwich_the_true_values(backend, kind):
    for ssp in (backend.gridworld(), backend.garnet(8, 3, 3, seed=4), backend.trap(r=0.3)):
        counts = _counts(backend, ssp, 3000, 1)
        exact = backend.optimal_values(ssp).values
        lower = backend.optimistic_values(counts, ssp.costs, 0.1, kind=kind)
        assert (lower.values <= exact).all() and lower.converged
        robust = backend.robust_optimal_values(counts, ssp.costs, 0.1, kind=kind)
        assert (robust.values >= backend.policy_values(ssp, robust.policy)).all()
        assert (robust.values >= exact).all() and robust.converged
        for policy in (robust.policy, exact.policy if hasattr(exact, "policy") else robust.policy):
            upper = backend.robust_policy_values(counts, ssp.costs, policy, 0.1, kind=kind)
            assert (upper.values >= backend.policy_values(ssp, policy)).all()


def test_an_improper_policy_gets_an_infinite_upper_bound(backend):
    ssp = backend.trap(r=0.3)
    counts = _counts(backend, ssp, 2000, 0)
    values = backend.policy_values(ssp, np.zeros(ssp.n_states, dtype=int))
    for policy in itertools.product(range(ssp.n_actions), repeat=ssp.n_states):
        exact = backend.policy_values(ssp, np.array(policy))
        upper = backend.robust_policy_values(counts, ssp.costs, policy, 0.1).values
        assert (np.isinf(upper) >= np.isinf(exact)).all()
        assert (upper >= exact).all()
    assert values.shape == (ssp.n_states,)


def test_goal_forcing_holds_an_action_index_above_255(backend):
    # 260 actions: every action but the last cycles through the three states (2000 samples
    # to the next one), the last one, index 259, goes to the goal. From the policy of first
    # actions every value is infinite; goal forcing finds index 259 in every state (an
    # action type of one byte would wrap it to 3, another cycle) and the policy switches to it.
    S, A = 3, 260
    counts = np.zeros((S, A, S + 1))
    for s in range(S):
        counts[s, :-1, (s + 1) % S] = 2000.0
    counts[:, -1, S] = 2000.0
    costs = np.ones((S, A))
    costs[:, -1] = 2.0
    boxes, costs = reference_robust.checked_inputs(KERNELS[backend.__name__], counts, costs,
                                                   0.1, "kl")
    W, action = optimal._goal_forcing(boxes)
    np.testing.assert_array_equal(W, [True] * S)
    np.testing.assert_array_equal(action, [A - 1] * S)
    U, policy = reference_robust._robust_policy(KERNELS[backend.__name__], boxes, costs,
                                                np.zeros(S, dtype=np.int64))[:2]
    np.testing.assert_array_equal(policy, [A - 1] * S)
    assert np.isfinite(U).all() and (U >= 2.0).all()
    out = backend.robust_optimal_values(counts, costs, 0.1, policy=np.zeros(S, dtype=int))
    np.testing.assert_array_equal(out.policy, [A - 1] * S)
    assert not out.infinite.any() and (out.values >= 2.0).all()


def test_unseen_pairs_and_tiny_samples_give_infinite_or_vacuous_bounds(backend):
    ssp = backend.gridworld()
    counts = sp.csr_array((ssp.n_states * ssp.n_actions, ssp.n_states + 1))
    policy = np.zeros(ssp.n_states, dtype=int)
    upper = backend.robust_policy_values(counts, ssp.costs, policy, 0.1)
    assert np.isinf(upper.values).all()
    lower = backend.optimistic_values(counts, ssp.costs, 0.1)
    assert np.allclose(lower.values, ssp.costs.min(axis=1))


def test_an_evaluation_without_an_acceptable_candidate_gives_vacuous_bounds(backend):
    # Every iterative solve refused (POURED_FAIL below any backward error): the adversary's
    # failed candidate leaves the upper bound at inf, the optimist's the lower bound at 0,
    # where the same counts give finite and positive bounds otherwise.
    ssp = backend.garnet(8, 3, 3, seed=4)
    counts = _counts(backend, ssp, 3000, 1)
    policy = np.zeros(ssp.n_states, dtype=int)
    upper = backend.robust_policy_values(counts, ssp.costs, policy, 0.1).values
    lower = backend.optimistic_values(counts, ssp.costs, 0.1).values
    assert np.isfinite(upper).all() and (lower > 0).all()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chains.explicit, "DENSE_MAX_STATES", 0)
        patch.setattr(chains.poured, "POURED_FAIL", -1.0)
        with pytest.raises(ConvergenceError):
            chains.poured_values(backend.optimistic_values(counts, ssp.costs, 0.1).p_bound,
                                 ssp.costs[:, 0])
        upper = backend.robust_policy_values(counts, ssp.costs, policy, 0.1)
        lower = backend.optimistic_values(counts, ssp.costs, 0.1)
    assert np.isinf(upper.values).all() and upper.infinite.all()
    np.testing.assert_array_equal(lower.values, 0.0)
    for out in (upper, lower):
        assert not out.converged
        assert "an evaluation found no acceptable solution" in out.message


@st.composite
def _proper_counts(draw):
    """Counts ``(S, A, S+1)`` whose every pair saw the goal often: no infinite bound."""
    S = draw(st.integers(1, 6))
    A = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    counts = rng.choice([0, 0, 0, 1, 3, 50, 400, 10**4], size=(S, A, S + 1)).astype(float)
    counts[:, :, S] = rng.choice([10**4, 10**5, 10**6], size=(S, A))
    costs = rng.choice([0.1, 0.5, 1.0], size=(S, A)) if draw(st.booleans()) else rng.uniform(
        0.1, 1.0, (S, A))
    return counts, costs, draw(st.sampled_from(["kl", "bernstein", "paper"]))


def _explicit_values(P, costs_pi):
    """Values of the dense kernel ``P`` ``(S, S+1)``, by LU."""
    S = P.shape[0]
    return np.linalg.solve(np.eye(S) - P[:, :S], costs_pi)


def _explicit_adversary(lo, hi, costs, policy):
    """The adversary's policy iteration on explicit dense rows: only the rows gaining more than
    ``SWITCH_RTOL`` are poured again (the former CSR path)."""
    S = lo.shape[0]
    lo, hi, costs_pi = (x[np.arange(S), policy] for x in (lo, hi, costs))
    P = reference_robust.pessimistic_inner(lo, hi, np.zeros(S + 1))
    while True:
        v_ext = np.append(_explicit_values(P, costs_pi), 0.0)
        new = reference_robust.pessimistic_inner(lo, hi, v_ext)
        switch = new @ v_ext > P @ v_ext + reference_robust.SWITCH_RTOL * max(1.0, v_ext.max())
        if not switch.any():
            return v_ext[:S], P
        P[switch] = new[switch]


def _explicit_optimist(backend, lo, hi, costs, policy):
    """The optimist's policy iteration on explicit dense rows, switching only what gains and
    pouring every row of the policy again at each step, as ``reference.robust`` does (a row
    kept from an earlier order can hold another kernel, optimal within the switching
    tolerance, whose product differs by more than the check below allows)."""
    S = lo.shape[0]
    states = np.arange(S)
    P = backend.optimistic_inner(lo[states, policy], hi[states, policy], np.zeros(S + 1))
    while True:
        v_ext = np.append(_explicit_values(P, costs[states, policy]), 0.0)
        q = costs + backend.optimistic_inner(lo, hi, v_ext) @ v_ext
        best = q.argmin(axis=1)
        tol = reference_robust.SWITCH_RTOL * max(1.0, v_ext.max())
        switch = q[states, best] < costs[states, policy] + P @ v_ext - tol
        if not switch.any():
            return v_ext[:S], P
        policy = np.where(switch, best, policy)
        P = backend.optimistic_inner(lo[states, policy], hi[states, policy], v_ext)


TIED = reference_robust.CHECK_MAX_SLACK
"""Relative agreement of two policy iterations stopped within their tolerances."""


@SETTINGS
@given(case=_proper_counts())
def test_policy_iterations_on_poured_kernels_match_the_explicit_rows(backend, case):
    """The policy iterations on compact poured kernels give the values of those on explicit
    dense rows. Two policy iterations may stop at kernels that differ by less than the
    switching tolerance, whose values then differ by that tolerance times the expected time
    to the goal, and the bounds keep the Bellman check's relative slack (up to
    ``CHECK_MAX_SLACK``): values and products are compared to that slack."""
    counts, costs, kind = case
    S, A = costs.shape
    lo, hi = backend.confidence_boxes(counts, 0.1, kind=kind).to_dense()
    policy = np.zeros(S, dtype=np.int64)
    # The adversary: U of a fixed policy, and its kernel.
    robust = backend.robust_policy_values(counts, costs, policy, 0.1, kind=kind)
    values, P = _explicit_adversary(lo, hi, costs, policy)
    assert isinstance(robust.p_bound, backend.PouredKernel) and robust.p_bound.descending
    assert np.allclose(robust.values, values, rtol=TIED, atol=0.0)
    v_ext = np.append(values, 0.0)
    assert np.allclose(robust.p_bound @ v_ext, P @ v_ext, rtol=TIED,
                       atol=TIED * max(1.0, v_ext.max()))
    # The robust optimum: policy iteration over the adversary's values.
    best = np.zeros(S, dtype=np.int64)
    while True:
        U = _explicit_adversary(lo, hi, costs, best)[0]
        U_ext = np.append(U, 0.0)
        q = costs + backend.pessimistic_inner(lo, hi, U_ext) @ U_ext
        tol = reference_robust.SWITCH_RTOL * max(1.0, U.max())
        switch = q.min(axis=1) < q[np.arange(S), best] - tol
        if not switch.any():
            break
        best = np.where(switch, q.argmin(axis=1), best)
    optimal = backend.robust_optimal_values(counts, costs, 0.1, kind=kind, policy=policy)
    assert np.allclose(optimal.values, U, rtol=TIED, atol=0.0)
    # The optimist, from the cheapest action.
    start = np.argmin(costs, axis=1)
    lower = backend.optimistic_values(counts, costs, 0.1, kind=kind, policy=start)
    values, P = _explicit_optimist(backend, lo, hi, costs, start)
    assert isinstance(lower.p_bound, backend.PouredKernel) and not lower.p_bound.descending
    assert np.allclose(lower.values, values, rtol=TIED, atol=0.0)
    v_ext = np.append(values, 0.0)
    assert np.allclose(lower.p_bound @ v_ext, P @ v_ext, rtol=TIED,
                       atol=TIED * max(1.0, v_ext.max()))


def _exact_kernel_value(boxes, costs, n_core):
    """Exact (rational) value of one kernel in the boxes on the first ``n_core`` states, whose
    other states all move to the goal: lower ends, then the leftover mass poured by index."""
    S = boxes.n_states
    rows = []
    for s in range(n_core):
        lo = [Fraction(0)] * (S + 1)
        hi = [Fraction(float(boxes.hi_unseen[s]))] * (S + 1)
        for e in range(boxes.indptr[s], boxes.indptr[s + 1]):
            j = int(boxes.indices[e])
            lo[j], hi[j] = Fraction(float(boxes.lo[e])), Fraction(float(boxes.hi[e]))
        p, left = list(lo), 1 - sum(lo)
        for j in range(S + 1):
            add = min(hi[j] - lo[j], left)
            p[j] += add
            left -= add
        assert left == 0
        rows.append(p)
    system = [[Fraction(int(i == j)) - rows[i][j] for j in range(n_core)]
              + [Fraction(float(costs[i])) + sum(rows[i][n_core:S])] for i in range(n_core)]
    for i in range(n_core):
        for r in range(n_core):
            if r != i:
                f = system[r][i] / system[i][i]
                system[r] = [a - f * b for a, b in zip(system[r], system[i])]
    return [system[i][n_core] / system[i][i] for i in range(n_core)]


def test_an_accepted_upper_bound_is_never_below_a_kernel_in_the_boxes(backend):
    """An ill-conditioned core (expected costs near 1e12 times the cost) among 998 states that
    go to the goal: above 1000 states the policy iterations evaluate iteratively, whose error
    the Bellman check must not trust. The accepted ``upper`` is at least the exact value of a
    kernel of the boxes (``+inf`` is allowed: the check may refuse such a chain)."""
    S, n_core = 1001, 3
    core = [[69136718234797.0, 30833025120788.0, 30256644415.0, 0.0],
            [2680111766285.0, 813975977740.0, 96505912255976.0, 0.0],
            [30579130148.0, 87850056042348.0, 12119364827503.0, 100.0]]
    rows, cols, vals = [], [], []
    for s in range(n_core):
        for j, count in enumerate(core[s]):
            if count > 0:
                rows.append(s)
                cols.append(j if j < n_core else S)
                vals.append(count)
    rows += list(range(n_core, S))
    cols += [S] * (S - n_core)
    vals += [1e12] * (S - n_core)
    counts = sp.csr_array((vals, (rows, cols)), shape=(S, S + 1))
    costs = np.ones((S, 1))
    costs[:n_core, 0] = [0.18372360134659105, 0.6122317854562453, 0.8002740237736923]
    policy = np.zeros(S, dtype=np.int64)
    boxes = backend.confidence_boxes(counts, 0.1)
    exact = _exact_kernel_value(boxes, costs[:, 0], n_core)
    upper = backend.robust_policy_values(counts, costs, policy, 0.1).values
    for s in range(n_core):
        assert np.isinf(upper[s]) or Fraction(float(upper[s])) >= exact[s]
    assert np.all(upper[n_core:] >= 1.0)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**32 - 1), st.sampled_from(["kl", "bernstein"]))
def test_the_closable_start_leaves_the_infinite_states_unchanged(S, seed, kind):
    # The infinite states from the kernel closable's set, against the splitting started from
    # every state (the search before the shortcut), on counts that often trap the chain: goal
    # counts mostly 0, some pairs unseen, some costs 0.
    from reference.kernels import NUMPY_KERNELS

    rng = np.random.default_rng(seed)
    A = 2
    counts = rng.choice([0, 0, 0, 1, 5, 200, 10**4, 10**6], size=(S, A, S + 1)).astype(float)
    counts[:, :, S] = rng.choice([0, 0, 0, 10**4, 10**6], size=(S, A))
    costs = rng.choice([0.0, 0.5, 1.0], size=(S, A))
    boxes, _ = reference_robust.checked_inputs(NUMPY_KERNELS, counts, costs, 0.1, kind)
    everything = np.ones(S, dtype=bool)
    for policy in itertools.product(range(A), repeat=S):
        policy = np.array(policy)
        costs_pi = costs[np.arange(S), policy]
        got = reference_robust._infinite_states(boxes, policy, costs_pi)
        want = reference_robust._infinite_states(
            boxes, policy, costs_pi, None,
            dataclasses.replace(NUMPY_KERNELS, closable=lambda boxes, rows: everything))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["reference", "fast"])
def test_the_lower_check_reuses_the_last_q_values_only_for_the_same_bits(name):
    # The optimist's check against its loop's last Q-values gives the same bound as the check
    # that pours them again; Q-values of other values (here negative ones, which the check
    # clips to 0) are ignored.
    import reference

    kernels = KERNELS[name]
    ssp = reference.garnet(30, 3, 4, seed=2)
    counts = _counts(reference, ssp, 20_000, 3)
    boxes, costs = reference_robust.checked_inputs(kernels, counts, ssp.costs, 0.1, "kl")
    S, A = boxes.n_states, boxes.n_actions
    values = reference_robust._optimistic(kernels, boxes, costs, np.zeros(S, dtype=np.int64))[0]
    pour = kernels.pour_values(boxes, np.arange(S * A), np.append(values, 0.0), False)
    q = costs + pour.reshape(S, A)
    want = reference_robust._check_lower(kernels, boxes, costs, values)
    got = reference_robust._check_lower(kernels, boxes, costs, values, q)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    shifted = values.copy()
    shifted[0] = -1.0
    wrong = np.zeros((S, A))
    want = reference_robust._check_lower(kernels, boxes, costs, shifted)
    got = reference_robust._check_lower(kernels, boxes, costs, shifted, wrong)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
