"""The Bellman check kernels ``upper_check`` and ``lower_check``: the compiled ones give the
floats of the numpy ones, bit for bit, on random boxes with unseen pairs, infinite and
negative candidates, zero costs, and candidates at the policy iterations' fixed points (where
the slack is positive and some states need more than it allows)."""

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from fast.kernels import COMPILED_KERNELS
from reference.kernels import NUMPY_KERNELS


def _problem(seed):
    """Random counts (some pairs unseen, some with one sample) and costs with zeros."""
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(2, 30)), int(rng.integers(1, 4))
    counts = np.zeros((S * A, S + 1))
    for row in range(S * A):
        n = int(rng.choice([0, 1, 5, 40, 2000]))
        if n:
            support = rng.choice(S + 1, size=int(rng.integers(1, min(S + 1, 6) + 1)),
                                 replace=False)
            counts[row, support] = rng.multinomial(n, rng.dirichlet(np.ones(support.size)))
    costs = rng.uniform(0.5, 2.0, (S, A)) * (rng.random((S, A)) > 0.2)
    kind = ["kl", "bernstein", "paper"][seed % 3]
    return rng, reference.confidence_boxes(sp.csr_array(counts), 0.1, kind), costs


def _same(got, ref):
    values, dropped, r = got
    assert values.dtype == ref[0].dtype and values.shape == ref[0].shape
    assert np.array_equal(values.view(np.uint64), ref[0].view(np.uint64))
    assert (dropped, float(r).hex()) == (ref[1], float(ref[2]).hex())


def _candidates(rng, S, fixed_point):
    """A fixed point, it scaled down and up a little, random values with infinite and
    negative entries."""
    noisy = rng.uniform(0.0, 20.0, S)
    noisy[rng.random(S) < 0.2] = np.inf
    noisy[rng.random(S) < 0.1] = -1.0
    return [fixed_point, fixed_point * (1 - 1e-9), fixed_point * (1 + 1e-7), noisy]


@pytest.mark.parametrize("seed", range(12))
def test_upper_check_kernels_agree(seed):
    rng, boxes, costs = _problem(seed)
    S, A = costs.shape
    policy = rng.integers(0, A, S)
    rows = np.arange(S) * A + policy
    costs_pi = costs[np.arange(S), policy]
    infinite = np.zeros(S, dtype=bool)
    fixed = NUMPY_KERNELS.adversary_iteration(boxes, rows, costs_pi, infinite, np.zeros(S))[0]
    checked = 0
    for values in _candidates(rng, S, np.where(np.isfinite(fixed), fixed, 0.0)):
        for exact_zero in (np.zeros(S, dtype=bool), rng.random(S) < 0.3):
            ref = NUMPY_KERNELS.upper_check(boxes, rows, costs_pi, values.copy(), exact_zero)
            _same(COMPILED_KERNELS.upper_check(boxes, rows, costs_pi, values.copy(),
                                               exact_zero), ref)
            checked += ref[1] > 0
    assert checked > 0


@pytest.mark.parametrize("seed", range(12))
def test_lower_check_kernels_agree(seed):
    rng, boxes, costs = _problem(seed)
    S, A = costs.shape
    out = NUMPY_KERNELS.optimist_iteration(boxes, costs, np.argmin(costs, axis=1), np.zeros(S))
    values, q = out[0], out[5]
    fixed = np.where(np.isfinite(values), values, 0.0)
    checked = 0
    for candidate in _candidates(rng, S, fixed):
        for q_values in (None, q if candidate is fixed else None):
            ref = NUMPY_KERNELS.lower_check(boxes, costs, candidate, q_values)
            _same(COMPILED_KERNELS.lower_check(boxes, costs, candidate, q_values), ref)
            checked += ref[1] > 0
    assert checked > 0
