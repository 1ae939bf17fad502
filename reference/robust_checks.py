r"""The Bellman checks of the robust values, in numpy: the kernels ``upper_check`` and
``lower_check`` of ``docs/backends.md``.

Each takes the bound a policy iteration computed and returns the part of it the check
accepts, with the computed operator moved by the rounding bound of
:mod:`reference.check_rounding` (``docs/check-rounding.md``) and the candidate first scaled by
the relative slack of :func:`slack`. The pours are the kernel ``pour_values`` passed in.
"""

import numpy as np

from .chains import UNIT_ROUNDOFF
from .check_rounding import pour_scales, rounding_bound, touched_counts
from .poured import segment_positions

__all__ = []

CHECK_MAX_SLACK = 1e-6
"""Largest relative inflation (upper bound) or deflation (lower bound) of the Bellman check."""


def slack(gap, values, costs):
    r"""Relative slack ``r`` of the Bellman check and the states no slack can save.

    ``gap`` is how far the rounded-safe check misses (``T U + rounding - U``
    for the upper bound, ``L - (T L - rounding)`` for the lower one, the
    rounding that of :func:`reference.check_rounding.rounding_bound`, clipped
    at 0) and ``costs`` the smallest cost of each state. Scaling ``U`` by
    ``1 + r`` adds ``r c`` to the room of the check and scales the rest by
    ``1 + r``, so ``r = 2 (gap + 4 u |U|) / c`` covers ``gap``, and the
    rounding of the scaling and of the comparison. Returns ``(r, hopeless)``
    with ``r`` the largest need at most :data:`CHECK_MAX_SLACK` and
    ``hopeless`` the states whose need exceeds it (``c = 0`` with a positive
    need among them): the check would decide those by rounding, so they fail.

    Examples
    --------
    >>> r, hopeless = slack(np.array([0.0, 1e-9, 1.0]), np.ones(3), np.ones(3))
    >>> bool(2e-9 < r < 3e-9), hopeless.tolist()
    (True, [False, False, True])
    """
    margin = 2.0 * (gap + 4.0 * UNIT_ROUNDOFF * np.abs(values))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(gap > 0, margin / costs, 0.0)
    hopeless = need > CHECK_MAX_SLACK
    return float(need[~hopeless].max(initial=0.0)), hopeless


def meets_infinite(boxes, rows, U):
    r"""Rows of ``rows`` that give a state of infinite ``U`` a positive width.

    That is a stored entry with ``hi > lo`` on such a state, or an unseen width
    ``h > 0`` while some such state is not stored in the row. Only these rows can
    put free mass on an infinite value; the others give those states their lower
    ends, which every pour sees. A row stores each column at most once (the canonical
    rows every box builder makes), so the count of its stored infinite states tells
    whether one is unseen.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> boxes = SimpleNamespace(indptr=np.array([0, 1, 2, 3]), indices=np.array([1, 2, 1]),
    ...                         lo=np.array([0.5, 1.0, 0.5]), hi=np.array([0.5, 1.0, 0.7]),
    ...                         hi_unseen=np.array([0.0, 0.1, 0.0]))
    >>> meets_infinite(boxes, np.arange(3), np.array([1.0, np.inf])).tolist()
    [False, True, True]
    """
    stored = np.diff(boxes.indptr)[rows]
    entry = np.repeat(boxes.indptr[rows], stored) + segment_positions(stored)
    owner = np.repeat(np.arange(rows.size), stored)
    infinite = np.isinf(np.append(U, 0.0)[boxes.indices[entry]])
    on_infinite = np.bincount(owner, weights=infinite, minlength=rows.size)
    wide = np.bincount(owner, weights=infinite & (boxes.hi[entry] > boxes.lo[entry]),
                       minlength=rows.size)
    return (wide > 0) | ((boxes.hi_unseen[rows] > 0) & (on_infinite < np.isinf(U).sum()))


def upper_check(pour_values, boxes, rows, costs_pi, values, exact_zero):
    r"""The upper check of :func:`reference.robust.pessimistic._check_upper` on the policy's
    ``rows``, the states ``exact_zero`` kept at 0: ``(U, dropped, r)``.

    ``pour_values`` is the kernel ``pour_values``; every pour is of all the ``rows`` by
    decreasing value.
    """
    S = boxes.n_states
    touched, doubtful = touched_counts(boxes, rows)
    spread = boxes.hi_unseen[rows] > 0

    def upper_bellman(U):
        u_ext = np.append(U, 0.0)
        T = costs_pi + pour_values(boxes, rows, u_ext, True)
        bound = rounding_bound(touched, T, pour_scales(u_ext, touched, spread, True))
        if np.isinf(U).any() and doubtful.any():
            bound[doubtful] = np.where(meets_infinite(boxes, rows[doubtful], U), np.inf,
                                       bound[doubtful])
        return T + bound

    U = np.where(exact_zero, 0.0, values)
    finite = np.isfinite(U) & ~exact_zero
    gap = np.zeros(S)
    gap[finite] = np.maximum(upper_bellman(U)[finite] - U[finite], 0.0)
    r, hopeless = slack(gap, np.where(finite, U, 0.0), costs_pi)
    U = np.where(finite & ~hopeless, U * (1.0 + r), np.where(exact_zero, 0.0, np.inf))
    dropped = int((finite & hopeless).sum())
    while True:
        fail = np.isfinite(U) & ~exact_zero & ~((upper_bellman(U) <= U) & (U >= 0))
        if not fail.any():
            return U, dropped, r
        dropped += int(fail.sum())
        U[fail] = np.inf


def lower_check(pour_values, boxes, costs, values, q_values):
    r"""The lower check of :func:`reference.robust.optimistic._check_lower`: ``(L, dropped,
    r)``.

    ``pour_values`` is the kernel ``pour_values``; every pour is of all the pairs by
    increasing value. ``q_values`` (``(S, A)`` or None) are reused by the first check when
    the candidate is ``values`` to the bit.
    """
    S, A = boxes.n_states, boxes.n_actions
    all_rows = np.arange(S * A)
    touched = touched_counts(boxes, all_rows)[0]
    spread = boxes.hi_unseen > 0

    def lower_bellman(L, q=None):
        l_ext = np.append(L, 0.0)
        if q is None:
            q = costs + pour_values(boxes, all_rows, l_ext, False).reshape(S, A)
        bound = rounding_bound(touched, q.ravel(), pour_scales(l_ext, touched, spread, False))
        return (q - bound.reshape(S, A)).min(axis=1)

    L = np.where(np.isfinite(values), np.maximum(values, 0.0), 0.0)
    same = q_values is not None and np.array_equal(L.view(np.uint64), values.view(np.uint64))
    shortfall = np.maximum(L - lower_bellman(L, q_values if same else None), 0.0)
    r, hopeless = slack(shortfall, L, costs.min(axis=1))
    hopeless &= L > 0
    L = np.where(hopeless, 0.0, L * (1.0 - r))
    dropped = int(hopeless.sum())
    while True:
        fail = ~(lower_bellman(L) >= L) & (L > 0)
        if not fail.any():
            return L, dropped, r
        dropped += int(fail.sum())
        L[fail] = 0.0
