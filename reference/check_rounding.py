r"""The rounding bound of the Bellman checks, row by row (``docs/check-rounding.md``).

A check computes ``T(i) = c(i) + W(i)`` for some rows ``i`` of the boxes, with
``W(i)`` the value of the row's greedy pour against a vector ``w`` (the kernel
``pour_values``), and compares it with the bound it checks. The computed value
is off the exact one (the exact pour of the exact box, in real arithmetic) by
at most

.. math::

    \beta(i) = (8 N_i + 32)\, u\, (T(i) + \sigma_i) + (N_i + 1)\, 2^{-1072},

where ``N_i <= S + 1`` counts the next states the pours of the row can touch
(:func:`touched_counts`) and ``sigma_i`` is the largest finite ``|w|`` on the
first ``N_i`` positions of the pour order (:func:`pour_scales`). The proof,
and which kernels it covers, is ``docs/check-rounding.md``.
"""

import numpy as np

from .chains import UNIT_ROUNDOFF
from .poured import segment_positions

__all__ = []

BLOCK_ROWS = 1 << 14
"""Rows whose stored entries :func:`touched_counts` gathers at once."""

SUBNORMAL_UNIT = 2.0**-1072
"""Four times the smallest subnormal: each product of a pour loses at most a quarter of it
to underflow."""


def touched_counts(boxes, rows):
    r"""How many next states the pours of each row can touch, and whether its free mass is in
    doubt.

    A row of ``k`` stored entries and unseen width ``h`` pours its free mass
    ``m = 1 - sum lo`` into the next states in order; each unseen one it fills
    takes ``h``. Every pour of the row (exact, or rounded by any kernel) so
    touches its stored entries and at most ``floor(m' / h) + 2`` unseen ones,
    where ``m'`` is ``m`` computed here raised by ``(4 (S + 1) + 2 k + 8) u``
    (more than any pour's rounding adds to the mass it pours); one more covers
    the rounding of the division. None when ``h = 0``.

    Parameters
    ----------
    boxes : ConfidenceBoxes or StoreBoxes
        The boxes (CSR layout: ``indptr``, ``lo``, ``hi_unseen``).
    rows : ndarray of int64, shape (n,)
        Pairs ``s * A + a``.

    Returns
    -------
    touched : ndarray of float64, shape (n,)
        ``N_i = k + min(S + 1 - k, floor(m' / h) + 3)`` (``k`` when ``h = 0``),
        at most ``S + 1``.
    doubtful : ndarray of bool, shape (n,)
        Rows whose computed free mass is at most ``(2 k + 2) u``: a kernel may
        pour nothing where the exact pour pours a little (which only matters
        when that little meets an infinite value).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> boxes = SimpleNamespace(n_states=100, indptr=np.array([0, 1]), lo=np.array([0.5]),
    ...                         hi_unseen=np.array([0.1]))
    >>> touched, doubtful = touched_counts(boxes, np.array([0]))
    >>> touched.tolist(), doubtful.tolist()
    ([9.0], [False])
    """
    n_next = boxes.n_states + 1
    stored = np.diff(boxes.indptr)[rows]
    free = np.empty(rows.size)
    for b0 in range(0, rows.size, BLOCK_ROWS):
        block, k = rows[b0:b0 + BLOCK_ROWS], stored[b0:b0 + BLOCK_ROWS]
        entry = np.repeat(boxes.indptr[block], k) + segment_positions(k)
        free[b0:b0 + block.size] = 1.0 - np.bincount(
            np.repeat(np.arange(block.size), k), weights=boxes.lo[entry], minlength=block.size)
    k = stored.astype(np.float64)
    h = boxes.hi_unseen[rows]
    raised = np.maximum(free + (4.0 * n_next + 2.0 * k + 8.0) * UNIT_ROUNDOFF, 0.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        unseen = np.where(h > 0, np.minimum(n_next - k, np.floor(raised / h) + 3.0), 0.0)
    return k + unseen, free <= (2.0 * k + 2.0) * UNIT_ROUNDOFF


def pour_scales(w_ext, touched, spread, descending):
    r"""Largest finite ``|w|`` a row's pour can meet: its first ``N_i`` positions in the order.

    The adversary's order (``descending``) starts at the largest values: the
    scale is the largest finite ``|w|`` of all. The optimist's starts at the
    goal and the smallest values, so with ``w >= 0`` it is the ``N_i``-th
    smallest finite value. Rows that spread no mass over unseen states
    (``spread`` false) can meet any stored value: the largest of all.

    Parameters
    ----------
    w_ext : ndarray of float64, shape (S+1,)
        The values poured against, the goal last (``+inf`` allowed).
    touched : ndarray of float64, shape (n,)
        ``N_i`` of :func:`touched_counts`.
    spread : ndarray of bool, shape (n,)
        Rows with a positive unseen width.
    descending : bool
        The adversary's pour or the optimist's.

    Returns
    -------
    ndarray of float64, shape (n,)
        ``sigma_i``.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([5.0, 1.0, 3.0, 0.0])
    >>> pour_scales(w, np.array([2.0, 3.0]), np.array([True, True]), False).tolist()
    [1.0, 3.0]
    >>> pour_scales(w, np.array([2.0, 3.0]), np.array([True, True]), True).tolist()
    [5.0, 5.0]
    """
    finite = np.abs(w_ext[np.isfinite(w_ext)])
    top = float(finite.max(initial=0.0))
    if descending or np.any(w_ext < 0):
        return np.full(touched.size, top)
    ordered = np.sort(finite)
    position = np.clip(touched.astype(np.int64), 1, ordered.size) - 1
    return np.where(spread, ordered[position], top)


def rounding_bound(touched, totals, scales):
    r"""The bound ``(8 N + 32) u (T + sigma) + (N + 1) 2**-1072`` on the rounding of ``totals``.

    Parameters
    ----------
    touched, totals, scales : ndarray of float64, shape (n,)
        ``N_i`` (:func:`touched_counts`), the computed ``T(i) >= 0`` and
        ``sigma_i`` (:func:`pour_scales`).

    Returns
    -------
    ndarray of float64, shape (n,)
        ``beta(i)``, to add to ``T(i)`` (upper check) or take from it (lower check).

    Examples
    --------
    >>> float(rounding_bound(np.array([3.0]), np.array([2.0]), np.array([4.0]))[0] / 2**-53)
    336.0
    """
    return ((8.0 * touched + 32.0) * UNIT_ROUNDOFF * (totals + scales)
            + (touched + 1.0) * SUBNORMAL_UNIT)
