# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled kernels of extended value iteration (Lemma 5 boxes, App. B greedy inner problem).

Private module of the ``fast`` backend. Every kernel follows
``docs/semantics.md``: the box of ``p(s'|s,a)`` is
``[p_hat - beta, p_hat + beta] ∩ [0, 1]`` with the Bernstein radius of
Lemma 5, and the inner problem starts at the lower ends and pours the leftover
mass into next states in ascending order of ``v`` (goal first, ties to the
lower index), each up to its upper end.

Kernel protocol (what the Python EVI loop calls):

- :func:`scan_dense` ``(counts (S, A, S+1), max_nnz) -> DenseScan`` reads dense
  counts once, for the caller's checks (their largest entry) and the boxes
  (their nonzero entries);
- :func:`boxes_from_scan` ``(DenseScan, delta) -> DenseBoxes | CsrBoxes``
  and :func:`boxes_from_csr` ``(indptr, cols, data, S, A, delta) -> CsrBoxes``
  build the boxes of every pair in one pass, checking that they are finite;
- :func:`sweep_dense` / :func:`sweep_csr` ``(boxes, costs, v_ext, v_out,
  policy_out, n_threads) -> residual`` run one EVI sweep, the partial sort of
  ``v`` included, and return ``max_s |v_out(s) - v(s)|``;
- :func:`kernel_pieces` ``(boxes, policy, rank)`` builds the pieces of the
  optimistic kernel of ``policy`` along the pour order of ``v`` (a
  ``reference.poured.PouredKernel``), dense or CSR boxes;
- :func:`radius_dense` writes the radius of dense counts (``bernstein_radius``).

A next state that a pair never reached has the box ``[0, min(1, beta_0)]``,
the same for every such state, so CSR boxes store one ``beta_0`` per pair and
never form a dense array; dense counts with few nonzero entries are read once
into that form. ``v_ext`` always has shape ``(S+1,)`` with ``v_ext[S] = 0``
at the goal. Index arrays of CSR input are ``indptr`` int64 and ``cols`` int32.

The counts are checked by the caller (finite, ``>= 0``). Arithmetic is
finite or refused: a row of counts whose total, logarithm or radius is not
finite raises :class:`OverflowError`, and no non-finite value is ever cast to
an integer.
"""

import numpy as np

cimport cython
cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.math cimport ceil, isfinite, log, sqrt, INFINITY, NAN
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from ._linalg cimport (PREFETCH_AHEAD, PREFETCH_MIN_STATES, pour_row, prefetch_values,
                      residual, sparse_dot, sweep_chunk)

cnp.import_array()


DENSE_MAX_FILL = 0.25
"""Largest fraction of nonzero dense counts read into CSR boxes.

A stored entry of CSR boxes takes 20 bytes (column, lower end, width) against
8 bytes per entry of a dense width array, and its sweep sorts the entries of a
pair that the pour reaches; below a quarter of the entries both costs are
smaller than the dense ones.
"""

cdef enum:
    # Longest run sorted by insertion; longer runs are heap-sorted (``O(k log k)``).
    SORT_SMALL = 24


# ---------------------------------------------------------------------------
# The Bernstein radius and one box


cdef inline double _radius(double p_hat, double log_term, double n_plus) noexcept nogil:
    """Bernstein radius of Lemma 5 for one next state."""
    return 4.0 * sqrt(p_hat * log_term / n_plus) + 28.0 * log_term / n_plus


cdef inline double _row_total(const double* counts, Py_ssize_t n) noexcept nogil:
    """``N(s, a)``: the sum of the counts of one pair."""
    cdef double total = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        total = total + counts[k]
    return total


cdef inline double _log_term(double n_plus, Py_ssize_t n_states, Py_ssize_t n_actions,
                             double delta) noexcept nogil:
    """``L = log(S A N+ / delta)``; not finite when ``N+`` overflowed."""
    return log(n_states * n_actions * n_plus / delta)


cdef struct LogCache:
    # ``L`` of the last ``N+`` asked: the pairs of a round of sampling share their ``N+``.
    double n_plus
    double log_term


cdef inline double _cached_log_term(LogCache* cache, double n_plus, Py_ssize_t n_states,
                                    Py_ssize_t n_actions, double delta) noexcept nogil:
    """:func:`_log_term`, computed again only when ``N+`` differs from the last one."""
    if n_plus != cache.n_plus:
        cache.n_plus = n_plus
        cache.log_term = _log_term(n_plus, n_states, n_actions, delta)
    return cache.log_term


cdef inline void _box(double p_hat, double beta, double* lo, double* gap) noexcept nogil:
    """Lower end and width of ``[p_hat - beta, p_hat + beta] ∩ [0, 1]``."""
    cdef double low = p_hat - beta
    cdef double high = p_hat + beta
    if low < 0.0:
        low = 0.0
    if high > 1.0:
        high = 1.0
    lo[0] = low
    gap[0] = high - low


cpdef enum:
    # The pairs of an ``N+`` up to this share one computed box per integer count
    # (:func:`_count_box`); with more samples, counts rarely repeat across pairs.
    MEMO_COUNTS = 1024


cdef struct BoxMemo:
    # What the pairs of one ``N+`` share: ``L``, the unseen box's width (if its radius
    # ``beta_0`` is finite) and ``ceil(1 / width)``, which bounds the unseen states a pour of
    # mass at most 1 fills; and, when ``N+ <= MEMO_COUNTS`` (``small``), the boxes of the
    # integer counts met since ``N+`` last changed (``stamp[c] == generation`` when ``lo[c]``
    # and ``gap[c]`` hold the box of count ``c``). Pairs sampled in one round share their
    # ``N+`` and, with few samples, their counts.
    double n_plus
    double log_term
    bint small
    bint finite
    double gap_unseen
    double unseen_steps
    Py_ssize_t generation
    Py_ssize_t stamp[MEMO_COUNTS]
    double lo[MEMO_COUNTS]
    double gap[MEMO_COUNTS]


cdef inline void _memo_start(BoxMemo* memo) noexcept nogil:
    """An empty memo (no ``N+`` seen yet)."""
    memo.n_plus = 0.0
    memo.log_term = 0.0
    memo.generation = 0
    memset(memo.stamp, 0, sizeof(memo.stamp))


cdef inline void _memo_pair(BoxMemo* memo, double n_plus, Py_ssize_t n_states,
                            Py_ssize_t n_actions, double delta) noexcept nogil:
    """Set the memo to the pairs of ``N+ = n_plus``: :func:`_log_term` and the unseen box,
    computed again (and the boxes of the counts forgotten) only when ``N+`` differs from
    the last one."""
    cdef double beta0, unused
    if n_plus != memo.n_plus:
        memo.n_plus = n_plus
        memo.log_term = _log_term(n_plus, n_states, n_actions, delta)
        memo.generation = memo.generation + 1
        memo.small = n_plus <= MEMO_COUNTS
        beta0 = 28.0 * memo.log_term / n_plus
        memo.finite = isfinite(beta0)
        if memo.finite:
            _box(0.0, beta0, &unused, &memo.gap_unseen)
            memo.unseen_steps = ceil(1.0 / memo.gap_unseen)


cdef inline void _count_box(BoxMemo* memo, double count, double n_plus, double log_term,
                            double* lo, double* gap) noexcept nogil:
    """:func:`_box` of the count ``count >= 0`` of a pair of ``N+ = n_plus`` (whose ``L``
    is ``log_term``, the memo's last one): the same floats, computed once per integer count
    below :data:`MEMO_COUNTS` and read from the memo afterwards."""
    cdef Py_ssize_t c
    if count < MEMO_COUNTS and count == <double>(<Py_ssize_t>count):
        c = <Py_ssize_t>count
        if memo.stamp[c] != memo.generation:
            memo.stamp[c] = memo.generation
            _box(count / n_plus, _radius(count / n_plus, log_term, n_plus),
                 &memo.lo[c], &memo.gap[c])
        lo[0] = memo.lo[c]
        gap[0] = memo.gap[c]
    else:
        _box(count / n_plus, _radius(count / n_plus, log_term, n_plus), lo, gap)


cdef inline Py_ssize_t _pour_bound(Py_ssize_t nnz, double mass, double gap_unseen,
                                   Py_ssize_t n_next) noexcept nogil:
    """Upper bound on the pour length of a sparse pair, at most ``n_next = S+1``.

    The pour visits at most its stored entries plus ``ceil(mass / gap_unseen)``
    unseen next states (each unseen state but the last takes its full width),
    plus two for rounding. Computed in floating point and clamped before the
    cast, so a zero width gives ``n_next``, never an undefined conversion.
    """
    cdef double steps = nnz + 2.0
    if mass > 0.0:
        steps = steps + ceil(mass / gap_unseen)
    if not steps < n_next:
        return n_next
    return <Py_ssize_t>steps


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


cdef inline cnp.ndarray _empty(Py_ssize_t rows, int typenum, Py_ssize_t columns=-1):
    """A new C-contiguous array of shape ``(rows,)``, or ``(rows, columns)`` when ``columns``
    is given, by the numpy C API (``np.empty`` without its Python call)."""
    cdef cnp.npy_intp shape[2]
    shape[0] = rows
    shape[1] = columns
    return cnp.PyArray_EMPTY(1 if columns < 0 else 2, shape, typenum, 0)


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


cdef struct CsrSweep:
    # The arrays of one sweep on CSR boxes, as plain pointers (those of the boxes are set
    # when they are built, the others by each sweep).
    const int64_t* indptr
    const int* cols
    const double* lo
    const double* gap
    const double* gap_unseen
    const double* mass
    const double* costs  # (S, A), C order
    double* v_out
    Py_ssize_t* policy_out
    Py_ssize_t n_states
    Py_ssize_t n_actions
    Py_ssize_t widest
    double* order_val    # the pour order's buffers (see CsrBoxes), room entries
    Py_ssize_t* order_idx
    double* cum_v
    int* rank
    Py_ssize_t room


cdef struct DenseSweep:
    # The arrays of one sweep on dense boxes, as plain pointers.
    const int64_t* lo_ptr
    const int* lo_cols
    const double* lo_vals
    const double* gap    # (S, A, S+1), C order
    const double* mass   # (S, A)
    const double* costs  # (S, A)
    const double* v      # v_ext, (S+1,)
    const Py_ssize_t* order
    double* v_out
    Py_ssize_t* policy_out
    Py_ssize_t n_actions
    Py_ssize_t n_next
    bint bounded         # no value of v_ext is negative


cdef class DenseBoxes:
    """Boxes of dense counts: widths ``gap (S, A, S+1)``, lower ends as CSR, leftover mass.

    The lower ends are stored as CSR rows ``s*A + a`` holding their positive
    entries (most are 0 once ``beta > p_hat``), so ``lo . v`` skips the zeros.
    ``upper_mass`` (``(S, A)``) is the sum of each pair's upper ends, for the
    caller's simplex check.
    """

    cdef readonly Py_ssize_t n_states, n_actions
    cdef readonly object lo_ptr, lo_cols, lo_vals, gap, mass, upper_mass, order

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

    cdef readonly Py_ssize_t n_states, n_actions, prefix, widest
    cdef readonly bint from_dense
    cdef readonly object indptr, cols, lo, gap, gap_unseen, mass, upper_mass, rank
    cdef readonly object order_val, order_idx, cum_v
    cdef Py_ssize_t ordered
    cdef CsrSweep arrays

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
    bit clear (``-0.0`` is not), else NaN: the caller's checks pass at once
    when it is small enough (``reference._checks.check_dense_values``).
    ``indptr`` (int64 ``(S*A+1,)``), ``cols`` (int32) and ``data`` hold the
    entries other than ``±0.0`` as CSR rows ``s*A + a``, or are None when more
    than ``max_nnz`` entries are nonzero. ``counts`` is the array itself.
    """

    cdef readonly object counts, indptr, cols, data
    cdef readonly double largest


def scan_dense(counts, Py_ssize_t max_nnz):
    """Read dense counts once: whether they are plainly valid, their largest entry and
    their nonzero entries as CSR rows.

    Each row is read ``16`` entries at a time, and the OR of their bits skips a
    block of zeros (``+0.0`` only) without a branch; the other blocks are read
    again, and their entries other than ``±0.0`` stored by a bit mask. The OR of
    all the bits tells a negative or ``-0.0`` entry, the largest bit pattern (as
    a signed integer) an infinite or NaN one, and orders the finite counts
    ``>= +0.0`` as their values. Integer operations only, on an AVX2 build of the
    pass where the compiler and the CPU allow it (``fast/_scan.h``).

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


# ---------------------------------------------------------------------------
# The pour order


cdef inline bint _before(double va, Py_ssize_t ia, double vb, Py_ssize_t ib) noexcept nogil:
    """Order of the pour: ascending value, then ascending index (the goal has index -1)."""
    return va < vb or (va == vb and ia < ib)


cdef inline void _swap_keys(double* hv, Py_ssize_t* hi, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Swap the ``(value, index)`` keys at positions ``a`` and ``b``."""
    cdef double tv = hv[a]
    cdef Py_ssize_t ti = hi[a]
    hv[a] = hv[b]
    hi[a] = hi[b]
    hv[b] = tv
    hi[b] = ti


cdef inline void _sift_down(double* hv, Py_ssize_t* hi, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """Restore the max-heap (by :func:`_before`) below position ``i``."""
    cdef Py_ssize_t child, big
    while True:
        child = 2 * i + 1
        if child >= n:
            return
        big = child
        if child + 1 < n and _before(hv[child], hi[child], hv[child + 1], hi[child + 1]):
            big = child + 1
        if not _before(hv[i], hi[i], hv[big], hi[big]):
            return
        _swap_keys(hv, hi, i, big)
        i = big


cdef Py_ssize_t _smallest_order(const double* v, Py_ssize_t S, Py_ssize_t m, double* hv,
                                Py_ssize_t* hi) noexcept nogil:
    """First ``m`` next states of the pour order of ``v`` (length ``S``), goal first.

    A max-heap of the ``m`` best ``(value, index)`` keys, the goal keyed
    ``(0, -1)``: ``O(S log m)``. On return ``hi[t]`` is the ``t``-th next state
    (the goal as ``S``) and ``hv[t]`` its value, for ``t`` below the returned
    length ``min(m, S+1)``.
    """
    cdef Py_ssize_t n, i, j, p
    hv[0] = 0.0
    hi[0] = -1
    n = 1
    for i in range(S):
        if n < m:
            hv[n] = v[i]
            hi[n] = i
            j = n
            n = n + 1
            while j > 0:
                p = (j - 1) // 2
                if not _before(hv[p], hi[p], hv[j], hi[j]):
                    break
                _swap_keys(hv, hi, j, p)
                j = p
        elif _before(v[i], i, hv[0], hi[0]):
            hv[0] = v[i]
            hi[0] = i
            _sift_down(hv, hi, n, 0)
    j = n
    while j > 1:
        j = j - 1
        _swap_keys(hv, hi, 0, j)
        _sift_down(hv, hi, j, 0)
    for j in range(n):
        if hi[j] < 0:
            hi[j] = S
    return n


cdef enum:
    # Bits of a key sorted by one pass of :func:`_radix_order`, its buckets, and its passes.
    RADIX_BITS = 8
    RADIX_BUCKETS = 256
    RADIX_PASSES = 8
    # :func:`_pour_order` sorts afresh by :func:`_radix_order` when the prefix is at least
    # ``1 / RADIX_SHARE`` of the next states (below, the heap's ``O(S log prefix)`` is less).
    RADIX_SHARE = 8


cdef inline uint64_t _order_bits(double x) noexcept nogil:
    """An integer that sorts as ``x`` (not a NaN): ``-0.0`` as ``+0.0`` (``x + 0.0``), then
    the bits of a negative value flipped and the sign bit of the others set."""
    cdef uint64_t b
    x = x + 0.0
    memcpy(&b, &x, sizeof(b))
    return b ^ ((0 - (b >> 63)) | (<uint64_t>1 << 63))


cdef bint _radix_order(const double* v, Py_ssize_t S, Py_ssize_t m, double* val,
                       Py_ssize_t* idx) noexcept nogil:
    """First ``m`` next states of the pour order of ``v`` (length ``S``), goal first, as
    :func:`_smallest_order` writes them; returns False (and writes nothing) on a NaN value
    or when its scratch space cannot be allocated.

    A stable least-significant-digit radix sort of all ``S+1`` keys
    (:func:`_order_bits`) from the goal and the states in ascending index, so
    equal values keep the goal first and then ascending indices: ``O(S)``
    a pass, and no branch on the values. A pass whose digit is the same for
    every key moves nothing and is skipped.
    """
    cdef Py_ssize_t n = S + 1, t, p, d, total, c
    cdef size_t bytes_keys = n * sizeof(uint64_t), bytes_ids = n * sizeof(Py_ssize_t)
    cdef char* block = <char*>malloc(2 * (bytes_keys + bytes_ids))
    cdef uint64_t* keys
    cdef uint64_t* keys_to
    cdef uint64_t* swap_k
    cdef Py_ssize_t* ids
    cdef Py_ssize_t* ids_to
    cdef Py_ssize_t* swap_i
    cdef Py_ssize_t count[RADIX_PASSES][RADIX_BUCKETS]
    cdef uint64_t k
    cdef bint nan = False
    cdef double x
    if block == NULL:
        return False
    keys = <uint64_t*>block
    keys_to = keys + n
    ids = <Py_ssize_t*>(block + 2 * bytes_keys)
    ids_to = ids + n
    keys[0] = _order_bits(0.0)
    ids[0] = S
    for t in range(S):
        x = v[t]
        nan = nan | (x != x)
        keys[t + 1] = _order_bits(x)
        ids[t + 1] = t
    if nan:
        free(block)
        return False
    memset(count, 0, sizeof(count))
    for t in range(n):
        k = keys[t]
        for p in range(RADIX_PASSES):
            count[p][(k >> (RADIX_BITS * p)) & (RADIX_BUCKETS - 1)] += 1
    for p in range(RADIX_PASSES):
        if count[p][(keys[0] >> (RADIX_BITS * p)) & (RADIX_BUCKETS - 1)] == n:
            continue
        total = 0
        for d in range(RADIX_BUCKETS):
            c = count[p][d]
            count[p][d] = total
            total = total + c
        for t in range(n):
            k = keys[t]
            d = (k >> (RADIX_BITS * p)) & (RADIX_BUCKETS - 1)
            c = count[p][d]
            count[p][d] = c + 1
            keys_to[c] = k
            ids_to[c] = ids[t]
        swap_k = keys
        keys = keys_to
        keys_to = swap_k
        swap_i = ids
        ids = ids_to
        ids_to = swap_i
    for t in range(m if m < n else n):
        idx[t] = ids[t]
        val[t] = 0.0 if ids[t] == S else v[ids[t]]
    free(block)
    return True


# ---------------------------------------------------------------------------
# Sorting short runs of (rank, item) pairs


cdef inline void _swap(Py_ssize_t* keys, Py_ssize_t* items, Py_ssize_t a,
                       Py_ssize_t b) noexcept nogil:
    cdef Py_ssize_t t = keys[a]
    keys[a] = keys[b]
    keys[b] = t
    t = items[a]
    items[a] = items[b]
    items[b] = t


cdef inline void _sift_keys(Py_ssize_t* keys, Py_ssize_t* items, Py_ssize_t root,
                            Py_ssize_t end) noexcept nogil:
    """Restore the max-heap of ``keys[:end]`` below ``root`` (items follow their keys)."""
    cdef Py_ssize_t child
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and keys[child] < keys[child + 1]:
            child = child + 1
        if keys[root] >= keys[child]:
            return
        _swap(keys, items, root, child)
        root = child


cdef void _sort_by_key(Py_ssize_t* keys, Py_ssize_t* items, Py_ssize_t n) noexcept nogil:
    """Sort ``(keys, items)`` ascending by distinct keys: insertion below
    :data:`SORT_SMALL`, heap sort above (``O(n log n)``)."""
    cdef Py_ssize_t i, j, end
    cdef Py_ssize_t k, it
    if n <= SORT_SMALL:
        for i in range(1, n):
            k = keys[i]
            it = items[i]
            j = i
            while j > 0 and keys[j - 1] > k:
                keys[j] = keys[j - 1]
                items[j] = items[j - 1]
                j = j - 1
            keys[j] = k
            items[j] = it
        return
    i = n // 2
    while i > 0:
        i = i - 1
        _sift_keys(keys, items, i, n)
    end = n
    while end > 1:
        end = end - 1
        _swap(keys, items, 0, end)
        _sift_keys(keys, items, 0, end)


cdef enum:
    # Bits of a packed entry key below its rank, and the mask of its position.
    KEY_SHIFT = 32
    # Entries sorted by the network of :func:`_sort_net`.
    SORT_NET = 4
    # Keys a CSR sweep keeps on the stack (more are allocated).
    SCRATCH_LOCAL = 256

cdef int64_t KEY_MASK = 0xFFFFFFFF
# Key after every entry's: the padding of a run shorter than :data:`SORT_NET`.
cdef int64_t KEY_PAD = 0x7FFFFFFFFFFFFFFF


cdef inline int64_t _entry_key(Py_ssize_t rank, Py_ssize_t position) noexcept nogil:
    """Key of a stored entry: its rank in the pour order (below ``2**31``) above its position
    in the pair's row (below ``2**32``), so keys sort by rank."""
    return (<int64_t>rank << KEY_SHIFT) | position


cdef inline void _exchange(int64_t* keys, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Put the smaller of ``keys[a]`` and ``keys[b]`` at ``a``, without a branch."""
    cdef int64_t x = keys[a], y = keys[b]
    keys[a] = x if x < y else y
    keys[b] = y if x < y else x


cdef inline void _sort_net(int64_t* keys) noexcept nogil:
    """Sort ``keys[:4]`` by an optimal sorting network (five exchanges, no branch)."""
    _exchange(keys, 0, 1)
    _exchange(keys, 2, 3)
    _exchange(keys, 0, 2)
    _exchange(keys, 1, 3)
    _exchange(keys, 1, 2)


cdef void _sort_keys(int64_t* keys, Py_ssize_t n) noexcept nogil:
    """Sort distinct ``keys[:n]`` ascending: insertion below :data:`SORT_SMALL`, heap sort
    above (``O(n log n)``)."""
    cdef Py_ssize_t i, j, end, root, child
    cdef int64_t k
    if n <= SORT_SMALL:
        for i in range(1, n):
            k = keys[i]
            j = i
            while j > 0 and keys[j - 1] > k:
                keys[j] = keys[j - 1]
                j = j - 1
            keys[j] = k
        return
    end = n
    i = n // 2
    while end > 1:
        if i > 0:
            i = i - 1
            root = i
        else:
            end = end - 1
            k = keys[0]
            keys[0] = keys[end]
            keys[end] = k
            root = 0
        while True:
            child = 2 * root + 1
            if child >= end:
                break
            if child + 1 < end and keys[child] < keys[child + 1]:
                child = child + 1
            if keys[root] >= keys[child]:
                break
            k = keys[root]
            keys[root] = keys[child]
            keys[child] = k
            root = child


# ---------------------------------------------------------------------------
# Sweeps


cdef struct Order:
    const double* v      # v_ext, shape (S+1,), v[S] = 0
    const Py_ssize_t* idx  # the pour order prefix, length n (goal as S)
    const double* val    # v of each entry of the prefix
    const double* cum_v  # prefix sums of val, length n+1
    const int* rank      # rank[idx[t]] = t inside the prefix, S+1 outside
    Py_ssize_t n         # at least 1
    Py_ssize_t goal      # S
    double last_v        # value and key (goal -1) of the last state of the prefix
    Py_ssize_t last_k
    bint by_rank         # whether a stored entry's rank tells if it is inside the prefix


cdef inline Py_ssize_t _key(Py_ssize_t j, Py_ssize_t goal) noexcept nogil:
    return -1 if j == goal else j


cdef Py_ssize_t _repair_order(const double* v, Py_ssize_t S, Py_ssize_t n, Py_ssize_t room,
                              double* val, Py_ssize_t* idx, int* rank) noexcept nogil:
    """The ``n`` first next states of the pour order of ``v``, from the ``n`` an earlier sweep
    left in ``idx`` (their ranks in ``rank``, ``S+1`` for the other states); returns ``n``,
    or 0 when they must be sorted afresh.

    Every state outside the earlier prefix that comes before its last state
    (under ``v``) joins it, then an insertion sort orders the lot, whose first
    ``n`` are the new prefix: the others come after ``n`` states, so after
    the prefix. ``O(S + n + inversions)``, the earlier order being nearly the
    new one when ``v`` changes little. The states are scanned without a branch
    on their values: each one is written after the kept ones and kept when it
    joins. Gives up (0) when ``room - n`` states or more join, when the sort
    would take more than ``9 n`` moves, or on a NaN value; :func:`_pour_order`
    then sorts afresh.
    Works on keys (the goal as -1) and writes the goal back as ``S``; the
    states that leave the prefix get the rank ``S+1`` again.
    """
    cdef double last_v = 0.0, vi
    cdef Py_ssize_t last_k = 0, t, i, j, k, e = n, moves = 0, budget = 9 * n
    cdef bint nan = False
    for t in range(n):
        j = idx[t]
        if j == S:
            vi = 0.0
            j = -1
        else:
            vi = v[j]
        if vi != vi:
            return 0
        val[t] = vi
        idx[t] = j
        if t == 0 or _before(last_v, last_k, vi, j):
            last_v = vi
            last_k = j
    if rank[S] >= n and _before(0.0, -1, last_v, last_k):
        val[e] = 0.0
        idx[e] = -1
        e = e + 1
        if e == room:
            return 0
    for i in range(S):
        vi = v[i]
        nan = nan | (vi != vi)
        val[e] = vi
        idx[e] = i
        e = e + ((rank[i] >= n) & ((vi < last_v) | ((vi == last_v) & (i < last_k))))
        if e == room:
            return 0
    if nan:
        return 0
    for t in range(1, e):
        vi = val[t]
        k = idx[t]
        j = t
        while j > 0 and _before(vi, k, val[j - 1], idx[j - 1]):
            val[j] = val[j - 1]
            idx[j] = idx[j - 1]
            j = j - 1
        moves = moves + (t - j)
        if moves > budget:
            return 0
        val[j] = vi
        idx[j] = k
    for t in range(e):
        if idx[t] < 0:
            idx[t] = S
        if t >= n:
            rank[idx[t]] = <int>(S + 1)
    return n


cdef void _pour_order(Order* o, const double* v_ext, Py_ssize_t S, Py_ssize_t prefix,
                      Py_ssize_t known, Py_ssize_t room, double* val, Py_ssize_t* idx,
                      double* cum_v, int* rank) noexcept nogil:
    """Sort the ``prefix`` first next states of the pour order of ``v_ext`` into ``o``:
    their indices, values, prefix sums of the values and ranks.

    When an earlier sweep left ``known > 0`` of them in ``idx`` (with their
    ranks), :func:`_repair_order` starts from those; otherwise, or when it
    gives up, they are sorted afresh: by the radix sort of :func:`_radix_order`
    (``O(S)``) when ``prefix`` is at least ``S / RADIX_SHARE``, else (or on a
    NaN value) by the heap of :func:`_smallest_order` (``O(S log prefix)``).
    Each gives the one order of the pour (ties to the lower index). ``rank``
    (``(S+1,)``) holds ``S+1`` outside the prefix, before and after.
    """
    cdef Py_ssize_t t, n = 0
    if known > 0:
        n = _repair_order(v_ext, S, known, room, val, idx, rank)
    if n == 0:
        for t in range(S + 1):
            rank[t] = <int>(S + 1)
        if prefix * RADIX_SHARE >= S and _radix_order(v_ext, S, prefix, val, idx):
            n = min(prefix, S + 1)
        else:
            n = _smallest_order(v_ext, S, prefix, val, idx)
    cum_v[0] = 0.0
    for t in range(n):
        cum_v[t + 1] = cum_v[t] + val[t]
        rank[idx[t]] = <int>t
    o.v = v_ext
    o.idx = idx
    o.val = val
    o.cum_v = cum_v
    o.rank = rank
    o.n = n
    o.goal = S
    o.last_v = val[n - 1]
    o.last_k = _key(idx[n - 1], S)
    o.by_rank = S < PREFETCH_MIN_STATES


cdef inline double _pour_last(Py_ssize_t start, Py_ssize_t length, double width, double mass,
                              const Order* o) noexcept nogil:
    """Value poured into the run of ``length`` unseen next states from pour rank ``start``, all
    of width ``width``, that ``mass`` does not overflow (``length * width >= mass``).

    They share one width, so the value of filling ``q = trunc(mass / width)``
    of them is ``width * (cum_v[start + q] - cum_v[start])``; the next one
    takes what is left (none when ``q`` reaches ``length``).
    """
    cdef Py_ssize_t q = <Py_ssize_t>(mass / width)
    cdef double left
    if q >= length:
        return width * (o.cum_v[start + length] - o.cum_v[start])
    left = mass - q * width
    return width * (o.cum_v[start + q] - o.cum_v[start]) + left * o.val[start + q]


cdef inline Py_ssize_t _seen_in_prefix(const int* cols, Py_ssize_t nnz, const Order* o,
                                       int64_t* keys) noexcept nogil:
    """The stored entries of one pair inside the pour prefix, as keys ``rank << 32 |
    position`` (:func:`_entry_key`), sorted; returns how many.

    Below :data:`fast._linalg.PREFETCH_MIN_STATES` states (``o.by_rank``),
    where the ranks stay in the cache, an entry is inside when its rank is
    below the prefix's length (the rank of a state outside is ``S+1``); every
    entry's key is written (one outside is overwritten by the next), so no
    branch depends on it. Above, the rank would be one more random read per
    entry: an entry is inside unless its value, already read, comes after the
    prefix's last state, and only then is its rank read. ``keys`` holds at
    least ``max(nnz, SORT_NET)`` entries; up to :data:`SORT_NET` entries are
    sorted by :func:`_sort_net` (the first ones are set to
    :data:`KEY_PAD` before, and an outside entry's key left after the last
    inside one is larger than all of theirs), more by :func:`_sort_keys`.
    """
    cdef const double* v = o.v
    cdef const int* rank = o.rank
    cdef double last_v = o.last_v
    cdef Py_ssize_t k, j, r, m = 0, n = o.n, last_k = o.last_k, goal = o.goal
    for k in range(SORT_NET):
        keys[k] = KEY_PAD
    if o.by_rank:
        for k in range(nnz):
            r = rank[cols[k]]
            keys[m] = _entry_key(r, k)
            m = m + (r < n)
    else:
        for k in range(nnz):
            j = cols[k]
            if not _before(last_v, last_k, v[j], _key(j, goal)):
                keys[m] = _entry_key(rank[j], k)
                m = m + 1
    if m > 1:
        if m <= SORT_NET:
            _sort_net(keys)
        else:
            _sort_keys(keys, m)
    return m


cdef inline double _inner_csr(const int* cols, const double* gap, Py_ssize_t nnz,
                              double lo_dot, double gap_unseen, double mass, const Order* o,
                              int64_t* keys) noexcept nogil:
    """Inner problem of one sparse pair: ``lo . v`` (given, ``lo_dot``) plus the greedy pour.

    Between two stored entries of the pour prefix lies a run of unseen states,
    poured in one step: whole (``width * (cum_v[r] - cum_v[start])``, the mass
    lowered by ``length * width``) while that is below the mass, else by
    :func:`_pour_last`, where the pour stops. ``O(k log k)`` for ``k`` stored
    entries, whatever the pour length. The mass stays positive until the pour
    stops (a float minus a smaller one is positive), and a run of no state
    adds nothing: the value is never ``-0.0``, so skipping ``+ 0.0`` keeps it.
    """
    cdef double acc = lo_dot, g, w = gap_unseen
    cdef Py_ssize_t m, t, r, length, start = 0
    cdef int64_t key
    if mass <= 0.0:
        return acc
    m = _seen_in_prefix(cols, nnz, o, keys)
    for t in range(m):
        key = keys[t]
        r = <Py_ssize_t>(key >> KEY_SHIFT)
        length = r - start
        if length > 0:
            if not length * w < mass:
                return acc + _pour_last(start, length, w, mass, o)
            mass = mass - length * w
            acc = acc + w * (o.cum_v[r] - o.cum_v[start])
        g = gap[key & KEY_MASK]
        if g >= mass:
            return acc + mass * o.val[r]
        acc = acc + g * o.val[r]
        mass = mass - g
        start = r + 1
    length = o.n - start
    if length <= 0:
        return acc
    if not length * w < mass:
        return acc + _pour_last(start, length, w, mass, o)
    return acc + w * (o.cum_v[o.n] - o.cum_v[start])


cdef inline double _pour_slack(double mass, double last_v) noexcept nogil:
    """How far below ``lo . v`` the greedy pour can round, when no value is negative.

    Every step of the pour adds a product of a width or of the mass with a
    value of the prefix, each at least zero then, and the sum only grows
    (rounding is monotone), but for one: the unseen rest ``mass - q w`` of
    :func:`_pour_last`, which rounding can make negative. With ``u = 2**-53``
    and ``q <= (mass / w) (1 + u)``, the rest is at least ``-mass ((1 + u)**3
    - 1)`` and its product with a value of the prefix (at most ``last_v``) at
    least ``-2**-50 mass last_v``; twice that covers the rounding of this bound.
    No mass (``mass <= 0``, the pour adds nothing) needs no slack.
    """
    return mass * last_v * (2.0 ** -49) if mass > 0.0 else 0.0


cdef inline void _sweep_state(const CsrSweep* w, const Order* o, Py_ssize_t s,
                              int64_t* keys, double* lo_dot) noexcept nogil:
    """``v_out(s)`` and ``policy_out(s)`` of one state (ties to the lowest action).

    ``lo . v`` of every action comes first (into ``lo_dot``, ``(A,)``). When
    no value is negative (the smallest value of the order is at least zero),
    the pour only adds to it, so ``c(s, a) + lo . v`` (less
    :func:`_pour_slack`) is a lower bound of the action's value: the action
    with the smallest bound is solved first, then the others in index order,
    each only when its bound is not above the best value found (a skipped one
    is worse). The best value and the lowest action reaching it are kept: the
    choice and the floats of solving every action in index order.
    """
    cdef Py_ssize_t a, i, k, best_a = 0, A = w.n_actions, first = 0
    cdef const int64_t* ptr = w.indptr + s * A
    cdef const double* costs = w.costs + s * A
    cdef double q, best = INFINITY, lowest = INFINITY
    cdef bint bounded = o.val[0] >= 0.0
    if w.n_states >= PREFETCH_MIN_STATES and s + PREFETCH_AHEAD < w.n_states:
        prefetch_values(w.cols, ptr + PREFETCH_AHEAD * A, A, o.v)
    for a in range(A):
        lo_dot[a] = sparse_dot(w.lo + ptr[a], w.cols + ptr[a], ptr[a + 1] - ptr[a], o.v)
        q = costs[a] + lo_dot[a]
        if bounded and q < lowest:
            lowest = q
            first = a
    for k in range(A):
        a = first if k == 0 else (k - 1 if k <= first else k)
        i = s * A + a
        if bounded and costs[a] + (lo_dot[a] - _pour_slack(w.mass[i], o.last_v)) > best:
            continue
        q = costs[a] + _inner_csr(w.cols + ptr[a], w.gap + ptr[a], ptr[a + 1] - ptr[a],
                                  lo_dot[a], w.gap_unseen[i], w.mass[i], o, keys)
        if q < best or (q == best and a < best_a):
            best = q
            best_a = a
    w.v_out[s] = best
    w.policy_out[s] = best_a


def sweep_csr(CsrBoxes boxes, const double[:, ::1] costs, const double[::1] v_ext,
              double[::1] v_out, Py_ssize_t[::1] policy_out, int n_threads):
    """One EVI sweep on CSR boxes: ``v_out(s) = min_a c(s,a) + inner(s, a, v)``.

    Sorts the ``boxes.prefix`` smallest next states of ``v`` (from the order
    the previous sweep on ``boxes`` left, see :func:`_pour_order`), then solves
    every inner problem with :func:`_inner_csr`, states split among
    ``n_threads`` threads (a plain loop for one). Ties between actions go to
    the lowest index. Returns ``max_s |v_out(s) - v_ext(s)|``.

    Each thread's scratch space (the keys of a pair's stored entries, and
    ``lo . v`` of a state's actions) is kept on the stack when all of them fit
    in :data:`SCRATCH_LOCAL` entries, else allocated; the whole sweep runs in
    one release of the GIL.

    Raises
    ------
    MemoryError
        If the threads' scratch space cannot be allocated.
    """
    cdef Py_ssize_t S = costs.shape[0], s, tid, width = max(boxes.widest, SORT_NET)
    cdef Py_ssize_t stride = width + boxes.n_actions
    cdef int threads = max(n_threads, 1)
    cdef double q
    cdef CsrSweep w = boxes.arrays
    cdef Order o
    cdef int64_t local[SCRATCH_LOCAL]
    cdef int64_t* scratch = local
    if threads * stride > SCRATCH_LOCAL:
        scratch = <int64_t*>malloc(threads * stride * sizeof(int64_t))
        if scratch == NULL:
            raise MemoryError("no memory left for the scratch space of an EVI sweep")
    w.costs = &costs[0, 0]
    w.v_out = &v_out[0]
    w.policy_out = &policy_out[0]
    try:
        with nogil:
            _pour_order(&o, &v_ext[0], S, boxes.prefix, boxes.ordered, w.room, w.order_val,
                        w.order_idx, w.cum_v, w.rank)
            if threads == 1:
                for s in range(S):
                    _sweep_state(&w, &o, s, scratch, <double*>(scratch + width))
            else:
                for s in prange(S, num_threads=threads, schedule="dynamic",
                                chunksize=sweep_chunk(S, threads)):
                    tid = threadid()
                    _sweep_state(&w, &o, s, scratch + tid * stride,
                                 <double*>(scratch + tid * stride + width))
            q = residual(&v_out[0], &v_ext[0], S)
        boxes.ordered = o.n
    finally:
        if scratch != local:
            free(scratch)
    return q


cdef inline double _pour_dense(const double* gap, double mass, const double* v,
                               const Py_ssize_t* order, Py_ssize_t n) noexcept nogil:
    """Value of the mass poured greedily in pour order, stopping once it is spent.

    Whole blocks of four next states are poured at once while they fit in the
    leftover mass (a short dependency chain); the block where the mass runs
    out is poured one state at a time.
    """
    cdef double acc = 0.0
    cdef double g0, g1, g2, g3, block
    cdef Py_ssize_t i = 0, j
    while i + 4 <= n:
        g0 = gap[order[i]]
        g1 = gap[order[i + 1]]
        g2 = gap[order[i + 2]]
        g3 = gap[order[i + 3]]
        block = (g0 + g1) + (g2 + g3)
        if block >= mass:
            break
        acc = acc + ((g0 * v[order[i]] + g1 * v[order[i + 1]])
                     + (g2 * v[order[i + 2]] + g3 * v[order[i + 3]]))
        mass = mass - block
        i = i + 4
    while mass > 0.0 and i < n:
        j = order[i]
        g0 = gap[j]
        if g0 >= mass:
            return acc + mass * v[j]
        acc = acc + g0 * v[j]
        mass = mass - g0
        i = i + 1
    return acc


cdef inline void _dense_state(const DenseSweep* d, Py_ssize_t s, double* lo_dot) noexcept nogil:
    """``v_out(s)`` and ``policy_out(s)`` of one state on dense boxes (ties to the lowest
    action), skipping the pour of actions that cannot win as :func:`_sweep_state` does:
    here the pour adds products of widths, or of the mass, with values, none negative,
    so ``c(s, a) + lo . v`` is a lower bound with no slack."""
    cdef Py_ssize_t a, i, k, best_a = 0, first = 0, A = d.n_actions
    cdef const double* costs = d.costs + s * A
    cdef double q, best = INFINITY, lowest = INFINITY
    for a in range(A):
        i = s * A + a
        lo_dot[a] = sparse_dot(d.lo_vals + d.lo_ptr[i], d.lo_cols + d.lo_ptr[i],
                               d.lo_ptr[i + 1] - d.lo_ptr[i], d.v)
        q = costs[a] + lo_dot[a]
        if d.bounded and q < lowest:
            lowest = q
            first = a
    for k in range(A):
        a = first if k == 0 else (k - 1 if k <= first else k)
        i = s * A + a
        if d.bounded and costs[a] + lo_dot[a] > best:
            continue
        q = costs[a] + (lo_dot[a] + _pour_dense(d.gap + i * d.n_next, d.mass[i], d.v, d.order,
                                                d.n_next))
        if q < best or (q == best and a < best_a):
            best = q
            best_a = a
    d.v_out[s] = best
    d.policy_out[s] = best_a


def sweep_dense(DenseBoxes boxes, const double[:, ::1] costs, const double[::1] v_ext,
                double[::1] v_out, Py_ssize_t[::1] policy_out, int n_threads):
    """One EVI sweep on dense boxes; sorts ``v`` fully, returns ``max_s |v_out(s) - v_ext(s)|``.

    Ties between actions go to the lowest index; an action that cannot win is
    not poured (:func:`_dense_state`).

    Raises
    ------
    MemoryError
        If the threads' scratch space cannot be allocated.
    """
    cdef Py_ssize_t S = costs.shape[0], A = costs.shape[1], S1 = S + 1, s, tid
    cdef int threads = max(n_threads, 1)
    cdef double q
    cdef const int64_t[::1] lo_ptr = boxes.lo_ptr
    cdef const int[::1] lo_cols = boxes.lo_cols
    cdef const double[::1] lo_vals = boxes.lo_vals
    cdef const double[:, :, ::1] gap = boxes.gap
    cdef const double[:, ::1] mass = boxes.mass
    cdef Py_ssize_t[::1] order = boxes.order
    cdef double[::1] val = np.empty(S1)
    cdef double local[SCRATCH_LOCAL]
    cdef double* scratch = local
    cdef DenseSweep d
    if threads * A > SCRATCH_LOCAL:
        scratch = <double*>malloc(threads * A * sizeof(double))
        if scratch == NULL:
            raise MemoryError("no memory left for the scratch space of an EVI sweep")
    d.lo_ptr = &lo_ptr[0]
    d.lo_cols = &lo_cols[0] if lo_cols.shape[0] else NULL
    d.lo_vals = &lo_vals[0] if lo_vals.shape[0] else NULL
    d.gap = &gap[0, 0, 0]
    d.mass = &mass[0, 0]
    d.costs = &costs[0, 0]
    d.v = &v_ext[0]
    d.order = &order[0]
    d.v_out = &v_out[0]
    d.policy_out = &policy_out[0]
    d.n_actions = A
    d.n_next = S1
    try:
        with nogil:
            _smallest_order(&v_ext[0], S, S1, &val[0], &order[0])
            d.bounded = val[0] >= 0.0
            if threads == 1:
                for s in range(S):
                    _dense_state(&d, s, scratch)
            else:
                for s in prange(S, num_threads=threads, schedule="dynamic",
                                chunksize=sweep_chunk(S, threads)):
                    tid = threadid()
                    _dense_state(&d, s, scratch + tid * A)
            q = residual(&v_out[0], &v_ext[0], S)
    finally:
        if scratch != local:
            free(scratch)
    return q


# ---------------------------------------------------------------------------
# Optimistic kernels: the pieces of a reference.poured.PouredKernel


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
