"""The optimist's values: :func:`optimistic_values`, a lower bound on ``V*`` (EVI's fixed
point)."""

import numpy as np

from .._checks import check_policy
from ..kernels import NUMPY_KERNELS, order_values
from .common import (
    RobustValuesResult,
    _how,
    checked_inputs,
)

__all__ = ["optimistic_values"]


def _check_lower(kernels, boxes, costs, values, q_values=None):
    r"""Accept ``values`` as a lower bound where ``L >= 0`` and ``L <= T L`` (optimist's ``T``).

    The check is made safe from rounding: each computed Q-value counts for
    itself less the bound of its row
    (:func:`~reference.check_rounding.rounding_bound`). ``L`` is deflated by the
    smallest relative factor ``1 - r`` (:func:`reference.robust_checks.slack`, ``r <=
    CHECK_MAX_SLACK``) absorbing the solver's residual and that rounding;
    states needing more, and states still failing, are set to 0 until the
    check holds (``L = 0`` passes it). ``q_values``, when given, are the Q-values
    ``c + min_p p V`` of ``values`` (shape ``(S, A)``, the caller's last pour of
    every pair): the first check reuses them when ``L`` is ``values`` to the bit.
    The check is the kernel ``lower_check``. Returns ``(L, number of states set to 0, r)``.
    """
    return kernels.lower_check(boxes, costs, values, q_values)


def _optimistic(kernels, boxes, costs, policy, start=None):
    """Optimist's PI from ``policy`` (the kernel ``optimist_iteration``), then the check:
    ``(L, policy, order, n_iter, converged, message)``.

    The first kernel is the pour of ``policy`` against ``start`` (finite
    values, shape ``(S,)``; zeros by default): values close to the fixed point
    (EVI's ``v_tilde``) give a first kernel close to the last and save
    evaluations; each evaluation starts from the previous values. Every
    iteration pours all the rows of the new policy again, by increasing value
    (one pour order per kernel). The start changes the work, never the check,
    which reuses the Q-values of the last evaluation. The last kernel is returned as its pour
    ``order`` and freed before the check: the kernel ``pour_kernel`` reads its values only
    through their pour order, so :func:`_kernel_of` pours the same kernel again from it.
    """
    values, policy, kernel, n_iter, converged, q = kernels.optimist_iteration(
        boxes, costs, policy, np.zeros(boxes.n_states) if start is None else start)
    order = kernel.order
    del kernel
    L, dropped, r = _check_lower(kernels, boxes, costs, values, q)
    how = _how(converged, n_iter)
    if dropped:
        message = (f"optimistic policy iteration {how} after {n_iter} evaluations; the "
                   f"Bellman check failed on {dropped} state(s), set to 0.")
    else:
        message = (f"optimistic policy iteration {how} after {n_iter} evaluations; the "
                   f"Bellman check holds everywhere (relative slack {r:.2g}).")
    return L, policy, order, n_iter, converged, message


def _kernel_of(kernels, boxes, policy, order):
    """The optimistic kernel of ``policy`` poured along ``order`` (of :func:`_optimistic`)."""
    rows = np.arange(boxes.n_states) * boxes.n_actions + policy
    return kernels.pour_kernel(boxes, rows, order_values(order, False), False)


@NUMPY_KERNELS.bind
def optimistic_values(kernels, counts, costs, delta, kind="kl", policy=None):
    r"""The fixed point of EVI's operator over the boxes: a checked lower bound on ``V*``.

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    costs : array_like of shape (S, A)
        Costs, ``>= 0``.
    delta : float in (0, 1)
        Confidence level of the boxes.
    kind : {"kl", "mixture", "bernstein", "paper"}, default "kl"
        The boxes.
    policy : array_like of int, shape (S,), optional
        Starting policy (for example EVI's); by default the cheapest action.

    Returns
    -------
    RobustValuesResult
        ``values`` is ``L`` with ``L <= V*`` on the event (``V*`` the best
        value over proper policies), ``policy`` the optimistic policy and
        ``p_bound`` its optimistic kernel (a
        :class:`~reference.poured.PouredKernel`, poured goal first).

    Notes
    -----
    Policy iteration over (action, kernel) pairs for the minimising player:
    every optimistic kernel pours into the goal first, so every policy it
    builds is proper in its kernel and each step evaluates it
    (the kernel ``poured_chain_values``). Each step switches the actions
    that gain more than the tolerance (``SWITCH_RTOL``, relative, or the
    evaluation's residual if larger) and pours every row of the new policy
    again against the values ``V``, by increasing value: the pour is the
    exact minimiser of each box, so ``c' + P' V <= c + P V = V`` row by row
    (a row that keeps its action changes by at most the rounding, a switched
    one gains more than the tolerance), hence
    :math:`V' - V = (I - Q')^{-1} (c' + P' V - V) \le 0`: the values only
    decrease (up to the rounding and residual of the evaluations), and the
    iteration stops when no action gains more than the tolerance. The result
    ``L`` is accepted where

    .. math::

        L \ge 0 \quad\text{and}\quad L \le \tilde T L = \min_a \Big\{ c(s, a) +
        \min_{p \in B(s, a)} \sum_{s'} p(s') L(s') \Big\}

    with every computed Q-value lowered by a bound on its rounding
    (:func:`~reference.check_rounding.rounding_bound`), after a relative deflation of at most
    ``CHECK_MAX_SLACK``; failing states, and those needing a larger
    deflation, are set to 0. On the event, for any proper policy ``pi`` with true
    kernel ``P_pi``, :math:`L \le \tilde T^n L \le \sum_{t<n} P_\pi^t c_\pi +
    P_\pi^n L \to V^\pi`, so ``L <= V*``. EVI's iterates from 0 converge to
    the same fixed point from below.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros((1, 1, 2)); counts[0, 0] = [0, 2000]
    >>> out = optimistic_values(counts, np.ones((1, 1)), 0.1)
    >>> bool(0.99 < out.values[0] <= 1.0)
    True
    """
    boxes, costs = checked_inputs(kernels, counts, costs, delta, kind)
    if policy is None:
        policy = np.argmin(costs, axis=1)
    policy = check_policy(policy, boxes.n_states, boxes.n_actions)
    L, policy, order, n_iter, converged, message = _optimistic(kernels, boxes, costs, policy)
    return RobustValuesResult(values=L, policy=policy,
                              p_bound=_kernel_of(kernels, boxes, policy, order),
                              infinite=np.zeros(boxes.n_states, dtype=bool), n_iter=n_iter,
                              converged=converged, message=message)
