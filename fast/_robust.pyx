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
"""

import numpy as np

cimport cython
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, isinf
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, qsort


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


cdef double WALK_FACTOR = 8.0
"""A row is walked position by position when its pour is at most this many times its
stored entries long (no sort); longer pours sort the entries and jump the unseen runs."""


cdef double SCATTER_FRACTION = 1.0 / 256.0
"""The poured distribution of a row holding at least this fraction of the next states is put in
column order through a bitmap of the columns; a shorter one is sorted."""


cdef int _compare(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef struct Order:
    const int64_t* order      # next state at each position
    const int64_t* rank       # position of each next state
    const double* cum_v       # prefix sums of the finite values along the order
    const int64_t* cum_inf    # prefix counts of the infinite values along the order
    const double* v           # values, shape (S+1,)


cdef inline double _run(const Order* o, int64_t start, int64_t stop, double width,
                        double* mass, int64_t* touched, bint* infinite) noexcept nogil:
    """Pour into the unseen next states at positions ``start..stop-1``, each up to ``width``.

    Returns the value poured (finite part), lowers ``mass``, sets
    ``touched`` to the number of positions receiving positive mass and
    ``infinite`` when one of them has an infinite value.
    """
    cdef int64_t length = stop - start, q
    cdef double left
    touched[0] = 0
    if length <= 0 or mass[0] <= 0.0 or width <= 0.0:
        return 0.0
    if length * width < mass[0]:
        mass[0] = mass[0] - length * width
        touched[0] = length
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
    touched[0] = q + (1 if left > 0.0 else 0)
    if o.cum_inf[start + touched[0]] > o.cum_inf[start]:
        infinite[0] = True
    if left > 0.0:
        return width * (o.cum_v[start + q] - o.cum_v[start]) + left * (
            0.0 if isinf(o.v[o.order[start + q]]) else o.v[o.order[start + q]])
    return width * (o.cum_v[start + q] - o.cum_v[start])


cdef inline double _lower_value(const Order* o, const int64_t* cols, const double* lo,
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


cdef double _pour_row(const Order* o, const int64_t* cols, const double* lo, const double* hi,
                      int64_t k, double width, int64_t n_next, int64_t* keys, double* poured,
                      int64_t* n_unseen_touched, int64_t* run_start,
                      int64_t* run_len) noexcept nogil:
    """Value of one row's pour; ``poured[j]`` gets the mass added to stored entry ``j``.

    ``keys`` is scratch of length ``k``. The touched unseen runs are reported
    as ``run_start``/``run_len`` (positions in the order, at most ``k + 1``
    runs), their number in ``n_unseen_touched``.
    """
    cdef double mass = 1.0, g, vj, part
    cdef int64_t j, t, r, pos = 0, touched, n_runs = 0
    cdef bint infinite = False
    cdef double acc = _lower_value(o, cols, lo, k, &mass, &infinite)
    for j in range(k):
        poured[j] = 0.0
        keys[j] = o.rank[cols[j]] * (k + 1) + j
    qsort(keys, k, sizeof(int64_t), _compare)
    for t in range(k + 1):
        if mass <= 0.0:
            break
        if t < k:
            r = keys[t] // (k + 1)
            j = keys[t] % (k + 1)
        else:
            r = n_next
        part = _run(o, pos, r, width, &mass, &touched, &infinite)
        acc = acc + part
        if touched > 0:
            run_start[n_runs] = pos
            run_len[n_runs] = touched
            n_runs = n_runs + 1
        if t == k or mass <= 0.0:
            break
        g = hi[j] - lo[j]
        vj = o.v[cols[j]]
        if g > 0.0:
            if g >= mass:
                poured[j] = mass
                g = mass
                mass = 0.0
            else:
                poured[j] = g
                mass = mass - g
            if isinf(vj):
                infinite = True
            else:
                acc = acc + g * vj
        pos = r + 1
    n_unseen_touched[0] = n_runs
    if infinite:
        return INFINITY
    return acc


cdef double _pour_row_walk(const Order* o, const int64_t* cols, const double* lo,
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


cdef Order _order(const int64_t[::1] order, const int64_t[::1] rank, const double[::1] cum_v,
                  const int64_t[::1] cum_inf, const double[::1] v) noexcept nogil:
    cdef Order o
    o.order = &order[0]
    o.rank = &rank[0]
    o.cum_v = &cum_v[0]
    o.cum_inf = &cum_inf[0]
    o.v = &v[0]
    return o


def pour_values(const int64_t[::1] indptr, const int64_t[::1] cols, const double[::1] lo,
                const double[::1] hi, const double[::1] hi_unseen, const int64_t[::1] rows,
                const double[::1] v, const int64_t[::1] order, const int64_t[::1] rank,
                const double[::1] cum_v, const int64_t[::1] cum_inf, double[::1] out,
                int widest, int n_threads):
    """``out[i]`` = value of the pour of row ``rows[i]`` against ``v`` in ``order``."""
    cdef Py_ssize_t n = rows.shape[0], i
    cdef int64_t row, k, n_runs
    cdef int64_t n_next = v.shape[0]
    cdef Order o = _order(order, rank, cum_v, cum_inf, v)
    cdef int64_t* keys = NULL
    cdef double* poured = NULL
    cdef int64_t* runs = NULL
    cdef int64_t* local = NULL
    cdef int64_t j, m
    cdef double free_mass, walk
    with nogil, parallel(num_threads=n_threads):
        keys = <int64_t*>malloc((widest + 1) * sizeof(int64_t))
        poured = <double*>malloc((widest + 1) * sizeof(double))
        runs = <int64_t*>malloc(2 * (widest + 2) * sizeof(int64_t))
        local = <int64_t*>malloc(n_next * sizeof(int64_t))
        for m in range(n_next):
            local[m] = -1
        for i in prange(n, schedule="dynamic", chunksize=64):
            row = rows[i]
            k = indptr[row + 1] - indptr[row]
            free_mass = 1.0
            for j in range(indptr[row], indptr[row + 1]):
                free_mass = free_mass - lo[j]
            walk = k + 1.0
            if hi_unseen[row] > 0.0:
                walk = walk + free_mass / hi_unseen[row]
            if walk < WALK_FACTOR * (k + 1):
                with cython.boundscheck(False):
                    out[i] = _pour_row_walk(&o, &cols[indptr[row]], &lo[indptr[row]],
                                            &hi[indptr[row]], k, hi_unseen[row], n_next, local)
            else:
                with cython.boundscheck(False):
                    out[i] = _pour_row(&o, &cols[indptr[row]], &lo[indptr[row]], &hi[indptr[row]],
                                       k, hi_unseen[row], n_next, keys, poured, &n_runs, runs,
                                       runs + widest + 2)
        free(keys)
        free(poured)
        free(runs)
        free(local)


def pour_kernel(const int64_t[::1] indptr, const int64_t[::1] cols, const double[::1] lo,
                const double[::1] hi, const double[::1] hi_unseen, const int64_t[::1] rows,
                const double[::1] v, const int64_t[::1] order, const int64_t[::1] rank,
                const double[::1] cum_v, const int64_t[::1] cum_inf, double[::1] out,
                int widest):
    """Values (into ``out``) and poured distributions of ``rows`` as CSR parts, columns sorted."""
    cdef Py_ssize_t n = rows.shape[0], i
    cdef int64_t row, k, n_runs, j, t, p, count
    cdef int64_t n_next = v.shape[0]
    cdef Order o = _order(order, rank, cum_v, cum_inf, v)
    keys_arr = np.empty(widest + 1, dtype=np.int64)
    poured_arr = np.empty(widest + 1, dtype=np.float64)
    runs_arr = np.empty(2 * (widest + 2), dtype=np.int64)
    cdef int64_t[::1] keys = keys_arr
    cdef double[::1] poured = poured_arr
    cdef int64_t[::1] runs = runs_arr
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] ptr = out_ptr
    for i in range(n):
        row = rows[i]
        k = indptr[row + 1] - indptr[row]
        with cython.boundscheck(False):
            out[i] = _pour_row(&o, &cols[indptr[row]], &lo[indptr[row]], &hi[indptr[row]], k,
                               hi_unseen[row], n_next, &keys[0], &poured[0], &n_runs, &runs[0],
                               &runs[widest + 2])
        count = 0
        for j in range(k):
            if lo[indptr[row] + j] + poured[j] > 0.0:
                count = count + 1
        for t in range(n_runs):
            count = count + runs[widest + 2 + t]
        ptr[i + 1] = ptr[i] + count
    out_idx = np.empty(ptr[n], dtype=np.int64)
    out_val = np.empty(ptr[n], dtype=np.float64)
    cdef int64_t[::1] idx = out_idx
    cdef double[::1] val = out_val
    slot_arr = np.empty(n_next, dtype=np.int64)
    bits_arr = np.zeros((n_next + 63) // 64, dtype=np.uint64)
    sort_keys_arr = np.empty(n_next, dtype=np.int64)
    sort_vals_arr = np.empty(n_next, dtype=np.float64)
    cdef int64_t[::1] slot = slot_arr
    cdef uint64_t[::1] bits = bits_arr
    cdef int64_t[::1] sort_keys = sort_keys_arr
    cdef double[::1] sort_vals = sort_vals_arr
    cdef double mass, width
    for i in range(n):
        row = rows[i]
        k = indptr[row + 1] - indptr[row]
        with cython.boundscheck(False):
            _pour_row(&o, &cols[indptr[row]], &lo[indptr[row]], &hi[indptr[row]], k,
                      hi_unseen[row], n_next, &keys[0], &poured[0], &n_runs, &runs[0],
                      &runs[widest + 2])
        p = ptr[i]
        mass = 1.0
        for j in range(k):
            mass = mass - lo[indptr[row] + j] - poured[j]
            if lo[indptr[row] + j] + poured[j] > 0.0:
                idx[p] = cols[indptr[row] + j]
                val[p] = lo[indptr[row] + j] + poured[j]
                p = p + 1
        width = hi_unseen[row]
        for t in range(n_runs):
            for j in range(runs[widest + 2 + t]):
                idx[p] = order[runs[t] + j]
                val[p] = width if mass >= width else (mass if mass > 0.0 else 0.0)
                mass = mass - val[p]
                p = p + 1
        _sort_row(&idx[ptr[i]], &val[ptr[i]], ptr[i + 1] - ptr[i], n_next, &slot[0], &bits[0],
                  &sort_keys[0], &sort_vals[0])
    return out_ptr, out_idx, out_val


cdef void _sort_row(int64_t* idx, double* val, int64_t m, int64_t n_next, int64_t* slot,
                    uint64_t* bits, int64_t* keys, double* vals) noexcept nogil:
    """Sort a row's ``m`` entries (distinct columns below ``n_next``) by column, in place.

    A row holding at least :data:`SCATTER_FRACTION` of the columns marks them
    in the bitmap ``bits`` (``ceil(n_next / 64)`` words, all zero on entry and
    on return), remembers their entries in ``slot`` and reads the marks back
    word by word, ``O(m + n_next / 64)``; a shorter one is sorted by ``qsort``
    on ``column * m + entry`` keys, ``O(m log m)``. ``keys`` and ``vals`` are
    scratch of length ``n_next``.
    """
    cdef int64_t j, c, q, w
    cdef uint64_t word
    if m < 2:
        return
    for j in range(m):
        vals[j] = val[j]
    if m >= SCATTER_FRACTION * n_next:
        for j in range(m):
            c = idx[j]
            slot[c] = j
            bits[c >> 6] |= (<uint64_t>1) << (c & 63)
        q = 0
        for w in range((n_next + 63) >> 6):
            word = bits[w]
            bits[w] = 0
            while word:
                c = (w << 6) + __builtin_ctzll(word)
                word &= word - 1
                idx[q] = c
                val[q] = vals[slot[c]]
                q = q + 1
        return
    for j in range(m):
        keys[j] = idx[j] * m + j
    qsort(keys, m, sizeof(int64_t), _compare)
    for j in range(m):
        idx[j] = keys[j] // m
        val[j] = vals[keys[j] % m]
