# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled Chernoff (KL) intervals, bit-identical to the numpy kernel.

Private module of the ``fast`` backend: the kernels ``kl_interval`` and
``chernoff_rows`` (the ends of whole rows of counts, by ``kl_interval``) of
``docs/backends.md``. It runs the method of ``reference.kernels.kl_interval``
(Newton's method from an outer start on each side of each entry, the
bisection as the fallback): each side is a chain whose points, tests and
steps are the numpy kernel's, with the same operations in the same order
(``setup.py`` forbids fused multiply-adds) and the same stopping rules. The
logarithms and exponentials are numpy's own: the float64 inner loops of
``numpy.log`` and ``numpy.exp`` (vectorised, and not the C library's, whose
last bits may differ), called on the chains of a block that need one at a
time, so every end is the same float as the numpy kernel's.

Entries are taken in blocks of ``BLOCK``, both sides at once; the chains of a
block step together, and a chain that stops leaves the block's lists. The
blocks run on OpenMP threads.
"""

cimport cython
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs, fmax, fmin, nextafter, sqrt

import numpy as np

cnp.import_array()
cnp.import_ufunc()

cdef enum:
    BLOCK = 128  # entries per block (2 BLOCK chains)
    CHUNK = 4096  # values of a list of chernoff_rows (32 blocks)


ctypedef void (*Loop)(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
"""A numpy inner loop (it needs no GIL: numpy calls its float loops without it)."""

cdef Loop _log_loop = NULL
cdef void* _log_data = NULL
cdef Loop _exp_loop = NULL
cdef void* _exp_data = NULL


cdef tuple _find_loop(cnp.ufunc ufunc):
    """The float64 -> float64 inner loop of ``ufunc`` and its data, as addresses."""
    cdef int i
    for i in range(ufunc.ntypes):
        if ufunc.types[2 * i] == cnp.NPY_DOUBLE and ufunc.types[2 * i + 1] == cnp.NPY_DOUBLE:
            return <size_t>ufunc.functions[i], <size_t>ufunc.data[i]
    raise ImportError(f"numpy.{ufunc.__name__} has no float64 loop")


cdef void _set_loops() except *:
    """Set the float64 loops of ``numpy.log`` and ``numpy.exp``."""
    global _log_loop, _log_data, _exp_loop, _exp_data
    cdef size_t loop, data
    loop, data = _find_loop(np.log)
    _log_loop, _log_data = <Loop>loop, <void*>data
    loop, data = _find_loop(np.exp)
    _exp_loop, _exp_data = <Loop>loop, <void*>data


_set_loops()


cdef inline void finite_product(Loop loop, void* data, double* x, double* out,
                        cnp.npy_intp size) noexcept nogil:
    """``out = ufunc(x)`` on ``size`` contiguous values, by the ufunc's float64 ``loop``."""
    cdef char* args[2]
    cdef cnp.npy_intp steps[2]
    if size == 0:
        return
    args[0] = <char*>x
    args[1] = <char*>out
    steps[0] = sizeof(double)
    steps[1] = sizeof(double)
    loop(args, &size, steps, data)


cdef struct Bound:
    double roundoff   # KL_ROUNDOFF
    double underflow  # KL_UNDERFLOW


cdef void _kl(const double* p, const double* q, Py_ssize_t k, Bound bound, double* ratio,
              double* logs, double* kl, double* error) noexcept nogil:
    """``kl(p, q)`` of ``k`` pairs and its error bound, as ``reference.kernels.bernoulli_kl``.

    ``ratio`` and ``logs`` are scratch space of ``2 k`` values.
    """
    cdef Py_ssize_t i
    cdef double a, b, at, below, above
    for i in range(k):
        ratio[i] = p[i] / q[i]
        ratio[k + i] = (1 - p[i]) / (1 - q[i])
    finite_product(_log_loop, _log_data, ratio, logs, 2 * k)
    for i in range(k):
        # The loads first, so that the selects below are branch-free (and vectorised).
        at = p[i]
        below = logs[i]
        above = logs[k + i]
        a = at * below if at > 0 else 0.0
        b = (1 - at) * above if at < 1 else 0.0
        kl[i] = a + b
        error[i] = (bound.roundoff * ((2.0 * at + 4.0 * (1 - at))
                                      + 16.0 * (fabs(a) + fabs(b))) + bound.underflow)


cdef void _block(const double* p_hat, const double* n, const double* level, Py_ssize_t m,
                 int bisections, int newton_steps, double exp_start, Bound bound,
                 double* lo, double* hi) noexcept nogil:
    """The ends of ``m <= BLOCK`` entries: chain ``j`` is the lower side of entry ``j``,
    chain ``m + j`` its upper side."""
    cdef double p[2 * BLOCK]
    cdef double r[2 * BLOCK]
    cdef double q[2 * BLOCK]
    cdef double kl[2 * BLOCK]
    cdef double error[2 * BLOCK]
    cdef double cp[2 * BLOCK]      # the p of the listed chains
    cdef double cq[2 * BLOCK]      # their points
    cdef double cx[2 * BLOCK]      # a second value of the listed chains
    cdef double ckl[2 * BLOCK]
    cdef double cerror[2 * BLOCK]
    cdef double ratio[4 * BLOCK]
    cdef double logs[4 * BLOCK]
    cdef Py_ssize_t live[2 * BLOCK]
    cdef Py_ssize_t listed[2 * BLOCK]
    cdef bint upper[2 * BLOCK]
    cdef Py_ssize_t i, j, c = 2 * m, n_live = 0, n_listed = 0, n_rest = 0
    cdef double radius, side, other, lift, d, slope, margin, step, w
    cdef int round_
    for j in range(m):
        radius = level[j] / n[j] if n[j] > 0 else INFINITY
        p[j] = p[m + j] = p_hat[j]
        r[j] = r[m + j] = radius
        upper[j] = False
        upper[m + j] = True
    # Starts: the algebraic bounds, then the exponential one where the side mass is small.
    for j in range(c):
        q[j] = 1.0 if upper[j] else 0.0
        side = 1 - p[j] if upper[j] else p[j]
        if not (side > 0 and r[j] < INFINITY):
            continue
        other = p[j] if upper[j] else 1 - p[j]
        lift = r[j] + bound.roundoff * (40.0 + 32.0 * r[j])
        d = fmin(sqrt(2.0 * lift * fmin(0.25, side)), lift + sqrt(lift * (lift + 2.0 * other)))
        cq[n_live] = p[j] + d if upper[j] else p[j] - d
        live[n_live] = j
        n_live += 1
        if side < exp_start * r[j]:
            cp[n_listed] = other
            listed[n_listed] = n_live - 1
            n_listed += 1
    finite_product(_log_loop, _log_data, cp, logs, n_listed)
    for i in range(n_listed):
        j = live[listed[i]]
        side = 1 - p[j] if upper[j] else p[j]
        other = cp[i]
        lift = r[j] + bound.roundoff * (40.0 + 32.0 * r[j])
        cx[i] = -(lift - (other * logs[i] if other > 0 else 0.0)) / side
    finite_product(_exp_loop, _exp_data, cx, logs, n_listed)
    for i in range(n_listed):
        j = live[listed[i]]
        side = 1 - p[j] if upper[j] else p[j]
        w = side * logs[i]
        cq[listed[i]] = fmin(cq[listed[i]], 1 - w) if upper[j] else fmax(cq[listed[i]], w)
    # The starts strictly inside their side and tested outside go on to Newton's steps, a
    # start at the outer end is the end, and the others go to the bisection.
    n_listed = 0
    for i in range(n_live):
        j = live[i]
        q[j] = nextafter(cq[i], 1.0 if upper[j] else 0.0)
        if (q[j] > p[j] and q[j] < 1) if upper[j] else (q[j] > 0 and q[j] < p[j]):
            listed[n_listed] = j
            cp[n_listed] = p[j]
            cq[n_listed] = q[j]
            n_listed += 1
        elif q[j] != (1.0 if upper[j] else 0.0):
            live[n_rest] = j
            n_rest += 1
    _kl(cp, cq, n_listed, bound, ratio, logs, ckl, cerror)
    n_live = 0
    for i in range(n_listed):
        j = listed[i]
        if ckl[i] > r[j] + cerror[i]:
            kl[j] = ckl[i]
            error[j] = cerror[i]
            listed[n_live] = j
            n_live += 1
        else:
            live[n_rest] = j
            n_rest += 1
    # Newton steps on the chains in `listed[:n_live]`; the fallback chains are `live[:n_rest]`.
    for round_ in range(newton_steps):
        n_listed = 0
        for i in range(n_live):
            j = listed[i]
            slope = (q[j] - p[j]) / (q[j] * (1 - q[j]))
            margin = error[j] + bound.roundoff * (q[j] * fabs(slope))
            step = q[j] - (kl[j] - (r[j] + 2.0 * margin)) / slope
            if not (kl[j] > r[j] + 3.0 * margin):
                continue
            if not ((step < q[j] and step > p[j]) if upper[j] else (step > q[j] and step < p[j])):
                continue
            listed[n_listed] = j
            cp[n_listed] = p[j]
            cq[n_listed] = step
            n_listed += 1
        if n_listed == 0:
            break
        _kl(cp, cq, n_listed, bound, ratio, logs, ckl, cerror)
        n_live = 0
        for i in range(n_listed):
            j = listed[i]
            if ckl[i] > r[j] + cerror[i]:
                q[j] = cq[i]
                kl[j] = ckl[i]
                error[j] = cerror[i]
                listed[n_live] = j
                n_live += 1
    # The bisection: cx inside, q outside (the outer end until a point tests outside).
    for i in range(n_rest):
        j = live[i]
        cp[i] = p[j]
        cx[i] = p[j]
        q[j] = 1.0 if upper[j] else 0.0
    for round_ in range(bisections if n_rest > 0 else 0):
        for i in range(n_rest):
            cq[i] = 0.5 * (cx[i] + q[live[i]])
        _kl(cp, cq, n_rest, bound, ratio, logs, ckl, cerror)
        for i in range(n_rest):
            j = live[i]
            if ckl[i] > r[j] + cerror[i]:
                q[j] = cq[i]
            else:
                cx[i] = cq[i]
    for j in range(m):
        lo[j] = q[j]
        hi[j] = q[m + j]


cdef void _intervals(const double* p_hat, const double* n, const double* level,
                     Py_ssize_t size, double* lo, double* hi, int bisections, int newton_steps,
                     double exp_start, Bound bound, int threads) noexcept nogil:
    """The ends of ``size > 0`` entries, a block of them at a time on ``threads`` threads."""
    cdef Py_ssize_t n_blocks = (size + BLOCK - 1) // BLOCK
    cdef Py_ssize_t b, start
    for b in prange(n_blocks, num_threads=threads, schedule="static"):
        start = b * BLOCK
        _block(&p_hat[start], &n[start], &level[start], min(BLOCK, size - start), bisections,
               newton_steps, exp_start, bound, &lo[start], &hi[start])


@cython.boundscheck(False)
@cython.wraparound(False)
def kl_interval(const double[::1] p_hat, const double[::1] n, const double[::1] level,
                double[::1] lo, double[::1] hi, int bisections, int newton_steps,
                double exp_start, double roundoff, double underflow, int threads):
    """Write the ends of the intervals ``{q : n kl(p_hat, q) <= level}`` into ``lo``, ``hi``.

    All arrays have one length; ``p_hat`` in ``[0, 1]``, ``n >= 0``,
    ``level > 0`` (checked by the caller); ``n = 0`` gives ``[0, 1]``.
    The constants are those of ``reference.box_kinds`` (``KL_BISECTIONS``,
    ``KL_NEWTON_STEPS``, ``KL_EXP_START``, ``KL_ROUNDOFF``, ``KL_UNDERFLOW``);
    ``threads`` OpenMP threads over blocks of entries.
    """
    cdef Py_ssize_t size = p_hat.shape[0]
    cdef Bound bound
    bound.roundoff = roundoff
    bound.underflow = underflow
    if size == 0:
        return
    _intervals(&p_hat[0], &n[0], &level[0], size, &lo[0], &hi[0], bisections, newton_steps,
               exp_start, bound, threads)


ctypedef fused count_t:
    cnp.int64_t
    double


@cython.boundscheck(False)
@cython.wraparound(False)
def chernoff_rows(const cnp.int64_t[::1] indptr, const count_t[::1] counts,
                  const double[::1] n, const double[::1] level, const cnp.int64_t[::1] rows,
                  Py_ssize_t width, double[::1] lo, double[::1] hi, double[::1] hi_unseen,
                  double[::1] hi_sum, int bisections, int newton_steps, double exp_start,
                  double roundoff, double underflow, int threads):
    """Write the Chernoff ends of the rows ``rows`` of CSR counts (as the numpy kernel).

    Row ``r = rows[i]`` of ``n[r]`` samples and level ``level[i]``: each stored
    entry ``e`` gets the ends of :func:`kl_interval` at ``counts[e] / n[r]``
    (``lo[e]``, ``hi[e]``), the row's unseen next states the upper end at 0
    (``hi_unseen[r]``), and ``hi_sum[i] = (width - k) hi_unseen[r] + sum hi``
    over its ``k`` entries, summed in their order from 0. Whole rows are laid
    out in a list of at most ``CHUNK`` values (or one row and its unseen end),
    the entries of a row then its unseen end, and computed by the blocks of
    :func:`kl_interval`, so every end is its float.
    """
    cdef Py_ssize_t m = rows.shape[0]
    cdef Py_ssize_t i, i0 = 0, i1, e, k, length, size = CHUNK
    cdef cnp.int64_t r
    cdef double s
    cdef Bound bound
    bound.roundoff = roundoff
    bound.underflow = underflow
    for i in range(m):
        size = max(size, indptr[rows[i] + 1] - indptr[rows[i]] + 1)
    lists = np.empty((5, size))
    cdef double[:, ::1] at = lists
    while i0 < m:
        k = 0
        i1 = i0
        while i1 < m:
            r = rows[i1]
            length = indptr[r + 1] - indptr[r]
            if k + length + 1 > size:
                break
            for e in range(indptr[r], indptr[r + 1]):
                at[0, k] = <double>counts[e] / n[r]
                at[1, k] = n[r]
                at[2, k] = level[i1]
                k += 1
            at[0, k] = 0.0
            at[1, k] = n[r]
            at[2, k] = level[i1]
            k += 1
            i1 += 1
        _intervals(&at[0, 0], &at[1, 0], &at[2, 0], k, &at[3, 0], &at[4, 0], bisections,
                   newton_steps, exp_start, bound, threads)
        k = 0
        for i in range(i0, i1):
            r = rows[i]
            s = 0.0
            for e in range(indptr[r], indptr[r + 1]):
                lo[e] = at[3, k]
                hi[e] = at[4, k]
                s += at[4, k]
                k += 1
            hi_unseen[r] = at[4, k]
            hi_sum[i] = <double>(width - (indptr[r + 1] - indptr[r])) * at[4, k] + s
            k += 1
        i0 = i1
