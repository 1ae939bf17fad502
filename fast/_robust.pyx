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
the pour lengths. :func:`poured_solve` evaluates such a kernel: BiCGSTAB on
its off-diagonal products, by prefix sums along its order, never expanded;
:func:`poured_apply` is its product by a vector, :func:`reaches_goal` a search
for the goal on its graph, and :func:`repair_order` and :func:`pour_walk` the
pour order of a vector and the prefix sums along it.
"""

import numpy as np

cimport cython
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY, isfinite, isinf
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from ._linalg cimport pour_row
from ._order cimport (WholeOrder, _entry_key, _entry_position, _entry_rank, _sort_keys,
                      repair_whole_order)


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


cdef WholeOrder _order(const int64_t[::1] order, const int64_t[::1] rank,
                       const double[::1] cum_v, const int64_t[::1] cum_inf,
                       const double[::1] v) noexcept nogil:
    cdef WholeOrder o
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
                int n_threads):
    """``out[i]`` = value of the pour of row ``rows[i]`` against ``v`` in ``order``."""
    cdef Py_ssize_t n = rows.shape[0], i
    cdef int64_t row, k
    cdef int64_t n_next = v.shape[0]
    cdef WholeOrder o = _order(order, rank, cum_v, cum_inf, v)
    cdef int64_t* keys = NULL
    cdef int64_t* local = NULL
    cdef int64_t j, m = 0, widest = 0
    cdef double free_mass, walk
    for i in range(n):
        widest = max(widest, indptr[rows[i] + 1] - indptr[rows[i]])
    with nogil, parallel(num_threads=n_threads):
        keys = <int64_t*>malloc((widest + 1) * sizeof(int64_t))
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
                                       k, hi_unseen[row], n_next, keys)
        free(keys)
        free(local)


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
    cdef Py_ssize_t n = rows.shape[0], i
    cdef int64_t n_next = rank.shape[0], row, k, j, first, widest = 0
    cdef double total
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] ptr = out_ptr
    for i in range(n):
        k = indptr[rows[i] + 1] - indptr[rows[i]]
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
            row = rows[i]
            first = indptr[row]
            k = indptr[row + 1] - first
            total = 0.0
            for j in range(k):
                idx[ptr[i] + j] = cols[first + j]
                val[ptr[i] + j] = lo[first + j]
                total = total + lo[first + j]
                gap[j] = hi[first + j] - lo[first + j]
                keys[j] = _entry_key(rank[cols[first + j]], j)
            _sort_keys(keys, k)
            for j in range(k):
                ranks[j] = _entry_rank(keys[j])
                items[j] = _entry_position(keys[j])
            width_v[i] = hi_unseen[row]
            with cython.boundscheck(False):
                pour_row(ranks, items, k, gap, hi_unseen[row], 1.0 - total, n_next,
                         &val[ptr[i]], &reach_v[i], &partial_v[i])
        free(keys)
        free(ranks)
        free(items)
        free(gap)
    return out_ptr, indices, data, width, reach, partial


cdef struct Chain:
    # A square PouredKernel (S rows over S+1 next states, goal last) without its diagonal.
    int64_t S
    const int64_t* order
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
    double* cum                 # scratch (S+2,): prefix sums along the order


cdef void _system(const Chain* c, const double* x, double* out, double* flow,
                  double* offdiagonal) noexcept nogil:
    """``out = M x`` with ``M = diag(d) - Q`` on the active rows (identity elsewhere), and
    ``flow = Q |x|`` and ``offdiagonal = Q x`` on the active rows unless NULL; ``x`` is 0 on
    the inactive rows and finite."""
    cdef double unused
    _system_dots(c, x, out, offdiagonal, NULL, &unused, NULL, &unused)
    if flow != NULL:
        _flow(c, x, flow)


cdef void _system_dots(const Chain* c, const double* x, double* out, double* offdiagonal,
                       const double* u, double* u_out, const double* w,
                       double* w_out) noexcept nogil:
    """``out = M x`` as :func:`_system` (and ``offdiagonal = Q x`` unless NULL), with the dot
    products ``u_out = u . out`` and ``w_out = w . out`` (each unless its ``u``, ``w`` is
    NULL; ``u`` may be ``out``) summed in the same loop, in the order and with the
    operations of :func:`_dot`, so the same floats while their additions overlap the
    product's."""
    cdef int64_t S = c.S, i, k, j, t
    cdef double acc, unseen, u_acc = 0.0, w_acc = 0.0
    cdef double* cum = c.cum
    cum[0] = 0.0
    for t in range(S + 1):
        j = c.order[t]
        cum[t + 1] = cum[t] + (x[j] if j < S else 0.0)
    for i in range(S):
        if not c.active[i]:
            out[i] = x[i]
        else:
            acc = 0.0
            for k in range(c.indptr[i], c.indptr[i + 1]):
                j = c.indices[k]
                if j < S:
                    acc = acc + c.weight[k] * x[j]
            unseen = cum[c.reach[i]]
            if c.self_before[i]:
                unseen = unseen - x[i]
            acc = acc + c.width[i] * unseen
            j = c.partial_to[i]
            if j >= 0:
                acc = acc + c.partial[i] * x[j]
            out[i] = c.diagonal[i] * x[i] - acc
            if offdiagonal != NULL:
                offdiagonal[i] = acc
        if u != NULL:
            u_acc = u_acc + u[i] * out[i]
        if w != NULL:
            w_acc = w_acc + w[i] * out[i]
    u_out[0] = u_acc
    w_out[0] = w_acc


cdef void _flow(const Chain* c, const double* x, double* flow) noexcept nogil:
    """``flow = Q |x|`` on the active rows (0 elsewhere); ``x`` as in :func:`_system`."""
    cdef int64_t S = c.S, i, k, j, t
    cdef double acc, ax, unseen
    cdef double* cum = c.cum
    cum[0] = 0.0
    for t in range(S + 1):
        j = c.order[t]
        ax = (x[j] if x[j] >= 0.0 else -x[j]) if j < S else 0.0
        cum[t + 1] = cum[t] + ax
    for i in range(S):
        if not c.active[i]:
            flow[i] = 0.0
            continue
        acc = 0.0
        for k in range(c.indptr[i], c.indptr[i + 1]):
            j = c.indices[k]
            if j < S:
                acc = acc + c.weight[k] * (x[j] if x[j] >= 0.0 else -x[j])
        unseen = cum[c.reach[i]]
        if c.self_before[i]:
            unseen = unseen - (x[i] if x[i] >= 0.0 else -x[i])
        acc = acc + c.width[i] * unseen
        j = c.partial_to[i]
        if j >= 0:
            acc = acc + c.partial[i] * (x[j] if x[j] >= 0.0 else -x[j])
        flow[i] = acc


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
                 double[::1] x, double rtol, int rounds, int maxiter):
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
    """
    cdef int64_t S = order.shape[0] - 1, i
    cdef int round_
    cdef double best, trial, enough, gap
    cdef Chain c
    cdef int64_t k, j, n_before
    cdef bint stored_self, stored_at_reach, before
    cdef double leave, loop
    weight_array = np.empty(indices.shape[0])
    partial_to_array = np.empty(S, dtype=np.int64)
    self_before_array = np.empty(S, dtype=np.int8)
    cdef double[::1] weight = weight_array
    cdef int64_t[::1] partial_to = partial_to_array
    cdef char[::1] self_before = self_before_array
    cdef double* work = <double*>malloc((16 * S + 4) * sizeof(double))
    if work == NULL:
        raise MemoryError()
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
    c.indptr = &indptr[0]
    c.indices = &indices[0] if indices.shape[0] else NULL
    c.weight = &weight[0] if weight.shape[0] else NULL
    c.width = &width[0]
    c.reach = &reach[0]
    c.partial = &partial[0]
    c.partial_to = &partial_to[0]
    c.self_before = &self_before[0]
    c.active = &active[0]
    c.diagonal = diagonal
    c.cum = work + 14 * S
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
    return best, gap


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


def poured_apply(const int64_t[::1] order, const int64_t[::1] rank, const int64_t[::1] indptr,
                 const int64_t[::1] indices, const double[::1] data, const double[::1] width,
                 const int64_t[::1] reach, const double[::1] partial, const double[::1] x,
                 double[::1] along, double[::1] out):
    """``out = kernel @ x`` for a ``PouredKernel`` and finite ``x``, with the operations of
    ``reference.poured.PouredKernel._apply`` in its order (the prefix sums ``along`` of ``x``
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
    cdef Py_ssize_t S = reach.shape[0], i, head = 0, tail = 0
    cdef int64_t k, j, goal_at = rank[S], target
    cdef bint goal_stored, exits, stored_there
    counts_array = np.zeros(S + 1, dtype=np.int64)
    tails_array = np.empty(indices.shape[0] + S, dtype=np.int64)
    heads_array = np.empty(indices.shape[0] + S, dtype=np.int64)
    seen_array = np.zeros(S, dtype=np.int8)
    queue_array = np.empty(S, dtype=np.int64)
    cdef int64_t[::1] counts = counts_array, tails = tails_array, heads = heads_array
    cdef int64_t[::1] queue = queue_array
    cdef char[::1] seen = seen_array
    cdef int64_t n_edges = 0
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
                    counts[j + 1] += 1
                    n_edges = n_edges + 1
            if not goal_stored and ((goal_at < reach[i] and width[i] > 0.0)
                                    or (goal_at == reach[i] and partial[i] > 0.0)):
                exits = True
            if reach[i] <= S and not stored_there and partial[i] > 0.0:
                target = order[reach[i]]
                if target < S and target != i:
                    tails[n_edges] = i
                    heads[n_edges] = target
                    counts[target + 1] += 1
                    n_edges = n_edges + 1
            if exits:
                seen[i] = 1
                queue[tail] = i
                tail = tail + 1
        for i in range(S):
            counts[i + 1] += counts[i]
    by_head_array = np.empty(n_edges, dtype=np.int64)
    fill_array = counts_array[:S].copy()
    cdef int64_t[::1] by_head = by_head_array, fill = fill_array
    with nogil:
        for k in range(n_edges):
            by_head[fill[heads[k]]] = tails[k]
            fill[heads[k]] += 1
        while head < tail:
            j = queue[head]
            head = head + 1
            for k in range(counts[j], counts[j + 1]):
                i = by_head[k]
                if not seen[i]:
                    seen[i] = 1
                    queue[tail] = i
                    tail = tail + 1
    return tail == S


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
