"""The numpy kernels of the group "Sampling" (docs/backends.md): the sample store's merge of a
round's counts and the split of a round's calls over the pairs.

The compiled kernels (:mod:`fast._sampling`) make the same integer sums and the same
float operations in the same order, so they give the same arrays.
"""

import numpy as np

from .errors import ParameterError, ShapeError, SparseFormatError

__all__ = []


MERGE_CHUNK = 1 << 16
"""Entries of a batch that :func:`merge_counts` looks up at once."""


def merge_counts(indptr, indices, data, inc_indptr, inc_indices, inc_data):
    """Kernel ``merge_counts``: the canonical CSR arrays of the sum of two canonical layouts.

    Each entry ``(r, c)`` of the batch is looked up in row ``r`` of the counts by a
    binary search (:func:`_lookup`), :data:`MERGE_CHUNK` entries at once. Those not
    found are inserted where their search ends (:func:`numpy.insert`, in their
    order); the counts of the others are then added where their entry moved. Besides
    the sum it holds a mask of the batch, the places of its new entries, the arrays
    of one chunk and the insertion's mask, one byte a stored entry.

    Parameters
    ----------
    indptr, indices, data : ndarray of int64
        The counts: row pointers ``(M+1,)``, columns strictly increasing in each
        row and positive counts ``(nnz,)``.
    inc_indptr, inc_indices, inc_data : ndarray of int64
        The batch, in the same form with the same rows.

    Returns
    -------
    indptr, indices, data : ndarray of int64
        The sum: the entries stored in either term, their counts added. When it
        stores exactly the entries of the counts, its ``indptr`` and ``indices``
        are theirs (the arrays themselves).

    Raises
    ------
    ShapeError, SparseFormatError
        Row pointers that are not a layout's (:func:`check_layouts`), or decreasing.

    Examples
    --------
    Two rows: the batch adds to column 2 of row 0 and brings column 1 to row 1.

    >>> counts = (np.array([0, 1, 2]), np.array([2, 0]), np.array([5, 3]))
    >>> batch = (np.array([0, 1, 2]), np.array([2, 1]), np.array([1, 4]))
    >>> merge_counts(*counts, *batch)
    (array([0, 1, 3]), array([2, 0, 1]), array([6, 3, 4]))
    """
    check_layouts(indptr, indices, data, inc_indptr, inc_indices, inc_data)
    for name, pointers in (("indptr", indptr), ("inc_indptr", inc_indptr)):
        if pointers.size > 1 and np.diff(pointers).min() < 0:
            raise _decreasing(name, int(np.flatnonzero(np.diff(pointers) < 0)[0]))
    chunks = [(e0, min(e0 + MERGE_CHUNK, inc_indices.size))
              for e0 in range(0, inc_indices.size, MERGE_CHUNK)]
    found = np.empty(inc_indices.size, dtype=bool)
    steps = int(np.diff(indptr).max(initial=0)).bit_length()
    places = []
    for e0, e1 in chunks:
        place, found[e0:e1] = _lookup(indptr, indices, inc_indptr, inc_indices, e0, e1, steps)
        places.append(place[~found[e0:e1]])
    new = np.flatnonzero(~found)
    at = np.concatenate(places) if places else new
    del places
    if new.size:
        out_indices = np.insert(indices, at, inc_indices[new])
        out_data = np.insert(data, at, inc_data[new])
        out_indptr = indptr.copy()
        rows = np.searchsorted(inc_indptr, new, side="right") - 1
        out_indptr[1:] += np.cumsum(np.bincount(rows, minlength=indptr.size - 1))
    else:
        out_indptr, out_indices, out_data = indptr, indices, data.copy()
    for e0, e1 in chunks:
        hit = found[e0:e1]
        place = _lookup(indptr, indices, inc_indptr, inc_indices, e0, e1, steps)[0][hit]
        np.add.at(out_data, place + np.searchsorted(at, place, side="right"),
                  inc_data[e0:e1][hit])
    return out_indptr, out_indices, out_data


def _lookup(indptr, indices, inc_indptr, inc_indices, e0, e1, steps):
    """``(place, found)`` of the entries ``e0:e1`` of a batch in the counts: where the
    column of each lies, or would be inserted, in its row (int64), and whether it is
    there; a binary search run on all of them at once, in ``steps`` steps (the bit length
    of the longest row)."""
    rows = np.searchsorted(inc_indptr, np.arange(e0, e1), side="right") - 1
    lo, end = indptr[rows], indptr[rows + 1]
    hi, columns = end.copy(), inc_indices[e0:e1]
    for _ in range(steps):
        active, mid = lo < hi, (lo + hi) // 2
        below = np.zeros(mid.size, dtype=bool)
        np.less(indices[np.minimum(mid, indices.size - 1)], columns, out=below, where=active)
        lo, hi = np.where(below, mid + 1, lo), np.where(active & ~below, mid, hi)
    found = lo < end
    found[found] = indices[lo[found]] == columns[found]
    return lo, found


def check_layouts(indptr, indices, data, inc_indptr, inc_indices, inc_data):
    """The checks of :func:`merge_counts`'s arguments made in ``O(1)`` by both kernels (the
    compiled one finds a decreasing ``indptr`` in its first pass, the numpy one before it):
    the two ``indptr`` of the same length ``>= 1``, each starting at 0 and ending at the
    length of its ``indices``, one count an entry.

    Raises
    ------
    ShapeError
        An ``indptr`` empty or of another length than the other, or ``data`` of another
        length than its ``indices``.
    SparseFormatError
        An ``indptr`` not starting at 0 or not ending at the length of its ``indices``.
    """
    if len(indptr) < 1 or len(inc_indptr) != len(indptr):
        raise ShapeError(
            "merge_counts: `indptr` and `inc_indptr` must be row pointers of the same length "
            f">= 1 (the rows plus one); got lengths {len(indptr)} and {len(inc_indptr)}.")
    for name, pointers, columns, counts in (("", indptr, indices, data),
                                            ("inc_", inc_indptr, inc_indices, inc_data)):
        if len(counts) != len(columns):
            raise ShapeError(
                f"merge_counts: `{name}data` must hold one count an entry of `{name}indices` "
                f"({len(columns)}); got {len(counts)}.")
        if pointers[0] != 0 or pointers[-1] != len(columns):
            raise SparseFormatError(
                f"merge_counts: `{name}indptr` must start at 0 and end at the length of "
                f"`{name}indices` ({len(columns)}); got {int(pointers[0])} and "
                f"{int(pointers[-1])}.")


def _decreasing(name, row):
    """The error of a row pointer ``name`` decreasing after row ``row``."""
    return SparseFormatError(
        f"merge_counts: `{name}` must never decrease; got {name}[{row + 1}] < {name}[{row}].")


def check_split(more, total, grid):
    """The checks of :func:`split_calls`'s arguments, made by both kernels.

    Raises
    ------
    ParameterError
        ``more`` not finite, with a negative entry or without a positive finite sum; ``total``
        negative; ``grid`` not a power of two in ``[1, 2^32]``.
    """
    with np.errstate(over="ignore"):
        weight = more.sum()
    if not (np.isfinite(more).all() and more.min(initial=0.0) >= 0 and 0 < weight < np.inf):
        raise ParameterError(
            "split_calls: `more` must hold finite weights >= 0 with a positive finite sum; "
            f"got {more.size} weights, min {more.min() if more.size else None}, sum {weight}.")
    if total < 0:
        raise ParameterError(f"split_calls: `total` must be >= 0; got {total}.")
    if not (1.0 <= grid <= 2.0**32 and np.frexp(grid)[0] == 0.5):
        raise ParameterError(
            f"split_calls: `grid` must be a power of two in [1, 2^32]; got {grid!r}.")


def split_calls(more, total, grid):
    """Kernel ``split_calls``: ``total`` calls split over the pairs in proportion to ``more``.

    Each pair's share ``more * (total / more.sum())`` is rounded to a multiple of
    ``1 / grid`` (so that shares whose sums differ in the last bits draw the same
    calls) and cut to whole calls. The calls left over go, one each, to the pairs
    of largest remainder, ties to the lower index (to every pair first, as many
    times as the pairs fit in them). A share rounded up to a whole number can draw
    up to ``1 / (2 grid)`` more than its share, so with more than ``2 grid`` pairs
    the whole calls can exceed ``total``: the excess is then taken back, one call a
    pair, from the pairs that draw, in the reverse order (smallest remainder first,
    ties to the higher index), a pass at a time until none is left. The pairs
    rounded up have remainder 0 and draw at least one call, and they outnumber the
    excess, so one pass takes it back from them alone (unless ``total`` is so large
    that the shares' sum misses it by more than the pairs). The calls drawn add up
    to ``total`` exactly.

    Parameters
    ----------
    more : ndarray of float64, shape (m,)
        Finite weights ``>= 0`` with a positive finite sum (not modified).
    total : int
        Calls to split, ``>= 0``.
    grid : float
        A power of two in ``[1, 2^32]``.

    Returns
    -------
    ndarray of int64, shape (m,)
        The calls of every pair.

    Raises
    ------
    ParameterError
        Arguments out of range (:func:`check_split`).

    Examples
    --------
    Shares 2.25 and 0.75: two whole calls, and the third to the larger remainder.

    >>> split_calls(np.array([3.0, 1.0]), 3, 2.0**16)
    array([2, 1])
    """
    check_split(more, total, grid)
    share = more * (total / more.sum())
    share *= grid
    np.round(share, out=share)
    share /= grid
    draws = np.floor(share).astype(np.int64)
    spare = total - int(draws.sum())
    if spare == 0:
        return draws
    order = np.argsort(np.subtract(draws, share, out=share), kind="stable")
    if spare > 0:
        draws += spare // more.size
        draws[order[:spare % more.size]] += 1
    while spare < 0:
        held = order[draws[order] > 0]
        taken = held[max(held.size + spare, 0):]
        draws[taken] -= 1
        spare += taken.size
    return draws
