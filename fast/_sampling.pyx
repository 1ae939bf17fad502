# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled sampling glue of the certified solver: the kernels of the group "Sampling" of
``docs/backends.md``.

Private module of the ``fast`` backend. :func:`merge_counts` sums a batch of
samples into a sample store's counts (two canonical CSR layouts, two passes
over both, no array but the sum's).
"""

import numpy as np

from libc.stdint cimport int64_t


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
    ``indptr`` and ``indices`` are returned themselves (the arrays are never modified)."""
    cdef const int64_t[::1] ip = indptr, ix = indices, dt = data
    cdef const int64_t[::1] jp = inc_indptr, jx = inc_indices, jd = inc_data
    cdef Py_ssize_t n_rows = ip.shape[0] - 1, r, a, a_end, b, b_end, out
    if jp.shape[0] != ip.shape[0] or dt.shape[0] != ix.shape[0] or jd.shape[0] != jx.shape[0]:
        raise ValueError("merge_counts: the layouts must have the same rows and one count "
                         "an entry")
    out_ptr = np.empty(n_rows + 1, dtype=np.int64)
    cdef int64_t[::1] op = out_ptr
    with nogil:
        op[0] = 0
        for r in range(n_rows):
            a, a_end, b, b_end = ip[r], ip[r + 1], jp[r], jp[r + 1]
            if b == b_end:
                op[r + 1] = op[r] + (a_end - a)
            else:
                op[r + 1] = op[r] + _union_length(&ix[0] + a if a < a_end else NULL, a_end - a,
                                                  &jx[b], b_end - b)
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
