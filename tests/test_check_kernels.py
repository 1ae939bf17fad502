"""The Bellman check kernels ``upper_check`` and ``lower_check``: the compiled ones give the
floats of the numpy ones, bit for bit, on random boxes with unseen pairs, infinite and
negative candidates, zero costs, and candidates at the policy iterations' fixed points (where
the slack is positive and some states need more than it allows)."""

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from fast import kernels as fast_kernels
from fast.kernels import COMPILED_KERNELS
from reference.errors import ParameterError, ShapeError
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
@pytest.mark.parametrize("block", [None, 1, 5])
def test_lower_check_kernels_agree(seed, block, monkeypatch):
    # The compiled check pours its Q-values a block of pairs at a time (by default all of
    # them here, then one state or a few at a time): the same floats in any block.
    if block is not None:
        monkeypatch.setattr(fast_kernels, "POUR_BLOCK_PAIRS", block)
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


def test_check_kernels_agree_on_a_tiny_unseen_width():
    # State 0 keeps all but 2^-44 of its mass on the goal and spreads the rest with the unseen
    # width 2e-14, below 4 (S + 1) u: its rounding bound counts all S + 1 next states (51, against
    # 8 from m / h), and with its small cost it sets the slack of both checks.
    S = 50
    indptr = np.arange(S + 1)
    lo = np.append(1 - 2.0**-44, np.ones(S - 1))
    hi_unseen = np.append(2e-14, np.zeros(S - 1))
    boxes = reference.confidence.ConfidenceBoxes(
        n_states=S, n_actions=1, indptr=indptr, indices=np.full(S, S), lo=lo, hi=lo.copy(),
        hi_unseen=hi_unseen, p_hat=lo, n=np.ones(S), kind="kl", delta=0.1)
    costs = np.append(0.01, np.ones(S - 1))
    rows = np.arange(S)
    fixed = NUMPY_KERNELS.adversary_iteration(boxes, rows, costs, np.zeros(S, bool),
                                              np.zeros(S))[0]
    ref = NUMPY_KERNELS.upper_check(boxes, rows, costs, fixed.copy(), np.zeros(S, bool))
    _same(COMPILED_KERNELS.upper_check(boxes, rows, costs, fixed.copy(), np.zeros(S, bool)), ref)
    assert ref[2] > 8e-12  # 2 (8 * 51 + 32) u / 0.01: the count of every next state
    low = NUMPY_KERNELS.optimist_iteration(boxes, costs[:, None], np.zeros(S, int),
                                           np.zeros(S))[0]
    ref = NUMPY_KERNELS.lower_check(boxes, costs[:, None], low, None)
    _same(COMPILED_KERNELS.lower_check(boxes, costs[:, None], low, None), ref)
    assert ref[2] > 8e-12


def test_upper_check_kernels_agree_on_free_masses_near_zero():
    # Rows whose lower ends sum to 1 when rounded, with state 1 looping on itself (U = inf).
    # State 0: exact free mass 2^-55 and unseen width 0.1, so its exact pour meets state 1: it
    # fails. State 2: the goal at once, no width on state 1: it passes. State 3: free mass 0,
    # but a stored width on state 1: the check cannot tell, so it fails.
    a, b = 3 * 2.0**-55, 1 - 2.0**-53
    boxes = reference.confidence.ConfidenceBoxes(
        n_states=4, n_actions=1, indptr=np.array([0, 2, 3, 4, 6]),
        indices=np.array([0, 4, 1, 4, 1, 4]), lo=np.array([a, b, 1.0, 1.0, 0.0, 1.0]),
        hi=np.array([a, b, 1.0, 1.0, 0.1, 1.0]), hi_unseen=np.array([0.1, 0.0, 0.0, 0.0]),
        p_hat=np.zeros(6), n=np.ones(4), kind="kl", delta=0.1)
    args = (boxes, np.arange(4), np.ones(4), np.array([10.0, np.inf, 1.0, 5.0]),
            np.zeros(4, bool))
    ref = NUMPY_KERNELS.upper_check(*args)
    _same(COMPILED_KERNELS.upper_check(*args), ref)
    assert np.isinf(ref[0]).tolist() == [True, True, False, True]


def test_compiled_checks_refuse_bad_shapes_and_rows():
    # The compiled checks index these arrays without bounds checks: their wrappers check.
    boxes = reference.confidence_boxes(sp.csr_array(np.ones((6, 4))), 0.1, "kl")
    S, A = 3, 2
    costs, values = np.full((S, A), 0.5), np.ones(S)
    upper = [boxes, np.arange(S) * A, costs[:, 0], values, np.zeros(S, dtype=bool)]
    for i, bad in ((1, np.arange(2)), (2, np.ones(2)), (3, np.ones(4)),
                   (4, np.zeros(2, dtype=bool))):
        with pytest.raises(ShapeError, match="must have shape"):
            COMPILED_KERNELS.upper_check(*upper[:i], bad, *upper[i + 1:])
    with pytest.raises(ParameterError, match="`rows`"):
        COMPILED_KERNELS.upper_check(boxes, np.array([0, 2, 6]), *upper[2:])
    for i, bad in ((1, costs[:, :1]), (2, np.ones(2)), (3, np.ones((S, 1)))):
        args = [boxes, costs, values, costs]
        args[i] = bad
        with pytest.raises(ShapeError, match="must have shape"):
            COMPILED_KERNELS.lower_check(*args)
