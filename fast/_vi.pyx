# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled Bellman sweep of plain value iteration on a known kernel.

Private module of the ``fast`` backend. The kernel is dense ``(S, A, S+1)`` or
CSR ``(S*A, S+1)`` given as ``(indptr int64, indices int32, data float64)``;
``v`` has shape ``(S+1,)`` with ``v[S] = 0`` at the goal. Each sweep returns
its residual ``max_s |v_out(s) - v(s)|``. One thread runs a plain loop over
the states; more split them in dynamically scheduled chunks, so a thread that
another process delays holds back only its current chunk. Both call the same
per-state function on the sweep's arrays as plain pointers (an OpenMP loop
body that reads memoryviews reloads them from the shared frame and ran at
0.6-0.7x the speed of the plain loop on one thread).

Which storage to sweep is the caller's choice: a kernel with at most
:data:`CSR_MAX_FILL` of its entries nonzero is swept in CSR form whatever
its storage.
"""

from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from scipy.linalg.cython_blas cimport ddot

from ._linalg cimport (PREFETCH_AHEAD, PREFETCH_MIN_STATES, prefetch_values, residual,
                      sweep_chunk)

CSR_MAX_FILL = 0.35
"""Largest fraction of nonzero entries for which the CSR sweep beats the dense one.

A stored entry costs 12 bytes read (value and int32 column) and a random read
of ``v``; a dense entry costs 8 bytes read in order (BLAS ``ddot``). Measured
on garnets with S = 1000, A = 4 (one thread): at a fill of 0.25 the CSR sweep
takes 0.63x the dense one, at 0.4 1.1x, at 0.6 1.7x.
"""



cdef struct VISweep:
    # The arrays of one sweep as plain pointers: the kernel (dense ``P`` or the CSR
    # ``indptr``, ``cols``, ``data``), the costs ``(S, A)`` in C order, ``v`` and the outputs.
    const double* P
    const int64_t* indptr
    const int* cols
    const double* data
    const double* costs
    const double* v
    double* v_out
    Py_ssize_t* policy_out
    Py_ssize_t n_states
    Py_ssize_t n_actions
    int n_next
    bint prefetch  # ask for ``v`` at the columns of the state PREFETCH_AHEAD ahead


cdef inline double _write(const VISweep* w, Py_ssize_t s, double best,
                          Py_ssize_t best_a) noexcept nogil:
    """Writes ``v_out(s) = best`` and its greedy action; returns ``|best - v(s)|`` (the
    difference itself when it is NaN, as :func:`fast._linalg.residual` does)."""
    cdef double d = best - w.v[s]
    w.v_out[s] = best
    w.policy_out[s] = best_a
    return -d if d < 0.0 else d


cdef inline double _dense_state(const VISweep* w, Py_ssize_t s) noexcept nogil:
    """Writes ``v_out(s)`` and its greedy action on the dense kernel (BLAS ``ddot`` per
    row); returns ``|v_out(s) - v(s)|``."""
    cdef Py_ssize_t A = w.n_actions, a, best_a = 0
    cdef int n = w.n_next, one = 1
    cdef double q, best = INFINITY
    for a in range(A):
        q = w.costs[s * A + a] + ddot(&n, <double*>(w.P + (s * A + a) * n), &one,
                                      <double*>w.v, &one)
        if q < best:
            best = q
            best_a = a
    return _write(w, s, best, best_a)


cdef inline double _csr_state(const VISweep* w, Py_ssize_t s) noexcept nogil:
    """Writes ``v_out(s)`` and its greedy action on the CSR kernel (each row summed in
    stored order); returns ``|v_out(s) - v(s)|``."""
    cdef Py_ssize_t A = w.n_actions, a, best_a = 0
    cdef const int64_t* ptr = w.indptr + s * A
    cdef int64_t k = ptr[0], end
    cdef double q, acc, best = INFINITY
    if w.prefetch and s + PREFETCH_AHEAD < w.n_states:
        prefetch_values(w.cols, ptr + PREFETCH_AHEAD * A, A, w.v)
    for a in range(A):
        end = ptr[a + 1]
        acc = 0.0
        while k < end:
            acc += w.data[k] * w.v[w.cols[k]]
            k += 1
        q = w.costs[s * A + a] + acc
        if q < best:
            best = q
            best_a = a
    return _write(w, s, best, best_a)


cdef void _parallel(const VISweep* w, bint dense, int n_threads) noexcept nogil:
    """The states of one sweep split among ``n_threads`` threads in dynamic chunks.

    Kept apart from the one-thread loop: the OpenMP region takes the address of
    its arguments, which would keep that loop from holding them in registers.
    """
    cdef Py_ssize_t S = w.n_states, s
    for s in prange(S, num_threads=n_threads, schedule="dynamic",
                    chunksize=sweep_chunk(S, n_threads)):
        if dense:
            _dense_state(w, s)
        else:
            _csr_state(w, s)


cdef double _sweep(const VISweep* w, bint dense, int n_threads) noexcept nogil:
    """Every state of one sweep; returns ``max_s |v_out(s) - v(s)|``, NaN if a difference is
    NaN. One thread runs a plain loop with the residual in the same pass; more split the
    states among them (:func:`_parallel`) and take the residual after."""
    cdef Py_ssize_t s
    cdef double q, r = 0.0
    if n_threads > 1:
        _parallel(w, dense, n_threads)
        return residual(w.v_out, w.v, w.n_states)
    for s in range(w.n_states):
        q = _dense_state(w, s) if dense else _csr_state(w, s)
        if q > r or q != q:
            r = q
    return r


def sweep_dense(const double[:, :, ::1] P, const double[:, ::1] costs, const double[::1] v,
                double[::1] v_out, Py_ssize_t[::1] policy_out, int n_threads):
    """``v_out(s) = min_a c(s,a) + sum_s' P(s'|s,a) v(s')``; ties to the lowest action.

    Each row's dot product is the BLAS ``ddot`` (vectorised for the machine).
    Returns ``max_s |v_out(s) - v(s)|``.
    """
    cdef double r
    cdef VISweep w
    w.P = &P[0, 0, 0]
    w.n_states = P.shape[0]
    w.costs = &costs[0, 0]
    w.v = &v[0]
    w.v_out = &v_out[0]
    w.policy_out = &policy_out[0]
    w.n_actions = P.shape[1]
    w.n_next = <int>P.shape[2]
    with nogil:
        r = _sweep(&w, True, n_threads)
    return r


def sweep_csr(const int64_t[::1] indptr, const int[::1] cols, const double[::1] data,
              const double[:, ::1] costs, const double[::1] v, double[::1] v_out,
              Py_ssize_t[::1] policy_out, int n_threads):
    """The same sweep with the kernel stored as CSR rows ``s*A + a``; returns the residual."""
    cdef Py_ssize_t S = costs.shape[0]
    cdef double r
    cdef VISweep w
    w.indptr = &indptr[0]
    w.cols = &cols[0] if cols.shape[0] else NULL
    w.data = &data[0] if data.shape[0] else NULL
    w.costs = &costs[0, 0]
    w.v = &v[0]
    w.v_out = &v_out[0]
    w.policy_out = &policy_out[0]
    w.n_states = S
    w.n_actions = costs.shape[1]
    w.prefetch = S >= PREFETCH_MIN_STATES
    with nogil:
        r = _sweep(&w, False, n_threads)
    return r
