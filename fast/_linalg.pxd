# Inline helpers shared by the compiled kernels of the ``fast`` backend.

from libc.stdint cimport int64_t

cdef extern from *:
    void prefetch "__builtin_prefetch" (const void* address) noexcept nogil

cdef enum:
    # States ahead of the current one whose ``v`` entries a CSR sweep prefetches.
    PREFETCH_AHEAD = 4
    # Fewest states for which a CSR sweep prefetches: below, ``v`` (8 bytes a
    # state) fits in a 2 MiB L2 cache and the prefetches only cost time. Below
    # it too, the CSR EVI sweep tells a stored entry inside the pour prefix by
    # its rank (one more random read above it, where the value test is used).
    PREFETCH_MIN_STATES = 262144


cdef inline double sparse_dot(const double* data, const int* cols, Py_ssize_t n,
                              const double* y) noexcept nogil:
    """Dot product of a CSR row segment with a dense vector."""
    cdef double acc = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        acc += data[k] * y[cols[k]]
    return acc


cdef inline void prefetch_values(const int* cols, const int64_t* ptr, Py_ssize_t n_rows,
                                 const double* v) noexcept nogil:
    """Ask the cache for ``v`` at the stored columns of ``n_rows`` CSR rows from ``ptr``.

    Those reads are random; issued a few states ahead of a sweep, they overlap
    with the work on the current state instead of stalling it.
    """
    cdef int64_t k
    for k in range(ptr[0], ptr[n_rows]):
        prefetch(&v[cols[k]])


cdef inline int sweep_chunk(Py_ssize_t S, int n_threads) noexcept nogil:
    """States per dynamically scheduled chunk of a sweep: about 32 chunks a thread, so a
    thread that another process delays holds back at most a thirty-second of the sweep."""
    cdef Py_ssize_t c = S // (32 * n_threads)
    return <int>(c if c > 16 else 16)


cdef inline double residual(const double* v_new, const double* v_old,
                            Py_ssize_t S) noexcept nogil:
    """``max_s |v_new(s) - v_old(s)|``, NaN if a difference is NaN."""
    cdef double r = 0.0, d
    cdef Py_ssize_t s
    for s in range(S):
        d = v_new[s] - v_old[s]
        if d < 0.0:
            d = -d
        if d > r or d != d:
            r = d
    return r


cdef inline void pour_row(const Py_ssize_t* ranks, const Py_ssize_t* items, Py_ssize_t m,
                          const double* gap, double width, double mass, Py_ssize_t n_next,
                          double* stored, int64_t* reach, double* partial) noexcept nogil:
    """The greedy pour of one pair over its ``m`` stored entries, given by rank.

    ``ranks`` (ascending) are the stored entries' positions in the pour order
    and ``items`` their indices into ``gap`` and ``stored`` (which holds their
    lower ends and receives the poured mass). Between two stored entries lies a
    run of unseen next states of width ``width``: filled whole when
    ``length * width < mass``, else ``trunc(mass / width)`` of them and the
    rest (clipped to ``[0, width]``) into the next, where the pour stops.
    Writes the position where it stopped into ``reach`` (``n_next`` if it
    went through the order) and the unseen rest there into ``partial``: the
    arithmetic of :func:`reference.kernels.greedy_pour`, step for step (the pour of
    EVI's optimistic kernels and of the certificates' kernels).
    """
    cdef Py_ssize_t t = 0, r, start = 0, length, q
    cdef double g, left
    reach[0] = 0
    partial[0] = 0.0
    if mass <= 0.0:
        return
    while True:
        r = ranks[t] if t < m else n_next
        length = r - start
        if length * width < mass:
            mass = mass - length * width
        else:
            q = <Py_ssize_t>(mass / width)
            left = 0.0
            if q >= length:
                q = length
            else:
                left = mass - q * width
            if left < 0.0:
                left = 0.0
            if left > width:
                left = width
            reach[0] = start + q
            partial[0] = left
            return
        if t == m:
            reach[0] = n_next
            return
        g = gap[items[t]]
        if g >= mass:
            stored[items[t]] += mass
            reach[0] = r
            return
        stored[items[t]] += g
        mass = mass - g
        start = r + 1
        t = t + 1
