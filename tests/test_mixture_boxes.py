"""The "mixture" boxes: the regret bound behind their level, their coverage, and their place.

The proof is in docs/certificates.md: a Krichevsky-Trofimov mixture of an entry's likelihood
ratios, Ville's inequality, and the regret bound ``R(k, n) <= log(n) / 2 + log 2``.
"""

import math

import numpy as np
import pytest
from scipy.special import gammaln, xlogy


def _mixture_level(n, S, A, delta):
    """The level of docs/certificates.md, written out again: log(S A (S+1) / delta) + ..."""
    return math.log(S * A * (S + 1) / delta) + 0.5 * np.log(n) + math.log(2.0)


def test_regret_bound_holds_for_every_k_up_to_n_10_4():
    # R(k, n) = log(max-likelihood / KT(k, n)) from tables of log-gamma and x log x; their
    # rounding is below 1e-9, the bound's slack is 0 at n = 1 and at least 0.0589 beyond.
    top = 10_000
    m = np.arange(top + 1, dtype=np.float64)
    log_half_gamma = gammaln(m + 0.5)
    x_log_x = xlogy(m, m)
    worst_slack = np.inf
    for n in range(1, top + 1):
        k = np.arange(n + 1)
        log_ml = x_log_x[k] + x_log_x[n - k] - n * math.log(n)
        log_kt = log_half_gamma[k] + log_half_gamma[n - k] - math.log(math.pi) - gammaln(n + 1.0)
        slack = 0.5 * math.log(n) + math.log(2.0) - (log_ml - log_kt)
        if n == 1:
            assert np.abs(slack).max() < 1e-12
        else:
            worst_slack = min(worst_slack, float(slack.min()))
    assert worst_slack == pytest.approx(0.0589, abs=5e-4)
    assert worst_slack > 1e-6


def test_regret_bound_holds_exactly_in_integers():
    # KT(k, n) >= ML / (2 sqrt n)  <=>  4 n KT^2 >= ML^2, with
    # KT = (2k)! (2(n-k))! / (4^n k! (n-k)! n!) and ML = k^k (n-k)^(n-k) / n^n.
    f = math.factorial
    for n in range(1, 121):
        for k in range(n + 1):
            kt_num, kt_den = f(2 * k) * f(2 * (n - k)), 4**n * f(k) * f(n - k) * f(n)
            ml_num, ml_den = k**k * (n - k) ** (n - k), n**n
            lhs = 4 * n * kt_num**2 * ml_den**2
            rhs = ml_num**2 * kt_den**2
            assert lhs >= rhs
            assert (lhs == rhs) == (n == 1)


def test_mixture_boxes_are_the_kl_inversion_at_the_mixture_level(backend):
    rng = np.random.default_rng(3)
    S, A, delta = 3, 2, 0.05
    counts = rng.integers(0, 40, size=(S, A, S + 1)).astype(float)
    counts[0, 0] = 0.0
    counts[1, 1] = [0, 0, 7, 0]
    lo, hi = backend.confidence_boxes(counts, delta, kind="mixture").to_dense()
    n = counts.sum(axis=2, keepdims=True)
    p_hat = np.divide(counts, n, out=np.zeros_like(counts), where=n > 0)
    level = _mixture_level(np.maximum(n, 1.0), S, A, delta) * np.ones_like(counts)
    want_lo, want_hi = backend.kl_interval(p_hat, n * np.ones_like(counts), level)
    assert np.array_equal(lo, want_lo) and np.array_equal(hi, want_hi)
    assert (lo[0, 0] == 0.0).all() and (hi[0, 0] == 1.0).all()


def test_mixture_boxes_lie_inside_the_kl_boxes_for_every_count(backend):
    S, A, delta = 2, 1, 0.1
    for n in [1, 2, 3, 10, 100, 10**4, 10**6]:
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            counts = np.zeros((S, A, S + 1))
            counts[0, 0] = [k, n - k, 0]
            counts[1, 0] = [0, 0, 1]
            mix = backend.confidence_boxes(counts, delta, kind="mixture").to_dense()
            kl = backend.confidence_boxes(counts, delta, kind="kl").to_dense()
            assert (mix[0] >= kl[0]).all() and (mix[1] <= kl[1]).all()
            assert ((mix[1] - mix[0])[0, 0, :2] < (kl[1] - kl[0])[0, 0, :2]).all()


def _acceptance(p, top, level):
    """For n = 1..top, the integer range [a_n, b_n] of k with n kl(k/n, p) <= level(n)."""
    n = np.arange(1, top + 1, dtype=np.float64)
    bound = level(n)

    def outside(x):
        return n * (xlogy(x, x / p) + xlogy(1 - x, (1 - x) / (1 - p))) > bound

    ends = []
    for inner, outer in ((np.full_like(n, p), np.zeros_like(n)), (np.full_like(n, p),
                                                                   np.ones_like(n))):
        for _ in range(60):
            mid = 0.5 * (inner + outer)
            out = outside(mid)
            outer, inner = np.where(out, mid, outer), np.where(out, inner, mid)
        ends.append(inner * n)
    return np.ceil(ends[0] - 1e-9).astype(np.int64), np.floor(ends[1] + 1e-9).astype(np.int64)


def _crossing_frequency(p, top, n_streams, level, rng):
    """Share of Bernoulli(p) streams of length ``top`` whose k_n leaves [a_n, b_n] at some n."""
    low, high = _acceptance(p, top, level)
    crossed = 0
    for _ in range(n_streams):
        times = np.cumsum(rng.geometric(p, size=int(2 * p * top) + 64))
        while times[-1] <= top:
            times = np.concatenate([times, times[-1] + np.cumsum(rng.geometric(p, size=64))])
        times = times[times <= top]
        # k_n = j on the run of n from the j-th success time (1 for j = 0) to the next one.
        starts = np.concatenate([[1], times])
        keep = np.append(starts[1:] != starts[:-1], True)
        j = np.arange(starts.size)[keep]
        first = starts[keep] - 1
        if ((j < np.maximum.reduceat(low, first)) | (j > np.minimum.reduceat(high, first))).any():
            crossed += 1
    return crossed / n_streams


@pytest.mark.slow
def test_mixture_level_covers_whole_streams_and_a_lower_level_is_caught():
    # delta' = 1/2: large enough that a level 0.5 lower crosses more often than delta' allows
    # (measured 0.62 at p = 1/2), while the mixture level stays below it (measured 0.35).
    rng = np.random.default_rng(20261127)
    top, n_streams, delta_prime = 100_000, 1000, 0.5
    tolerance = 3.0 * math.sqrt(delta_prime * (1 - delta_prime) / n_streams)

    def level(n, lowered=0.0):
        return math.log(1 / delta_prime) + 0.5 * np.log(n) + math.log(2.0) - lowered

    for p in (0.5, 0.1, 0.01):
        assert _crossing_frequency(p, top, n_streams, level, rng) <= delta_prime + tolerance
    lowered = _crossing_frequency(0.5, top, n_streams, lambda n: level(n, 0.5), rng)
    assert lowered > delta_prime + tolerance


def test_crossing_frequency_sees_a_fixed_n_level_fail_on_short_streams():
    # The Chernoff level of one fixed n, used for all n at once, is crossed by most streams:
    # the simulation can tell a level that is not time-uniform (a fast check of the machinery).
    rng = np.random.default_rng(5)
    freq = _crossing_frequency(0.3, 5_000, 200, lambda n: math.log(1 / 0.2) + 0 * n, rng)
    assert freq > 0.3


def test_certify_and_solve_certified_default_to_the_mixture_boxes(backend):
    ssp = backend.tradeoff()
    res = backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=0)
    assert res.params["kind"] == "mixture" and res.certificate.kind == "mixture"
    counts = np.zeros((1, 2, 2))
    counts[0, 0] = [0, 500]
    counts[0, 1] = [100, 400]
    assert backend.certify(counts, np.ones((1, 2)), [0], 0.1).kind == "mixture"
