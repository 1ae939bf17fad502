"""The per-row rounding bound of the Bellman checks, against pours in exact rational arithmetic.

Each case is a set of box rows with adversarial magnitudes (tiny and huge values,
stored entries of zero width on huge values ahead of long unseen runs, free masses
near 0, pours long enough for the compiled kernel's jumps along prefix sums), the
computed ``c + W`` of both kernel sets (``pour_values``), and the exact value of the
row's greedy pour (the exact optimum of the box) in fractions. The derivation is
``docs/check-rounding.md``; ``benchmarks/mutations.py`` checks that a smaller bound
fails here.
"""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from reference.check_rounding import pour_scales, rounding_bound, touched_counts
from reference.confidence import ConfidenceBoxes
from reference.kernels import pour_order
from reference.robust.pessimistic import _check_upper


def _kernel_sets():
    import fast.kernels
    import reference.kernels

    return {"reference": reference.kernels.NUMPY_KERNELS, "fast": fast.kernels.COMPILED_KERNELS}


KERNELS = _kernel_sets()

SIZES = (1, 3, 8, 40, 150)
"""States of the cases: the largest give pours long enough for the compiled jumps."""

TESTED_ROWS = 12
"""Rows of a case compared with their exact pours."""


def _magnitudes(rng, size, low, high):
    """Random floats with random exponents in ``[10**low, 10**high]`` and full mantissas."""
    return rng.uniform(1.0, 10.0, size) * 10.0 ** rng.integers(low, high, size)


def _row(rng, S):
    """``(columns, lo, hi, h)`` of one random box row over ``S + 1`` next states, non-empty."""
    k = int(rng.integers(0, min(S + 1, 12) + 1))
    cols = np.sort(rng.choice(S + 1, size=k, replace=False))
    if k and rng.uniform() < 0.25:  # lower ends summing to nearly 1: a free mass near 0
        lo = rng.dirichlet(np.ones(k)) * (1.0 - 10.0 ** -rng.integers(8, 16))
    else:
        lo = rng.uniform(0.0, 1.0, k) * rng.uniform(0.0, 1.0) / max(k, 1)
    lo[rng.uniform(size=k) < 0.3] = 0.0
    gap = np.where(rng.uniform(size=k) < 0.3, 0.0, rng.uniform(0.0, 1.0, k) ** 3)
    hi = np.minimum(1.0, lo + gap)
    h = float(rng.choice([0.0, 1.0, 0.3, 1e-3, rng.uniform(0.002, 0.05), 1 / 64]))
    room = sum(map(Fraction, hi)) + (S + 1 - k) * Fraction(h)
    if sum(map(Fraction, lo)) > 1 or room < 1:
        return _row(rng, S)
    return cols, lo, hi, h


def _values(rng, S, with_inf):
    """Values ``w_ext`` (goal last, 0): full mantissas over many magnitudes, a few huge."""
    w = _magnitudes(rng, S, -3, 4)
    huge = rng.uniform(size=S) < 0.15
    w[huge] = _magnitudes(rng, int(huge.sum()), 8, 13)
    w[rng.uniform(size=S) < 0.1] = 0.0
    if with_inf:
        w[rng.uniform(size=S) < 0.1] = np.inf
    return np.append(w, 0.0)


def _boxes(rows):
    """One-action boxes of ``len(rows)`` states from their rows ``(columns, lo, hi, h)``."""
    S = len(rows)
    stored = [len(r[0]) for r in rows]
    lo = np.concatenate([r[1] for r in rows])
    return ConfidenceBoxes(
        n_states=S, n_actions=1, indptr=np.concatenate([[0], np.cumsum(stored)]).astype(np.int64),
        indices=np.concatenate([r[0] for r in rows]).astype(np.int64), lo=lo,
        hi=np.concatenate([r[2] for r in rows]), hi_unseen=np.array([r[3] for r in rows]),
        p_hat=lo, n=np.ones(S), kind="kl", delta=0.1)


def _case(seed, descending):
    """Boxes of ``S`` rows, the ``TESTED_ROWS`` random ones among them (the others ``[0, 1]``
    everywhere), costs and values."""
    rng = np.random.default_rng(seed)
    S = int(rng.choice(SIZES))
    tested = rng.permutation(S)[:TESTED_ROWS]
    rows = [(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), 1.0)] * S
    for i in tested:
        rows[i] = _row(rng, S)
    boxes = _boxes(rows)
    costs = _magnitudes(rng, S, -3, 3) * (rng.uniform(size=S) < 0.8)
    return boxes, tested, [rows[i] for i in tested], costs[tested], _values(
        rng, S, descending and seed % 2 == 0)


def exact_pour(cols, lo, hi, h, w_ext, descending):
    """The exact value of the box row's greedy pour against ``w_ext`` (its optimum), a fraction,
    or ``None`` when it puts mass on an infinite value."""
    low, gap = {}, {}
    for c, a, b in zip(cols, lo, hi):
        low[c], gap[c] = Fraction(a), Fraction(b) - Fraction(a)
    if any(a > 0 and np.isinf(w_ext[c]) for c, a in low.items()):
        return None
    total = sum((a * Fraction(w_ext[c]) for c, a in low.items() if a > 0), Fraction(0))
    mass = 1 - sum(low.values())
    for x in pour_order(w_ext, descending):
        if mass <= 0:
            break
        p = min(gap.get(x, Fraction(h)), mass)
        mass -= p
        if p > 0:
            if np.isinf(w_ext[x]):
                return None
            total += p * Fraction(w_ext[x])
    return total


def _errors(kernels, seed, descending):
    """``(error / bound, computed, exact, doubtful)`` of every row of the case ``seed``; the
    ratio is 0 where the computed value is infinite (the check fails that row) and ``inf``
    where only the exact one is."""
    boxes, tested, rows, costs, w_ext = _case(seed, descending)
    totals = costs + kernels.pour_values(boxes, tested, w_ext, descending)
    touched, doubtful = touched_counts(boxes, tested)
    scales = pour_scales(w_ext, touched, boxes.hi_unseen[tested] > 0, descending)
    finite = np.isfinite(totals)
    bound = rounding_bound(touched, np.where(finite, totals, 0.0), scales)
    out = []
    for i, row in enumerate(rows):
        exact = exact_pour(*row, w_ext, descending)
        if not finite[i] or exact is None:
            out.append((0.0 if not finite[i] else np.inf, totals[i], exact, doubtful[i]))
            continue
        error = abs(Fraction(totals[i]) - (Fraction(costs[i]) + exact))
        out.append((float(error / Fraction(bound[i])), totals[i], exact, doubtful[i]))
    return out


@pytest.mark.parametrize("descending", [True, False])
def test_rounding_bound_covers_the_exact_pour(backend, descending):
    kernels = KERNELS[backend.__name__]
    worst = 0.0
    for seed in range(60):
        for ratio, computed, exact, doubtful in _errors(kernels, seed, descending):
            if exact is None and np.isfinite(computed):
                # The exact pour meets an infinite value the computed one misses: only where
                # the free mass is in doubt, and the check fails those rows then.
                assert doubtful, (seed, computed)
                continue
            assert ratio <= 1.0, (seed, ratio, computed, exact)
            worst = max(worst, ratio)
    assert worst > 0.0  # some rounding happened


def test_zero_width_entries_on_huge_values_count_in_the_adversary_scale(backend):
    # Every tested row stores five states of values near 1e13 with the box [0, 0]: they lead the
    # adversary's order and take no mass. The other values are near 1e-2 and the unseen widths
    # (2e-3 .. 4e-3) spread the free mass over a few hundred positions. The compiled kernel pours
    # those runs along prefix sums of the whole order, which carry the 1e13 values, so its total
    # is off by about 1e-3 (4e-4 of the bound). A scale over the values that can take mass (2e-2,
    # ignoring the zero-width entries) would give a bound 1e11 times too small.
    kernels = KERNELS[backend.__name__]
    S = 3000
    states = np.arange(S)
    w = 0.01 + 0.01 * (states % 97) / 97 + np.pi * 1e-6 * (states % 13)
    huge = np.array([5, 400, 1000, 2000, 2999])
    w[huge] = 1e13 * (1.0 + np.arange(5) / 7.0 + np.pi * 1e-3)
    w_ext = np.append(w, 0.0)
    tested = np.arange(4)
    rows = [(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), 1.0)] * S
    for i in tested:
        cols = np.sort(np.concatenate([huge, [10 + i, 1500 + 3 * i, 2500 - i]]))
        lo = np.where(np.isin(cols, huge), 0.0, 0.05 + 0.01 * i + 0.003 * np.arange(8))
        rows[i] = (cols, lo, np.where(np.isin(cols, huge), 0.0, lo + 0.02), 2e-3 * (1 + i / 3))
    boxes = _boxes(rows)
    costs = np.array([1e-4, 2e-4, 0.0, 3e-4])
    totals = costs + kernels.pour_values(boxes, tested, w_ext, True)
    touched = touched_counts(boxes, tested)[0]
    bound = rounding_bound(touched, totals, pour_scales(w_ext, touched, np.ones(4, bool), True))
    for i in tested:
        exact = Fraction(costs[i]) + exact_pour(*rows[i], w_ext, True)
        assert abs(Fraction(totals[i]) - exact) <= Fraction(bound[i]), (i, totals[i], exact)


@pytest.mark.parametrize("lower_ends", [(1 - 2.0**-53, 3 * 2.0**-55), (3 * 2.0**-55, 1 - 2.0**-53)])
def test_a_free_mass_rounded_to_zero_fails_while_a_value_is_infinite(backend, lower_ends):
    # State 0 stores state 2 and the goal with the boxes [lo, lo]; its exact free mass is
    # 1 - (1 - 2^-53) - 3 * 2^-55 = 2^-55 > 0, and its unseen width 0.1 lets the adversary put it
    # on state 1, which loops on itself (U = inf): T U (0) = inf, so U(0) = 10 must not pass.
    # The lower ends summed round to 1 (both orders in numpy; the second in the compiled kernel,
    # which subtracts them from 1 in turn), so the pour gives the unseen states nothing and its
    # total is finite: only the rule on rows whose free mass is about 0 keeps U(0) out.
    boxes = _boxes([(np.array([2, 3]), np.array(lower_ends), np.array(lower_ends), 0.1),
                    (np.array([1]), np.ones(1), np.ones(1), 0.0),
                    (np.array([3]), np.ones(1), np.ones(1), 0.0)])
    values = np.array([10.0, np.inf, 1.0])
    kernels = KERNELS[backend.__name__]
    U = _check_upper(kernels, boxes, np.zeros(3, dtype=int), np.ones(3), values)[0]
    assert U[0] == np.inf and U[1] == np.inf
    # State 2 goes to the goal at once (V = 1): its free mass is 0 too, but it gives state 1 no
    # width, so its exact pour cannot meet the infinite value and it passes.
    assert 1.0 <= U[2] <= 1.0 + 1e-12


@pytest.mark.parametrize("unseen", [0.0, 0.1])
def test_a_doubtful_row_fails_only_when_it_gives_an_infinite_state_width(backend, unseen):
    # State 0 stores states 0, 1, 2 with the box [0, 0] and the goal with [1, 1]: its free mass
    # is 0 and the infinite state 1 is stored without width, so even with an unseen width no
    # pour can move mass onto it (V = 1 passes). State 2 puts the lower end 2^-54 on state 1:
    # every pour meets the infinite value, so U(2) = 5 must fail.
    boxes = _boxes([(np.array([0, 1, 2, 3]), np.array([0.0, 0.0, 0.0, 1.0]),
                     np.array([0.0, 0.0, 0.0, 1.0]), unseen),
                    (np.array([1]), np.ones(1), np.ones(1), 0.0),
                    (np.array([1, 3]), np.array([2.0**-54, 1 - 2.0**-53]),
                     np.array([2.0**-54, 1 - 2.0**-53]), unseen)])
    values = np.array([1.0, np.inf, 5.0])
    U = _check_upper(KERNELS[backend.__name__], boxes, np.zeros(3, dtype=int), np.ones(3),
                     values)[0]
    assert 1.0 <= U[0] <= 1.0 + 1e-12
    assert U[1] == np.inf and U[2] == np.inf


def test_touched_counts_by_hand():
    # Row 0: 2 stored, free mass 0.25, unseen width 0.1: floor(2.5) + 3 = 5 unseen.
    # Row 1: unseen width 0: its stored entries only. Row 2: every next state stored.
    boxes = ConfidenceBoxes(
        n_states=9, n_actions=1, indptr=np.array([0, 2, 3, 13] + [13] * 6),
        indices=np.array([1, 4, 2] + list(range(10))), lo=np.array([0.5, 0.25, 1.0] + [0.05] * 10),
        hi=np.array([0.6, 0.3, 1.0] + [0.2] * 10), hi_unseen=np.array([0.1, 0.0, 0.3] + [1.0] * 6),
        p_hat=np.zeros(13), n=np.ones(9), kind="kl", delta=0.1)
    touched, doubtful = touched_counts(boxes, np.arange(3))
    assert touched.tolist() == [7.0, 1.0, 10.0]
    assert doubtful.tolist() == [False, True, False]


def test_a_tiny_unseen_width_counts_every_next_state():
    # Free mass 2^-44 (5.7e-14) over 100 states. Unseen width 5e-14, above 4 (S + 1) u = 4.5e-14:
    # m' = 2^-44 + (4 * 101 + 2 + 8) u = 1.03e-13, floor(m' / h) + 3 = 5 unseen, N = 6. Width
    # 2e-14, below: the sums of so small widths may round away, so all 101 next states count,
    # and the optimist's scale is then the largest finite value.
    S = 100
    goal = (np.array([S]), np.full(1, 1 - 2.0**-44), np.full(1, 1 - 2.0**-44))
    rows = [(*goal, 5e-14), (*goal, 2e-14)]
    rows += [(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), 1.0)] * (S - 2)
    touched = touched_counts(_boxes(rows), np.arange(2))[0]
    assert touched.tolist() == [6.0, 101.0]
    w_ext = np.append(np.arange(S, 0, -1.0), 0.0)
    assert pour_scales(w_ext, touched, np.ones(2, bool), False).tolist() == [5.0, 100.0]


def test_pour_scales_follow_the_order():
    w_ext = np.array([4.0, np.inf, 1.0, 9.0, 2.0, 0.0])
    spread = np.array([True, True, True, False])
    touched = np.array([1.0, 3.0, 6.0, 2.0])
    # Increasing order, goal first: 0, 1, 2, 4, 9, inf; a row without unseen mass: the largest.
    assert pour_scales(w_ext, touched, spread, False).tolist() == [0.0, 2.0, 9.0, 9.0]
    assert pour_scales(w_ext, touched, spread, True).tolist() == [9.0] * 4
    assert pour_scales(-w_ext, touched, spread, False).tolist() == [9.0] * 4


def test_a_large_value_leaves_the_small_ones_finite(backend):
    # State 0 leaves for the goal with probability 1e-5 (V = 1e5), every other state goes to
    # the goal at once (V = 1), each from 1e9 samples, unit costs. The rounding bound of the
    # global form, 8 (S + 1) u times max U = 1e5, asks every state an inflation near 3.5e-6,
    # above CHECK_MAX_SLACK, and every bound was infinite; each row's pour touches a handful of
    # next states, so the checked bounds are finite, above V and within the boxes' own width
    # (12% at state 0, 1e4 escapes; 0.7% elsewhere, the unseen mass poured into state 0).
    S, n = 10_000, 1e9
    counts = sp.lil_array((S, S + 1))
    counts[0, 0], counts[0, S] = n * (1 - 1e-5), n * 1e-5
    counts[np.arange(1, S), S] = n
    out = backend.robust_policy_values(counts.tocsr(), np.ones((S, 1)), np.zeros(S, int), 0.1)
    exact = np.append(1e5, np.ones(S - 1))
    assert np.isfinite(out.values).all(), out.message
    assert (exact <= out.values).all() and (out.values <= 1.2 * exact).all()
