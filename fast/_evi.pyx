# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled sweeps of extended value iteration (App. B greedy inner problem).

Private module of the ``fast`` backend. Every kernel follows
``docs/semantics.md``: the inner problem starts at the lower ends of the
Lemma 5 boxes (``fast/_boxes.pyx``) and pours the leftover mass into next
states in ascending order of ``v`` (goal first, ties to the lower index;
``fast/_order.pxd``), each up to its upper end.

:func:`sweep_dense` / :func:`sweep_csr` ``(boxes, costs, v_ext, v_out,
policy_out, n_threads) -> residual`` run one EVI sweep, the partial sort of
``v`` included, and return ``max_s |v_out(s) - v(s)|``. ``v_ext`` always has
shape ``(S+1,)`` with ``v_ext[S] = 0`` at the goal.
"""

import numpy as np

cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, NAN
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from ._boxes cimport CsrBoxes, CsrSweep, DenseBoxes, DenseSweep
from ._linalg cimport (PREFETCH_AHEAD, PREFETCH_MIN_STATES, prefetch_values, residual,
                      sparse_dot, sweep_chunk)
from ._order cimport (KEY_SHIFT, SORT_NET, Order, _before, _entry_key, _key, _pour_order,
                      _smallest_order, _sort_keys, _sort_net)


cdef enum:
    # Keys a CSR sweep keeps on the stack (more are allocated).
    SCRATCH_LOCAL = 256

cdef int64_t KEY_MASK = 0xFFFFFFFF
# Key after every entry's: the padding of a run shorter than :data:`SORT_NET`.
cdef int64_t KEY_PAD = 0x7FFFFFFFFFFFFFFF


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
