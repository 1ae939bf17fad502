"""The Chernoff interval kernel ``kl_interval``: Newton's method from outer starts.

Against independent methods: the exact divergence in 60-digit ``decimal``
arithmetic (every end is outside the exact interval), the bisection the
kernels ran before (every end within the rounding noise of the test of its
end), and the other backend (the same floats, on edge inputs).
"""

import decimal
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fast.kernels import COMPILED_KERNELS
from reference import kernels as numpy_kernels
from reference.kernels import NUMPY_KERNELS, bernoulli_kl

KERNELS = [NUMPY_KERNELS, COMPILED_KERNELS]
EDGE_P = [0.0, 5e-324, 1e-300, 1e-12, 1e-5, 0.5, 1 - 1e-12, 1 - 2.0**-53, 1.0]
EXAMPLES = 60


@st.composite
def edge_inputs(draw):
    """Frequencies (edge values and uniform ones), sample sizes ``0`` and from 1 to
    ``1e12``, levels from ``1e-3`` to ``1e3``."""
    m = draw(st.integers(1, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = np.where(rng.random(m) < 0.5, rng.choice(EDGE_P, m), rng.random(m))
    n = np.floor(10.0 ** rng.uniform(0, 12, m))
    n[rng.random(m) < 0.1] = 0.0
    level = 10.0 ** rng.uniform(-3, 3, m)
    return p, n, level


def _exact_kl(p, q):
    """``kl(p, q)`` of two floats, in 60-digit decimal arithmetic."""
    p, q = Decimal(float(p)), Decimal(float(q))
    total = Decimal(0)
    if p > 0:
        total += p * (p / q).ln()
    if p < 1:
        total += (1 - p) * ((1 - p) / (1 - q)).ln()
    return total


def _bisection(p_hat, n, level):
    """The kernels' former method: 64 bisection steps a side, testing the computed
    ``kl <= level / n`` without a rounding bound; each end the outer end of its last
    bracket, or 0 (1) when that end passes."""
    with np.errstate(divide="ignore"):
        radius = np.where(n > 0, level / np.where(n > 0, n, 1.0), np.inf)
    ends = []
    for outer in (np.zeros_like(p_hat), np.ones_like(p_hat)):
        inside, outside = p_hat.copy(), outer.copy()
        for _ in range(64):
            mid = 0.5 * (inside + outside)
            ok = bernoulli_kl(p_hat, mid)[0] <= radius
            inside = np.where(ok, mid, inside)
            outside = np.where(ok, outside, mid)
        ends.append(np.where(bernoulli_kl(p_hat, outer)[0] <= radius, outer, outside))
    return ends


@settings(max_examples=EXAMPLES, deadline=None)
@given(inputs=edge_inputs())
@example(inputs=(np.array(EDGE_P), np.full(len(EDGE_P), 1e12), np.full(len(EDGE_P), 1e-3)))
@example(inputs=(np.array(EDGE_P), np.ones(len(EDGE_P)), np.full(len(EDGE_P), 1e3)))
def test_backends_bit_identical_on_edge_inputs(inputs):
    """Both kernels return the same floats, and each interval holds ``p_hat``."""
    lo, hi = COMPILED_KERNELS.kl_interval(*inputs)
    ref_lo, ref_hi = NUMPY_KERNELS.kl_interval(*inputs)
    assert np.array_equal(lo, ref_lo) and np.array_equal(hi, ref_hi)
    p = inputs[0]
    assert np.all((0 <= lo) & (lo <= p) & (p <= hi) & (hi <= 1))
    unseen = inputs[1] == 0
    assert np.all(lo[unseen] == 0) and np.all(hi[unseen] == 1)


@pytest.mark.parametrize("kernels", KERNELS, ids=lambda k: k.name)
@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(inputs=edge_inputs())
@example(inputs=(np.array(EDGE_P), np.full(len(EDGE_P), 1e12), np.full(len(EDGE_P), 1e-3)))
def test_every_end_is_outside_the_exact_interval(kernels, inputs):
    """``kl(p_hat, end) > level / n`` exactly at every end inside ``(0, 1)``, so the exact
    interval lies inside ``[lo, hi]`` (``kl`` is monotone on each side)."""
    p, n, level = inputs
    lo, hi = kernels.kl_interval(p, n, level)
    with decimal.localcontext() as context:
        context.prec = 60
        for i in np.flatnonzero(n > 0):
            radius = Decimal(float(level[i])) / Decimal(float(n[i]))
            for end in (lo[i], hi[i]):
                if 0 < end < 1:
                    assert _exact_kl(p[i], end) > radius, (p[i], n[i], level[i], end)


def test_the_bisection_could_end_inside_the_exact_interval():
    """The ground truth of the test above can fail: the former bisection, without the
    rounding bound, leaves ends inside the exact interval (here p = 0.3, n kl <= 50 at
    n = 1.7e7, as in the certificate of ``garnet(500, 4, 5)``)."""
    p = np.linspace(0.001, 0.9, 200)
    n, level = np.full_like(p, 17127957.0), np.full_like(p, 50.12568609004381)
    lo, hi = _bisection(p, n, level)
    radius = Decimal(50.12568609004381) / Decimal(17127957.0)
    with decimal.localcontext() as context:
        context.prec = 60
        inside = [_exact_kl(p[i], end) <= radius for i in range(p.size) for end in (lo[i], hi[i])]
    assert any(inside)


@settings(max_examples=EXAMPLES, deadline=None)
@given(inputs=edge_inputs())
def test_ends_are_the_bisection_ends_within_the_rounding_noise(inputs):
    """Each end inside ``(0, 1)`` is the former bisection's end up to what either method
    resolves: ``8 (e / |kl'| + u q)`` (``e`` the rounding-error bound of the computed
    ``kl`` there, ``kl' = (q - p) / (q (1 - q))``, ``u q`` the rounding of ``q``), the
    bisection's last bracket (``|outer - p| 2^-64``) and 4 ulps."""
    p, n, level = inputs
    new, old = NUMPY_KERNELS.kl_interval(p, n, level), _bisection(p, n, level)
    for outer, got, expect in zip((0.0, 1.0), new, old):
        both = (got > 0) & (got < 1) & (expect > 0) & (expect < 1)
        pb, got, expect = p[both], got[both], expect[both]
        e = np.maximum(bernoulli_kl(pb, got)[1], bernoulli_kl(pb, expect)[1])
        slope = np.minimum(np.abs(got - pb) / (got * (1 - got)),
                           np.abs(expect - pb) / (expect * (1 - expect)))
        q = np.maximum(got, expect)
        resolved = (8 * (e / slope + 2.0**-53 * q) + np.abs(outer - pb) * 2.0**-63
                    + 4 * np.spacing(q))
        assert np.all(np.abs(got - expect) <= resolved)


def test_certificate_like_entries_take_newton_only(monkeypatch):
    """Frequencies ``k / n`` of certificates (n from 10 to 1e9, level 10 to 60) all start
    outside and never fall back to the bisection; below n = 1e6 (radius above 1e-5,
    where the rounding bound is below 1e-10 of it) their ends are within 1e-9 of the
    width of the former bisection's."""
    rng = np.random.default_rng(3)
    n = np.floor(10.0 ** rng.uniform(1, 9, 2000))
    p = np.floor(rng.random(2000) * (n + 1)) / n
    level = rng.uniform(10, 60, 2000)

    def no_fallback(p, r, outer):
        raise AssertionError(f"{p.size} sides fell back to the bisection")

    monkeypatch.setattr(numpy_kernels, "_kl_bisection", no_fallback)
    lo, hi = NUMPY_KERNELS.kl_interval(p, n, level)
    old_lo, old_hi = _bisection(p, n, level)
    small = n < 1e6
    width = (old_hi - old_lo)[small]
    assert np.all(np.abs(lo - old_lo)[small] <= 1e-9 * width)
    assert np.all(np.abs(hi - old_hi)[small] <= 1e-9 * width)
