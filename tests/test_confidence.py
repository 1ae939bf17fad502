"""Named confidence boxes: the paper's Lemma 5 box and the time-uniform Bernstein and KL boxes."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _kl(p, q):
    total = 0.0
    if p > 0:
        total += p * math.log(p / q)
    if p < 1:
        total += (1 - p) * math.log((1 - p) / (1 - q))
    return total


@SETTINGS
@given(k=st.integers(0, 50), extra=st.integers(0, 50), level=st.floats(0.1, 30.0))
def test_kl_interval_matches_root_finding(backend, k, extra, level):
    n = k + extra
    if n == 0:
        lo, hi = backend.kl_interval(0.0, 0.0, level)
        assert (float(lo), float(hi)) == (0.0, 1.0)
        return
    p = k / n
    lo, hi = (float(x) for x in backend.kl_interval(p, n, level))
    g = lambda q: n * _kl(p, q) - level  # noqa: E731
    expect_hi = 1.0 if p == 1 or g(1 - 1e-15) <= 0 else brentq(g, p, 1 - 1e-15, xtol=1e-14)
    expect_lo = 0.0 if p == 0 or g(1e-300) <= 0 else brentq(g, 1e-300, p, xtol=1e-14)
    assert abs(lo - expect_lo) < 1e-12 and abs(hi - expect_hi) < 1e-12
    # Rounded outwards: each end is on or outside the boundary n kl = level.
    assert lo == 0.0 or n * _kl(p, lo) >= level * (1 - 1e-12)
    assert hi == 1.0 or n * _kl(p, hi) >= level * (1 - 1e-12)


def test_kl_unseen_entry_has_the_closed_form(backend):
    lo, hi = backend.kl_interval(0.0, 250.0, 7.0)
    assert float(lo) == 0.0
    assert float(hi) == pytest.approx(1 - math.exp(-7.0 / 250.0), rel=1e-12)
    assert float(hi) >= 1 - math.exp(-7.0 / 250.0)


def test_paper_kind_is_the_lemma_5_box(backend):
    ssp = backend.garnet(5, 2, 3, seed=1)
    store = backend.SampleStore(5, 2)
    store.top_up(backend.TabularGenerativeModel(ssp), 30, np.random.default_rng(0))
    dense = store.counts_dense()
    lo, hi = backend.confidence_boxes(dense, 0.1, kind="paper").to_dense()
    expect_lo, expect_hi = backend.confidence_box(dense, 0.1)
    assert np.allclose(lo, expect_lo, rtol=1e-14, atol=0)
    assert np.allclose(hi, expect_hi, rtol=1e-14)
    for kind in ("kl", "bernstein"):
        dense_ends = backend.confidence_box(store.counts_csr(), 0.1, kind=kind)
        expected_ends = backend.confidence_boxes(dense, 0.1, kind).to_dense()
        for got, expected in zip(dense_ends, expected_ends):
            assert np.array_equal(got, expected)


def test_bernstein_and_kl_logs_by_hand(backend):
    counts = np.zeros((2, 1, 3))
    counts[0, 0] = [3, 0, 7]
    n, S, A, delta = 10, 2, 1, 0.05
    boxes = backend.confidence_boxes(counts, delta, kind="bernstein")
    lo, hi = boxes.to_dense()
    L = math.log(4 * S * A * (S + 1) * n * (n + 1) / delta)
    radius = math.sqrt(2 * (n * 0.3 * 0.7 / (n - 1)) * L / n) + 7 * L / (3 * (n - 1))
    assert lo[0, 0, 0] == max(0.0, 0.3 - radius)
    assert hi[0, 0, 0] == pytest.approx(min(1, 0.3 + radius))
    assert hi[0, 0, 1] == pytest.approx(min(1.0, 7 * L / (3 * (n - 1))))
    assert (lo[1, 0] == 0).all() and (hi[1, 0] == 1).all()
    kl = backend.confidence_boxes(counts, delta, kind="kl")
    level = math.log(2 * S * A * (S + 1) * n * (n + 1) / delta)
    assert kl.hi_unseen[0] == pytest.approx(1 - math.exp(-level / n), rel=1e-12)
    assert n * _kl(0.7, kl.hi[1]) >= level - 1e-9 and n * _kl(0.7, kl.lo[1]) >= level - 1e-9


@st.composite
def _counts(draw):
    S = draw(st.integers(1, 4))
    A = draw(st.integers(1, 3))
    values = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 5, 40]), min_size=S * A * (S + 1),
                           max_size=S * A * (S + 1)))
    return np.array(values, dtype=float).reshape(S, A, S + 1)


@SETTINGS
@given(counts=_counts(), kind=st.sampled_from(["paper", "bernstein", "kl"]))
def test_dense_and_csr_counts_give_the_same_boxes(backend, counts, kind):
    S, A = counts.shape[:2]
    dense = backend.confidence_boxes(counts, 0.1, kind=kind)
    csr = backend.confidence_boxes(sp.csr_array(counts.reshape(S * A, S + 1)), 0.1, kind=kind)
    for a, b in zip(dense.to_dense(), csr.to_dense()):
        assert np.array_equal(a, b)
    lo, hi = dense.to_dense()
    assert (0 <= lo).all() and (lo <= hi).all() and (hi <= 1).all()
    assert (lo.sum(axis=2) <= 1 + 1e-12).all() and (hi.sum(axis=2) >= 1 - 1e-12).all()
    p_hat = counts / np.maximum(counts.sum(axis=2, keepdims=True), 1)
    seen = counts.sum(axis=2) > 0
    assert ((lo <= p_hat) & (p_hat <= hi))[seen].all()


def test_time_uniform_boxes_cover_the_truth_at_every_sample_size(backend):
    # Every prefix of one stream of samples: the union bound holds for all n at once.
    rng = np.random.default_rng(3)
    p = np.array([0.2, 0.5, 0.3])
    draws = rng.choice(3, size=3000, p=p)
    for kind in ("kl", "bernstein"):
        for n in (1, 2, 5, 30, 300, 3000):
            counts = np.zeros((2, 1, 3))
            counts[0, 0] = np.bincount(draws[:n], minlength=3)
            lo, hi = backend.confidence_boxes(counts, 0.5, kind=kind).to_dense()
            assert ((lo[0, 0] <= p) & (p <= hi[0, 0])).all()
    counts = np.zeros((2, 1, 3))
    counts[0, 0] = np.bincount(draws, minlength=3)
    kl = backend.confidence_boxes(counts, 0.1, kind="kl").to_dense()
    bern = backend.confidence_boxes(counts, 0.1, kind="bernstein").to_dense()
    assert ((kl[1] - kl[0]) < (bern[1] - bern[0]))[0, 0].all()


def test_bad_inputs_are_named(backend):
    counts = np.ones((2, 1, 3))
    with pytest.raises(backend.ParameterError, match="`kind`"):
        backend.confidence_boxes(counts, 0.1, kind="hoeffding")
    with pytest.raises(backend.ParameterError, match="`delta`"):
        backend.confidence_boxes(counts, 1.5)
    bad = counts.copy()
    bad[1, 0, 2] = -1
    with pytest.raises(backend.ParameterError, match=r"\(s, a, s'\) = \(1, 0, 2\)"):
        backend.confidence_boxes(bad, 0.1)
    with pytest.raises(backend.ShapeError, match="`counts`"):
        backend.confidence_boxes(np.ones((2, 1, 2)), 0.1)


@pytest.mark.parametrize("p_hat, n, level, name", [
    (1.5, 10.0, 1.0, "p_hat"), (np.nan, 10.0, 1.0, "p_hat"), (0.5, -1.0, 1.0, "n"),
    (0.5, 10.0, 0.0, "level"), (0.5, 10.0, np.nan, "level"),
])
def test_kl_interval_bad_inputs_are_named(backend, p_hat, n, level, name):
    with pytest.raises(backend.ParameterError, match=f"`{name}`"):
        backend.kl_interval(p_hat, n, level)


def test_kl_interval_keeps_the_broadcast_shape(backend):
    lo, hi = backend.kl_interval(np.array([[0.0], [0.5]]), np.array([10.0, 100.0, 0.0]), 2.0)
    assert lo.shape == hi.shape == (2, 3)
    assert (lo[:, 2] == 0.0).all() and (hi[:, 2] == 1.0).all()
    assert (lo[1, :2] < 0.5).all() and (hi[1, :2] > 0.5).all() and (lo[0] == 0.0).all()
