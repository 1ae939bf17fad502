# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled optimistic kernels of EVI: the pieces of a ``reference.poured.PouredKernel``.

Private module of the ``fast`` backend. :func:`kernel_pieces` ``(boxes, policy,
rank)`` builds the pieces of the optimistic kernel of ``policy`` along the pour
order of ``v`` (dense or CSR boxes of ``fast/_boxes.pyx``), and
:func:`goal_first_ranks` sorts that whole order (``fast/_order.pxd``).
"""

import numpy as np

cimport cython
cimport numpy as cnp
from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from ._boxes cimport CsrBoxes, DenseBoxes, _empty
from ._linalg cimport pour_row
from ._order cimport _radix_order, _sort_by_key

cnp.import_array()


cdef Py_ssize_t _gather(const int* cols, const double* lo, const double* gap, Py_ssize_t nnz,
                        double gap_unseen, Py_ssize_t n_next, double* width, int64_t* kept_col,
                        double* kept_lo, double* kept_gap) noexcept nogil:
    """The entries of one pair that the pieces store; returns how many.

    The pair stores ``nnz`` next states ``cols`` (ascending) with boxes
    ``[lo, lo + gap]``, the others having ``[0, gap_unseen]``. Its unseen next
    states are those it does not store plus the stored ones with ``lo = 0`` and
    the unseen width (the smallest width with ``lo = 0``, written into
    ``width``); the others are copied, ascending by column. A dense row is the
    case ``nnz = n_next``.
    """
    cdef Py_ssize_t k, m = 0
    cdef double w = gap_unseen if nnz < n_next else INFINITY
    for k in range(nnz):
        if lo[k] == 0.0 and gap[k] < w:
            w = gap[k]
    if w == INFINITY:
        w = 0.0
    for k in range(nnz):
        if not (lo[k] == 0.0 and gap[k] == w):
            kept_col[m] = cols[k]
            kept_lo[m] = lo[k]
            kept_gap[m] = gap[k]
            m = m + 1
    width[0] = w
    return m


def goal_first_ranks(const double[::1] v_ext):
    """The whole pour order of ``v_ext`` (shape ``(S+1,)``, ``v_ext[S] = 0`` at the goal)
    and the position of every next state in it, by the radix sort of :func:`_radix_order`.

    The order is that of ``reference.kernels.goal_first_order`` (ascending
    value, the goal first among equal values, then ascending index; ``-0.0``
    equal to ``+0.0``), in ``O(S)``.

    Returns
    -------
    (order, rank) : int64 arrays of shape (S+1,), or None
        None when a value is NaN, when ``v_ext`` is empty or its last entry is not
        ``0``, or when the sort's scratch space cannot be allocated.
    """
    cdef Py_ssize_t S = v_ext.shape[0] - 1, t
    if S < 0 or v_ext[S] != 0.0:
        return None
    order = _empty(S + 1, cnp.NPY_INT64)
    rank = _empty(S + 1, cnp.NPY_INT64)
    cdef int64_t* order_v = <int64_t*>cnp.PyArray_DATA(order)
    cdef int64_t* rank_v = <int64_t*>cnp.PyArray_DATA(rank)
    cdef Py_ssize_t* idx = <Py_ssize_t*>malloc((S + 1) * sizeof(Py_ssize_t))
    cdef double* val = <double*>malloc((S + 1) * sizeof(double))
    cdef bint sorted_ = False
    if idx != NULL and val != NULL:
        with nogil:
            sorted_ = _radix_order(&v_ext[0], S, S + 1, val, idx)
            if sorted_:
                for t in range(S + 1):
                    order_v[t] = idx[t]
                    rank_v[idx[t]] = t
    free(idx)
    free(val)
    return (order, rank) if sorted_ else None


def kernel_pieces(boxes, const Py_ssize_t[::1] policy, const int64_t[::1] rank):
    """Pieces of the optimistic kernel of ``policy``, ``rank`` the positions in the pour order.

    Each row gathers the entries it stores (:func:`_gather`; a dense row's
    lower ends are first spread over ``S+1`` next states), sorts them by rank
    and pours by :func:`fast._linalg.pour_row`:
    ``O(k log k)`` for ``k`` stored entries (CSR boxes; ``O(S log S)`` for a
    dense row), memory ``O(S + stored)`` for the output. Dense boxes take two
    passes (count the stored entries of each row, then fill them); CSR boxes
    one, into room for every entry of the policy's rows, cut to the stored ones
    at the end. Returns ``(indptr, indices, data, width, reach, partial)``.
    """
    cdef bint dense = isinstance(boxes, DenseBoxes)
    cdef Py_ssize_t S = boxes.n_states, A = boxes.n_actions, S1 = S + 1
    cdef Py_ssize_t s, i, j, k, m, fill, room = 0, n_row = S1 if dense else 1
    cdef double w
    cdef CsrBoxes csr
    cdef const int64_t[::1] dense_ptr
    cdef const int[::1] dense_cols
    cdef const double[::1] dense_lo, dense_gap, dense_mass
    cdef const int64_t* indptr
    cdef const int* cols
    cdef const double* lo
    cdef const double* gap
    cdef const double* gap_unseen = NULL
    cdef const double* mass
    cdef Py_ssize_t n_scratch
    if dense:
        dense_ptr, dense_cols, dense_lo = boxes.lo_ptr, boxes.lo_cols, boxes.lo_vals
        dense_gap, dense_mass = boxes.gap.reshape(-1), boxes.mass.reshape(-1)
        with cython.boundscheck(False):
            indptr, cols, lo = &dense_ptr[0], &dense_cols[0], &dense_lo[0]
            gap, mass = &dense_gap[0], &dense_mass[0]
        n_scratch = S1
    else:
        csr = boxes
        indptr, cols, lo, gap = csr.arrays.indptr, csr.arrays.cols, csr.arrays.lo, csr.arrays.gap
        gap_unseen, mass = csr.arrays.gap_unseen, csr.arrays.mass
        n_scratch = csr.widest
    out_ptr = _empty(S + 1, cnp.NPY_INT64)
    width = _empty(S, cnp.NPY_DOUBLE)
    reach = _empty(S, cnp.NPY_INT64)
    partial = _empty(S, cnp.NPY_DOUBLE)
    # Scratch: a dense row's lower ends and next states, and the kept entries of a row.
    cdef char* block = <char*>malloc(n_row * (sizeof(double) + sizeof(int))
                                     + n_scratch * (3 * sizeof(double) + 2 * sizeof(Py_ssize_t)))
    if block == NULL:
        raise MemoryError("no memory left for the optimistic kernel's scratch space")
    cdef double* kept_lo = <double*>block
    cdef double* kept_gap = kept_lo + n_scratch
    cdef double* lo_row = kept_gap + n_scratch
    cdef int64_t* kept_col = <int64_t*>(lo_row + n_row)
    cdef Py_ssize_t* ranks = <Py_ssize_t*>(kept_col + n_scratch)
    cdef Py_ssize_t* items = ranks + n_scratch
    cdef int* every = <int*>(items + n_scratch)
    for j in range(n_row):
        every[j] = <int>j
    cdef int64_t* ptr = <int64_t*>cnp.PyArray_DATA(out_ptr)
    cdef int64_t* reach_v = <int64_t*>cnp.PyArray_DATA(reach)
    cdef double* width_v = <double*>cnp.PyArray_DATA(width)
    cdef double* partial_v = <double*>cnp.PyArray_DATA(partial)
    cdef int64_t* out_idx = NULL
    cdef double* out_val = NULL
    ptr[0] = 0
    if not dense:
        for s in range(S):
            room = room + indptr[s * A + policy[s] + 1] - indptr[s * A + policy[s]]
    try:
        for fill in range(0 if dense else 1, 2):
            if fill:
                if dense:
                    room = ptr[S]
                indices = _empty(room, cnp.NPY_INT64)
                data = _empty(room, cnp.NPY_DOUBLE)
                out_idx = <int64_t*>cnp.PyArray_DATA(indices)
                out_val = <double*>cnp.PyArray_DATA(data)
            with nogil:
                for s in range(S):
                    i = s * A + policy[s]
                    if dense:
                        for j in range(S1):
                            lo_row[j] = 0.0
                        for k in range(indptr[i], indptr[i + 1]):
                            lo_row[cols[k]] = lo[k]
                        m = _gather(every, lo_row, &gap[i * S1], S1, 0.0, S1, &w, kept_col,
                                    kept_lo, kept_gap)
                    else:
                        m = _gather(&cols[indptr[i]], &lo[indptr[i]], &gap[indptr[i]],
                                    indptr[i + 1] - indptr[i], gap_unseen[i], S1, &w, kept_col,
                                    kept_lo, kept_gap)
                    ptr[s + 1] = ptr[s] + m
                    if not fill:
                        continue
                    for k in range(m):
                        ranks[k] = rank[kept_col[k]]
                        items[k] = k
                        out_idx[ptr[s] + k] = kept_col[k]
                    _sort_by_key(ranks, items, m)
                    pour_row(ranks, items, m, kept_gap, w, mass[i], S1, kept_lo, &reach_v[s],
                             &partial_v[s])
                    width_v[s] = w
                    for k in range(m):
                        out_val[ptr[s] + k] = kept_lo[k]
    finally:
        free(block)
    if ptr[S] < room:
        indices, data = indices[:ptr[S]].copy(), data[:ptr[S]].copy()
    return out_ptr, indices, data, width, reach, partial
