# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled poured chains: a ``reference.poured.PouredKernel`` evaluated without expanding it.

Private module of the ``fast`` backend. A poured kernel (the pours of
``fast/_robust.pyx`` or of EVI's optimistic kernel) stores, per row, its stored
entries and where along the pour order its unseen run stopped; its products
with a vector are prefix sums along that order, ``O(S + stored)``.
:func:`poured_solve` evaluates such a chain (BiCGSTAB on its off-diagonal
products, never expanded) or, transposed, its expected visits;
:func:`poured_apply` is its product by a vector (:func:`poured_infinities` adds a vector's
infinities) and :func:`reaches_goal` a search for the goal on its graph.
"""

cimport cython
from libc.math cimport INFINITY, NAN, isfinite, isinf
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc

from ._search cimport _search_back


cdef struct Chain:
    # A square PouredKernel (S rows over S+1 next states, goal last) without its diagonal.
    int64_t S
    const int64_t* order
    const int64_t* rank
    const int64_t* indptr
    const int64_t* indices
    const double* weight        # stored entry's probability (0 on the diagonal), less the
                                # width when it lies before the reach (taken off the prefix)
    const double* width
    const int64_t* reach
    const double* partial
    const int64_t* partial_to   # unseen non-goal state at the reach other than the row, or -1
    const char* self_before     # the row's own state is unseen and before its reach
    const char* active          # rows solved; the others are the identity
    const double* diagonal      # leaving probability of each row
    double* cum                 # scratch (2 S + 4,): prefix sums along the order
    double* acc                 # scratch (S,): the columns of the transposed products
    bint transposed             # products by M^T (y -> d y - y Q) instead of M


cdef inline double _magnitude(double v) noexcept nogil:
    return v if v >= 0.0 else -v


cdef inline double _row_product(const Chain* c, const double* x, const double* cum, int64_t i,
                                bint absolute) noexcept nogil:
    """``(Q x)[i]`` of an active row ``i``, or with ``absolute`` ``(Q |x|)[i]``, ``cum`` the
    prefix sums of ``x`` (``|x|``) along the order: its stored entries in order, then the
    width times the unseen run before its reach (less the row's own state), then the
    partial. The one row product of the forward products (:func:`_system_and_flow`,
    :func:`_system_dots`, :func:`_flow`)."""
    cdef int64_t S = c.S, k, j
    cdef double acc = 0.0, unseen
    for k in range(c.indptr[i], c.indptr[i + 1]):
        j = c.indices[k]
        if j < S:
            acc = acc + c.weight[k] * (_magnitude(x[j]) if absolute else x[j])
    unseen = cum[c.reach[i]]
    if c.self_before[i]:
        unseen = unseen - (_magnitude(x[i]) if absolute else x[i])
    acc = acc + c.width[i] * unseen
    j = c.partial_to[i]
    if j >= 0:
        acc = acc + c.partial[i] * (_magnitude(x[j]) if absolute else x[j])
    return acc


cdef void _system(const Chain* c, const double* x, double* out, double* flow,
                  double* offdiagonal) noexcept nogil:
    """``out = M x`` with ``M = diag(d) - Q`` on the active rows (identity elsewhere), and
    ``flow = Q |x|`` and ``offdiagonal = Q x`` on the active rows unless NULL; ``x`` is 0 on
    the inactive rows and finite."""
    cdef double unused
    if flow != NULL and offdiagonal == NULL and not c.transposed:
        _system_and_flow(c, x, out, flow)
        return
    _system_dots(c, x, out, offdiagonal, NULL, &unused, NULL, &unused)
    if flow != NULL:
        _flow(c, x, flow)


cdef void _system_and_flow(const Chain* c, const double* x, double* out,
                           double* flow) noexcept nogil:
    """``out = M x`` and ``flow = Q |x|`` (forward products) in one pass over the rows: each
    output with the operations of :func:`_system_dots` or :func:`_flow`, in their order, so
    the same floats. The prefix sums of ``|x|`` take the second half of ``c.cum``."""
    cdef int64_t S = c.S, i, j, t
    cdef double ax
    cdef double* cum = c.cum
    cdef double* cum_abs = c.cum + S + 2
    cum[0] = 0.0
    cum_abs[0] = 0.0
    for t in range(S + 1):
        j = c.order[t]
        cum[t + 1] = cum[t] + (x[j] if j < S else 0.0)
        ax = (x[j] if x[j] >= 0.0 else -x[j]) if j < S else 0.0
        cum_abs[t + 1] = cum_abs[t] + ax
    for i in range(S):
        if not c.active[i]:
            out[i] = x[i]
            flow[i] = 0.0
            continue
        out[i] = c.diagonal[i] * x[i] - _row_product(c, x, cum, i, False)
        flow[i] = _row_product(c, x, cum_abs, i, True)


cdef void _system_dots(const Chain* c, const double* x, double* out, double* offdiagonal,
                       const double* u, double* u_out, const double* w,
                       double* w_out) noexcept nogil:
    """``out = M x`` as :func:`_system` (and ``offdiagonal = Q x`` unless NULL), with the dot
    products ``u_out = u . out`` and ``w_out = w . out`` (each unless its ``u``, ``w`` is
    NULL; ``u`` may be ``out``) summed in the same loop, in the order and with the
    operations of :func:`_dot`, so the same floats while their additions overlap the
    product's. With ``c.transposed``, ``out = M^T x`` (:func:`_transposed`) and the dots after
    it."""
    cdef int64_t S = c.S, i, j, t
    cdef double acc, u_acc = 0.0, w_acc = 0.0
    cdef double* cum = c.cum
    if c.transposed:
        _transposed(c, x, out, False)
        for i in range(S):
            if u != NULL:
                u_acc = u_acc + u[i] * out[i]
            if w != NULL:
                w_acc = w_acc + w[i] * out[i]
        u_out[0] = u_acc
        w_out[0] = w_acc
        return
    cum[0] = 0.0
    for t in range(S + 1):
        j = c.order[t]
        cum[t + 1] = cum[t] + (x[j] if j < S else 0.0)
    for i in range(S):
        if not c.active[i]:
            out[i] = x[i]
        else:
            acc = _row_product(c, x, cum, i, False)
            out[i] = c.diagonal[i] * x[i] - acc
            if offdiagonal != NULL:
                offdiagonal[i] = acc
        if u != NULL:
            u_acc = u_acc + u[i] * out[i]
        if w != NULL:
            w_acc = w_acc + w[i] * out[i]
    u_out[0] = u_acc
    w_out[0] = w_acc


cdef void _transposed(const Chain* c, const double* x, double* out, bint flow) noexcept nogil:
    """``out = M^T x = d x - (x Q)`` on the active states (identity elsewhere), or with
    ``flow`` ``out = |x| Q`` (0 elsewhere); ``x`` is 0 on the inactive states and finite.

    A row ``i`` gives ``width[i] x[i]`` to every next state before its reach: those sums
    are suffix sums over the reaches along the order; the stored entries and the row's own
    state, counted there too, are corrected through ``weight`` and ``self_before``, and the
    partial goes to ``partial_to``, as in the forward product."""
    cdef int64_t S = c.S, i, k, j, t
    cdef double xi, running = 0.0, moved
    cdef double* cum = c.cum
    cdef double* acc = c.acc
    for t in range(S + 2):
        cum[t] = 0.0
    for i in range(S):
        if c.active[i]:
            xi = (x[i] if x[i] >= 0.0 else -x[i]) if flow else x[i]
            cum[c.reach[i]] = cum[c.reach[i]] + c.width[i] * xi
    for t in range(S + 1, -1, -1):
        moved = cum[t]
        cum[t] = running
        running = running + moved
    for j in range(S):
        acc[j] = cum[c.rank[j]]
    for i in range(S):
        if not c.active[i]:
            continue
        xi = (x[i] if x[i] >= 0.0 else -x[i]) if flow else x[i]
        for k in range(c.indptr[i], c.indptr[i + 1]):
            j = c.indices[k]
            if j < S:
                acc[j] = acc[j] + c.weight[k] * xi
        if c.self_before[i]:
            acc[i] = acc[i] - c.width[i] * xi
        j = c.partial_to[i]
        if j >= 0:
            acc[j] = acc[j] + c.partial[i] * xi
    for j in range(S):
        if not c.active[j]:
            out[j] = 0.0 if flow else x[j]
        elif flow:
            out[j] = acc[j]
        else:
            out[j] = c.diagonal[j] * x[j] - acc[j]


cdef void _flow(const Chain* c, const double* x, double* flow) noexcept nogil:
    """``flow = Q |x|`` on the active rows (0 elsewhere); ``x`` as in :func:`_system`; with
    ``c.transposed``, ``flow = |x| Q`` (:func:`_transposed`)."""
    cdef int64_t S = c.S, i, j, t
    cdef double ax
    cdef double* cum = c.cum
    if c.transposed:
        _transposed(c, x, flow, True)
        return
    cum[0] = 0.0
    for t in range(S + 1):
        j = c.order[t]
        ax = (x[j] if x[j] >= 0.0 else -x[j]) if j < S else 0.0
        cum[t + 1] = cum[t] + ax
    for i in range(S):
        if not c.active[i]:
            flow[i] = 0.0
            continue
        flow[i] = _row_product(c, x, cum, i, True)


cdef double _backward_error(const Chain* c, const double* rhs, const double* x, double* residual,
                            double* flow) noexcept nogil:
    """Componentwise backward error of ``x`` (``max |b - M x| / (|b| + d |x| + Q |x|)``, 0/0 =
    0, ``inf`` for a non-finite ``x``); writes ``residual = b - M x``."""
    cdef int64_t i
    cdef double worst = 0.0, gap, scale
    for i in range(c.S):
        if not isfinite(x[i]):
            return INFINITY
    _system(c, x, residual, flow, NULL)
    for i in range(c.S):
        residual[i] = rhs[i] - residual[i]
        if not c.active[i] or residual[i] == 0.0:
            continue
        gap = residual[i] if residual[i] >= 0.0 else -residual[i]
        scale = ((rhs[i] if rhs[i] >= 0.0 else -rhs[i])
                 + c.diagonal[i] * (x[i] if x[i] >= 0.0 else -x[i]) + flow[i])
        if not gap <= worst * scale:
            worst = gap / scale
    return worst


cdef inline double _dot(const double* a, const double* b, int64_t n) noexcept nogil:
    cdef double acc = 0.0
    cdef int64_t i
    for i in range(n):
        acc = acc + a[i] * b[i]
    return acc


cdef void _bicgstab(const Chain* c, const double* rhs, double* e, double* w,
                    int maxiter, double rtol, double enough) noexcept nogil:
    """Jacobi-preconditioned BiCGSTAB for ``M e = rhs`` from ``e = 0``, until the residual's
    2-norm is at most ``rtol`` times that of ``rhs`` or at most ``enough``, a breakdown, or
    ``maxiter`` steps; ``w`` is scratch of ``8 S`` doubles."""
    cdef int64_t S = c.S, i
    cdef int it
    cdef double* r = w
    cdef double* rhat = w + S
    cdef double* p = w + 2 * S
    cdef double* v = w + 3 * S
    cdef double* y = w + 4 * S
    cdef double* s = w + 5 * S
    cdef double* t = w + 6 * S
    cdef double rho, rho_prev = 1.0, alpha = 1.0, omega = 1.0, beta, den, tt, limit
    cdef double ss, ts, rr, rho_next, unused
    for i in range(S):
        e[i] = 0.0
        r[i] = rhs[i]
        rhat[i] = rhs[i]
        p[i] = 0.0
        v[i] = 0.0
    limit = rtol * rtol * _dot(rhs, rhs, S)
    if limit < enough * enough:
        limit = enough * enough
    rho = _dot(rhat, r, S)
    for it in range(maxiter):
        if rho == 0.0 or not isfinite(rho):
            return
        beta = (rho / rho_prev) * (alpha / omega)
        for i in range(S):
            p[i] = r[i] + beta * (p[i] - omega * v[i])
            y[i] = p[i] / c.diagonal[i] if c.active[i] else p[i]
        _system_dots(c, y, v, NULL, rhat, &den, NULL, &unused)
        if den == 0.0 or not isfinite(den):
            return
        alpha = rho / den
        ss = 0.0
        for i in range(S):
            s[i] = r[i] - alpha * v[i]
            e[i] = e[i] + alpha * y[i]
            ss = ss + s[i] * s[i]
        if ss <= limit:
            return
        for i in range(S):
            y[i] = s[i] / c.diagonal[i] if c.active[i] else s[i]
        _system_dots(c, y, t, NULL, t, &tt, s, &ts)
        if tt == 0.0 or not isfinite(tt):
            return
        omega = ts / tt
        rr = 0.0
        rho_next = 0.0
        for i in range(S):
            e[i] = e[i] + omega * y[i]
            r[i] = s[i] - omega * t[i]
            rr = rr + r[i] * r[i]
            rho_next = rho_next + rhat[i] * r[i]
        if omega == 0.0 or rr <= limit:
            return
        rho_prev = rho
        rho = rho_next


def poured_solve(const int64_t[::1] order, const int64_t[::1] rank,
                 const int64_t[::1] indptr, const int64_t[::1] indices,
                 const double[::1] data, const double[::1] width, const int64_t[::1] reach,
                 const double[::1] partial, const char[::1] active, const double[::1] rhs,
                 double[::1] x, double rtol, int rounds, int maxiter, bint transposed=False):
    """Candidate of ``M x = rhs`` on the ``active`` rows of a square ``PouredKernel``.

    ``M = diag(d) - Q`` with ``d`` the leaving probability of each row (its
    pieces other than the diagonal summed, goal included, as
    ``reference.chains._poured_leaving``) and ``Q`` the kernel's off-diagonal
    part, its products in ``O(S + stored)`` by prefix sums along ``order``.
    ``x`` (the start, 0 on the inactive rows, as ``rhs``) is overwritten by the
    candidate of smallest componentwise backward error among zero, the start
    and up to ``rounds`` refinements, each a Jacobi-preconditioned BiCGSTAB run
    (at most ``maxiter`` steps, the residual reduced ``1e-13``-fold or below
    ``rtol`` times the smallest ``|b| + d |x|``) on the current residual, kept
    while the backward error at least halves and until it is at most ``rtol``.
    The active rows must not move to an inactive state of nonzero ``x``.

    Returns ``(omega, residual)``: the candidate's backward error
    ``max |b - M x| / (|b| + d |x| + Q |x|)`` (0/0 = 0) and ``max |b + P V - V|``
    over the active rows with ``V = max(x, 0) > 0`` (``P`` the whole row,
    diagonal included).

    With ``transposed``, the system is ``M^T x = rhs`` (the expected visits ``x`` of a
    chain started from ``rhs``: ``x^T = rhs^T M^{-1}``), on the products ``x Q`` by suffix
    sums over the reaches; the backward error is that of ``M^T`` (``Q |x|`` becomes
    ``|x| Q``) and the residual returned is NaN.
    """
    cdef int64_t S = order.shape[0] - 1, i
    cdef int round_
    cdef double best, trial, enough, gap
    cdef Chain c
    cdef int64_t k, j, n_before
    cdef bint stored_self, stored_at_reach, before
    cdef double leave, loop
    cdef int64_t stored = indices.shape[0]
    cdef double* work = <double*>malloc((17 * S + 4 + stored) * sizeof(double))
    cdef int64_t* partial_to = <int64_t*>malloc((S + 1) * sizeof(int64_t))
    cdef char* self_before = <char*>malloc((S + 1) * sizeof(char))
    if work == NULL or partial_to == NULL or self_before == NULL:
        free(work)
        free(partial_to)
        free(self_before)
        raise MemoryError()
    cdef double* weight = work + 17 * S + 4
    cdef double* residual = work
    cdef double* flow = work + S
    cdef double* step = work + 2 * S
    cdef double* zero = work + 3 * S
    cdef double* scratch = work + 4 * S
    cdef double* diagonal = work + 12 * S
    cdef double* self_loop = work + 13 * S
    with nogil:
        for i in range(S):
            stored_self = False
            stored_at_reach = False
            leave = 0.0
            loop = 0.0
            n_before = 0
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                before = rank[j] < reach[i]
                n_before = n_before + before
                if rank[j] == reach[i]:
                    stored_at_reach = True
                if j == i:
                    stored_self = True
                    loop = data[k]
                    weight[k] = -width[i] if before else 0.0
                else:
                    leave = leave + data[k]
                    weight[k] = data[k] - width[i] if before else data[k]
            self_before[i] = not stored_self and rank[i] < reach[i]
            if self_before[i]:
                loop = width[i]
            partial_to[i] = -1
            diagonal[i] = leave + width[i] * (reach[i] - n_before - self_before[i])
            if reach[i] <= S and not stored_at_reach:
                if not stored_self and rank[i] == reach[i]:
                    loop = partial[i]
                else:
                    diagonal[i] = diagonal[i] + partial[i]
                    if order[reach[i]] < S:
                        partial_to[i] = order[reach[i]]
            self_loop[i] = loop
    c.S = S
    c.order = &order[0]
    c.rank = &rank[0]
    c.indptr = &indptr[0]
    c.indices = &indices[0] if indices.shape[0] else NULL
    c.weight = weight
    c.width = &width[0]
    c.reach = &reach[0]
    c.partial = &partial[0]
    c.partial_to = partial_to
    c.self_before = self_before
    c.active = &active[0]
    c.diagonal = diagonal
    c.cum = work + 14 * S
    c.acc = work + 16 * S + 4
    c.transposed = transposed
    with nogil:
        best = _backward_error(&c, &rhs[0], &x[0], residual, flow)
        # Zero's backward error, without its products: M 0 = 0 and Q |0| = 0 exactly, so
        # its residual is rhs and each active row with rhs != 0 scores |rhs| / |rhs| = 1.
        trial = 0.0
        for i in range(S):
            if c.active[i] and rhs[i] != 0.0:
                trial = 1.0
        if not best <= trial:
            best = trial
            for i in range(S):
                x[i] = 0.0
                residual[i] = rhs[i]
        for round_ in range(rounds):
            if best <= rtol:
                break
            enough = INFINITY
            for i in range(S):
                if c.active[i]:
                    trial = ((rhs[i] if rhs[i] >= 0.0 else -rhs[i])
                             + c.diagonal[i] * (x[i] if x[i] >= 0.0 else -x[i]))
                    if trial < enough:
                        enough = trial
            _bicgstab(&c, residual, step, scratch, maxiter, 1e-13, rtol * enough)
            for i in range(S):
                step[i] = x[i] + step[i]
            trial = _backward_error(&c, &rhs[0], step, zero, flow)
            if not trial < best:
                break
            for i in range(S):
                x[i] = step[i]
                residual[i] = zero[i]
            if trial > 0.5 * best:
                best = trial
                break
            best = trial
        gap = NAN
        if not transposed:
            for i in range(S):
                step[i] = x[i] if c.active[i] and x[i] > 0.0 else 0.0
            _system(&c, step, residual, NULL, flow)
            gap = 0.0
            for i in range(S):
                if step[i] > 0.0:
                    trial = rhs[i] + flow[i] + self_loop[i] * step[i] - step[i]
                    trial = trial if trial >= 0.0 else -trial
                    if not trial <= gap:
                        gap = trial
    free(work)
    free(partial_to)
    free(self_before)
    return best, gap



def poured_apply(const int64_t[::1] order, const int64_t[::1] rank, const int64_t[::1] indptr,
                 const int64_t[::1] indices, const double[::1] data, const double[::1] width,
                 const int64_t[::1] reach, const double[::1] partial, const double[::1] x,
                 double[::1] along, double[::1] out):
    """``out = kernel @ x`` for a ``PouredKernel`` and finite ``x``, with the operations of
    ``reference.poured.PouredKernel.finite_product`` in its order (the prefix sums ``along`` of ``x``
    along ``order``, scratch of length ``S+2``; each row's sums of its stored entries, before
    the reach and all of them, from 0 in index order; then ``stored + width * unseen +
    partial * at_reach``), so the same floats."""
    cdef Py_ssize_t n = reach.shape[0], n_next = order.shape[0], i, t
    cdef int64_t k, at, reach_at
    cdef double seen_before, stored, unseen, at_reach
    cdef bint stored_there
    with nogil:
        along[0] = 0.0
        for t in range(n_next):
            along[t + 1] = x[order[t]] if t == 0 else along[t] + x[order[t]]
        for i in range(n):
            seen_before = 0.0
            stored = 0.0
            stored_there = False
            reach_at = reach[i]
            for k in range(indptr[i], indptr[i + 1]):
                at = rank[indices[k]]
                if at < reach_at:
                    seen_before = seen_before + x[indices[k]]
                elif at == reach_at:
                    stored_there = True
                stored = stored + data[k] * x[indices[k]]
            unseen = along[reach_at] - seen_before
            if reach_at < n_next and not stored_there:
                at_reach = x[order[reach_at]]
            else:
                at_reach = 0.0
            out[i] = stored + width[i] * unseen + partial[i] * at_reach


def reaches_goal(const int64_t[::1] order, const int64_t[::1] rank, const int64_t[::1] indptr,
                 const int64_t[::1] indices, const double[::1] data, const double[::1] width,
                 const int64_t[::1] reach, const double[::1] partial):
    """Whether every state of a square ``PouredKernel`` reaches the goal on edges of positive
    probability: its positive stored entries, its unseen next state at the reach when the
    partial is positive, and the goal when the row moves there (as
    ``reference.chains._poured_exits``). ``True`` proves it; ``False`` may come from the
    unseen next states before the reach, left out (``O(S + stored)`` edges only)."""
    cdef Py_ssize_t S = reach.shape[0], i, tail = 0
    cdef int64_t k, j, goal_at = rank[S], target, n_edges = 0, edges = indices.shape[0] + S
    cdef bint goal_stored, exits, stored_there
    # One block: tails, heads (edges each), the queue (S) and the search's scratch
    # (2 S + 1 + edges), each written before it is read.
    cdef int64_t* block = <int64_t*>malloc((3 * S + 1 + 3 * edges) * sizeof(int64_t))
    cdef unsigned char* seen = <unsigned char*>calloc(S + 1, sizeof(unsigned char))
    if block == NULL or seen == NULL:
        free(block)
        free(seen)
        raise MemoryError()
    cdef int64_t* tails = block
    cdef int64_t* heads = tails + edges
    cdef int64_t* queue = heads + edges
    cdef int64_t* scratch = queue + S
    with nogil:
        for i in range(S):
            goal_stored = False
            exits = False
            stored_there = False
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if rank[j] == reach[i]:
                    stored_there = True
                if j == S:
                    goal_stored = True
                    if data[k] > 0.0:
                        exits = True
                elif data[k] > 0.0 and j != i:
                    tails[n_edges] = i
                    heads[n_edges] = j
                    n_edges = n_edges + 1
            if not goal_stored and ((goal_at < reach[i] and width[i] > 0.0)
                                    or (goal_at == reach[i] and partial[i] > 0.0)):
                exits = True
            if reach[i] <= S and not stored_there and partial[i] > 0.0:
                target = order[reach[i]]
                if target < S and target != i:
                    tails[n_edges] = i
                    heads[n_edges] = target
                    n_edges = n_edges + 1
            if exits:
                seen[i] = 1
                queue[tail] = i
                tail = tail + 1
        tail = _search_back(S, n_edges, tails, heads, scratch, queue, tail, seen)
    free(block)
    free(seen)
    return tail == S


def poured_infinities(const int64_t[::1] order, const int64_t[::1] rank, const int64_t[::1] ptr,
                      const int64_t[::1] indices, const double[::1] data, const double[::1] width,
                      const int64_t[::1] reach, const double[::1] partial, const double[::1] x,
                      int64_t[::1] plus, int64_t[::1] minus, double[::1] out):
    """``out = kernel @ x`` for ``x`` holding infinities (no NaN), ``out`` given as the product
    with them put to 0 (:func:`poured_apply`): each row adds ``+inf`` (``-inf``) when a positive
    entry (stored; unseen before the reach, width positive; at the reach, partial positive)
    meets ``+inf`` (``-inf``), as ``reference.poured.PouredKernel.extended_product`` (the same
    floats). ``plus``, ``minus`` (``S+2``): scratch, the counts of each along ``order``."""
    cdef Py_ssize_t n = reach.shape[0], n_next = order.shape[0], i, t
    cdef int64_t k, r, above, below
    cdef double v, up, down
    cdef bint there
    with nogil:
        plus[0] = 0
        minus[0] = 0
        for t in range(n_next):
            plus[t + 1] = plus[t] + (x[order[t]] == INFINITY)
            minus[t + 1] = minus[t] + (x[order[t]] == -INFINITY)
        for i in range(n):
            r, above, below, up, down, there = reach[i], 0, 0, 0.0, 0.0, False
            for k in range(ptr[i], ptr[i + 1]):
                v = x[indices[k]]
                if rank[indices[k]] < r:
                    above, below = above + (v == INFINITY), below + (v == -INFINITY)
                there = there or rank[indices[k]] == r
                up = INFINITY if data[k] > 0.0 and v == INFINITY else up
                down = -INFINITY if data[k] > 0.0 and v == -INFINITY else down
            up = INFINITY if width[i] > 0.0 and plus[r] > above else up
            down = -INFINITY if width[i] > 0.0 and minus[r] > below else down
            v = x[order[r]] if r < n_next and not there and partial[i] > 0.0 else 0.0
            up = INFINITY if v == INFINITY else up
            down = -INFINITY if v == -INFINITY else down
            out[i] = up + down + out[i]
