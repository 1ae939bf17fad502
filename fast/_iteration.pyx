# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled robust policy iterations: the kernels ``adversary_iteration`` and
``optimist_iteration`` of docs/backends.md, each a whole policy iteration in one call.

Private module of the ``fast`` backend. The loops are those of ``reference.robust_loops``
(``adversary_loop``, ``optimist_loop``), with the same floats: each step calls the compiled
pours (``fast._robust.pieces_of`` and ``pour_rows``, the C functions behind ``pour_pieces`` and
``pour_values``), the compiled chain solve (``fast._poured.chain_solve``, the C function behind
``poured_solve``, after ``fast._poured.goal_reached``, that of ``reaches_goal``: the
adversary's loop searches once, on the edges every pour of its rows holds, and each kernel only
when those do not reach the goal) and the compiled product (``fast._poured.chain_apply``, that
of ``poured_apply``) on the kernels' pieces directly, by their pointers, and does the
tolerances, comparisons, argmins and switches in typed loops. No ``PouredKernel`` is built
inside the loop but for the rare evaluations the common path does not cover (a cost of 0, an
infinite state, a state that may not reach the goal, an infinite value), which go through the
kernel ``poured_chain_values`` and the kernel's own product as in the numpy loop; a solve whose
backward error is too large goes to the fallback of ``poured_chain_values``
(``reference.chains.poured_values``) directly. Each loop holds one kernel at a time: once its
products are taken, the last kernel is kept as its pour order while the next one is poured, and
poured again from it when the loop ends on it (``pour_pieces`` reads the order only through
``rank``: the same pieces).
"""

import numpy as np

from reference.errors import SSPValueError

cimport cython
from libc.math cimport isfinite, isinf, isnan
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp
from posix.time cimport CLOCK_PROCESS_CPUTIME_ID, clock_gettime, timespec

from . import _poured, _robust
from ._order cimport WholeOrder, repair_whole_order
from ._poured cimport ChainPieces, chain_apply, chain_pieces, chain_solve, goal_reached
from ._robust cimport PourBoxes, pieces_of, pour_boxes, pour_failed, pour_rows, whole_order
from ._switches cimport extended, switch_tolerance

cdef bint _timing = False
cdef double _direct = 0.0


def direct_seconds(bint timing):
    """The process CPU seconds spent in the chain solves, products, goal searches and pours
    these loops call directly (``fast._poured.chain_solve``, ``chain_apply``, ``goal_reached``,
    ``fast._robust.pour_rows``, ``pieces_of``: no Python function a wrapper could time) since
    the last call, which turns their timing on or off (off by default;
    ``benchmarks/certified_round.py`` counts them as compiled). The clock is the process CPU
    time (``CLOCK_PROCESS_CPUTIME_ID``), which counts every thread of the process: a time of
    these calls alone only single-threaded, as that benchmark pins it."""
    global _timing, _direct
    seconds, _direct, _timing = _direct, 0.0, timing
    return seconds


cdef inline double _now() noexcept nogil:
    cdef timespec now
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return now.tv_sec + 1e-9 * now.tv_nsec


cdef class Tools:
    """The boxes' arrays and the fixed arguments of one policy iteration.

    ``walk(v_ext, descending) -> (order, rank, cum_v, cum_inf)`` gives the pour order
    of a vector and its prefix sums; ``chain_values(kernel, costs, start)`` is the
    kernel ``poured_chain_values`` (raising ``failure`` when no candidate is
    acceptable) and ``fallback(kernel, costs, start)`` its answer when its compiled solve
    is rejected; ``make_kernel(order, rank, pieces, descending)`` builds a
    ``PouredKernel`` from pieces. ``pieces_threads`` and ``values_threads`` are the
    threads of ``pour_pieces`` (``S`` rows) and of ``pour_values`` (``S*A`` rows);
    ``rtol``, ``rounds``, ``maxiter`` and ``accept`` those of the chain solve and of its
    acceptance; ``max_iter`` and ``switch_rtol`` the loop's limit and tolerance;
    ``repair_moves`` the moves per next state the repair of an order may make. The pours
    read the boxes' arrays by their pointers, taken once here: a failed ``__init__`` leaves
    the object as it was, and one never initialised refuses every use.
    """

    cdef object indptr, cols, lo, hi, hi_unseen, walk, chain_values, fallback, make_kernel
    cdef object failure
    cdef int pieces_threads, values_threads, rounds, maxiter, max_iter
    cdef double rtol, accept, switch_rtol
    cdef int64_t repair_moves
    cdef PourBoxes boxes
    cdef bint ready

    def __init__(self, indptr, cols, lo, hi, hi_unseen, walk, chain_values, fallback,
                 make_kernel, failure, int pieces_threads, int values_threads, double rtol,
                 int rounds, int maxiter, double accept, int max_iter, double switch_rtol,
                 int64_t repair_moves):
        cdef PourBoxes boxes = pour_boxes(indptr, cols, lo, hi, hi_unseen)
        self.indptr, self.cols, self.lo, self.hi, self.hi_unseen = indptr, cols, lo, hi, hi_unseen
        self.boxes = boxes
        self.walk, self.chain_values, self.make_kernel = walk, chain_values, make_kernel
        self.fallback = fallback
        self.failure = failure
        self.pieces_threads, self.values_threads = pieces_threads, values_threads
        self.rtol, self.rounds, self.maxiter, self.accept = rtol, rounds, maxiter, accept
        self.max_iter, self.switch_rtol = max_iter, switch_rtol
        self.repair_moves = repair_moves
        self.ready = True

    def adversary_kernel(self, rows, kept):
        """The adversary's kernel ``kept`` by :func:`adversary_iteration` (``poured`` False):
        ``kept`` itself when it is a kernel, else the pour of ``rows`` along the walk
        ``(order, rank)`` it is (the kernel the iteration would have poured)."""
        _ready(self)
        if isinstance(kept, tuple):
            return self.make_kernel(*_pour(self, rows, kept), True)
        return kept


cdef Tools _ready(Tools t):
    """``t``, refused when it is None or was never initialised (its pointers unset)."""
    if t is None or not t.ready:
        raise SSPValueError("fast._iteration: `tools` must be a Tools built by its __init__; "
                            "got an uninitialised one.")
    return t


cdef tuple _walk(Tools t, v_ext, bint descending, previous, bint sums):
    """The pour order of ``v_ext`` and the position of every next state in it (with ``sums``,
    also the prefix sums of ``fast._robust.pour_walk``): the permutation of
    ``reference.kernels.pour_order``, repaired by insertion from ``previous`` (the order of
    the loop's last pour, same direction; at most ``repair_moves`` moves a next state), else
    sorted by ``fast._robust.sort_order``; ``t.walk`` answers for the loop's first pour and
    on a NaN."""
    cdef const double[::1] v = v_ext
    cdef Py_ssize_t n = v.shape[0]
    cdef int64_t[::1] o
    if previous is None:
        return tuple(t.walk(v_ext, descending)[:4 if sums else 2])
    order = previous.copy()
    o = order
    if not repair_whole_order(&v[0], &o[0], n, descending, t.repair_moves * n):
        if not _robust.sort_order(v_ext, order, descending):
            return tuple(t.walk(v_ext, descending)[:4 if sums else 2])
    if sums:
        rank, cum_v, cum_inf = (np.empty(n, dtype=np.int64), np.empty(n + 1),
                                np.empty(n + 1, dtype=np.int64))
        _robust.pour_walk(v_ext, order, rank, cum_v, cum_inf)
        return order, rank, cum_v, cum_inf
    return _with_ranks(order)


cdef tuple _with_ranks(order):
    """``(order, rank)``: the walk of a pour order, with the position of every next state in
    it."""
    cdef const int64_t[::1] o = order
    cdef Py_ssize_t k
    rank = np.empty(o.shape[0], dtype=np.int64)
    cdef int64_t[::1] r = rank
    for k in range(o.shape[0]):
        r[o[k]] = k
    return order, rank


cdef tuple _pour(Tools t, rows, tuple walk):
    """``(order, rank, pieces)``: the pour of ``rows`` along the order ``walk`` (the kernel
    ``pour_kernel`` without its ``PouredKernel``)."""
    order, rank = walk[:2]
    global _direct
    cdef const int64_t[::1] r = rows, positions = rank
    cdef double start = _now() if _timing else 0.0
    pieces = pieces_of(&t.boxes, &r[0], r.shape[0], &positions[0], positions.shape[0],
                       t.pieces_threads)
    if _timing:
        _direct += _now() - start
    return order, rank, pieces


cdef WholeOrder _whole(tuple walk, const double[::1] v_ext):
    """The pointers of ``walk`` (``order, rank, cum_v, cum_inf``) of ``v_ext``."""
    return whole_order(walk[0], walk[1], walk[2], walk[3], v_ext)


cdef object _pour_values(Tools t, const int64_t* rows, int64_t first, Py_ssize_t n,
                         const WholeOrder* o, int64_t n_next, int threads):
    """The kernel ``pour_values`` of the rows ``rows[:n]`` (``first:first+n`` when ``rows``
    is NULL) against the ``n_next`` values of ``o`` in its order, as a new array:
    ``fast._robust.pour_rows`` on the boxes of ``t``."""
    global _direct
    out = np.empty(n)
    cdef double[::1] values = out
    cdef double* x
    cdef int status
    with cython.boundscheck(False):
        x = &values[0]
    cdef double start = _now() if _timing else 0.0
    with nogil:
        status = pour_rows(&t.boxes, rows, first, n, o, n_next, x, threads)
    if _timing:
        _direct += _now() - start
    pour_failed(&t.boxes, status)
    return out


cdef bint _all_finite(const double[::1] x):
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        if not isfinite(x[i]):
            return False
    return True


cdef ChainPieces _pieces(order, rank, tuple pieces) except *:
    """The pointers of the kernel ``(order, rank, pieces)`` (``pieces`` of
    ``fast._robust.pour_pieces``), their dtypes and contiguity checked."""
    return chain_pieces(order, rank, pieces[0], pieces[1], pieces[2], pieces[3], pieces[4],
                        pieces[5])


cdef object _product(Tools t, tuple kernel, v_ext, bint descending):
    """``kernel @ v_ext`` (``0 * inf = 0``): ``poured_apply`` when ``v_ext`` is finite."""
    order, rank, pieces = kernel
    cdef ChainPieces k
    cdef double* along
    cdef double[::1] result
    cdef const double[::1] x = v_ext
    cdef double start
    global _direct
    if _all_finite(x):
        k = _pieces(order, rank, pieces)
        out = np.empty(k.n)
        result = out
        along = <double*>malloc((k.S + 2) * sizeof(double))
        if along == NULL:
            raise MemoryError()
        start = _now() if _timing else 0.0
        with nogil:
            chain_apply(&k, &x[0], along, &result[0] if k.n else NULL)
        free(along)
        if _timing:
            _direct += _now() - start
        return out
    return t.make_kernel(order, rank, pieces, descending) @ v_ext


cdef double _tolerance(const double[::1] values, double residual, double switch_rtol):
    """``max(switch_rtol * max(1, largest finite value), residual)``, as Python's ``max``."""
    cdef double tol = switch_tolerance(values, switch_rtol)
    return residual if residual > tol else tol


cdef bint _lower_ends_reach_goal(Tools t, const int64_t[::1] rows, tuple walk):
    """Whether every state reaches the goal on the edges of positive lower end of the rows'
    boxes (stored entries with ``hi >= lo``, self-loops left out; a stored goal entry exits):
    those edges and exits are in every pour of the rows, whose stored entries hold their
    lower end plus a mass of at least 0, so then :func:`fast._poured.reaches_goal` is True
    on each of their kernels. Searched on a chain of those entries alone (no unseen mass),
    before any kernel of the rows is poured."""
    cdef const int64_t[::1] indptr = t.indptr, cols = t.cols
    cdef const double[::1] lo = t.lo, hi = t.hi
    cdef Py_ssize_t S = rows.shape[0], i
    cdef int64_t e, k = 0
    for i in range(S):
        for e in range(indptr[rows[i]], indptr[rows[i] + 1]):
            if hi[e] >= lo[e] and lo[e] > 0.0:
                k += 1
    ptr = np.empty(S + 1, dtype=np.int64)
    heads, lower = np.empty(k, dtype=np.int64), np.empty(k)
    cdef int64_t[::1] p = ptr, h = heads
    cdef double[::1] low = lower
    k = 0
    for i in range(S):
        p[i] = k
        for e in range(indptr[rows[i]], indptr[rows[i] + 1]):
            if hi[e] >= lo[e] and lo[e] > 0.0:
                h[k], low[k] = cols[e], lo[e]
                k += 1
    p[S] = k
    none = np.zeros(S)
    return _poured.reaches_goal(walk[0], walk[1], ptr, heads, lower, none,
                                np.zeros(S, dtype=np.int64), none)


cdef tuple _evaluate(Tools t, tuple kernel, bint descending, costs_pi, infinite,
                     bint any_infinite, start, active, bint proper=False):
    """``(values, residual)`` of the kernel: the kernel ``poured_chain_values`` on it, its rows
    of ``infinite`` emptied and their values ``+inf`` (``+inf`` everywhere, residual ``+inf``,
    when no candidate is acceptable). With every cost positive, no infinite state and a path
    to the goal from every state (known with ``proper``, else searched), the compiled solve
    from ``start`` directly, and when its backward error is too large the fallback of
    ``poured_chain_values`` (the same floats: that kernel would run the same solve first)."""
    cdef const double[::1] c = costs_pi
    cdef const double[::1] s0 = start
    cdef Py_ssize_t S = c.shape[0], i
    cdef bint positive = True
    cdef double[::1] xv
    cdef double omega, residual
    cdef ChainPieces k
    cdef int status
    cdef double begin
    cdef const char[::1] flags = active
    global _direct
    order, rank, pieces = kernel
    for i in range(S):
        if not c[i] > 0.0:
            positive = False
            break
    if not any_infinite and positive and not proper:
        k = _pieces(order, rank, pieces)
        begin = _now() if _timing else 0.0
        proper = goal_reached(&k)
        if _timing:
            _direct += _now() - begin
    if not any_infinite and positive and proper:
        x = np.empty(S)
        xv = x
        for i in range(S):
            xv[i] = s0[i] if isfinite(s0[i]) and s0[i] >= 0.0 else 0.0
        omega, residual = 0.0, 0.0
        if S > 0:
            k = _pieces(order, rank, pieces)
            begin = _now() if _timing else 0.0
            with nogil:
                status = chain_solve(&k, &flags[0], &c[0], &xv[0], t.rtol, t.rounds, t.maxiter,
                                     False, &omega, &residual)
            if _timing:
                _direct += _now() - begin
            if status < 0:
                raise MemoryError()
        if omega <= t.accept:
            return np.maximum(x, 0.0), residual
        try:
            return t.fallback(t.make_kernel(order, rank, pieces, descending), costs_pi, start)
        except t.failure:
            return np.full(S, np.inf), np.inf
    chain = t.make_kernel(order, rank, pieces, descending)
    if any_infinite:
        chain = chain.emptied(infinite)
    try:
        values, residual = t.chain_values(chain, costs_pi, start)
    except t.failure:
        return np.full(S, np.inf), np.inf
    values[infinite] = np.inf
    return values, residual


def adversary_iteration(Tools t, rows, costs_pi, infinite, start, bint poured=True):
    """The adversary's policy iteration (``reference.robust_loops.adversary_loop``).

    ``rows``: int64 ``(S,)``; ``costs_pi``: float64 ``(S,)``; ``infinite``: bool ``(S,)``;
    ``start``: finite float64 ``(S,)``. Returns ``(values, kernel, n_iter, converged)``.
    With ``poured`` False, a converged iteration returns its kernel as the walk
    ``(order, rank)`` it would pour it along (:meth:`Tools.adversary_kernel` pours it).
    """
    _ready(t)
    cdef Py_ssize_t S = costs_pi.shape[0], i
    cdef int n_iter
    cdef bint gains
    cdef const double[::1] new_p, old_p
    cdef double tol
    cdef const char[::1] inf_v = infinite.view(np.int8)
    cdef bint any_infinite = infinite.any()
    active = np.ones(S, dtype=np.int8)
    values = np.where(infinite, np.inf, start)
    walk = _walk(t, extended(values), True, None, False)
    cdef bint proper = not any_infinite and _lower_ends_reach_goal(t, rows, walk)
    kernel = _pour(t, rows, walk)
    walk = None
    for n_iter in range(1, t.max_iter + 1):
        values, residual = _evaluate(t, kernel, True, costs_pi, infinite, any_infinite, values,
                                     active, proper)
        if isinf(residual):
            return values, t.make_kernel(*kernel, True), n_iter, False
        v_ext = extended(values)
        values = v_ext[:S]  # the values' own array is freed: v_ext holds them
        old_p = _product(t, kernel, v_ext, True)
        walk = kernel[0]
        kernel = None  # one kernel at a time: the last one is poured again (along its order)
        candidate = _pour(t, rows, _walk(t, v_ext, True, walk, False))
        tol = _tolerance(values, residual, t.switch_rtol)
        new_p = _product(t, candidate, v_ext, True)
        gains = False
        for i in range(S):
            if not inf_v[i] and new_p[i] > old_p[i] + tol:
                gains = True
                break
        if not gains:
            candidate = None
            walk = _with_ranks(walk)
            if not poured:
                return values, walk, n_iter, True
            return values, t.make_kernel(*_pour(t, rows, walk), True), n_iter, True
        kernel, candidate = candidate, None
        walk = v_ext = old_p = new_p = None  # freed before the next evaluation
    return values, t.make_kernel(*kernel, True), t.max_iter, False


cdef void _policy_rows(const int64_t[::1] policy, int64_t A, int64_t[::1] rows) noexcept:
    cdef Py_ssize_t s
    for s in range(policy.shape[0]):
        rows[s] = s * A + policy[s]


def optimist_iteration(Tools t, costs, policy, start):
    """The optimist's policy iteration (``reference.robust_loops.optimist_loop``).

    ``costs``: float64 C-contiguous ``(S, A)``; ``policy``: int64 ``(S,)`` (copied);
    ``start``: finite float64 ``(S,)``. Returns ``(values, policy, kernel, n_iter, converged,
    q)``. The Q-values are one ``(S, A)`` array, the pour's output with the costs added in
    place.
    """
    _ready(t)
    cdef Py_ssize_t S = costs.shape[0], A = costs.shape[1], s, a, b
    cdef const double[::1] c = costs.reshape(-1)
    cdef int n_iter = 0
    cdef bint converged = False, any_switch
    cdef double tol, q_best
    cdef WholeOrder whole
    cdef double[::1] qv, cpi
    cdef const double[::1] current
    cdef int64_t[::1] best_v
    cdef const int64_t[::1] pol
    cdef char[::1] switch_v
    policy = policy.copy()
    rows = np.empty(S, dtype=np.int64)
    no_trap = np.zeros(S, dtype=bool)
    active = np.ones(S, dtype=np.int8)
    best = np.empty(S, dtype=np.intp)
    best_v = best
    switch = np.empty(S, dtype=bool)
    switch_v = switch.view(np.int8)
    values = start
    _policy_rows(policy, A, rows)
    kernel = _pour(t, rows, _walk(t, extended(values), False, None, False))
    q = None
    for n_iter in range(1, t.max_iter + 1):
        costs_pi = np.empty(S)
        cpi = costs_pi
        pol = policy
        for s in range(S):
            cpi[s] = c[s * A + pol[s]]
        values, residual = _evaluate(t, kernel, False, costs_pi, no_trap, False, values, active)
        if isinf(residual):
            q = None
            break
        v_ext = extended(values)
        current = _product(t, kernel, v_ext, False)
        last = kernel[:2]
        kernel = None  # one kernel at a time: the last one is poured again if it is kept
        walk = _walk(t, v_ext, False, last[0], True)
        order, rank, cum_v, cum_inf = walk
        q = None
        whole = _whole(walk, v_ext)
        q = _pour_values(t, NULL, 0, S * A, &whole, S + 1, t.values_threads)
        qv = q
        for s in range(S * A):
            qv[s] = c[s] + qv[s]
        tol = _tolerance(values, residual, t.switch_rtol)
        any_switch = False
        for s in range(S):
            b = 0
            for a in range(A):
                if isnan(qv[s * A + a]):
                    b = a
                    break
                if qv[s * A + a] < qv[s * A + b]:
                    b = a
            best_v[s] = b
            q_best = qv[s * A + b]
            switch_v[s] = ((q_best < (cpi[s] + current[s]) - tol)
                           or (isinf(cpi[s] + current[s]) and isfinite(q_best)))
            any_switch = any_switch or switch_v[s]
        if not any_switch:
            converged = True
            walk = order = rank = cum_v = cum_inf = v_ext = current = None
            kernel = _pour(t, rows, last)
            break
        policy = np.where(switch, best, policy)
        rows = np.empty(S, dtype=np.int64)
        _policy_rows(policy, A, rows)
        current = None  # freed before the new pour, and the Q-values unless returned
        walk = last = cum_v = cum_inf = None  # the new kernel holds (order, rank)
        if n_iter < t.max_iter:
            q = qv = None
        kernel = _pour(t, rows, (order, rank))
    return (values, policy, t.make_kernel(*kernel, False), n_iter, converged,
            None if q is None else q.reshape(S, A))


cdef class Pours:
    """Pours of the boxes' rows against vectors in one direction, for the compiled robust
    rounds (``fast._robust_pi.robust_iteration``): the kernel ``pour_values`` of the rows,
    each pour along the order of its vector repaired from the last one (:func:`_walk`, the
    same permutation as a fresh sort, so the same floats), or along the last walk whole for
    the same vector, with no Python layer between the rounds and the compiled pour. The last
    walk and a copy of its vector are kept only up to ``kept_states`` next states; larger
    pours keep their order alone."""

    cdef Tools t
    cdef bint descending
    cdef int64_t kept_states
    cdef object previous, last_v, last_walk

    def __init__(self, Tools t, bint descending, int64_t kept_states):
        self.t, self.descending, self.kept_states = _ready(t), descending, kept_states
        self.previous = self.last_v = self.last_walk = None

    cdef tuple _walk_of(self, v_ext):
        """The walk of ``v_ext``: the last one whole when it was of the same vector, bit for
        bit (the rounds pour the policy's rows, then every pair, against one vector), else
        :func:`_walk` from the last order."""
        cdef const double[::1] v = v_ext
        cdef const double[::1] last
        _ready(self.t)
        if self.last_v is not None:
            last = self.last_v
            if last.shape[0] == v.shape[0] and memcmp(&last[0], &v[0],
                                                      v.shape[0] * sizeof(double)) == 0:
                return self.last_walk
        walk = _walk(self.t, v_ext, self.descending, self.previous, True)
        self.previous = walk[0]
        if v.shape[0] <= self.kept_states:
            self.last_v, self.last_walk = np.array(v_ext), walk
        else:
            self.last_v = self.last_walk = None
        return walk

    def rows(self, const int64_t[::1] rows, v_ext):
        """The values of the pours of ``rows`` (int64 ``(S,)``) against ``v_ext``."""
        walk = self._walk_of(v_ext)
        cdef WholeOrder whole = _whole(walk, v_ext)
        return _pour_values(self.t, &rows[0], 0, rows.shape[0], &whole, len(v_ext),
                            self.t.pieces_threads)

    def pairs(self, v_ext):
        """The function of ``(r0, r1)`` that pours the pairs ``r0:r1`` against ``v_ext``, all
        along one order (each pair's pour the same in any block)."""
        return _PairBlocks(self.t, v_ext, self._walk_of(v_ext))


cdef class _PairBlocks:
    """The pours of the pairs ``r0:r1`` against one vector along its walk (:meth:`Pours.pairs`)."""

    cdef Tools t
    cdef object v_ext, walk
    cdef WholeOrder whole
    cdef int64_t n_next

    def __init__(self, Tools t, v_ext, tuple walk):
        cdef WholeOrder whole = _whole(walk, v_ext)
        self.t, self.v_ext, self.walk = _ready(t), v_ext, walk
        self.whole, self.n_next = whole, len(v_ext)

    def __call__(self, int64_t r0, int64_t r1):
        _ready(self.t)
        return _pour_values(self.t, NULL, r0, r1 - r0, &self.whole, self.n_next,
                            self.t.values_threads)
