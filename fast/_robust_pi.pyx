# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""The compiled kernel ``robust_iteration``: the rounds of the robust policy iteration that
need no graph search, in one call.

Private module of the ``fast`` backend. The loop is ``reference.robust_rounds.robust_rounds``,
with the same floats: each round calls the compiled ``closable`` (``fast._closable``), the
compiled adversary iteration (``fast._iteration.adversary_iteration``) and check
(``fast._checks.upper_check``, its pours by the ``pour`` it is given: the kernel
``pour_values``) directly, pours every pair against the checked values with the
``pour_pairs`` it is given, ``block`` states at a time, and does the policy's rows and costs,
the argmins, the tolerance and the switches in typed loops. Each round's adversary kernel
is kept as its pour order and positions while the check and the pours run, and poured
only when returned (the kernel the adversary iteration would have poured; none for
``"open"``, whose caller evaluates the policy afresh).
"""

from functools import partial

import numpy as np

from libc.math cimport isfinite, isinf, isnan
from libc.stdint cimport int64_t

from . import _checks, _closable, _iteration
from ._switches cimport extended, switch_tolerance


cdef object _kernel(tools, rows, kept):
    """The last round's kernel (:meth:`fast._iteration.Tools.adversary_kernel` of its
    ``rows``), None before the first."""
    return None if kept is None else tools.adversary_kernel(rows, kept)


cdef object _owned(policy, given):
    """``policy``, copied when it is the caller's array ``given`` (never returned as is)."""
    return policy.copy() if policy is given else policy


def robust_iteration(tools, pour, pour_pairs, Py_ssize_t block, const int64_t[::1] indptr,
                     const int64_t[::1] indices, const double[::1] lo, const double[::1] hi,
                     const double[::1] hi_unseen, costs, policy, start, int rounds,
                     double need, double unit, double subnormal, double max_slack,
                     double switch_rtol):
    """The rounds of ``reference.robust_rounds.robust_rounds``.

    ``tools``: the ``fast._iteration.Tools`` of the boxes; ``pour(rows, v_ext)``: the kernel
    ``pour_values`` of ``rows`` by decreasing value; ``pour_pairs(v_ext)``: the function of
    ``(r0, r1)`` that pours the pairs ``r0:r1`` so (the Q-values are poured ``block`` states
    at a time, each pair's pour the same in any block); ``costs``: float64 C-contiguous
    ``(S, A)``; ``policy``: int64 ``(S,)`` (never written, never returned: a copy is);
    ``start``: finite float64 ``(S,)``; ``need``: ``1 - SIMPLEX_SLACK``; ``unit``,
    ``subnormal``, ``max_slack``: those of the check. Returns ``(values, policy, kernel,
    n_rounds, n_iter, converged, dropped, r, status)``.
    """
    cdef Py_ssize_t S = costs.shape[0], A = costs.shape[1], s, a, b, i, s0, s1
    cdef const double[::1] c = costs.reshape(-1)
    cdef int n_round, n_iter = 0
    cdef bint positive, any_switch
    cdef double tol, q_best, current
    cdef int64_t[::1] rows_v
    cdef const int64_t[::1] pol
    cdef double[::1] cpi, qv
    cdef const double[::1] u
    cdef unsigned char[::1] mask = np.empty(S, dtype=np.uint8)
    costs_pi = np.empty(S)
    cpi = costs_pi
    nowhere = np.zeros(S, dtype=bool)
    nowhere_u8 = nowhere.view(np.uint8)
    given = policy  # read, never written: copied only when returned
    values, kernel, rows, converged, dropped, r = start, None, None, False, 0, 0.0
    for n_round in range(rounds):
        rows = np.empty(S, dtype=np.int64)
        rows_v = rows
        pol = policy
        positive = True
        for s in range(S):
            rows_v[s] = s * A + pol[s]
            cpi[s] = c[rows_v[s]]
            if not cpi[s] > 0.0:
                positive = False
        if not positive or _closable.closable(indptr, indices, lo, hi, hi_unseen, rows, need,
                                              mask) > 0:
            return (values, _owned(policy, given), None, n_round, n_iter, converged, dropped, r,
                    "open")
        kernel = None
        candidate, kernel, evaluations, converged = _iteration.adversary_iteration(
            tools, rows, costs_pi, nowhere, values, False)
        n_iter += evaluations
        values, dropped, r = _checks.upper_check(
            partial(pour, rows), indptr, indices, lo, hi, hi_unseen, rows,
            costs_pi, candidate, nowhere_u8, unit, subnormal, max_slack)
        candidate = None
        u = values
        for s in range(S):
            if isinf(u[s]):
                return (values, _owned(policy, given), tools.adversary_kernel(rows, kernel),
                        n_round + 1, n_iter, converged, dropped, r, "infinite")
        pour_rows = pour_pairs(extended(values))
        tol = switch_tolerance(u, switch_rtol)
        best = np.empty(S, dtype=np.int64)
        any_switch = False
        for s0 in range(0, S, block):
            s1 = min(S, s0 + block)
            q = pour_rows(s0 * A, s1 * A)
            qv = q
            for i in range((s1 - s0) * A):
                qv[i] = c[s0 * A + i] + qv[i]
            for s in range(s0, s1):
                i = (s - s0) * A
                b = 0
                for a in range(A):
                    if isnan(qv[i + a]):
                        b = a
                        break
                    if qv[i + a] < qv[i + b]:
                        b = a
                q_best = qv[i + b]
                current = qv[i + pol[s]]
                if (q_best < current - tol) or (isinf(current) and isfinite(q_best)):
                    any_switch = True
                    best[s] = b
                else:
                    best[s] = pol[s]
        q = pour_rows = None
        if not any_switch:
            return (values, _owned(policy, given), tools.adversary_kernel(rows, kernel),
                    n_round + 1, n_iter, converged, dropped, r, "done")
        policy = best
    return (values, _owned(policy, given), _kernel(tools, rows, kernel), rounds, n_iter,
            converged, dropped, r, "limit")
