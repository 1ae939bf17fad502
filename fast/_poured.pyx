# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled poured chains: a ``reference.poured.PouredKernel`` evaluated without expanding it.

Private module of the ``fast`` backend. A poured kernel (the pours of ``fast/_robust.pyx`` or of
EVI's optimistic kernel) stores, per row, its stored entries and where along the pour order its
unseen run stopped; its products with a vector are prefix sums along that order, ``O(S + stored)``.
:func:`poured_solve` evaluates such a chain (BiCGSTAB on its off-diagonal products, never expanded)
or, transposed, its expected visits; :func:`poured_apply` is its product by a vector
(:func:`poured_infinities` adds a vector's infinities) and :func:`reaches_goal` a search for the
goal on its graph.
"""

from reference.errors import ShapeError, SparseFormatError

cimport numpy as cnp
from libc.math cimport INFINITY, NAN, isfinite
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc

from ._chain cimport (Chain, _dot, _magnitude, _product_and_flow, _row_rest,
                     _stored_and_prefix, _transposed)
from ._search cimport _search_back


cdef extern from "_krylov.h" nogil:
    void krylov_direction(int64_t n, const double* r, double* p, const double* v,
                          const double* precond, double* y, double beta, double omega)
    void krylov_half_step(int64_t n, const double* r, const double* v, const double* precond,
                          double* s, double* e, double* y, double alpha)


cnp.import_array()


cdef const void* _piece(array, int typenum, str name, Py_ssize_t* length) except? NULL:
    """The data of a piece ``array`` (its length in ``length``), checked: as ``typenum``."""
    cdef cnp.ndarray a = array if cnp.PyArray_Check(array) else None
    if (a is None or cnp.PyArray_NDIM(a) != 1 or not cnp.PyArray_ISNOTSWAPPED(a)
            or not cnp.PyArray_EquivTypenums(cnp.PyArray_TYPE(a), typenum)
            or not cnp.PyArray_IS_C_CONTIGUOUS(a)):
        raise SparseFormatError(
            f"poured kernel: {name} must be a one-dimensional C-contiguous array; got a "
            f"{type(array).__name__} {getattr(array, 'dtype', '')} {getattr(array, 'shape', '')}.")
    length[0] = cnp.PyArray_DIM(a, 0)
    return cnp.PyArray_DATA(a)


cdef ChainPieces chain_pieces(order, rank, indptr, indices, data, width, reach,
                              partial, str square=None) except *:
    """A ``PouredKernel``'s pieces, checked in ``O(1)`` (square when ``square`` names a caller)."""
    cdef ChainPieces k
    cdef Py_ssize_t n_order, n_rank, n_indptr, n_indices, n_data, n_width, n_reach, n_partial
    k.order = <const int64_t*>_piece(order, cnp.NPY_INT64, "int64 `order`", &n_order)
    k.rank = <const int64_t*>_piece(rank, cnp.NPY_INT64, "int64 `rank`", &n_rank)
    k.indptr = <const int64_t*>_piece(indptr, cnp.NPY_INT64, "int64 `indptr`", &n_indptr)
    k.indices = <const int64_t*>_piece(indices, cnp.NPY_INT64, "int64 `indices`", &n_indices)
    k.data = <const double*>_piece(data, cnp.NPY_FLOAT64, "float64 `data`", &n_data)
    k.width = <const double*>_piece(width, cnp.NPY_FLOAT64, "float64 `width`", &n_width)
    k.reach = <const int64_t*>_piece(reach, cnp.NPY_INT64, "int64 `reach`", &n_reach)
    k.partial = <const double*>_piece(partial, cnp.NPY_FLOAT64, "float64 `partial`", &n_partial)
    if (n_order < 1 or n_rank != n_order or n_indptr != n_reach + 1 or n_data != n_indices
            or n_width != n_reach or n_partial != n_reach):
        raise SparseFormatError(
            f"poured kernel: `rank` must have the length of `order` (>= 1), `data` that of "
            f"`indices`, `width` and `partial` that of `reach`, `indptr` one more; got lengths "
            f"order {n_order}, rank {n_rank}, indptr {n_indptr}, indices {n_indices}, "
            f"data {n_data}, width {n_width}, reach {n_reach}, partial {n_partial}.")
    k.S, k.n, k.stored = n_order - 1, n_reach, n_indices
    if square is not None and k.n != k.S:
        raise ShapeError(f"{square}: the kernel must have shape (S, S+1) = ({k.S}, {k.S + 1}), "
                         f"one row per state; got ({k.n}, {k.S + 1}).")
    return k


cdef bint _system_dots(const Chain* c, const double* x, double* out,
                       const double* u, double* u_out, const double* w, double* w_out,
                       const double* q=NULL, double* q_out=NULL,
                       double limit=-1.0) noexcept nogil:
    """``out = M x`` with ``M = diag(d) - Q`` on the active rows (identity elsewhere; ``x``
    is 0 on the inactive rows and finite), with the dot products ``u_out = u . out`` and
    ``w_out = w . out`` (each unless its ``u``, ``w`` is NULL; ``u`` may be ``out``)
    summed in the same loop, in the order and with the operations of :func:`_dot`, so the
    same floats while their additions overlap the product's. With ``q``, first
    ``q_out = q . q`` (the same), and when it is at most ``limit`` the products stop there:
    returns whether they did. With ``c.transposed``, ``out = M^T x`` (:func:`_transposed`)
    and the dots after it."""
    cdef int64_t S = c.S, i
    cdef double acc, u_acc = 0.0, w_acc = 0.0, o
    cdef double* cum = c.cum
    cdef const char* active = c.active
    cdef const double* diagonal = c.diagonal
    if c.transposed:
        if q != NULL:
            q_out[0] = _dot(q, q, S)
            if q_out[0] <= limit:
                return True
        _transposed(c, x, out, False)
        for i in range(S):
            if u != NULL:
                u_acc = u_acc + u[i] * out[i]
            if w != NULL:
                w_acc = w_acc + w[i] * out[i]
        u_out[0] = u_acc
        w_out[0] = w_acc
        return False
    _stored_and_prefix(c, x, cum, c.acc, False, q, q_out)
    if q != NULL and q_out[0] <= limit:
        return True
    for i in range(S):
        if not active[i]:
            o = x[i]
        else:
            acc = _row_rest(c, x, cum, i, c.acc[i], False)
            o = diagonal[i] * x[i] - acc
        out[i] = o
        if u != NULL:
            u_acc = u_acc + u[i] * o
        if w != NULL:
            w_acc = w_acc + w[i] * o
    u_out[0] = u_acc
    w_out[0] = w_acc
    return False


cdef void _flow(const Chain* c, const double* x, double* flow) noexcept nogil:
    """``flow = Q |x|`` on the active rows (0 elsewhere); ``x`` as in
    :func:`_system_dots`; with ``c.transposed``, ``flow = |x| Q`` (:func:`_transposed`)."""
    cdef int64_t S = c.S, i
    cdef double* cum = c.cum
    if c.transposed:
        _transposed(c, x, flow, True)
        return
    _stored_and_prefix(c, x, cum, c.acc, True)
    for i in range(S):
        if not c.active[i]:
            flow[i] = 0.0
            continue
        flow[i] = _row_rest(c, x, cum, i, c.acc[i], True)


cdef double _backward_error(const Chain* c, const double* rhs, const double* x, double* residual,
                            double* flow) noexcept nogil:
    """Componentwise backward error of ``x`` (``max |b - M x| / (|b| + d |x| + Q |x|)``, 0/0 =
    0, ``inf`` for a non-finite ``x``); writes ``residual = b - M x`` and ``flow = Q |x|``
    (:func:`_flow`), unless ``x`` is not finite."""
    cdef int64_t i
    cdef double worst = 0.0, gap, scale, unused
    for i in range(c.S):
        if not isfinite(x[i]):
            return INFINITY
    if c.transposed:
        _system_dots(c, x, residual, NULL, &unused, NULL, &unused)
        _flow(c, x, flow)
    else:
        _product_and_flow(c, x, residual, flow)
    for i in range(c.S):
        residual[i] = rhs[i] - residual[i]
        if not c.active[i] or residual[i] == 0.0:
            continue
        gap = _magnitude(residual[i])
        scale = _magnitude(rhs[i]) + c.diagonal[i] * _magnitude(x[i]) + flow[i]
        if not gap <= worst * scale:
            worst = gap / scale
    return worst


cdef void _bicgstab(const Chain* c, const double* rhs, double* e, double* w,
                    int maxiter, double rtol, double enough) noexcept nogil:
    """Jacobi-preconditioned BiCGSTAB for ``M e = rhs`` from ``e = 0``, until the residual's
    2-norm is at most ``rtol`` times that of ``rhs`` or at most ``enough``, a breakdown, or
    ``maxiter`` steps; ``w`` is scratch of ``7 (S+1)`` doubles. ``e[S]`` is left as it is."""
    cdef int64_t S = c.S, n = S + 1, i
    cdef int it
    cdef double* r = w
    cdef double* rhat = w + n
    cdef double* p = w + 2 * n
    cdef double* v = w + 3 * n
    cdef double* y = w + 4 * n
    cdef double* s = w + 5 * n
    cdef double* t = w + 6 * n
    cdef const double* precond = c.precond
    cdef double rho, rho_prev = 1.0, alpha = 1.0, omega = 1.0, beta, den, tt, limit
    cdef double ss, ts, rr, rho_next, unused, ri
    y[S] = 0.0
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
        krylov_direction(S, r, p, v, precond, y, beta, omega)
        _system_dots(c, y, v, rhat, &den, NULL, &unused)
        if den == 0.0 or not isfinite(den):
            return
        alpha = rho / den
        krylov_half_step(S, r, v, precond, s, e, y, alpha)
        # ``ss = s . s`` is summed in the product's first loop, which stops when it is small.
        if _system_dots(c, y, t, t, &tt, s, &ts, s, &ss, limit):
            return
        if tt == 0.0 or not isfinite(tt):
            return
        omega = ts / tt
        rr = 0.0
        rho_next = 0.0
        for i in range(S):
            e[i] = e[i] + omega * y[i]
            ri = s[i] - omega * t[i]
            r[i] = ri
            rr = rr + ri * ri
            rho_next = rho_next + rhat[i] * ri
        if omega == 0.0 or rr <= limit:
            return
        rho_prev = rho
        rho = rho_next


cdef int chain_solve(const ChainPieces* k, const char* active, const double* rhs, double* x,
                     double rtol, int rounds, int maxiter, bint transposed, double* omega,
                     double* residual_out) noexcept nogil:
    """:func:`poured_solve` on the pieces ``k`` of a square kernel (``k.n = k.S > 0``):
    writes the candidate into ``x``, its backward error into ``omega`` and the residual into
    ``residual_out``; returns 0, or -1 (nothing written) when its scratch space cannot be
    allocated."""
    cdef int64_t S = k.S, i
    cdef int round_
    cdef double best, trial, enough, gap
    cdef Chain c
    cdef int64_t e, j, n_before
    cdef bint stored_self, stored_at_reach, before
    cdef double leave, loop
    cdef bint flow_kept
    cdef int64_t stored = k.stored
    cdef int64_t n = S + 1
    cdef const int64_t* order = k.order
    cdef const int64_t* rank = k.rank
    cdef const int64_t* indptr = k.indptr
    cdef const int64_t* indices = k.indices
    cdef const double* data = k.data
    cdef const double* width = k.width
    cdef const int64_t* reach = k.reach
    cdef const double* partial = k.partial
    cdef double* work = <double*>malloc((18 * n + S + 3 + stored) * sizeof(double))
    cdef int64_t* partial_to = <int64_t*>malloc((S + 1) * sizeof(int64_t))
    cdef char* self_before = <char*>malloc((S + 1) * sizeof(char))
    if work == NULL or partial_to == NULL or self_before == NULL:
        free(work)
        free(partial_to)
        free(self_before)
        return -1
    # Vectors of S+1 entries, the last 0 in those the products read (the goal's value).
    cdef double* residual = work
    cdef double* flow = work + n
    cdef double* step = work + 2 * n
    cdef double* zero = work + 3 * n
    cdef double* current = work + 4 * n
    cdef double* scratch = work + 5 * n
    cdef double* diagonal = work + 12 * n
    cdef double* self_loop = work + 13 * n
    cdef double* precond = work + 14 * n
    cdef double* weight = work + 16 * n + S + 2
    for i in range(S):
        stored_self = False
        stored_at_reach = False
        leave = 0.0
        loop = 0.0
        n_before = 0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            before = rank[j] < reach[i]
            n_before = n_before + before
            if rank[j] == reach[i]:
                stored_at_reach = True
            if j == S:
                leave = leave + data[e]
                weight[e] = 0.0
            elif j == i:
                stored_self = True
                loop = data[e]
                weight[e] = -width[i] if before else 0.0
            else:
                leave = leave + data[e]
                weight[e] = data[e] - width[i] if before else data[e]
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
        precond[i] = diagonal[i] if active[i] else 1.0
        current[i] = x[i]
    current[S] = 0.0
    step[S] = 0.0
    c.S = S
    c.order = order
    c.rank = rank
    c.indptr = indptr
    c.indices = indices
    c.weight = weight
    c.width = width
    c.reach = reach
    c.partial = partial
    c.partial_to = partial_to
    c.self_before = self_before
    c.active = active
    c.diagonal = diagonal
    c.precond = precond
    c.acc = work + 15 * n
    c.cum = work + 16 * n
    c.acc_abs = weight + stored
    c.cum_abs = weight + stored + n
    c.transposed = transposed
    best = _backward_error(&c, rhs, current, residual, flow)
    flow_kept = True
    # Zero's backward error, without its products: M 0 = 0 and Q |0| = 0 exactly, so
    # its residual is rhs and each active row with rhs != 0 scores |rhs| / |rhs| = 1.
    trial = 0.0
    for i in range(S):
        if c.active[i] and rhs[i] != 0.0:
            trial = 1.0
    if not best <= trial:
        best = trial
        flow_kept = False
        for i in range(S):
            current[i] = 0.0
            residual[i] = rhs[i]
    for round_ in range(rounds):
        if best <= rtol:
            break
        enough = INFINITY
        for i in range(S):
            if c.active[i]:
                trial = _magnitude(rhs[i]) + c.diagonal[i] * _magnitude(current[i])
                if trial < enough:
                    enough = trial
        _bicgstab(&c, residual, step, scratch, maxiter, 1e-13, rtol * enough)
        for i in range(S):
            step[i] = current[i] + step[i]
        trial = _backward_error(&c, rhs, step, zero, flow)
        flow_kept = trial < best
        if not flow_kept:
            break
        current, step = step, current
        residual, zero = zero, residual
        if trial > 0.5 * best:
            best = trial
            break
        best = trial
    for i in range(S):
        x[i] = current[i]
        # The flow of the candidate serves the residual below when the candidate is
        # its own positive part (zeros of either sign add nothing to a product).
        if not (current[i] == 0.0 or (current[i] > 0.0 and c.active[i])):
            flow_kept = False
    gap = NAN
    if not transposed:
        if not flow_kept:
            for i in range(S):
                step[i] = current[i] if c.active[i] and current[i] > 0.0 else 0.0
            _flow(&c, step, flow)
        gap = 0.0
        for i in range(S):
            if current[i] > 0.0 and c.active[i]:
                trial = _magnitude(rhs[i] + flow[i] + self_loop[i] * current[i] - current[i])
                if not trial <= gap:
                    gap = trial
    free(work)
    free(partial_to)
    free(self_before)
    omega[0] = best
    residual_out[0] = gap
    return 0


def poured_solve(order, rank, indptr, indices, data, width, reach, partial,
                 const char[::1] active, const double[::1] rhs,
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
    cdef ChainPieces k = chain_pieces(order, rank, indptr, indices, data, width, reach, partial,
                                      "poured_solve")
    cdef double omega, gap
    cdef int status
    for name, given in (("active", active.shape[0]), ("rhs", rhs.shape[0]), ("x", x.shape[0])):
        if given != k.S:
            raise ShapeError(f"poured_solve: `{name}` must have one entry per state of the "
                             f"kernel ({k.S}, `order` less the goal); got {given}.")
    if k.S > 0:
        with nogil:
            status = chain_solve(&k, &active[0], &rhs[0], &x[0], rtol, rounds, maxiter,
                                 transposed, &omega, &gap)
        if status < 0:
            raise MemoryError()
        return omega, gap
    return 0.0, (NAN if transposed else 0.0)


cdef void chain_apply(const ChainPieces* k, const double* x, double* along,
                      double* out) noexcept nogil:
    """:func:`poured_apply` on the pieces ``k``: ``out = kernel @ x``, ``along`` scratch of
    ``k.S + 2`` doubles."""
    cdef Py_ssize_t n = k.n, n_next = k.S + 1, i, t
    cdef int64_t e, at, reach_at
    cdef double seen_before, stored, unseen, at_reach
    cdef bint stored_there
    cdef const int64_t* order = k.order
    cdef const int64_t* rank = k.rank
    cdef const int64_t* indptr = k.indptr
    cdef const int64_t* indices = k.indices
    cdef const double* data = k.data
    cdef const int64_t* reach = k.reach
    along[0] = 0.0
    for t in range(n_next):
        along[t + 1] = x[order[t]] if t == 0 else along[t] + x[order[t]]
    for i in range(n):
        seen_before = 0.0
        stored = 0.0
        stored_there = False
        reach_at = reach[i]
        for e in range(indptr[i], indptr[i + 1]):
            at = rank[indices[e]]
            if at < reach_at:
                seen_before = seen_before + x[indices[e]]
            elif at == reach_at:
                stored_there = True
            stored = stored + data[e] * x[indices[e]]
        unseen = along[reach_at] - seen_before
        if reach_at < n_next and not stored_there:
            at_reach = x[order[reach_at]]
        else:
            at_reach = 0.0
        out[i] = stored + k.width[i] * unseen + k.partial[i] * at_reach


def poured_apply(order, rank, indptr, indices, data, width, reach, partial, const double[::1] x,
                 double[::1] along, double[::1] out):
    """``out = kernel @ x`` for a ``PouredKernel`` and finite ``x``, with the operations of
    ``reference.poured.PouredKernel.finite_product`` in its order (the prefix sums ``along`` of
    ``x`` along ``order``, scratch of length ``S+2``; each row's sums of its stored entries, before
    the reach and all of them, from 0 in index order; then ``stored + width * unseen + partial *
    at_reach``), so the same floats."""
    cdef ChainPieces k = chain_pieces(order, rank, indptr, indices, data, width, reach, partial)
    if x.shape[0] != k.S + 1 or along.shape[0] != k.S + 2 or out.shape[0] != k.n:
        raise ShapeError(f"poured_apply: `x`, `along`, `out` must have {k.S + 1}, {k.S + 2}, {k.n} "
                         f"entries; got {x.shape[0]}, {along.shape[0]}, {out.shape[0]}.")
    with nogil:
        chain_apply(&k, &x[0], &along[0], &out[0] if k.n else NULL)


cdef int chain_reaches_goal(const ChainPieces* c) noexcept nogil:
    """:func:`reaches_goal` on the pieces ``c`` of a square kernel: 1 or 0, or -1 when its
    scratch space cannot be allocated."""
    cdef Py_ssize_t S = c.S, i, tail = 0
    cdef int64_t k, j, goal_at = c.rank[S], target, n_edges = 0, edges = c.stored + S
    cdef bint goal_stored, exits, stored_there
    cdef const int64_t* indptr = c.indptr
    cdef const int64_t* indices = c.indices
    cdef const int64_t* rank = c.rank
    cdef const int64_t* reach = c.reach
    cdef const double* data = c.data
    # One block: tails, heads (edges each), the queue (S) and the search's scratch
    # (2 S + 1 + edges), each written before it is read.
    cdef int64_t* block = <int64_t*>malloc((3 * S + 1 + 3 * edges) * sizeof(int64_t))
    cdef unsigned char* seen = <unsigned char*>calloc(S + 1, sizeof(unsigned char))
    if block == NULL or seen == NULL:
        free(block)
        free(seen)
        return -1
    cdef int64_t* tails = block
    cdef int64_t* heads = tails + edges
    cdef int64_t* queue = heads + edges
    cdef int64_t* scratch = queue + S
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
        if not goal_stored and ((goal_at < reach[i] and c.width[i] > 0.0)
                                or (goal_at == reach[i] and c.partial[i] > 0.0)):
            exits = True
        if reach[i] <= S and not stored_there and c.partial[i] > 0.0:
            target = c.order[reach[i]]
            if target < S and target != i:
                tails[n_edges] = i
                heads[n_edges] = target
                n_edges = n_edges + 1
        if exits:
            seen[i] = 1
            queue[tail] = i
            tail = tail + 1
    if tail < S:
        tail = _search_back(S, n_edges, tails, heads, scratch, queue, tail, seen)
    free(block)
    free(seen)
    return tail == S


cdef bint goal_reached(const ChainPieces* c) except -1:
    """:func:`chain_reaches_goal` without the GIL, raising ``MemoryError`` when it fails."""
    cdef int found
    with nogil:
        found = chain_reaches_goal(c)
    if found < 0:
        raise MemoryError()
    return found == 1


def reaches_goal(order, rank, indptr, indices, data, width, reach, partial):
    """Whether every state of a square ``PouredKernel`` reaches the goal on edges of positive
    probability: its positive stored entries, its unseen next state at the reach when the
    partial is positive, and the goal when the row moves there (as
    ``reference.chains._poured_exits``). ``True`` proves it; ``False`` may come from the
    unseen next states before the reach, left out (``O(S + stored)`` edges only)."""
    cdef ChainPieces c = chain_pieces(order, rank, indptr, indices, data, width, reach, partial,
                                      "reaches_goal")
    return goal_reached(&c)


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
