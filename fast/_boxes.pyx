# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled Lemma 5 boxes of the ``fast`` backend: dense and CSR boxes built in one pass.

Private module of the ``fast`` backend. The box of ``p(s'|s,a)`` is
``[p_hat - beta, p_hat + beta] ∩ [0, 1]`` with the Bernstein radius of Lemma 5
(``fast/_lemma5.pxd``). A next state that a pair never reached has the box
``[0, min(1, beta_0)]``, the same for every such state, so CSR boxes store one
``beta_0`` per pair and never form a dense array; dense counts with few nonzero
entries are read once into that form.

- :func:`scan_dense` ``(counts (S, A, S+1), max_nnz) -> DenseScan`` reads dense
  counts once, for the caller's checks (their largest entry) and the boxes
  (their nonzero entries);
- :func:`boxes_from_scan` ``(DenseScan, delta) -> DenseBoxes | CsrBoxes``
  and :func:`boxes_from_csr` ``(indptr, cols, data, S, A, delta) -> CsrBoxes``
  build the boxes of every pair in one pass, checking that they are finite;
- :func:`radius_dense` writes the radius of dense counts (``bernstein_radius``).

The types are declared in ``fast/_boxes.pxd``. The counts are checked by the
caller (finite, ``>= 0``). Arithmetic is finite or refused: a row of counts
whose total, logarithm or radius is not finite raises :class:`OverflowError`,
and no non-finite value is ever cast to an integer. Index arrays of CSR input
are ``indptr`` int64 and ``cols`` int32.
"""

import numpy as np

cimport cython
cimport numpy as cnp
from libc.math cimport NAN, isfinite
from libc.stdint cimport int64_t
from libc.stdlib cimport free, realloc

from ._lemma5 cimport (BoxMemo, LogCache, _box, _cached_log_term, _count_box, _log_term,
                       _memo_pair, _memo_start, _pour_bound, _radius, _row_total)
from ._lemma5 cimport MEMO_COUNTS as _MEMO_COUNTS

cnp.import_array()


DENSE_MAX_FILL = 0.25
"""Largest fraction of nonzero dense counts read into CSR boxes.

A stored entry of CSR boxes takes 20 bytes (column, lower end, width) against
8 bytes per entry of a dense width array, and its sweep sorts the entries of a
pair that the pour reaches; below a quarter of the entries both costs are
smaller than the dense ones.
"""

MEMO_COUNTS = _MEMO_COUNTS
"""The pairs of an ``N+`` up to this share one computed box per integer count (the memo of
``fast/_lemma5.pxd``); with more samples, counts rarely repeat across pairs."""


def _overflow(Py_ssize_t pair, Py_ssize_t n_actions, double total):
    return OverflowError(
        f"the Bernstein radius of the pair (s, a) = ({pair // n_actions}, {pair % n_actions}) "
        f"is not finite: its counts sum to {total!r}; counts this large cannot be used."
    )


def radius_dense(const double[:, :, ::1] counts, double delta, double[:, :, ::1] out):
    """Write the Lemma 5 radius ``beta(s, a, s')`` of dense counts into ``out``.

    Parameters
    ----------
    counts : float64 array, C-contiguous, shape (S, A, S+1)
        Checked counts (finite, ``>= 0``).
    delta : float in (0, 1)
    out : float64 array, shape (S, A, S+1)

    Raises
    ------
    OverflowError
        If the counts of a pair sum to infinity.
    """
    cdef Py_ssize_t S = counts.shape[0], A = counts.shape[1], S1 = counts.shape[2]
    cdef Py_ssize_t s, a, j, overflow = -1
    cdef double n_plus, log_term, total = 0.0
    with nogil:
        for s in range(S):
            for a in range(A):
                total = _row_total(&counts[s, a, 0], S1)
                n_plus = total if total > 1.0 else 1.0
                log_term = _log_term(n_plus, S, A, delta)
                if not isfinite(log_term):
                    overflow = s * A + a
                    break
                for j in range(S1):
                    out[s, a, j] = _radius(counts[s, a, j] / n_plus, log_term, n_plus)
            if overflow >= 0:
                break
    if overflow >= 0:
        raise _overflow(overflow, A, total)



# ---------------------------------------------------------------------------
# A growable C buffer (used where the output size is known only at the end)


cdef struct Grow:
    double* vals
    int* cols
    Py_ssize_t size
    Py_ssize_t capacity


cdef int _grow_push(Grow* g, int col, double val) noexcept nogil:
    """Append one entry; returns -1 when memory runs out."""
    cdef Py_ssize_t cap
    cdef void* p
    if g.size == g.capacity:
        cap = 2 * g.capacity + 1024
        p = realloc(g.vals, cap * sizeof(double))
        if p == NULL:
            return -1
        g.vals = <double*>p
        p = realloc(g.cols, cap * sizeof(int))
        if p == NULL:
            return -1
        g.cols = <int*>p
        g.capacity = cap
    g.vals[g.size] = val
    g.cols[g.size] = col
    g.size = g.size + 1
    return 0



# ---------------------------------------------------------------------------
# Boxes


cdef class DenseBoxes:
    """Boxes of dense counts: widths ``gap (S, A, S+1)``, lower ends as CSR, leftover mass.

    The lower ends are stored as CSR rows ``s*A + a`` holding their positive
    entries (most are 0 once ``beta > p_hat``), so ``lo . v`` skips the zeros.
    ``upper_mass`` (``(S, A)``) is the sum of each pair's upper ends, for the
    caller's simplex check.
    """


    property nbytes:
        """Bytes held by the boxes (not counting the counts)."""
        def __get__(self):
            return sum(x.nbytes for x in (self.lo_ptr, self.lo_cols, self.lo_vals, self.gap,
                                          self.mass, self.order))

    property work:
        """Multiply-adds of one sweep, for the thread threshold."""
        def __get__(self):
            return self.lo_vals.size + self.mass.size * self.order.size // 4



cdef class CsrBoxes:
    """Boxes of CSR counts: one box per stored entry plus ``[0, gap_unseen]`` per pair.

    Attributes hold, per stored entry, ``cols`` (int32, shared with the
    counts when they were int32 already), ``lo`` and ``gap``; per pair,
    ``gap_unseen`` and the leftover ``mass = 1 - sum lo``. ``prefix`` bounds
    the pour length of every pair: a sweep sorts only the ``prefix`` smallest
    next states of ``v`` (indices ``order_idx``, values ``order_val`` and their
    prefix sums ``cum_v``, the first ``min(prefix, S+1)`` entries; the rest of
    ``order_idx`` and ``order_val``, up to ``2 prefix`` entries in all, is the
    repair's scratch space), and records their ranks in ``rank`` (int32,
    ``(S+1,)``, ``S+1`` outside the prefix). These four arrays are read-only
    views: the sweeps write them through the pointers taken when the boxes are
    built. A sweep starts from the order the previous one left
    (:func:`_repair_order`), so two sweeps must not run on the same boxes at
    the same time.
    ``upper_mass`` (``(S, A)``) is the sum of each pair's
    upper ends, for the caller's simplex check; ``from_dense`` tells boxes read
    from dense counts, whose optimistic kernel is dense.
    """


    property nbytes:
        """Bytes held by the boxes beyond the counts' own column indices."""
        def __get__(self):
            return sum(x.nbytes for x in (self.lo, self.gap, self.gap_unseen, self.mass,
                                          self.rank, self.order_val, self.order_idx, self.cum_v))

    property work:
        """Multiply-adds of one sweep, for the thread threshold."""
        def __get__(self):
            return self.lo.size + 8 * self.mass.size


def boxes_from_csr(indptr_array, cols_array, data_array, Py_ssize_t n_states,
                   Py_ssize_t n_actions, double delta):
    """Boxes of CSR counts ``(S*A, S+1)`` in one pass: radius, box, simplex check, pour bound.

    Parameters
    ----------
    indptr_array : int64 array, shape (S*A+1,)
        Row pointers (kept by reference, not copied).
    cols_array : int32 array, shape (nnz,)
        Column indices, ascending in each row (kept by reference, not copied).
    data_array : float64 array, shape (nnz,)
        Checked counts (finite, ``>= 0``).
    n_states, n_actions : int
    delta : float in (0, 1)

    Returns
    -------
    CsrBoxes

    Raises
    ------
    OverflowError
        If the counts of a pair sum to infinity.
    """
    cdef const int64_t[::1] indptr = indptr_array
    cdef const int[::1] cols = cols_array
    cdef const double[::1] data = data_array
    cdef Py_ssize_t n_pairs = indptr.shape[0] - 1, nnz = data.shape[0]
    cdef Py_ssize_t n_next = n_states + 1
    cdef Py_ssize_t i, k, n_k, longest = 0, widest = 1, overflow = -1
    cdef double n_plus, log_term, total = 0.0, lo_sum, hi_sum
    cdef BoxMemo memo
    _memo_start(&memo)
    out = CsrBoxes()
    out.n_states, out.n_actions = n_states, n_actions
    out.indptr = np.asarray(indptr_array)
    out.cols = np.asarray(cols_array)
    out.lo = _empty(nnz, cnp.NPY_DOUBLE)
    out.gap = _empty(nnz, cnp.NPY_DOUBLE)
    out.gap_unseen = _empty(n_pairs, cnp.NPY_DOUBLE)
    out.mass = _empty(n_pairs, cnp.NPY_DOUBLE)
    out.upper_mass = _empty(n_states, cnp.NPY_DOUBLE, n_actions)
    out.rank = np.full(n_next, n_next, dtype=np.intc)
    cdef double* lo = <double*>cnp.PyArray_DATA(out.lo)
    cdef double* gap = <double*>cnp.PyArray_DATA(out.gap)
    cdef double* gap_unseen = <double*>cnp.PyArray_DATA(out.gap_unseen)
    cdef double* mass = <double*>cnp.PyArray_DATA(out.mass)
    cdef double* upper = <double*>cnp.PyArray_DATA(out.upper_mass)
    with nogil:
        for i in range(n_pairs):
            n_k = indptr[i + 1] - indptr[i]
            with cython.boundscheck(False):
                total = _row_total(&data[indptr[i]], n_k)
            n_plus = total if total > 1.0 else 1.0
            _memo_pair(&memo, n_plus, n_states, n_actions, delta)
            if not memo.finite:
                overflow = i
                break
            lo_sum = 0.0
            hi_sum = 0.0
            log_term = memo.log_term
            if memo.small:
                for k in range(indptr[i], indptr[i + 1]):
                    _count_box(&memo, data[k], n_plus, log_term, &lo[k], &gap[k])
                    lo_sum = lo_sum + lo[k]
                    hi_sum = hi_sum + (lo[k] + gap[k])
            else:
                # Without the memo, so that the compiler vectorizes the radius.
                for k in range(indptr[i], indptr[i + 1]):
                    _box(data[k] / n_plus, _radius(data[k] / n_plus, log_term, n_plus),
                         &lo[k], &gap[k])
                    lo_sum = lo_sum + lo[k]
                    hi_sum = hi_sum + (lo[k] + gap[k])
            mass[i] = 1.0 - lo_sum
            gap_unseen[i] = memo.gap_unseen
            upper[i] = hi_sum + (n_next - n_k) * memo.gap_unseen
            # The pour bound with mass 1 (mass <= 1) is at least this pair's: skip the
            # division when even that cannot raise the longest.
            if n_k + 2.0 + memo.unseen_steps > longest:
                longest = max(longest, _pour_bound(n_k, mass[i], memo.gap_unseen, n_next))
            widest = max(widest, n_k)
    if overflow >= 0:
        raise _overflow(overflow, n_actions, total)
    out.prefix = longest
    out.widest = widest
    out.from_dense = False
    room = max(longest + 1, min(2 * longest, n_next))
    out.order_val = _empty(room, cnp.NPY_DOUBLE)
    out.order_idx = _empty(room, cnp.NPY_INTP)
    out.cum_v = _empty(longest + 2, cnp.NPY_DOUBLE)
    out.ordered = 0
    with cython.boundscheck(False):
        out.arrays.indptr = &indptr[0]
        out.arrays.cols = &cols[0]
    out.arrays.lo = lo
    out.arrays.gap = gap
    out.arrays.gap_unseen = gap_unseen
    out.arrays.mass = mass
    out.arrays.order_val = <double*>cnp.PyArray_DATA(out.order_val)
    out.arrays.order_idx = <Py_ssize_t*>cnp.PyArray_DATA(out.order_idx)
    out.arrays.cum_v = <double*>cnp.PyArray_DATA(out.cum_v)
    out.arrays.rank = <int*>cnp.PyArray_DATA(out.rank)
    for kept in (out.order_val, out.order_idx, out.cum_v, out.rank):
        cnp.PyArray_CLEARFLAGS(kept, cnp.NPY_ARRAY_WRITEABLE)
    out.arrays.room = room
    out.arrays.n_states = n_states
    out.arrays.n_actions = n_actions
    out.arrays.widest = widest
    return out


cdef extern from "_scan.h" nogil:
    enum: SSPGM_SCAN_BLOCK
    int64_t sspgm_scan_counts(const double* counts, int64_t n_rows, int64_t row_len,
                              int64_t max_nnz, int64_t* indptr, int* cols, double* data,
                              int* valid, double* largest)



cdef class DenseScan:
    """Dense counts read once: their largest entry and, when few, their nonzero entries.

    ``largest`` is the largest count when every count is finite with its sign
    bit clear (``-0.0`` is not) and an integer, else NaN: the caller's checks pass at once
    when it is small enough (``reference._checks.check_dense_values``).
    ``indptr`` (int64 ``(S*A+1,)``), ``cols`` (int32) and ``data`` hold the
    entries other than ``±0.0`` as CSR rows ``s*A + a``, or are None when more
    than ``max_nnz`` entries are nonzero. ``counts`` is the array itself.
    """




def scan_dense(counts, Py_ssize_t max_nnz):
    """Read dense counts once: whether they are plainly valid, their largest entry and
    their nonzero entries as CSR rows.

    Each row is read ``16`` entries at a time, and the OR of their bits skips a
    block of zeros (``+0.0`` only) without a branch; the other blocks are read
    again, and their entries other than ``±0.0`` stored by a bit mask. The OR of
    all the bits tells a negative or ``-0.0`` entry, the largest bit pattern (as
    a signed integer) an infinite or NaN one, and orders the finite counts
    ``>= +0.0`` as their values; the OR of the bits of the blocks read again that
    lie below ``2^0`` (by their exponent) tells a fractional one. Integer
    operations only, on an AVX2 build of the pass where the compiler and the CPU
    allow it (``fast/_scan.h``).

    Parameters
    ----------
    counts : float64 array, C-contiguous, shape (S, A, S+1)
        Counts of the right shape, their values not checked.
    max_nnz : int
        Store no entries (``indptr``, ``cols`` and ``data`` None) beyond this many
        nonzero ones.

    Returns
    -------
    DenseScan
    """
    cdef const double[:, :, ::1] view = counts
    cdef Py_ssize_t S = view.shape[0], A = view.shape[1], S1 = view.shape[2]
    cdef int64_t nnz
    cdef int valid = 0
    cdef double largest = 0.0
    max_nnz = max(max_nnz, 0)
    indptr = np.empty(S * A + 1, dtype=np.int64)
    cols = np.empty(max_nnz + SSPGM_SCAN_BLOCK, dtype=np.int32)
    data = np.empty(max_nnz + SSPGM_SCAN_BLOCK)
    cdef int64_t[::1] ptr = indptr
    cdef int[::1] c = cols
    cdef double[::1] d = data
    with nogil:
        nnz = sspgm_scan_counts(&view[0, 0, 0], S * A, S1, max_nnz, &ptr[0], &c[0], &d[0],
                                &valid, &largest)
    out = DenseScan()
    out.counts = counts
    out.largest = largest if valid else NAN
    if nnz <= max_nnz:
        out.indptr, out.cols, out.data = indptr, cols[:nnz].copy(), data[:nnz].copy()
    return out


def boxes_dense(const double[:, :, ::1] counts, double delta):
    """Dense boxes of dense counts in one pass: radius, box, lower ends as CSR, simplex check.

    Parameters
    ----------
    counts : float64 array, C-contiguous, shape (S, A, S+1)
    delta : float in (0, 1)

    Returns
    -------
    DenseBoxes

    Raises
    ------
    OverflowError, MemoryError
    """
    cdef Py_ssize_t S = counts.shape[0], A = counts.shape[1], S1 = counts.shape[2]
    cdef Py_ssize_t s, a, i, j, overflow = -1, failed = 0
    cdef double n_plus, log_term, total = 0.0, lo_sum, hi_sum, beta, low, width
    cdef LogCache cache = LogCache(n_plus=0.0, log_term=0.0)
    cdef Grow g
    g.vals = NULL
    g.cols = NULL
    g.size = 0
    g.capacity = 0
    out = DenseBoxes()
    out.n_states, out.n_actions = S, A
    out.gap = np.empty((S, A, S1))
    out.mass = np.empty((S, A))
    out.upper_mass = np.empty((S, A))
    out.lo_ptr = np.zeros(S * A + 1, dtype=np.int64)
    cdef double[:, :, ::1] gap = out.gap
    cdef double[:, ::1] mass = out.mass, upper = out.upper_mass
    cdef int64_t[::1] ptr = out.lo_ptr
    try:
        with nogil:
            for s in range(S):
                for a in range(A):
                    i = s * A + a
                    total = _row_total(&counts[s, a, 0], S1)
                    n_plus = total if total > 1.0 else 1.0
                    log_term = _cached_log_term(&cache, n_plus, S, A, delta)
                    if not isfinite(28.0 * log_term / n_plus):
                        overflow = i
                        break
                    lo_sum = 0.0
                    hi_sum = 0.0
                    for j in range(S1):
                        beta = _radius(counts[s, a, j] / n_plus, log_term, n_plus)
                        _box(counts[s, a, j] / n_plus, beta, &low, &width)
                        gap[s, a, j] = width
                        hi_sum = hi_sum + (low + width)
                        if low > 0.0:
                            lo_sum = lo_sum + low
                            if _grow_push(&g, <int>j, low) < 0:
                                failed = 1
                                break
                    if failed:
                        break
                    mass[s, a] = 1.0 - lo_sum
                    ptr[i + 1] = g.size
                    upper[s, a] = hi_sum
                if overflow >= 0 or failed:
                    break
        if failed:
            raise MemoryError("no memory left for the lower ends of the EVI boxes")
        if overflow >= 0:
            raise _overflow(overflow, A, total)
        out.lo_cols = np.asarray(<int[:g.size]>g.cols).copy() if g.size else np.empty(0, np.int32)
        out.lo_vals = np.asarray(<double[:g.size]>g.vals).copy() if g.size else np.empty(0)
    finally:
        free(g.vals)
        free(g.cols)
    out.order = np.empty(S1, dtype=np.intp)
    return out


def boxes_from_scan(DenseScan scan, double delta):
    """Boxes of dense counts from their :func:`scan_dense`: CSR boxes when at most
    :data:`DENSE_MAX_FILL` of the entries are nonzero (the zeros never stored), dense
    boxes otherwise.

    Returns
    -------
    DenseBoxes or CsrBoxes

    Raises
    ------
    OverflowError
        If the counts of a pair sum to infinity.
    """
    if scan.indptr is None:
        return boxes_dense(scan.counts, delta)
    S, A = scan.counts.shape[:2]
    cdef CsrBoxes boxes = boxes_from_csr(scan.indptr, scan.cols, scan.data, S, A, delta)
    boxes.from_dense = True
    return boxes
