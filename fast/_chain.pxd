# The chain of a square poured kernel and its products by prefix sums along the pour order,
# inline, for the chain solve of ``fast/_poured.pyx``: the forward products ``Q x`` (each row's
# stored entries summed in the loop of the prefix sums, then its unseen run and partial; with
# ``Q |x|`` in the same pass for a backward error) and the transposed ones ``x Q`` (suffix sums
# over the reaches).

from libc.stdint cimport int64_t


cdef struct Chain:
    # A square PouredKernel (S rows over S+1 next states, goal last) without its diagonal.
    int64_t S
    const int64_t* order
    const int64_t* rank
    const int64_t* indptr
    const int64_t* indices
    const double* weight        # stored entry's probability, less the width when its next
                                # state lies before the reach (taken off the prefix); on the
                                # diagonal without the probability (-width before the reach,
                                # else 0); 0 on the goal
    const double* width
    const int64_t* reach
    const double* partial
    const int64_t* partial_to   # unseen non-goal state at the reach other than the row, or -1
    const char* self_before     # the row's own state is unseen and before its reach
    const char* active          # rows solved; the others are the identity
    const double* diagonal      # leaving probability of each row
    const double* precond       # the diagonal on the active rows, 1 on the others
    double* cum                 # scratch (S + 2,): prefix sums along the order
    double* acc                 # scratch (S+1,): the columns of the transposed products, or
                                # the rows' sums over their stored entries
    double* cum_abs             # scratch (S + 2,) and (S,): ``cum`` and ``acc`` of ``|x|``
    double* acc_abs             # for the product and the flow taken in one pass
    bint transposed             # products by M^T (y -> d y - y Q) instead of M


cdef inline double _magnitude(double v) noexcept nogil:
    return v if v >= 0.0 else -v


cdef inline double _row_rest(const Chain* c, const double* x, const double* cum, int64_t i,
                             double acc, bint absolute) noexcept nogil:
    """``(Q x)[i]`` of an active row ``i`` (with ``absolute``, ``(Q |x|)[i]``) from ``acc``,
    the sum of its stored entries' products (:func:`_stored_and_prefix`), ``cum`` the
    prefix sums of ``x`` (``|x|``) along the order: ``acc`` plus the width times the unseen
    run before its reach (less the row's own state), then plus the partial."""
    cdef int64_t j
    cdef double unseen = cum[c.reach[i]]
    if c.self_before[i]:
        unseen = unseen - (_magnitude(x[i]) if absolute else x[i])
    acc = acc + c.width[i] * unseen
    j = c.partial_to[i]
    if j >= 0:
        acc = acc + c.partial[i] * (_magnitude(x[j]) if absolute else x[j])
    return acc


cdef inline void _stored_and_prefix(const Chain* c, const double* x, double* cum, double* stored,
                                    bint absolute, const double* q=NULL,
                                    double* q_out=NULL) noexcept nogil:
    """``stored[i]``: the sum, from 0 in index order, of row ``i``'s stored entries' weights
    times ``x`` (``|x|``) at their next states, for every row; ``cum[t]``: the sum of ``x``
    (``|x|``) over the first ``t`` next states of the order. ``x`` holds ``S+1`` entries,
    ``x[S] = 0``: the goal adds ``+0`` to the prefix sums and its stored entry (weight 0)
    ``+0`` to its row's, which leaves either sum as it is (a sum from ``+0`` is never
    ``-0``), so the same floats as sums that skip the goal. With ``q``, also ``q_out = q . q``
    (from 0 in index order). One loop, so the rows' sums overlap the chains of additions of
    the prefix sums and of ``q . q``."""
    cdef int64_t S = c.S, t, k, end
    cdef const int64_t* order = c.order
    cdef const int64_t* indptr = c.indptr
    cdef const int64_t* indices = c.indices
    cdef const double* weight = c.weight
    cdef double total = 0.0, acc, qq = 0.0
    cum[0] = 0.0
    for t in range(S):
        total = total + (_magnitude(x[order[t]]) if absolute else x[order[t]])
        cum[t + 1] = total
        if q != NULL:
            qq = qq + q[t] * q[t]
        acc = 0.0
        end = indptr[t + 1]
        for k in range(indptr[t], end):
            acc = acc + weight[k] * (_magnitude(x[indices[k]]) if absolute else x[indices[k]])
        stored[t] = acc
    cum[S + 1] = total + (_magnitude(x[order[S]]) if absolute else x[order[S]])
    if q != NULL:
        q_out[0] = qq


cdef inline double _dot(const double* a, const double* b, int64_t n) noexcept nogil:
    cdef double acc = 0.0
    cdef int64_t i
    for i in range(n):
        acc = acc + a[i] * b[i]
    return acc


cdef inline void _transposed(const Chain* c, const double* x, double* out,
                             bint flow) noexcept nogil:
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
            xi = _magnitude(x[i]) if flow else x[i]
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
        xi = _magnitude(x[i]) if flow else x[i]
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


cdef inline void _product_and_flow(const Chain* c, const double* x, double* out,
                                   double* flow) noexcept nogil:
    """``out = M x`` and ``flow = Q |x|`` (``c`` not transposed; ``x`` finite, ``x[S] = 0``,
    0 on the inactive rows): the products of ``_system_dots`` and ``_flow`` of
    ``fast/_poured.pyx`` in one pass over the entries, every sum the same, from 0 in its
    order."""
    cdef int64_t S = c.S, t, k, i
    cdef const int64_t* order = c.order
    cdef const int64_t* indices = c.indices
    cdef const double* weight = c.weight
    cdef double* cum = c.cum
    cdef double* cum_abs = c.cum_abs
    cdef double total = 0.0, total_abs = 0.0, acc, acc_abs, value
    cum[0] = 0.0
    cum_abs[0] = 0.0
    for t in range(S):
        value = x[order[t]]
        total = total + value
        total_abs = total_abs + _magnitude(value)
        cum[t + 1] = total
        cum_abs[t + 1] = total_abs
        acc = 0.0
        acc_abs = 0.0
        for k in range(c.indptr[t], c.indptr[t + 1]):
            value = x[indices[k]]
            acc = acc + weight[k] * value
            acc_abs = acc_abs + weight[k] * _magnitude(value)
        c.acc[t] = acc
        c.acc_abs[t] = acc_abs
    cum[S + 1] = total + x[order[S]]
    cum_abs[S + 1] = total_abs + _magnitude(x[order[S]])
    for i in range(S):
        if not c.active[i]:
            out[i] = x[i]
            flow[i] = 0.0
        else:
            out[i] = c.diagonal[i] * x[i] - _row_rest(c, x, cum, i, c.acc[i], False)
            flow[i] = _row_rest(c, x, cum_abs, i, c.acc_abs[i], True)
