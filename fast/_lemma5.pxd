# The arithmetic of Lemma 5 for the compiled kernels of the ``fast`` backend: the Bernstein
# radius, one box, the log term, and the memo of the boxes the pairs of one ``N+`` share.
# Inline helpers, written once for the box builders (``fast/_boxes.pyx``); the Python
# reference is ``reference.confidence.radius``.

from libc.math cimport ceil, isfinite, log, sqrt
from libc.string cimport memset


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



cdef enum:
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

