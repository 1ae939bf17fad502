"""Sums of a sample store's counts: a batch of samples merged into canonical CSR counts."""

import copy

import numpy as np
import scipy.sparse as sp

from .. import confidence
from ..confidence import row_blocks


def _increment(pairs, lengths, cols, counts, canonical, shape):
    """The canonical CSR arrays of queued samples, summed: ``pairs[i]`` saw the next
    ``lengths[i]`` entries of ``cols``, ``counts`` times each.

    Samples in canonical order (pairs strictly ascending, columns strictly
    ascending within a pair, no zero count), as a top-up queues them, give the
    arrays directly (``cols`` and ``counts`` are kept, not copied); they are
    checked for it unless ``canonical`` says so already. Others go
    through :class:`scipy.sparse.coo_array`, which sums repeated entries, and
    zero counts are left out. Both give the arrays of one matrix: int64 data,
    canonical.

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
    indptr : ndarray, shape (M + 1,)
    indices, data : ndarray, shape (nnz,)
        ``data`` int64; the index arrays int64 (canonical order) or as scipy builds them.
    """
    if canonical or _in_canonical_order(pairs, lengths, cols, counts):
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        indptr[pairs + 1] = lengths
        return np.cumsum(indptr, out=indptr), cols, counts
    rows = np.repeat(pairs, lengths)
    seen = counts > 0
    csr = sp.coo_array((counts[seen], (rows[seen], cols[seen])), shape=shape).tocsr()
    return csr.indptr, csr.indices, csr.data


def _in_canonical_order(pairs, lengths, cols, counts):
    """Whether queued samples (as :func:`_increment` takes them) are in canonical order."""
    ends = np.cumsum(lengths)
    rising = cols[1:] > cols[:-1]
    rising[ends[(ends > 0) & (ends < cols.size)] - 1] = True
    return bool(counts.all() and rising.all() and (pairs[1:] > pairs[:-1]).all())


def _summed(csr, indptr, indices, data):
    """``csr`` plus the canonical CSR arrays of an increment: scipy's sum, array for array.

    Two sums need no sparse addition: onto no counts (the increment is the sum),
    and of an increment storing exactly the entries of ``csr`` (every pair saw
    again exactly the next states it had seen, as the large top-ups of SEARCH do
    once the supports are found), whose counts then add on the structure of
    ``csr``. Each is taken only when the arrays it keeps have the index dtype of
    scipy's sum, the wider of the two. Terms with int64 indices and more entries
    than a block (:data:`reference.confidence.BLOCK_ENTRIES`) are merged by
    :func:`_merged`, which needs no buffers sized for both terms.
    """
    wider = np.promote_types(csr.indices.dtype, indices.dtype)
    if not csr.nnz and indices.dtype == wider:
        return _built(csr, indptr, indices, data)
    if (csr.indices.dtype == wider and np.array_equal(csr.indptr, indptr)
            and np.array_equal(csr.indices, indices)):
        return _with_arrays(csr, csr.indptr, csr.indices, csr.data + data)
    if (csr.indptr.dtype == csr.indices.dtype == indptr.dtype == indices.dtype == np.int64
            and csr.nnz + indices.size > confidence.BLOCK_ENTRIES):
        return _merged(csr, indptr, indices, data)
    return _pruned(csr + _built(csr, indptr, indices, data))


def _merged(csr, indptr, indices, data):
    """``csr`` plus the canonical arrays of an increment, all with int64 indices: the arrays
    of scipy's sum (int64 indices, canonical, exact int64 counts), merged a block of rows at
    a time (:func:`~reference.confidence.row_blocks`) into arrays of their final size.

    A first pass finds the increment's entries that ``csr`` stores already (their
    counts add) and so the length of every row; the second writes each block's
    entries, the stored ones and the new ones, in column order. Besides both
    terms and the sum, it holds a mask of the increment and the arrays of one
    block.
    """
    width = csr.shape[1]
    both = csr.indptr + indptr
    found = np.zeros(indices.size, dtype=bool)
    out_ptr = np.empty_like(both)
    out_ptr[0] = 0
    lengths = np.subtract(both[1:], both[:-1], out=out_ptr[1:])
    for r0, r1, _, _, _ in row_blocks(both):
        old_key, new_key = _block_keys(csr.indptr, csr.indices, r0, r1, width), _block_keys(
            indptr, indices, r0, r1, width)
        if old_key.size:
            at = np.minimum(np.searchsorted(old_key, new_key), old_key.size - 1)
            found[indptr[r0]:indptr[r1]] = seen = old_key[at] == new_key
            lengths[r0:r1] -= np.bincount(new_key[seen] // width, minlength=r1 - r0)
    np.cumsum(lengths, out=lengths)
    del both
    out_col = np.empty(out_ptr[-1], dtype=np.int64)
    out_data = np.empty(out_ptr[-1], dtype=np.int64)
    for r0, r1, _, _, _ in row_blocks(out_ptr):
        old_key, new_key = _block_keys(csr.indptr, csr.indices, r0, r1, width), _block_keys(
            indptr, indices, r0, r1, width)
        seen = found[indptr[r0]:indptr[r1]]
        counts = csr.data[csr.indptr[r0]:csr.indptr[r1]].copy()
        block_data = data[indptr[r0]:indptr[r1]]
        counts[np.searchsorted(old_key, new_key[seen])] += block_data[seen]
        keys = np.concatenate([old_key, new_key[~seen]])
        order = np.argsort(keys, kind="stable")
        out_col[out_ptr[r0]:out_ptr[r1]] = keys[order] % width
        out_data[out_ptr[r0]:out_ptr[r1]] = np.concatenate([counts, block_data[~seen]])[order]
    return _with_arrays(csr, out_ptr, out_col, out_data)


def _block_keys(indptr, indices, r0, r1, width):
    """``(row - r0) * width + column`` of the stored entries of the rows ``r0:r1``: ascending
    for canonical arrays."""
    return (np.repeat(np.arange(r1 - r0), np.diff(indptr[r0:r1 + 1])) * width
            + indices[indptr[r0]:indptr[r1]])


def _pruned(csr):
    """``csr`` holding its index and data arrays in buffers of their own size: scipy's sum
    leaves them views of buffers sized for both terms' entries."""
    for name in ("indices", "data"):
        array = getattr(csr, name)
        if array.base is not None:
            setattr(csr, name, array.copy())
    return csr


def _built(like, indptr, indices, data):
    """``scipy.sparse.csr_array((data, indices, indptr), shape=like.shape)`` of canonical
    arrays, ``like`` canonical too: int64 index arrays, which the constructor keeps as they
    are, by :func:`_with_arrays`; others by the constructor."""
    if indptr.dtype == indices.dtype == np.int64:
        return _with_arrays(like, indptr, indices, data)
    return sp.csr_array((data, indices, indptr), shape=like.shape)


def _with_arrays(csr, indptr, indices, data):
    """A shallow copy of the canonical ``csr`` holding the canonical arrays given instead of
    its own, as ``scipy.sparse.csr_array(csr)`` and setting them would give, without the
    constructor's checks: the store made the arrays, so they hold nothing to refuse, and
    the flags ``csr`` may have cached (sorted and canonical indices) are true of them too."""
    out = copy.copy(csr)
    out.indptr, out.indices, out.data = indptr, indices, data
    return out
