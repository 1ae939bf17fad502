# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled sampling glue of the certified solver: the kernels of the group "Sampling" of
``docs/backends.md``.

Private module of the ``fast`` backend. :func:`merge_counts` sums a batch of
samples into a sample store's counts (two canonical CSR layouts, two passes
over both, no array but the sum's); :func:`split_calls` splits a round's calls
over the pairs, with the rounding of the numpy kernel and its stable order of
the remainders (a radix sort of them as integers, in multiples of the grid), for
fewer than ``2^31 - 1`` pairs. Their wrappers (:mod:`fast.kernels`) check the
arguments first, with the checks of the numpy kernels.
"""

import numpy as np

from reference.errors import ParameterError, ShapeError, SparseFormatError, TooLargeError

from libc.math cimport floor, frexp, rint
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc


cdef Py_ssize_t _union_length(const int64_t* a, Py_ssize_t na, const int64_t* b,
                              Py_ssize_t nb) noexcept nogil:
    """Distinct entries of two strictly increasing arrays."""
    cdef Py_ssize_t i = 0, j = 0, shared = 0
    while i < na and j < nb:
        if a[i] == b[j]:
            shared += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return na + nb - shared


def merge_counts(indptr, indices, data, inc_indptr, inc_indices, inc_data):
    """``(indptr, indices, data)`` of the sum of two canonical CSR layouts with the same rows
    (int64 arrays, columns strictly increasing in each row), canonical: the entries stored in
    either, their counts added. When the sum stores exactly the entries of the first, its
    ``indptr`` and ``indices`` are returned themselves (the arrays are never modified).
    The caller checks the lengths and the ends of the row pointers
    (:func:`reference.sampling_kernels.check_layouts`); the first pass stops at a row
    pointer below the one before or beyond the entries (which, as the pointers end at the
    entries, some later pointer decreases from) and refuses the pointers, so that no pass
    reads outside the arrays."""
    cdef const int64_t[::1] ip = indptr, ix = indices, dt = data
    cdef const int64_t[::1] jp = inc_indptr, jx = inc_indices, jd = inc_data
    cdef Py_ssize_t n_rows = ip.shape[0] - 1, r, a, a_end, b, b_end, out
    cdef Py_ssize_t bad = -1
    out_ptr = np.empty(n_rows + 1, dtype=np.int64)
    cdef int64_t[::1] op = out_ptr
    with nogil:
        op[0] = 0
        for r in range(n_rows):
            a, a_end, b, b_end = ip[r], ip[r + 1], jp[r], jp[r + 1]
            if a_end < a or a_end > ix.shape[0] or b_end < b or b_end > jx.shape[0]:
                bad = r
                break
            if b == b_end:
                op[r + 1] = op[r] + (a_end - a)
            else:
                op[r + 1] = op[r] + _union_length(&ix[0] + a if a < a_end else NULL, a_end - a,
                                                  &jx[b], b_end - b)
    if bad >= 0:
        for name, pointers in (("indptr", indptr), ("inc_indptr", inc_indptr)):
            drops = np.flatnonzero(np.diff(pointers) < 0)
            if drops.size:
                raise SparseFormatError(f"merge_counts: `{name}` must never decrease; got "
                                        f"{name}[{drops[0] + 1}] < {name}[{drops[0]}].")
    cdef int64_t[::1] od
    if op[n_rows] == ix.shape[0]:
        out_data = np.array(data, dtype=np.int64, copy=True)
        od = out_data
        with nogil:
            for r in range(n_rows):
                a, b, b_end = ip[r], jp[r], jp[r + 1]
                while b < b_end:
                    while ix[a] != jx[b]:
                        a += 1
                    od[a] += jd[b]
                    a += 1
                    b += 1
        return indptr, indices, out_data
    out_indices = np.empty(op[n_rows], dtype=np.int64)
    out_data = np.empty(op[n_rows], dtype=np.int64)
    cdef int64_t[::1] ox = out_indices
    od = out_data
    with nogil:
        for r in range(n_rows):
            a, a_end, b, b_end, out = ip[r], ip[r + 1], jp[r], jp[r + 1], op[r]
            while a < a_end or b < b_end:
                if b == b_end or (a < a_end and ix[a] < jx[b]):
                    ox[out] = ix[a]
                    od[out] = dt[a]
                    a += 1
                elif a == a_end or jx[b] < ix[a]:
                    ox[out] = jx[b]
                    od[out] = jd[b]
                    b += 1
                else:
                    ox[out] = ix[a]
                    od[out] = dt[a] + jd[b]
                    a += 1
                    b += 1
                out += 1
    return out_ptr, out_indices, out_data


cdef int32_t* _radix_descending(const uint32_t* keys, int32_t* order, int32_t* spare_order,
                                Py_ssize_t n) noexcept nogil:
    """Sort ``order`` (indices into ``keys``) by decreasing key, stably, least significant
    byte first (a pass skipped when every key has the same byte there), moving the indices
    between ``order`` and ``spare_order``; returns the one holding the sorted indices."""
    cdef Py_ssize_t counts[256]
    cdef Py_ssize_t i, b, shift, total
    cdef int32_t* swap
    for shift in range(0, 32, 8):
        for b in range(256):
            counts[b] = 0
        for i in range(n):
            counts[(keys[order[i]] >> shift) & 255] += 1
        if counts[(keys[order[0]] >> shift) & 255] == n:
            continue
        total = 0
        for b in range(255, -1, -1):
            total += counts[b]
            counts[b] = total - counts[b]
        for i in range(n):
            b = (keys[order[i]] >> shift) & 255
            spare_order[counts[b]] = order[i]
            counts[b] += 1
        swap = order
        order = spare_order
        spare_order = swap
    return order


def split_calls(const double[::1] more, double factor, int64_t total, double grid,
                int64_t[::1] draws):
    """Write into ``draws`` (int64, the size of ``more``) the split of ``total`` calls of
    :func:`reference.sampling_kernels.split_calls`, with ``factor = total / more.sum()``
    (numpy's sum, computed by the caller) and the grid ``grid``, a power of two in
    ``[1, 2^32]`` (the caller checks the arguments,
    :func:`reference.sampling_kernels.check_split`): a share rounded to a multiple of
    ``1 / grid`` leaves a remainder ``k / grid`` with ``k`` an integer below ``grid``, the
    32-bit key of its order (the indices are 32-bit too: fewer than ``2^31 - 1`` pairs).
    The calls left over, or the excess of whole calls taken back, follow the numpy
    kernel: the same order of the remainders, read from its start to add, from its end
    to take back, passes over the pairs that draw until the calls add up to ``total``."""
    cdef Py_ssize_t n = more.shape[0], i
    cdef double share, whole
    cdef int64_t drawn = 0, spare, every
    cdef int32_t* sorted_
    cdef int exponent
    if draws.shape[0] != n:
        raise ShapeError(f"split_calls: `draws` must have the size of `more` ({n}); got "
                         f"{draws.shape[0]}.")
    if not (1.0 <= grid <= 4294967296.0 and frexp(grid, &exponent) == 0.5) or n == 0:
        raise ParameterError(f"split_calls: `grid` must be a power of two in [1, 2^32] and "
                             f"`more` not empty; got {grid!r} and {n} entries.")
    if n >= 2147483647:
        raise TooLargeError(f"split_calls: `more` must hold fewer than 2^31 - 1 entries; "
                            f"got {n}.")
    cdef uint32_t* keys = <uint32_t*>malloc(n * sizeof(uint32_t))
    cdef int32_t* order = <int32_t*>malloc(2 * n * sizeof(int32_t))
    if keys == NULL or order == NULL:
        free(keys)
        free(order)
        raise MemoryError()
    with nogil:
        for i in range(n):
            share = rint(more[i] * factor * grid) / grid
            whole = floor(share)
            draws[i] = <int64_t>whole
            drawn += draws[i]
            keys[i] = <uint32_t>((share - whole) * grid)
            order[i] = <int32_t>i
        spare = total - drawn
        if spare != 0:
            sorted_ = _radix_descending(keys, order, order + n, n)
        if spare > 0:
            every = spare // n
            if every > 0:
                for i in range(n):
                    draws[i] += every
            for i in range(spare % n):
                draws[sorted_[i]] += 1
        while spare < 0:
            i = n - 1
            while i >= 0 and spare < 0:
                if draws[sorted_[i]] > 0:
                    draws[sorted_[i]] -= 1
                    spare += 1
                i -= 1
    free(keys)
    free(order)
