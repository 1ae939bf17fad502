"""Sums of a sample store's counts: a batch of samples merged into canonical CSR counts."""

import copy

import numpy as np
import scipy.sparse as sp


def _increment(pairs, lengths, cols, counts, canonical, shape):
    """The canonical CSR arrays of queued samples, summed: ``pairs[i]`` saw the next
    ``lengths[i]`` entries of ``cols``, ``counts`` times each.

    Samples in canonical order (pairs strictly ascending, columns strictly
    ascending within a pair, no zero count), as a top-up queues them, give the
    arrays directly (``cols`` and ``counts`` are kept, not copied); they are
    checked for it unless ``canonical`` says so already. Others go
    through :class:`scipy.sparse.coo_array`, which sums repeated entries, and
    zero counts are left out. Both give the int64 arrays of one canonical matrix.

    Parameters
    ----------
    pairs, lengths : ndarray of int64, shape (m,)
        ``0 <= pairs < shape[0]``, ``lengths >= 0`` summing to ``k``.
    cols, counts : ndarray of int64, shape (k,)
        ``0 <= cols < shape[1]``, ``counts >= 0``.
    canonical : bool
        Whether the samples are known to be in canonical order.
    shape : tuple of int
        ``(M, N)``.

    Returns
    -------
    indptr : ndarray of int64, shape (M + 1,)
    indices, data : ndarray of int64, shape (nnz,)
    """
    if canonical or _in_canonical_order(pairs, lengths, cols, counts):
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        indptr[pairs + 1] = lengths
        return np.cumsum(indptr, out=indptr), cols, counts
    rows = np.repeat(pairs, lengths)
    seen = counts > 0
    csr = sp.coo_array((counts[seen], (rows[seen], cols[seen])), shape=shape).tocsr()
    return (csr.indptr.astype(np.int64, copy=False), csr.indices.astype(np.int64, copy=False),
            csr.data)


def _in_canonical_order(pairs, lengths, cols, counts):
    """Whether queued samples (as :func:`_increment` takes them) are in canonical order."""
    ends = np.cumsum(lengths)
    rising = cols[1:] > cols[:-1]
    rising[ends[(ends > 0) & (ends < cols.size)] - 1] = True
    return bool(counts.all() and rising.all() and (pairs[1:] > pairs[:-1]).all())


def _summed(csr, indptr, indices, data, merge):
    """``csr`` plus the int64 arrays of an increment (:func:`_increment`): the counts of scipy's
    sum, with int64 index arrays, merged by ``merge``, a kernel ``merge_counts``
    (docs/backends.md), which keeps the structure of ``csr`` when the increment stores only
    entries of it. Two sums need no merge: onto no counts (the increment is the sum), and of
    an increment storing exactly the entries of ``csr`` (every pair saw again exactly the
    next states it had seen, as the large top-ups of SEARCH do once the supports are found),
    whose counts then add on the structure of ``csr``."""
    if not csr.nnz:
        return _with_arrays(csr, indptr, indices, data)
    old = tuple(array.astype(np.int64, copy=False) for array in (csr.indptr, csr.indices,
                                                                   csr.data))
    if np.array_equal(old[0], indptr) and np.array_equal(old[1], indices):
        return _with_arrays(csr, old[0], old[1], old[2] + data)
    return _with_arrays(csr, *merge(*old, indptr, indices, data))


def _with_arrays(csr, indptr, indices, data):
    """A shallow copy of the canonical ``csr`` holding the canonical arrays given instead of
    its own, as ``scipy.sparse.csr_array(csr)`` and setting them would give, without the
    constructor's checks: the store made the arrays, so they hold nothing to refuse, and
    the flags ``csr`` may have cached (sorted and canonical indices) are true of them too."""
    out = copy.copy(csr)
    out.indptr, out.indices, out.data = indptr, indices, data
    return out
