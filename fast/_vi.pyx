# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
# A sparse row's start is taken as an address even when the row is empty, which may be one
# past the end of its array: those statements keep boundscheck off under SSPGM_DEBUG=1 too.
"""Compiled Bellman sweep of plain value iteration on a known kernel.

Private module of the ``fast`` backend. The kernel is dense ``(S, A, S+1)`` or
CSR ``(S*A, S+1)`` given as ``(indptr int64, indices int32, data float64)``;
``v`` has shape ``(S+1,)`` with ``v[S] = 0`` at the goal. Each sweep returns
its residual ``max_s |v_out(s) - v(s)|``. States are split among threads in
dynamically scheduled chunks, so a thread that another process delays holds
back only its current chunk.

Which storage to sweep is the caller's choice: a kernel with at most
:data:`CSR_MAX_FILL` of its entries nonzero is swept in CSR form whatever
its storage.
"""

cimport cython
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from scipy.linalg.cython_blas cimport ddot

from ._linalg cimport (PREFETCH_AHEAD, PREFETCH_MIN_STATES, prefetch_values, residual,
                      sparse_dot, sweep_chunk)

CSR_MAX_FILL = 0.35
"""Largest fraction of nonzero entries for which the CSR sweep beats the dense one.

A stored entry costs 12 bytes read (value and int32 column) and a random read
of ``v``; a dense entry costs 8 bytes read in order (BLAS ``ddot``). Measured
on garnets with S = 1000, A = 4 (one thread): at a fill of 0.25 the CSR sweep
takes 0.63x the dense one, at 0.4 1.1x, at 0.6 1.7x.
"""



def sweep_dense(const double[:, :, ::1] P, const double[:, ::1] costs, const double[::1] v,
                double[::1] v_out, Py_ssize_t[::1] policy_out, int n_threads):
    """``v_out(s) = min_a c(s,a) + sum_s' P(s'|s,a) v(s')``; ties to the lowest action.

    Each row's dot product is the BLAS ``ddot`` (vectorised for the machine).
    Returns ``max_s |v_out(s) - v(s)|``.
    """
    cdef Py_ssize_t S = P.shape[0], A = P.shape[1], S1 = P.shape[2]
    cdef Py_ssize_t s, a, best_a
    cdef int n = <int>S1, one = 1
    cdef double q, best
    for s in prange(S, nogil=True, num_threads=n_threads, schedule="dynamic",
                    chunksize=sweep_chunk(S, n_threads)):
        best = INFINITY
        best_a = 0
        for a in range(A):
            q = costs[s, a] + ddot(&n, <double*>&P[s, a, 0], &one, <double*>&v[0], &one)
            if q < best:
                best = q
                best_a = a
        v_out[s] = best
        policy_out[s] = best_a
    with nogil:
        q = residual(&v_out[0], &v[0], S)
    return q


def sweep_csr(const int64_t[::1] indptr, const int[::1] cols, const double[::1] data,
              const double[:, ::1] costs, const double[::1] v, double[::1] v_out,
              Py_ssize_t[::1] policy_out, int n_threads):
    """The same sweep with the kernel stored as CSR rows ``s*A + a``; returns the residual."""
    cdef Py_ssize_t S = costs.shape[0], A = costs.shape[1]
    cdef Py_ssize_t s, a, i, best_a
    cdef double q, best
    for s in prange(S, nogil=True, num_threads=n_threads, schedule="dynamic",
                    chunksize=sweep_chunk(S, n_threads)):
        if S >= PREFETCH_MIN_STATES and s + PREFETCH_AHEAD < S:
            prefetch_values(&cols[0], &indptr[(s + PREFETCH_AHEAD) * A], A, &v[0])
        best = INFINITY
        best_a = 0
        for a in range(A):
            i = s * A + a
            with cython.boundscheck(False):
                q = costs[s, a] + sparse_dot(&data[indptr[i]], &cols[indptr[i]],
                                             indptr[i + 1] - indptr[i], &v[0])
            if q < best:
                best = q
                best_a = a
        v_out[s] = best
        policy_out[s] = best_a
    with nogil:
        q = residual(&v_out[0], &v[0], S)
    return q
