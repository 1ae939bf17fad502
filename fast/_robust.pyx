# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled greedy pour over sparse per-entry confidence boxes, in either order.

Private module of the ``fast`` backend. The boxes are those of
:class:`reference.confidence.ConfidenceBoxes`: row ``i = s*A + a`` stores the
intervals ``[lo, hi]`` of its observed next states (columns ascending), and
every other next state has ``[0, hi_unseen[i]]``. The pour of a row starts at
the lower ends and fills next states in a given order (the optimist's:
increasing value, goal first; the adversary's: decreasing value, goal last),
each up to its upper end, until the mass ``1 - sum lo`` is spent.

A row's stored entries are sorted by their position in the order; the unseen
next states between two of them form a run of equal widths, poured in one
step with prefix sums of the values along the order, so a row costs
``O(k log k)`` for ``k`` stored entries whatever the pour length. A row whose
pour is short compared with its entries (dense rows) is walked position by
position instead, at ``O(k)``. Values may be ``+inf``: a row that puts
positive mass on such a state is worth ``inf``.

:func:`pour_values` returns the value of each row's pour; :func:`pour_pieces`
returns the pours themselves as the pieces of a
``reference.poured.PouredKernel`` (the stored entries' probabilities, and
where along the order each pour stopped), ``O(S + stored)`` memory whatever
the pour lengths; ``fast/_poured.pyx`` evaluates such kernels.
:func:`sort_order`, :func:`repair_order` and :func:`pour_walk` give the pour order of a
vector (``fast/_order.pxd``) and the prefix sums along it.
"""

import numpy as np

from reference.errors import ShapeError, SparseFormatError, SSPValueError

cimport cython
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, isinf
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc

from ._linalg cimport pour_row
from ._order cimport (WholeOrder, _entry_key, _entry_position, _entry_rank, _order_bits,
                      _radix_sort, _sort_keys, repair_whole_order)


cdef double WALK_FACTOR = 8.0
"""A row is walked position by position when its pour is at most this many times its
stored entries long (no sort); longer pours sort the entries and jump the unseen runs."""



cdef inline double _run(const WholeOrder* o, int64_t start, int64_t stop, double width,
                        double* mass, bint* infinite) noexcept nogil:
    """Pour into the unseen next states at positions ``start..stop-1``, each up to ``width``.

    Returns the value poured (finite part), lowers ``mass`` and sets
    ``infinite`` when a position receiving positive mass has an infinite
    value.
    """
    cdef int64_t length = stop - start, q, touched
    cdef double left
    if length <= 0 or mass[0] <= 0.0 or width <= 0.0:
        return 0.0
    if length * width < mass[0]:
        mass[0] = mass[0] - length * width
        if o.cum_inf[stop] > o.cum_inf[start]:
            infinite[0] = True
        return width * (o.cum_v[stop] - o.cum_v[start])
    q = <int64_t>(mass[0] / width)
    if q >= length:
        q = length
        left = 0.0
    else:
        left = mass[0] - q * width
    mass[0] = 0.0
    touched = q + (1 if left > 0.0 else 0)
    if o.cum_inf[start + touched] > o.cum_inf[start]:
        infinite[0] = True
    if left > 0.0:
        return width * (o.cum_v[start + q] - o.cum_v[start]) + left * (
            0.0 if isinf(o.v[o.order[start + q]]) else o.v[o.order[start + q]])
    return width * (o.cum_v[start + q] - o.cum_v[start])


cdef inline double _lower_value(const WholeOrder* o, const int64_t* cols, const double* lo,
                               int64_t k, double* mass, bint* infinite) noexcept nogil:
    """``sum lo v`` over a row's stored entries (finite part); lowers ``mass`` by ``sum lo``.

    Sets ``infinite`` when a positive lower end meets an infinite value.
    """
    cdef double acc = 0.0
    cdef int64_t j
    for j in range(k):
        mass[0] = mass[0] - lo[j]
        if lo[j] > 0.0:
            if isinf(o.v[cols[j]]):
                infinite[0] = True
            else:
                acc = acc + lo[j] * o.v[cols[j]]
    return acc


cdef double _pour_row(const WholeOrder* o, const int64_t* cols, const double* lo,
                      const double* hi, int64_t k, double width, int64_t n_next,
                      int64_t* keys) noexcept nogil:
    """Value of one row's pour, jumping the unseen runs between its sorted stored entries.

    ``keys`` is scratch of length ``k``.
    """
    cdef double mass = 1.0, g, vj
    cdef int64_t j = 0, t, r, pos = 0
    cdef bint infinite = False
    cdef double acc = _lower_value(o, cols, lo, k, &mass, &infinite)
    for j in range(k):
        keys[j] = _entry_key(o.rank[cols[j]], j)
    _sort_keys(keys, k)
    for t in range(k + 1):
        if mass <= 0.0:
            break
        if t < k:
            r = _entry_rank(keys[t])
            j = _entry_position(keys[t])
        else:
            r = n_next
        acc = acc + _run(o, pos, r, width, &mass, &infinite)
        if t == k or mass <= 0.0:
            break
        g = hi[j] - lo[j]
        vj = o.v[cols[j]]
        if g > 0.0:
            if g >= mass:
                g = mass
                mass = 0.0
            else:
                mass = mass - g
            if isinf(vj):
                infinite = True
            else:
                acc = acc + g * vj
        pos = r + 1
    if infinite:
        return INFINITY
    return acc


cdef double _pour_row_walk(const WholeOrder* o, const int64_t* cols, const double* lo,
                           const double* hi, int64_t k, double width, int64_t n_next,
                           int64_t* local) noexcept nogil:
    """Value of one row's pour, walking the order position by position.

    ``local`` (length ``S+1``, all ``-1`` on entry and on return) maps a
    next state to its stored entry. Costs ``O(k)`` plus the positions walked,
    which suits rows with many stored entries and a short pour.
    """
    cdef double mass = 1.0, g, vj
    cdef int64_t j, t, state
    cdef bint infinite = False
    cdef double acc = _lower_value(o, cols, lo, k, &mass, &infinite)
    for j in range(k):
        local[cols[j]] = j
    t = 0
    while mass > 0.0 and t < n_next:
        state = o.order[t]
        j = local[state]
        g = width if j < 0 else hi[j] - lo[j]
        if g > 0.0:
            if g > mass:
                g = mass
            mass = mass - g
            vj = o.v[state]
            if isinf(vj):
                infinite = True
            else:
                acc = acc + g * vj
        t = t + 1
    for j in range(k):
        local[cols[j]] = -1
    if infinite:
        return INFINITY
    return acc


cdef PourBoxes pour_boxes(const int64_t[::1] indptr, const int64_t[::1] cols,
                          const double[::1] lo, const double[::1] hi,
                          const double[::1] hi_unseen) except *:
    """The pointers of the boxes' arrays and their number of rows, their lengths checked."""
    cdef PourBoxes b
    b.n_rows = hi_unseen.shape[0]
    if (indptr.shape[0] != b.n_rows + 1 or lo.shape[0] != cols.shape[0]
            or hi.shape[0] != cols.shape[0]):
        raise SparseFormatError(
            f"boxes: `indptr` must have one entry more than `hi_unseen`, `lo` and `hi` that of "
            f"`cols`; got lengths indptr {indptr.shape[0]}, hi_unseen {b.n_rows}, cols "
            f"{cols.shape[0]}, lo {lo.shape[0]}, hi {hi.shape[0]}.")
    with cython.boundscheck(False):
        b.indptr = &indptr[0]
        b.hi_unseen = &hi_unseen[0]
        b.cols = &cols[0]
        b.lo = &lo[0]
        b.hi = &hi[0]
    return b


cdef WholeOrder whole_order(const int64_t[::1] order, const int64_t[::1] rank,
                            const double[::1] cum_v, const int64_t[::1] cum_inf,
                            const double[::1] v) noexcept nogil:
    """The pointers of a walk ``(order, rank, cum_v, cum_inf)`` of ``v``."""
    cdef WholeOrder o
    o.order = &order[0]
    o.rank = &rank[0]
    o.cum_v = &cum_v[0]
    o.cum_inf = &cum_inf[0]
    o.v = &v[0]
    return o


cdef inline int64_t _row(const int64_t* rows, int64_t first, Py_ssize_t i) noexcept nogil:
    """Row ``i`` of a block: ``rows[i]``, or ``first + i`` when ``rows`` is NULL."""
    return first + i if rows == NULL else rows[i]


cdef int pour_failed(const PourBoxes* b, int status) except -1:
    """Raise the error of the status of :func:`pour_rows` (nothing for 0)."""
    if status == -1:
        raise MemoryError()
    if status == -2:
        raise SSPValueError(f"pour_values: `rows` must be rows of the boxes, from 0 to "
                            f"{b.n_rows - 1}; got one outside.")
    return 0


cdef int pour_rows(const PourBoxes* b, const int64_t* rows, int64_t first, Py_ssize_t n,
                   const WholeOrder* o, int64_t n_next, double* out,
                   int n_threads) noexcept nogil:
    """``out[i]`` = value of the pour of row ``rows[i]`` (``first + i`` when ``rows`` is NULL)
    against ``o.v`` (``n_next`` values) in its order; -1 when memory runs out, -2 (nothing
    read past the rows) when a row is not one of the boxes', else 0."""
    cdef Py_ssize_t i
    cdef int64_t row, k, j, e, m = 0, widest = 0
    cdef double free_mass, walk
    cdef int64_t* keys = NULL
    cdef int64_t* local = NULL
    cdef int failed = 0
    cdef int* failure = &failed
    for i in range(n):
        row = _row(rows, first, i)
        if row < 0 or row >= b.n_rows:
            return -2
        widest = max(widest, b.indptr[row + 1] - b.indptr[row])
    with parallel(num_threads=n_threads):
        keys = <int64_t*>malloc((widest + 1) * sizeof(int64_t))
        local = <int64_t*>malloc(n_next * sizeof(int64_t))
        if local != NULL:
            for m in range(n_next):
                local[m] = -1
        for i in prange(n, schedule="dynamic", chunksize=64):
            if keys == NULL or local == NULL:
                failure[0] = 1
                continue
            row = _row(rows, first, i)
            j = b.indptr[row]
            k = b.indptr[row + 1] - j
            free_mass = 1.0
            for e in range(j, j + k):
                free_mass = free_mass - b.lo[e]
            walk = k + 1.0
            if b.hi_unseen[row] > 0.0:
                walk = walk + free_mass / b.hi_unseen[row]
            if walk < WALK_FACTOR * (k + 1):
                out[i] = _pour_row_walk(o, &b.cols[j], &b.lo[j], &b.hi[j], k,
                                        b.hi_unseen[row], n_next, local)
            else:
                out[i] = _pour_row(o, &b.cols[j], &b.lo[j], &b.hi[j], k, b.hi_unseen[row],
                                   n_next, keys)
        free(keys)
        free(local)
    return -1 if failed else 0


def pour_values(const int64_t[::1] indptr, const int64_t[::1] cols, const double[::1] lo,
                const double[::1] hi, const double[::1] hi_unseen, const int64_t[::1] rows,
                const double[::1] v, const int64_t[::1] order, const int64_t[::1] rank,
                const double[::1] cum_v, const int64_t[::1] cum_inf, double[::1] out,
                int n_threads):
    """``out[i]`` = value of the pour of row ``rows[i]`` against ``v`` in ``order``."""
    cdef PourBoxes b = pour_boxes(indptr, cols, lo, hi, hi_unseen)
    cdef WholeOrder o = whole_order(order, rank, cum_v, cum_inf, v)
    cdef int status
    if out.shape[0] < rows.shape[0]:
        raise ShapeError(f"pour_values: `out` must have at least one entry per row "
                         f"({rows.shape[0]}); got {out.shape[0]}.")
    with nogil:
        with cython.boundscheck(False):
            status = pour_rows(&b, &rows[0], 0, rows.shape[0], &o, v.shape[0], &out[0],
                               n_threads)
    pour_failed(&b, status)


def pour_pieces(const int64_t[::1] indptr, const int64_t[::1] cols, const double[::1] lo,
                const double[::1] hi, const double[::1] hi_unseen, const int64_t[::1] rows,
                const int64_t[::1] rank, int n_threads):
    """The pour of ``rows`` along the order of ``rank``, as ``PouredKernel`` pieces.

    Row ``i`` stores the entries of box row ``rows[i]`` (columns ascending),
    their ``data`` its lower ends plus the mass poured; its width is
    ``hi_unseen``, its free mass ``1 - sum lo`` summed in index order, and
    :func:`fast._linalg.pour_row` pours it after sorting the entries by rank
    (``O(k log k)`` for ``k`` stored entries; rows in parallel). Returns
    ``(indptr, indices, data, width, reach, partial)``.
    """
    cdef PourBoxes b = pour_boxes(indptr, cols, lo, hi, hi_unseen)
    with cython.boundscheck(False):
        return pieces_of(&b, &rows[0], rows.shape[0], &rank[0], rank.shape[0], n_threads)


cdef tuple pieces_of(const PourBoxes* b, const int64_t* rows, Py_ssize_t n, const int64_t* rank,
                     int64_t n_next, int n_threads):
    """:func:`pour_pieces` of the rows ``rows[:n]`` of the boxes ``b``, along the order of
    the positions ``rank`` of the ``n_next`` next states."""
    cdef Py_ssize_t i
    cdef int64_t row, k, j, first, widest = 0
    cdef double total
    cdef int failed = 0
    cdef int* failure = &failed
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] ptr = out_ptr
    for i in range(n):
        if rows[i] < 0 or rows[i] >= b.n_rows:
            raise SSPValueError(f"pour_pieces: `rows` must be rows of the boxes, from 0 to "
                                f"{b.n_rows - 1}; got {rows[i]}.")
        k = b.indptr[rows[i] + 1] - b.indptr[rows[i]]
        ptr[i + 1] = ptr[i] + k
        widest = max(widest, k)
    indices = np.empty(ptr[n], dtype=np.int64)
    data = np.empty(ptr[n])
    width = np.empty(n)
    reach = np.empty(n, dtype=np.int64)
    partial = np.empty(n)
    cdef int64_t[::1] idx = indices, reach_v = reach
    cdef double[::1] val = data, width_v = width, partial_v = partial
    cdef int64_t* keys = NULL
    cdef Py_ssize_t* ranks = NULL
    cdef Py_ssize_t* items = NULL
    cdef double* gap = NULL
    with nogil, parallel(num_threads=n_threads):
        keys = <int64_t*>malloc((widest + 1) * sizeof(int64_t))
        ranks = <Py_ssize_t*>malloc((widest + 1) * sizeof(Py_ssize_t))
        items = <Py_ssize_t*>malloc((widest + 1) * sizeof(Py_ssize_t))
        gap = <double*>malloc((widest + 1) * sizeof(double))
        for i in prange(n, schedule="dynamic", chunksize=64):
            if keys == NULL or ranks == NULL or items == NULL or gap == NULL:
                failure[0] = 1
                continue
            row = rows[i]
            first = b.indptr[row]
            k = b.indptr[row + 1] - first
            total = 0.0
            for j in range(k):
                idx[ptr[i] + j] = b.cols[first + j]
                val[ptr[i] + j] = b.lo[first + j]
                total = total + b.lo[first + j]
                gap[j] = b.hi[first + j] - b.lo[first + j]
                keys[j] = _entry_key(rank[b.cols[first + j]], j)
            _sort_keys(keys, k)
            for j in range(k):
                ranks[j] = _entry_rank(keys[j])
                items[j] = _entry_position(keys[j])
            width_v[i] = b.hi_unseen[row]
            with cython.boundscheck(False):
                pour_row(ranks, items, k, gap, b.hi_unseen[row], 1.0 - total, n_next,
                         &val[ptr[i]], &reach_v[i], &partial_v[i])
        free(keys)
        free(ranks)
        free(items)
        free(gap)
    if failed:
        raise MemoryError()
    return out_ptr, indices, data, width, reach, partial


def pour_walk(const double[::1] v, const int64_t[::1] order, int64_t[::1] rank,
              double[::1] cum_v, int64_t[::1] cum_inf):
    """Write the position of every next state in ``order`` into ``rank``, and the prefix sums
    of the finite values (``cum_v``) and counts of the infinite ones (``cum_inf``) along it,
    both of length ``S+2`` and starting at 0: the additions of ``numpy.cumsum``, in order."""
    cdef Py_ssize_t n = order.shape[0], t
    cdef double value
    with nogil:
        cum_v[0] = 0.0
        cum_inf[0] = 0
        for t in range(n):
            rank[order[t]] = t
            value = v[order[t]]
            if isinf(value):
                cum_inf[t + 1] = cum_inf[t] + 1
                value = 0.0
            else:
                cum_inf[t + 1] = cum_inf[t]
            cum_v[t + 1] = value if t == 0 else cum_v[t] + value


def repair_order(const double[::1] v, int64_t[::1] order, bint descending, int64_t budget):
    """Sort ``order`` in place into the pour order of ``v`` (``reference.kernels.pour_order``:
    decreasing ``v``, goal last, or increasing, goal first; ties to the lower index), by
    insertion from the permutation it holds (the goal already in its place).

    The order is a strict total order on the states, so the result is the one sorted
    permutation, whatever the start. Returns ``False``, with ``order`` a permutation in
    any order, when ``v`` holds a NaN or the insertions would move more than ``budget``
    entries (an order far from sorted, left to a sort)."""
    cdef bint done
    with nogil:
        done = repair_whole_order(&v[0], &order[0], v.shape[0], descending, budget)
    return done


def sort_order(const double[::1] v, int64_t[::1] order, bint descending):
    """Write into ``order`` the pour order of ``v`` (``reference.kernels.pour_order``:
    decreasing ``v``, goal last, or increasing, goal first; ties to the lower index; ``-0.0``
    equal to ``+0.0``), both of length ``S+1``, by a stable least-significant-digit radix
    sort of the states' keys (``fast/_order.pxd``'s ``_order_bits``, complemented when
    ``descending``) in ascending index, ``O(S)`` a pass; a pass whose digit is the same for
    every key is skipped. Returns ``False``, writing nothing, on a NaN among the states'
    values or when the scratch space cannot be allocated."""
    cdef Py_ssize_t S = v.shape[0] - 1, t, first = 0 if descending else 1
    cdef uint64_t flip = ~(<uint64_t>0) if descending else 0
    cdef bint nan = False
    cdef double x
    if S < 0 or order.shape[0] != S + 1:
        raise ValueError("sort_order: `order` must have the size of `v`")
    cdef uint64_t* keys = <uint64_t*>malloc(2 * (S + 1) * sizeof(uint64_t))
    cdef Py_ssize_t* ids = <Py_ssize_t*>malloc(2 * (S + 1) * sizeof(Py_ssize_t))
    cdef uint64_t* keys_to
    cdef Py_ssize_t* ids_to
    if keys == NULL or ids == NULL:
        free(keys)
        free(ids)
        return False
    keys_to = keys + S + 1
    ids_to = ids + S + 1
    with nogil:
        for t in range(S):
            x = v[t]
            nan = nan | (x != x)
            keys[t] = _order_bits(x) ^ flip
            ids[t] = t
        if not nan:
            _radix_sort(&keys, &ids, &keys_to, &ids_to, S)
            for t in range(S):
                order[first + t] = ids[t]
            order[S if descending else 0] = S
    free(keys if keys < keys_to else keys_to)
    free(ids if ids < ids_to else ids_to)
    return not nan
