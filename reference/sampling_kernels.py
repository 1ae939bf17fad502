"""The numpy kernels of the group "Sampling" (docs/backends.md): the sample store's merge of a
round's counts and the split of a round's calls over the pairs.

The compiled kernels (:mod:`fast._sampling`) make the same integer sums and the same
float operations in the same order, so they give the same arrays.
"""

import numpy as np

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

    Examples
    --------
    Two rows: the batch adds to column 2 of row 0 and brings column 1 to row 1.

    >>> counts = (np.array([0, 1, 2]), np.array([2, 0]), np.array([5, 3]))
    >>> batch = (np.array([0, 1, 2]), np.array([2, 1]), np.array([1, 4]))
    >>> merge_counts(*counts, *batch)
    (array([0, 1, 3]), array([2, 0, 1]), array([6, 3, 4]))
    """
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


def split_calls(more, total, grid):
    """Kernel ``split_calls``: ``total`` calls split over the pairs in proportion to ``more``.

    Each pair's share ``more * (total / more.sum())`` is rounded to a multiple of
    ``1 / grid`` (so that shares whose sums differ in the last bits draw the same
    calls) and cut to whole calls; the calls left over go, one each, to the pairs
    of largest remainder, ties to the lower index.

    Parameters
    ----------
    more : ndarray of float64, shape (m,)
        Finite weights ``>= 0`` with a positive sum (not modified).
    total : int
        Calls to split, ``>= 0``.
    grid : float
        A power of two.

    Returns
    -------
    ndarray of int64, shape (m,)
        The calls of every pair.

    Examples
    --------
    Shares 2.25 and 0.75: two whole calls, and the third to the larger remainder.

    >>> split_calls(np.array([3.0, 1.0]), 3, 2.0**16)
    array([2, 1])
    """
    share = more * (total / more.sum())
    share *= grid
    np.round(share, out=share)
    share /= grid
    draws = np.floor(share).astype(np.int64)
    spare = total - int(draws.sum())
    draws[np.argsort(np.subtract(draws, share, out=share), kind="stable")[:spare]] += 1
    return draws
