r"""The robust policy iterations of the certificates, in numpy: the adversary's and the optimist's.

The loops behind the kernels ``adversary_iteration`` and ``optimist_iteration`` of the numpy
kernel set (:mod:`reference.kernels` hands them its pours and its chain solver), and the
steps they share: the limits, the switch tolerance, the evaluation of a poured kernel. The
compiled kernel set runs the same loops in one call (``fast/_iteration.pyx``), with the
same floats. What the loops prove is in the Notes of
:func:`reference.robust.robust_policy_values` and :func:`reference.robust.optimistic_values`;
their answers are candidates, which the Bellman checks of :mod:`reference.robust` accept.
"""

import numpy as np

from .errors import ConvergenceError

__all__ = []

ROBUST_MAX_ITER = 1_000
"""Largest number of evaluations of each policy iteration."""

SWITCH_RTOL = 1e-10
"""Policy iteration switches a row or an action only for a gain above
``SWITCH_RTOL * max(1, max|V|)`` (or the evaluation's residual, if larger)."""


def _expected(kernel, v_ext):
    """``kernel @ v_ext`` (``0 * inf = 0``): one product of the kernel when ``v_ext`` is finite."""
    return kernel.finite_product(v_ext) if np.isfinite(v_ext).all() else kernel @ v_ext


def _switch_tolerance(values, residual):
    """Smallest gain that switches: ``SWITCH_RTOL * max(1, max|V|)`` over the finite values,
    or the residual of their evaluation when it is larger."""
    scale = max(1.0, float(values[np.isfinite(values)].max(initial=0.0)))
    return max(SWITCH_RTOL * scale, residual)


def _evaluate(chain_values, kernel, costs_pi, infinite, start):
    """Values of ``kernel`` (``(S, S+1)``) and the solve's residual, ``+inf`` on ``infinite``
    (``chain_values``, the kernel ``poured_chain_values``, warm-started from ``start``).

    The rows of the other states put no mass on ``infinite`` (every state the
    adversary can move into ``infinite`` is in it), so their values do not
    depend on the rows of ``infinite``: those are emptied before the solve,
    which spends no work on the adversary's traps (a near-closed class is an
    ill-conditioned system), and their values are set to ``+inf``.

    Serves both policy iterations (the optimist's with ``infinite`` all
    false). A solve that finds no acceptable candidate (``ConvergenceError``)
    is a failed candidate: every value is ``+inf`` and the residual ``+inf``,
    which marks the failure. Both policy iterations then stop, not converged
    (their messages say why); the adversary's Bellman check leaves the upper
    bound at ``+inf`` (0 where no kernel leads to a positive cost) and the
    optimist's sets the lower bound to 0 where its values are infinite.
    """
    if infinite.any():
        kernel = kernel.emptied(infinite)
    try:
        values, residual = chain_values(kernel, costs_pi, start)
    except ConvergenceError:
        return np.full(costs_pi.size, np.inf), np.inf
    values[infinite] = np.inf
    return values, residual


def adversary_loop(pour_kernel, chain_values, boxes, rows, costs_pi, infinite, start):
    r"""The adversary's policy iteration on the rows ``rows`` of ``boxes``, from ``start``.

    Every iteration evaluates the current kernel (``chain_values``, the rows of
    ``infinite`` emptied and their values ``+inf``: :func:`_evaluate`) and pours
    every row again against the values (``pour_kernel``, by decreasing value);
    the new kernel replaces it unless no finite row gains more than the
    tolerance :math:`\tau = \max(\mathrm{SWITCH\_RTOL} \max(1, \max V), r)` of
    the evaluation's residual ``r``:

    .. math::

        \exists s \notin \mathrm{infinite}: \; (P' V)(s) > (P V)(s) + \tau .

    Parameters
    ----------
    pour_kernel, chain_values : callable
        The kernels ``pour_kernel`` and ``poured_chain_values`` of the kernel set.
    boxes : ConfidenceBoxes
        The boxes (:func:`reference.confidence.confidence_boxes`).
    rows : ndarray of int64, shape (S,)
        The policy's rows, ``s*A + policy[s]``.
    costs_pi : ndarray of float64, shape (S,)
        The policy's costs, ``>= 0``.
    infinite : ndarray of bool, shape (S,)
        The states the graph test found infinite; no other row can reach them.
    start : ndarray of float64, shape (S,)
        Finite values the first pour and the first solve start from.

    Returns
    -------
    values : ndarray of float64, shape (S,)
        The last evaluation (``+inf`` on ``infinite``, and everywhere when a
        solve failed).
    kernel : PouredKernel, shape (S, S+1)
        The kernel evaluated last.
    n_iter : int
        Evaluations made, at most :data:`ROBUST_MAX_ITER`.
    converged : bool
        Whether no row gained more than the tolerance.
    """
    finite = ~infinite
    values = np.where(infinite, np.inf, start)
    kernel = pour_kernel(boxes, rows, np.append(values, 0.0), True)
    for n_iter in range(1, ROBUST_MAX_ITER + 1):
        values, residual = _evaluate(chain_values, kernel, costs_pi, infinite, values)
        if np.isinf(residual):
            return values, kernel, n_iter, False
        v_ext = np.append(values, 0.0)
        poured = pour_kernel(boxes, rows, v_ext, True)
        tol = _switch_tolerance(values, residual)
        if not np.any(finite & (_expected(poured, v_ext) > _expected(kernel, v_ext) + tol)):
            return values, kernel, n_iter, True
        kernel = poured
    return values, kernel, ROBUST_MAX_ITER, False


def optimist_loop(pour_kernel, pour_values, chain_values, boxes, costs, policy, start):
    r"""The optimist's policy iteration over (action, kernel) pairs from ``policy`` and ``start``.

    The first kernel is the pour of ``policy`` against ``start`` (by increasing
    value, goal first). Every iteration evaluates the kernel (:func:`_evaluate`),
    computes the Q-values of every pair, :math:`q(s, a) = c(s, a) + \min_{p \in
    B(s, a)} \sum_{s'} p(s') V(s')` (``pour_values``), and switches the states
    where the best action gains more than the tolerance :math:`\tau` of
    :func:`_switch_tolerance` over the current one,
    :math:`\min_a q(s, a) < c(s, \pi(s)) + (P V)(s) - \tau` (or turns an
    infinite value finite), to that action (the first of the least Q-value);
    the kernel of the new policy is poured against ``V`` (``pour_kernel``).

    Parameters
    ----------
    pour_kernel, pour_values, chain_values : callable
        The kernels ``pour_kernel``, ``pour_values`` and ``poured_chain_values``.
    boxes : ConfidenceBoxes
        The boxes.
    costs : ndarray of float64, shape (S, A)
        Costs, ``>= 0``.
    policy : ndarray of int64, shape (S,)
        The first policy (not modified).
    start : ndarray of float64, shape (S,)
        Finite values the first pour and the first solve start from.

    Returns
    -------
    values : ndarray of float64, shape (S,)
        The last evaluation (``+inf`` everywhere when a solve failed).
    policy : ndarray of int64, shape (S,)
        The last policy.
    kernel : PouredKernel, shape (S, S+1)
        Its kernel, evaluated last.
    n_iter : int
        Evaluations made, at most :data:`ROBUST_MAX_ITER`.
    converged : bool
        Whether no action gained more than the tolerance.
    q : ndarray of float64, shape (S, A), or None
        The Q-values of ``values`` (None when the last solve failed).
    """
    S, A = costs.shape
    states, all_rows = np.arange(S), np.arange(S * A)
    policy = policy.copy()
    no_trap = np.zeros(S, dtype=bool)
    values = start
    kernel = pour_kernel(boxes, states * A + policy, np.append(values, 0.0), False)
    converged = False
    q = None
    for n_iter in range(1, ROBUST_MAX_ITER + 1):
        values, residual = _evaluate(chain_values, kernel, costs[states, policy], no_trap,
                                     values)
        if np.isinf(residual):
            q = None
            break
        v_ext = np.append(values, 0.0)
        q = costs + pour_values(boxes, all_rows, v_ext, False).reshape(S, A)
        best = np.argmin(q, axis=1)
        current = costs[states, policy] + _expected(kernel, v_ext)
        tol = _switch_tolerance(values, residual)
        switch = ((q[states, best] < current - tol)
                  | (np.isinf(current) & np.isfinite(q[states, best])))
        if not switch.any():
            converged = True
            break
        policy = np.where(switch, best, policy)
        kernel = pour_kernel(boxes, states * A + policy, v_ext, False)
    return values, policy, kernel, n_iter, converged, q
