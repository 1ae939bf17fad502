# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled Bellman checks: the kernels ``upper_check`` and ``lower_check`` of
docs/backends.md, each a whole check in one call.

Private module of the ``fast`` backend. The checks are those of ``reference.robust_checks``
with the same floats: the counts, scales and rounding bounds of ``reference.check_rounding``
and the slack of ``reference.robust_checks.slack`` are the same operations in the same
order (``docs/check-rounding.md`` proves the bound for that arithmetic), in typed loops;
each pour is one call of the given ``pour(v_ext)`` (the compiled kernel ``pour_values``).
The constants ``unit`` (the unit roundoff), ``subnormal`` (``2**-1072``) and ``max_slack``
(``CHECK_MAX_SLACK``) are the caller's.
"""

import numpy as np

from libc.math cimport INFINITY, fabs, floor, isfinite, isinf, isnan
from libc.stdint cimport int64_t
from libc.string cimport memcmp

from ._switches cimport extended


cdef void _touched(const int64_t[::1] indptr, const double[::1] lo, const double[::1] hi_unseen,
                   const int64_t[::1] rows, double n_next, double unit, double[::1] touched,
                   unsigned char[::1] doubtful) noexcept nogil:
    """``reference.check_rounding.touched_counts`` of ``rows``: each row's ``lo`` added in
    index order from 0, then the same elementwise operations (all ``S + 1`` next states when
    ``0 < h < 4 (S + 1) u``)."""
    cdef Py_ssize_t i
    cdef int64_t row, j
    cdef double total, free, k, h, raised, unseen, fill
    for i in range(rows.shape[0]):
        row = rows[i]
        total = 0.0
        for j in range(indptr[row], indptr[row + 1]):
            total = total + lo[j]
        free = 1.0 - total
        k = <double>(indptr[row + 1] - indptr[row])
        h = hi_unseen[row]
        raised = free + (4.0 * n_next + 2.0 * k + 8.0) * unit
        if not (raised > 0.0 or isnan(raised)):
            raised = 0.0
        unseen = 0.0
        if h > 0:
            fill = floor(raised / h) + 3.0
            unseen = n_next - k
            if (fill < unseen or isnan(fill)) and not h < 4.0 * n_next * unit:
                unseen = fill
        touched[i] = k + unseen
        doubtful[i] = free <= (2.0 * k + 2.0) * unit


cdef double _top(const double[::1] w) noexcept nogil:
    """The largest finite ``|w|``, 0 when none is larger."""
    cdef Py_ssize_t i
    cdef double top = 0.0
    for i in range(w.shape[0]):
        if isfinite(w[i]) and fabs(w[i]) > top:
            top = fabs(w[i])
    return top


cdef tuple _ascending_scales(const double[::1] w):
    """``reference.check_rounding.pour_scales`` in the optimist's order, as what each row's
    scale is read from (:func:`_scale`): ``(ordered, top, any_negative)`` with ``ordered``
    the finite ``|w|`` sorted and ``top`` the largest."""
    cdef Py_ssize_t i, m = 0, n = w.shape[0]
    cdef double top = _top(w)
    cdef double[::1] ordered
    for i in range(n):
        if w[i] < 0:
            return None, top, True
    finite = np.empty(n)
    ordered = finite
    for i in range(n):
        if isfinite(w[i]):
            ordered[m] = fabs(w[i])
            m += 1
    return np.sort(finite[:m]), top, False


cdef inline double _scale(const double[::1] ordered, double top, bint any_negative,
                          double touched, bint spread) noexcept nogil:
    """The scale of one row of :func:`_ascending_scales`: the ``touched``-th smallest finite
    ``|w|`` (clipped to the ones there are) on a row that can ``spread``, else ``top``."""
    cdef int64_t position, m
    if any_negative or not spread:
        return top
    m = ordered.shape[0]
    position = <int64_t>touched
    position = 1 if position < 1 else (m if position > m else position)
    return ordered[position - 1]


cdef inline double _bound(double touched, double total, double scale, double unit,
                          double subnormal) noexcept nogil:
    """``reference.check_rounding.rounding_bound`` of one row."""
    return (8.0 * touched + 32.0) * unit * (total + scale) + (touched + 1.0) * subnormal


cdef double _slack(const double[::1] gap, const double[::1] values, const double[::1] costs,
                   double unit, double max_slack, unsigned char[::1] hopeless) noexcept nogil:
    """``reference.robust_checks.slack``: returns ``r`` and writes ``hopeless``."""
    cdef Py_ssize_t i
    cdef double need, r = 0.0
    for i in range(gap.shape[0]):
        need = 0.0
        if gap[i] > 0:
            need = 2.0 * (gap[i] + 4.0 * unit * fabs(values[i])) / costs[i]
        hopeless[i] = need > max_slack
        if not hopeless[i] and (need > r or isnan(need)):
            r = need
    return r


cdef inline double _positive_part(double x) noexcept nogil:
    """``np.maximum(x, 0.0)``."""
    return x if (x > 0.0 or isnan(x)) else 0.0


cdef bint _meets_infinite(const int64_t[::1] indptr, const int64_t[::1] indices,
                          const double[::1] lo, const double[::1] hi,
                          const double[::1] hi_unseen, int64_t row, const double[::1] U,
                          Py_ssize_t n_infinite) noexcept nogil:
    """``reference.robust_checks.meets_infinite`` of one row."""
    cdef int64_t j, col
    cdef Py_ssize_t on_infinite = 0
    for j in range(indptr[row], indptr[row + 1]):
        col = indices[j]
        if col < U.shape[0] and isinf(U[col]):
            on_infinite += 1
            if hi[j] > lo[j]:
                return True
    return hi_unseen[row] > 0 and on_infinite < n_infinite


cdef void _upper_bellman(pour, const double[::1] U, const double[::1] costs_pi,
                         const double[::1] touched, const unsigned char[::1] doubtful,
                         const int64_t[::1] indptr, const int64_t[::1] indices,
                         const double[::1] lo, const double[::1] hi,
                         const double[::1] hi_unseen, const int64_t[::1] rows,
                         double unit, double subnormal, double[::1] out):
    """``T U`` plus each row's rounding bound (infinite on the doubtful rows that give a
    state of infinite ``U`` a positive width)."""
    cdef Py_ssize_t i, S = U.shape[0], n_infinite = 0
    u_ext = extended(U)
    cdef const double[::1] poured = pour(u_ext)
    cdef double top = _top(u_ext), total, bound
    for i in range(S):
        if isinf(U[i]):
            n_infinite += 1
    for i in range(S):
        total = costs_pi[i] + poured[i]
        bound = _bound(touched[i], total, top, unit, subnormal)
        if n_infinite and doubtful[i] and _meets_infinite(indptr, indices, lo, hi, hi_unseen,
                                                          rows[i], U, n_infinite):
            bound = INFINITY
        out[i] = total + bound


def upper_check(pour, const int64_t[::1] indptr, const int64_t[::1] indices,
                const double[::1] lo, const double[::1] hi,
                const double[::1] hi_unseen, const int64_t[::1] rows,
                const double[::1] costs_pi, const double[::1] values,
                const unsigned char[::1] exact_zero, double unit, double subnormal,
                double max_slack):
    """The check of ``reference.robust_checks.upper_check``: ``(U, dropped, r)``.

    ``pour(v_ext)`` pours the policy's ``rows`` against ``v_ext`` by decreasing value;
    ``exact_zero`` is the bool mask of the states kept at 0, as bytes.
    """
    cdef Py_ssize_t i, S = rows.shape[0]
    cdef int64_t dropped = 0, failing
    cdef double r
    touched_out, doubtful_out = np.empty(S), np.empty(S, dtype=np.uint8)
    cdef double[::1] touched = touched_out
    cdef unsigned char[::1] doubtful = doubtful_out
    _touched(indptr, lo, hi_unseen, rows, <double>(S + 1),
             unit, touched, doubtful)
    U_out, checked = np.empty(S), np.empty(S)
    cdef double[::1] U = U_out, T = checked
    cdef double[::1] gap = np.zeros(S), scaled = np.zeros(S)
    cdef unsigned char[::1] finite = np.empty(S, dtype=np.uint8)
    cdef unsigned char[::1] hopeless = np.empty(S, dtype=np.uint8)
    for i in range(S):
        U[i] = 0.0 if exact_zero[i] else values[i]
        finite[i] = isfinite(U[i]) and not exact_zero[i]
    _upper_bellman(pour, U, costs_pi, touched, doubtful, indptr, indices, lo, hi, hi_unseen,
                   rows, unit, subnormal, T)
    for i in range(S):
        if finite[i]:
            gap[i] = _positive_part(T[i] - U[i])
            scaled[i] = U[i]
    r = _slack(gap, scaled, costs_pi, unit, max_slack, hopeless)
    for i in range(S):
        if finite[i] and not hopeless[i]:
            U[i] = U[i] * (1.0 + r)
        else:
            U[i] = 0.0 if exact_zero[i] else INFINITY
            dropped += finite[i]
    while True:
        _upper_bellman(pour, U, costs_pi, touched, doubtful, indptr, indices, lo, hi,
                       hi_unseen, rows, unit, subnormal, T)
        failing = 0
        for i in range(S):
            if isfinite(U[i]) and not exact_zero[i] and not (T[i] <= U[i] and U[i] >= 0):
                U[i] = INFINITY
                failing += 1
        if failing == 0:
            return U_out, int(dropped), float(r)
        dropped += failing


cdef void _lower_bellman(pour, const double[::1] L, const double[::1] costs, q,
                         const double[::1] touched, const double[::1] hi_unseen,
                         Py_ssize_t block, double unit, double subnormal, double[::1] out):
    """``min_a`` of each Q-value less its row's rounding bound; the Q-values are ``q`` (flat
    ``(S*A,)``) when not None, else ``costs`` plus a pour of every pair against ``L``, made
    ``block`` states at a time (``pour(l_ext)`` gives the function of ``(r0, r1)`` that pours
    the pairs ``r0:r1``)."""
    cdef Py_ssize_t s, a, i, s0, s1, S = L.shape[0], A = costs.shape[0] // L.shape[0]
    cdef double value, best, q_i, top
    cdef bint any_negative
    cdef const double[::1] qv
    cdef const double[::1] ordered = None
    l_ext = extended(L)
    pour_rows = None if q is not None else pour(l_ext)
    sorted_w, top, any_negative = _ascending_scales(l_ext)
    if not any_negative:
        ordered = sorted_w
    for s0 in range(0, S, block):
        s1 = min(S, s0 + block)
        qv = q if q is not None else pour_rows(s0 * A, s1 * A)
        for s in range(s0, s1):
            for a in range(A):
                i = s * A + a
                if q is None:
                    q_i = costs[i] + qv[i - s0 * A]
                else:
                    q_i = qv[i]
                value = q_i - _bound(touched[i], q_i, _scale(ordered, top, any_negative,
                                                             touched[i], hi_unseen[i] > 0),
                                     unit, subnormal)
                if a == 0 or value < best or isnan(value):
                    best = value
            out[s] = best


def lower_check(pour, const int64_t[::1] indptr, const double[::1] lo,
                const double[::1] hi_unseen, const double[::1] costs,
                const double[::1] values, q_values, double unit, double subnormal,
                double max_slack, Py_ssize_t block):
    """The check of ``reference.robust_checks.lower_check``: ``(L, dropped, r)``.

    ``pour(v_ext)`` gives the function of ``(r0, r1)`` that pours the pairs ``r0:r1`` against
    ``v_ext`` by increasing value; the Q-values are poured ``block`` states at a time (each
    pair's pour, so its float, is the same in any block). ``costs`` is flat ``(S*A,)``,
    ``q_values`` the flat Q-values of ``values`` or None.
    """
    cdef Py_ssize_t s, a, S = values.shape[0], A = costs.shape[0] // values.shape[0]
    cdef int64_t dropped = 0, failing
    cdef double r
    touched_out, doubtful_out = np.empty(S * A), np.empty(S * A, dtype=np.uint8)
    cdef double[::1] touched = touched_out
    _touched(indptr, lo, hi_unseen, np.arange(S * A, dtype=np.int64), <double>(S + 1), unit,
             touched, doubtful_out)
    doubtful_out = None
    L_out, checked = np.empty(S), np.empty(S)
    cdef double[::1] L = L_out, T = checked
    cdef double[::1] shortfall = np.empty(S), least = np.empty(S)
    cdef unsigned char[::1] hopeless = np.empty(S, dtype=np.uint8)
    block = max(1, block)
    for s in range(S):
        L[s] = _positive_part(values[s]) if isfinite(values[s]) else 0.0
        least[s] = costs[s * A]
        for a in range(1, A):
            if costs[s * A + a] < least[s] or isnan(costs[s * A + a]):
                least[s] = costs[s * A + a]
    same = q_values is not None and memcmp(&L[0], &values[0], S * sizeof(double)) == 0
    _lower_bellman(pour, L, costs, q_values if same else None, touched, hi_unseen, block,
                   unit, subnormal, T)
    for s in range(S):
        shortfall[s] = _positive_part(L[s] - T[s])
    r = _slack(shortfall, L, least, unit, max_slack, hopeless)
    for s in range(S):
        if hopeless[s] and L[s] > 0:
            L[s] = 0.0
            dropped += 1
        else:
            L[s] = L[s] * (1.0 - r)
    while True:
        _lower_bellman(pour, L, costs, None, touched, hi_unseen, block, unit, subnormal, T)
        failing = 0
        for s in range(S):
            if not (T[s] >= L[s]) and L[s] > 0:
                L[s] = 0.0
                failing += 1
        if failing == 0:
            return L_out, int(dropped), float(r)
        dropped += failing
