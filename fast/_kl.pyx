# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled Chernoff (KL) intervals, bit-identical to the numpy kernel.

Private module of the ``fast`` backend: the kernel ``kl_interval`` of
``docs/backends.md``. It runs the bisection of ``reference.kernels.kl_interval``:
the same midpoints ``0.5 * (inside + outside)``, the same test
``kl(p_hat, mid) <= level / n`` with the same operations in the same order
(``setup.py`` forbids fused multiply-adds), the same number of steps and the
same outer end. The logarithms are numpy's own: the float64 inner loop of
``numpy.log`` (vectorised, and not the C library's ``log``, whose last bits
differ), called on a block of entries at a time, so every end is the same
float as the numpy kernel's.

Entries are bisected in blocks of ``BLOCK``, both sides at once, one call of
the logarithm loop per step; the blocks run on OpenMP threads.
"""

cimport cython
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport INFINITY

import numpy as np

cnp.import_array()
cnp.import_ufunc()

cdef enum:
    BLOCK = 128  # entries bisected together


ctypedef void (*Loop)(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
"""A numpy inner loop (it needs no GIL: numpy calls its float loops without it)."""

cdef Loop _log_loop = NULL
cdef void* _log_data = NULL


cdef void _find_log_loop() except *:
    """Set ``_log_loop`` to the float64 -> float64 inner loop of ``numpy.log``."""
    global _log_loop, _log_data
    cdef cnp.ufunc log = np.log
    cdef int i
    for i in range(log.ntypes):
        if log.types[2 * i] == cnp.NPY_DOUBLE and log.types[2 * i + 1] == cnp.NPY_DOUBLE:
            _log_loop = <Loop>log.functions[i]
            _log_data = log.data[i]
            return
    raise ImportError("numpy.log has no float64 loop")


_find_log_loop()


cdef inline void _log(double* x, double* out, cnp.npy_intp size) noexcept nogil:
    """``out = numpy.log(x)`` on ``size`` contiguous values."""
    cdef char* args[2]
    cdef cnp.npy_intp steps[2]
    args[0] = <char*>x
    args[1] = <char*>out
    steps[0] = sizeof(double)
    steps[1] = sizeof(double)
    _log_loop(args, &size, steps, _log_data)


cdef void _kl(const double* p, const double* q, Py_ssize_t m, double* ratio, double* logs,
              double* out) noexcept nogil:
    """``out = kl(p, q)`` of ``m`` pairs as the numpy kernel computes it (``0 log 0 = 0``).

    ``ratio`` and ``logs`` are scratch space of ``2 m`` values.
    """
    cdef Py_ssize_t j
    cdef double a, b
    for j in range(m):
        ratio[j] = p[j] / q[j]
        ratio[m + j] = (1 - p[j]) / (1 - q[j])
    _log(ratio, logs, 2 * m)
    for j in range(m):
        a = p[j] * logs[j] if p[j] > 0 else 0.0
        b = (1 - p[j]) * logs[m + j] if p[j] < 1 else 0.0
        out[j] = a + b


cdef void _block(const double* p_hat, const double* n, const double* level, Py_ssize_t m,
                 int steps, double* lo, double* hi) noexcept nogil:
    """The ends of ``m <= BLOCK`` entries: chain ``j`` is the lower side of entry ``j``,
    chain ``m + j`` its upper side."""
    cdef double p[2 * BLOCK]
    cdef double radius[2 * BLOCK]
    cdef double inside[2 * BLOCK]
    cdef double outside[2 * BLOCK]
    cdef double outer[2 * BLOCK]
    cdef double mid[2 * BLOCK]
    cdef double kl[2 * BLOCK]
    cdef double ratio[4 * BLOCK]
    cdef double logs[4 * BLOCK]
    cdef Py_ssize_t j, c = 2 * m
    cdef int step
    cdef bint ok
    for j in range(m):
        p[j] = p[m + j] = p_hat[j]
        radius[j] = radius[m + j] = level[j] / n[j] if n[j] > 0 else INFINITY
        outer[j] = 0.0
        outer[m + j] = 1.0
    for j in range(c):
        inside[j] = p[j]
        outside[j] = outer[j]
    for step in range(steps):
        for j in range(c):
            mid[j] = 0.5 * (inside[j] + outside[j])
        _kl(p, mid, c, ratio, logs, kl)
        for j in range(c):
            ok = kl[j] <= radius[j]
            inside[j] = mid[j] if ok else inside[j]
            outside[j] = outside[j] if ok else mid[j]
    _kl(p, outer, c, ratio, logs, kl)
    for j in range(m):
        lo[j] = outer[j] if kl[j] <= radius[j] else outside[j]
        hi[j] = outer[m + j] if kl[m + j] <= radius[m + j] else outside[m + j]


@cython.boundscheck(False)
@cython.wraparound(False)
def kl_interval(const double[::1] p_hat, const double[::1] n, const double[::1] level,
                double[::1] lo, double[::1] hi, int steps, int threads):
    """Write the ends of the intervals ``{q : n kl(p_hat, q) <= level}`` into ``lo``, ``hi``.

    All arrays have one length; ``p_hat`` in ``[0, 1]``, ``n >= 0``,
    ``level > 0`` (checked by the caller); ``n = 0`` gives ``[0, 1]``.
    ``steps`` bisection steps on each side (``reference.confidence.KL_BISECTIONS``),
    on ``threads`` OpenMP threads over blocks of entries.
    """
    cdef Py_ssize_t size = p_hat.shape[0]
    cdef Py_ssize_t n_blocks = (size + BLOCK - 1) // BLOCK
    cdef Py_ssize_t b, start
    if size == 0:
        return
    for b in prange(n_blocks, nogil=True, num_threads=threads, schedule="static"):
        start = b * BLOCK
        _block(&p_hat[start], &n[start], &level[start], min(BLOCK, size - start), steps,
               &lo[start], &hi[start])
