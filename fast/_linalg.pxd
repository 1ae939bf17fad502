# Inline helpers shared by the compiled kernels of the ``fast`` backend.

from libc.stdint cimport int64_t

cdef extern from *:
    void prefetch "__builtin_prefetch" (const void* address) noexcept nogil

cdef enum:
    # States ahead of the current one whose ``v`` entries a CSR sweep prefetches.
    PREFETCH_AHEAD = 4
    # Fewest states for which a CSR sweep prefetches: below, ``v`` (8 bytes a
    # state) fits in a 2 MiB L2 cache and the prefetches only cost time.
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
