"""Bernstein confidence sets (Lemma 5), the inner problem and EVI (App. B, Lemma 4)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog


def _sampled_counts(backend, ssp, n, seed):
    store = backend.SampleStore(ssp.n_states, ssp.n_actions)
    store.top_up(backend.TabularGenerativeModel(ssp), n, np.random.default_rng(seed))
    return store.counts_csr()


def _instances(backend):
    return [
        backend.chain(4, 0.7),
        backend.tradeoff(),
        backend.garnet(5, 3, 3, seed=2),
        backend.gridworld(),
        backend.trap(r=0.3),
    ]


def _policy_value(kernel, costs):
    """Value of a policy from its (S, S+1) kernel by a linear solve."""
    kernel = kernel.toarray()
    S = kernel.shape[0]
    return np.linalg.solve(np.eye(S) - kernel[:, :S], costs)


def test_radius_matches_lemma_5_by_hand(backend):
    counts = np.zeros((2, 1, 3))
    counts[0, 0] = [3, 0, 1]
    beta = backend.bernstein_radius(counts, 0.1)
    L = math.log(2 * 1 * 4 / 0.1)
    assert beta[0, 0, 0] == pytest.approx(4 * math.sqrt(0.75 * L / 4) + 28 * L / 4)
    assert beta[0, 0, 1] == pytest.approx(28 * L / 4)
    assert beta[0, 0, 2] == pytest.approx(4 * math.sqrt(0.25 * L / 4) + 28 * L / 4)
    L0 = math.log(2 * 1 * 1 / 0.1)
    assert np.allclose(beta[1, 0], 28 * L0)


def test_radius_sum_agrees_with_radius_dense_and_csr(backend):
    ssp = backend.garnet(6, 2, 3, seed=0)
    csr = _sampled_counts(backend, ssp, 40, 0)
    dense = csr.toarray().reshape(6, 2, 7)
    expected = backend.bernstein_radius(dense, 0.05).sum(axis=2)
    assert np.allclose(backend.bernstein_radius_sum(csr, 0.05), expected)
    assert np.allclose(backend.bernstein_radius_sum(dense, 0.05), expected)
    assert np.allclose(backend.bernstein_radius(csr, 0.05), backend.bernstein_radius(dense, 0.05))


@st.composite
def _boxes(draw):
    k = draw(st.integers(2, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k))
    lo = np.clip(p - rng.uniform(0, 0.5, k), 0, 1)
    hi = np.clip(p + rng.uniform(0, 0.5, k), 0, 1)
    v = rng.choice([0.0, 1.0, 2.0, 3.5], size=k) if draw(st.booleans()) else rng.uniform(0, 5, k)
    v[-1] = 0.0
    return lo, hi, v


@pytest.mark.shared
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(box=_boxes())
def test_inner_problem_equals_linprog(backend, box):
    lo, hi, v = box
    p = backend.optimistic_inner(lo, hi, v)
    assert np.all(p >= lo - 1e-12) and np.all(p <= hi + 1e-12)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    lp = linprog(v, A_eq=np.ones((1, len(v))), b_eq=[1.0], bounds=list(zip(lo, hi)),
                 method="highs")
    assert lp.status == 0
    assert p @ v == pytest.approx(lp.fun, abs=1e-9)


@pytest.mark.shared
def test_inner_problem_on_both_backends_batched(backend):
    rng = np.random.default_rng(4)
    lo = rng.uniform(0, 0.1, (3, 2, 5))
    hi = lo + rng.uniform(0.2, 0.6, (3, 2, 5))
    v = np.array([2.0, 0.5, 3.0, 1.0, 0.0])
    p = backend.optimistic_inner(lo, hi, v)
    for idx in np.ndindex(3, 2):
        lp = linprog(v, A_eq=np.ones((1, 5)), b_eq=[1.0], bounds=list(zip(lo[idx], hi[idx])),
                     method="highs")
        assert p[idx] @ v == pytest.approx(lp.fun, abs=1e-9)


@pytest.mark.shared
@pytest.mark.parametrize(
    "lo, hi, v, error, pattern",
    [
        ([0.5, 0.6], [0.4, 1.0], [1.0, 0.0], "ParameterError",
         r"lo = 0\.5, hi = 0\.4 at index \(0,\)"),
        ([0.0, 0.0], [0.3, 0.3], [1.0, 0.0], "ParameterError",
         r"meet the simplex .* got sums 0\.0 and 0\.6"),
        ([0.6, 0.6], [1.0, 1.0], [1.0, 0.0], "ParameterError", r"got sums 1\.2 and 2\.0"),
        ([0.0, 0.0], [1.0, 1.0], [np.nan, 0.0], "NotFiniteError", r"`v` must be finite; got nan"),
        ([0.0, 0.0], [1.0, 1.0], [1.0, 0.0, 2.0], "ShapeError", r"`v` shape \(S\+1,\)"),
    ],
)
def test_inner_problem_rejects_boxes_missing_the_simplex(backend, lo, hi, v, error, pattern):
    with pytest.raises(getattr(backend, error), match=pattern):
        backend.optimistic_inner(np.array(lo), np.array(hi), np.array(v))


@pytest.mark.shared
def test_inner_ties_go_to_the_goal_then_lower_index(backend):
    lo = np.zeros(4)
    hi = np.full(4, 0.6)
    p = backend.optimistic_inner(lo, hi, np.zeros(4))
    assert np.allclose(p, [0.4, 0.0, 0.0, 0.6])
    p = backend.optimistic_inner(lo, np.array([0.6, 0.6, 0.6, 0.0]), np.array([1.0, 1.0, 1.0, 0.0]))
    assert np.allclose(p, [0.6, 0.4, 0.0, 0.0])


@pytest.mark.parametrize("seed", range(3))
def test_evi_is_optimistic(backend, seed):
    for ssp in _instances(backend):
        counts = _sampled_counts(backend, ssp, 200, seed)
        out = backend.extended_value_iteration(counts, ssp.costs, 0.1, 0.01)
        assert out.converged
        v_star = backend.optimal_values(ssp).values
        assert np.all(out.v_tilde <= v_star + 1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_lemma_4_optimistic_policy_value(backend, seed):
    for ssp in _instances(backend):
        c_min = ssp.c_min
        mu = c_min / 4
        counts = _sampled_counts(backend, ssp, 100, seed)
        out = backend.extended_value_iteration(counts, ssp.costs, 0.1, mu)
        costs = ssp.costs[np.arange(ssp.n_states), out.policy]
        value = _policy_value(out.p_tilde, costs)
        assert np.all(value <= (1 + 2 * mu / c_min) * out.v_tilde + 1e-9)


def test_evi_stopping_rule_and_greedy_policy(backend):
    ssp = backend.garnet(5, 3, 3, seed=1)
    counts = _sampled_counts(backend, ssp, 30, 0).toarray().reshape(5, 3, 6)
    mu = 1e-3
    out = backend.extended_value_iteration(counts, ssp.costs, 0.1, mu)
    lo, hi = backend.confidence_box(counts, 0.1)
    v_ext = np.append(out.v_tilde, 0.0)
    q = ssp.costs + backend.optimistic_inner(lo, hi, v_ext) @ v_ext
    assert np.array_equal(out.policy, np.argmin(q, axis=1))
    assert np.max(np.abs(q.min(axis=1) - out.v_tilde)) == pytest.approx(out.residual)
    assert out.residual <= mu
    kernel = np.asarray(out.p_tilde)
    chosen = (np.arange(5), out.policy)
    assert np.allclose(kernel @ v_ext, q[chosen] - ssp.costs[chosen])
    assert np.allclose(out.p_tilde @ v_ext, q[chosen] - ssp.costs[chosen], rtol=1e-14, atol=0)
    again = backend.extended_value_iteration(counts, ssp.costs, 0.1, mu,
                                             max_iter=out.n_iter)
    assert again.converged and np.array_equal(again.v_tilde, out.v_tilde)
    short = backend.extended_value_iteration(counts, ssp.costs, 0.1, mu, max_iter=out.n_iter - 1)
    assert not short.converged and "max_iter" in short.message
    assert short.residual > mu


def test_evi_csr_and_dense_agree(backend):
    ssp = backend.gridworld()
    csr = _sampled_counts(backend, ssp, 50, 2)
    dense = csr.toarray().reshape(ssp.n_states, ssp.n_actions, ssp.n_states + 1)
    a = backend.extended_value_iteration(csr, ssp.costs, 0.1, 0.01)
    b = backend.extended_value_iteration(dense, ssp.costs, 0.1, 0.01)
    assert type(a.p_tilde) is type(b.p_tilde) is backend.PouredKernel
    assert np.allclose(a.v_tilde, b.v_tilde) and np.array_equal(a.policy, b.policy)
    assert np.allclose(a.p_tilde.toarray(), b.p_tilde.toarray())
    assert a.n_iter == b.n_iter


def test_evi_converges_without_an_empirical_proper_policy(backend):
    counts = np.zeros((2, 2, 3))
    counts[0, :, 0] = 20
    counts[1, :, 1] = 20
    out = backend.extended_value_iteration(counts, np.ones((2, 2)), 0.1, 1e-3)
    assert out.converged and np.all(np.isfinite(out.v_tilde))
    assert np.all(out.p_tilde.toarray()[:, 2] > 0)


def test_evi_rejects_bad_input(backend):
    counts = np.ones((2, 2, 3))
    costs = np.ones((2, 2))
    with pytest.raises(backend.ShapeError, match="counts"):
        backend.extended_value_iteration(np.ones((2, 2, 2)), costs, 0.1, 0.1)
    with pytest.raises(backend.ShapeError, match="costs"):
        backend.extended_value_iteration(counts, np.ones((2, 3)), 0.1, 0.1)
    with pytest.raises(backend.ParameterError, match="delta"):
        backend.extended_value_iteration(counts, costs, 1.0, 0.1)
    for mu in (0.0, np.inf, np.nan):
        with pytest.raises(backend.ParameterError, match=r"`mu` must lie in \(0, inf\)"):
            backend.extended_value_iteration(counts, costs, 0.1, mu)
    with pytest.raises(backend.ParameterError, match="counts"):
        backend.extended_value_iteration(-counts, costs, 0.1, 0.1)


def _bad_counts(kind, n_states):
    """Counts ``(S, 2, S+1)`` of ones with one defect at ``(1, 0, 2)``, and their ``delta``."""
    counts = np.ones((n_states, 2, n_states + 1))
    if kind == "pair above 2^63":
        counts[1, 0, :3] = 2.0**62
    elif kind == "overflowing log":
        counts[1, 0, 2] = 1e12
        return counts, 1e-300
    else:
        counts[1, 0, 2] = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "negative": -2.0,
                           "negative subnormal": -5e-324}[kind]
    return counts, 0.1


@pytest.mark.parametrize("n_states", [2, 40], ids=["short rows", "long rows"])
@pytest.mark.parametrize("kind", ["nan", "inf", "-inf", "negative", "negative subnormal",
                                  "pair above 2^63", "overflowing log"])
def test_evi_refuses_bad_counts_alike_on_both_backends(kind, n_states):
    """EVI checks dense counts in its kernels' one pass over them (``scan_counts``): each
    bad count gives the error of :func:`bernstein_radius` (numpy's checks), the same class
    and message on both backends, and a bad count is reported before bad costs (the
    guard of the logarithm comes after the costs, as before)."""
    import fast
    import reference

    counts, delta = _bad_counts(kind, n_states)
    costs_tried = [np.ones((n_states, 2))]
    if kind != "overflowing log":
        costs_tried.append(np.full((n_states, 2), np.nan))
    raised = []
    for backend in (reference, fast):
        with pytest.raises(backend.SSPValueError) as radius:
            backend.bernstein_radius(counts, delta)
        for costs in costs_tried:
            with pytest.raises(backend.SSPValueError) as evi:
                backend.extended_value_iteration(counts, costs, delta, 0.1)
            assert type(evi.value) is type(radius.value)
            assert str(evi.value) == str(radius.value)
        raised.append((type(evi.value), str(evi.value)))
    assert raised[0] == raised[1]
    assert "(1, 0" in raised[0][1] or "overflows float64" in raised[0][1]


@pytest.mark.parametrize("as_csr", [False, True])
def test_evi_guard_of_the_logarithm_near_its_limit(backend, as_csr):
    """Where the bound from the largest count, ``2 k max N`` (``k`` the entries of the
    longest row: ``S+1`` dense, 3 stored here), would overflow ``S A N^+ / delta`` but the
    pairs' totals do not, the totals decide: no error."""
    dense = np.ones((2, 2, 3))
    dense[1, 0, 2] = 1e12
    counts = sp.csr_array(dense.reshape(4, 3)) if as_csr else dense
    delta = 2.5e-296
    assert np.isfinite(4 * (1e12 + 2) / delta) and not np.isfinite(4 * 2 * 3 * 1e12 / delta)
    out = backend.extended_value_iteration(counts, np.ones((2, 2)), delta, 0.1)
    assert out.converged
    with pytest.raises(backend.NumericRangeError, match="overflows float64"):
        backend.extended_value_iteration(counts, np.ones((2, 2)), delta / 2, 0.1)


@pytest.mark.parametrize("ssp_index", range(5))
def test_evi_on_a_run_store_is_evi_on_its_checked_counts(backend, ssp_index):
    """``converged_evi`` runs EVI on the store's unchecked table (``_iterate``): the result is
    the public EVI's on the same counts, checked, field for field and bit for bit."""
    import importlib
    from types import SimpleNamespace

    from reference.runs import converged_evi

    kernels = importlib.import_module(f"{backend.__name__}.kernels")
    kernels = getattr(kernels, "COMPILED_KERNELS", None) or kernels.NUMPY_KERNELS
    ssp = _instances(backend)[ssp_index]
    store = backend.SampleStore(ssp.n_states, ssp.n_actions)
    store.top_up(backend.TabularGenerativeModel(ssp), 30, np.random.default_rng(ssp_index))
    mu = 0.01
    got = converged_evi(kernels, SimpleNamespace(store=store), ssp.costs, 0.1, mu, 10**5, "a test")
    want = backend.extended_value_iteration(store.counts_csr(), ssp.costs, 0.1, mu)
    for name in ("v_tilde", "policy", "n_iter", "residual", "converged", "message"):
        assert np.array_equal(getattr(got, name), getattr(want, name))
    assert np.array_equal(got.p_tilde.toarray(), want.p_tilde.toarray())
    with pytest.raises(backend.NumericRangeError, match="overflows float64"):
        converged_evi(kernels, SimpleNamespace(store=store), ssp.costs, 1e-320, mu, 10, "a test")


def test_evi_reads_negative_zero_counts_as_zeros(backend):
    counts = np.zeros((20, 2, 21))
    counts[:, :, 20] = 3.0
    counts[:, 0, 5] = 1.0
    costs = np.linspace(0.5, 1.0, 40).reshape(20, 2)
    signed = counts.copy()
    signed[counts == 0] = -0.0
    plain = backend.extended_value_iteration(counts, costs, 0.1, 1e-6)
    out = backend.extended_value_iteration(signed, costs, 0.1, 1e-6)
    assert np.array_equal(out.v_tilde, plain.v_tilde)
    assert np.array_equal(out.policy, plain.policy) and out.n_iter == plain.n_iter


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_radius_rejects_non_finite_counts(backend, bad):
    counts = np.ones((2, 2, 3))
    counts[1, 0, 2] = bad
    pattern = rf"`counts` must hold finite counts; got {bad} at \(s, a, s'\) = \(1, 0, 2\)"
    with pytest.raises(backend.NotFiniteError, match=pattern):
        backend.bernstein_radius(counts, 0.1)
    with pytest.raises(backend.NotFiniteError, match=pattern):
        backend.bernstein_radius_sum(sp.csr_array(counts.reshape(4, 3)), 0.1)


def test_radius_rejects_negative_counts_naming_the_entry(backend):
    counts = np.ones((2, 2, 3))
    counts[0, 1, 1] = -2
    pattern = r"`counts` must be >= 0; got -2\.0 at \(s, a, s'\) = \(0, 1, 1\)"
    with pytest.raises(backend.ParameterError, match=pattern):
        backend.bernstein_radius(counts, 0.1)
    with pytest.raises(backend.ParameterError, match=pattern):
        backend.bernstein_radius_sum(sp.csr_array(counts.reshape(4, 3)), 0.1)
    with pytest.raises(backend.ParameterError, match=pattern):
        backend.confidence_box(counts, 0.1)


@pytest.mark.parametrize("delta", [0.0, 1.0, np.nan, -0.5])
def test_radius_rejects_delta_outside_the_open_unit_interval(backend, delta):
    counts = np.ones((2, 2, 3))
    for call in (backend.bernstein_radius, backend.bernstein_radius_sum, backend.confidence_box):
        with pytest.raises(backend.ParameterError, match=r"`delta` must lie in \(0, 1\)"):
            call(counts, delta)


def test_reference_evi_refuses_to_densify_huge_counts():
    import reference

    huge = sp.csr_array((2 * 20_000, 20_001), dtype=np.int64)
    limit = reference.EVI_DENSE_LIMIT_BYTES
    assert 8 * 20_000 * 2 * 20_001 > limit
    pattern = r"\(20000, 2, 20001\) needs 5\.96 GiB, above the limit of 256\.00 MiB.*`fast`"
    with pytest.raises(reference.TooLargeError, match=pattern):
        reference.extended_value_iteration(huge, np.ones((20_000, 2)), 0.1, 0.1)


@pytest.mark.parametrize("row, refused", [
    ([2.0**60, 2.0**60], False),
    ([2.0**61, 2.0**61], False),
    ([2.0**61, 2.0**61, 1.0], False),
    ([2.0**62, 2.0**62 - 2.0**10], False),
    ([2.0**62, 2.0**62, 2.0**62], True),
    ([2.0**62, 2.0**62, 2.0**61], True),
])
def test_sparse_counts_refuse_pair_totals_above_int64_as_exact_sums_do(row, refused):
    """A pair whose exact total (Python integers) passes ``2^63`` is refused, one just
    below it is not, whether the largest count times the longest row is above ``2^62``
    (the totals are summed) or not (they cannot pass the limit)."""
    import reference
    from reference._checks import check_csr_counts

    S, A = len(row), 2
    dense = np.ones((S * A, S + 1))
    dense[3, :S] = row
    assert (sum(int(x) for x in row) + 1 > 2**63) == refused
    counts = sp.csr_array(dense)
    if refused:
        with pytest.raises(reference.NumericRangeError,
                           match=r"of the pair \(s, a\) = \(1, 1\) total .* above 2\^63 - 1"):
            check_csr_counts(counts)
    else:
        csr, S_out, A_out = check_csr_counts(counts)
        assert (S_out, A_out) == (S, A)
        assert np.array_equal(csr.toarray(), dense)


def test_sparse_counts_drop_zero_and_negative_zero_entries():
    """Stored zeros, ``+0.0`` and ``-0.0`` alike, are removed; the other entries kept in
    canonical order, as the CSR built from the dense counts without them."""
    from reference._checks import check_csr_counts

    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 5.0, 0.0], [0.0, 0.0, 6.0]])
    for zero in (0.0, -0.0):
        stored = sp.csr_array(dense)
        stored.data = np.where(stored.data == 1.0, zero, stored.data)
        stored = sp.csr_array((np.r_[stored.data[:-1], zero, stored.data[-1]],
                               np.r_[stored.indices[:-1], 1, stored.indices[-1]],
                               np.r_[stored.indptr[:-1], stored.indptr[-1] + 1]),
                              shape=dense.shape)
        csr, _, _ = check_csr_counts(stored)
        want = sp.csr_array(np.where(dense == 1.0, 0.0, dense))
        assert np.array_equal(csr.indptr, want.indptr)
        assert np.array_equal(csr.indices, want.indices)
        assert np.array_equal(csr.data, want.data) and not np.signbit(csr.data).any()
