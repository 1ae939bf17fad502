"""The best policy against the adversary: :func:`robust_optimal_values`."""

from dataclasses import dataclass

import numpy as np

from .._checks import check_policy
from ..confidence import SIMPLEX_SLACK, row_blocks
from ..kernels import NUMPY_KERNELS, order_values
from ..robust_rounds import DONE, LIMIT, OPEN, improvement
from .common import (
    ROBUST_MAX_ITER,
    RobustValuesResult,
    _check_message,
    checked_inputs,
)
from .optimistic import _optimistic
from .pessimistic import _robust_values

__all__ = ["robust_optimal_values"]


def _goal_forcing(boxes):
    r"""States from which some policy reaches the goal with probability 1 against every adversary.

    The almost-sure reachability of a game on the boxes, as a nested fixpoint:
    ``W`` is the greatest set such that every state of ``W`` belongs to the
    least set ``R`` containing the goal and every state with an action that
    is **safe** (the adversary can put mass only inside ``W`` and the goal)
    and **progressing** (every kernel of the box puts positive mass on ``R``:
    lower ends in ``R``, or upper ends outside ``R`` summing below 1). Returns
    ``(W, action)`` with ``action[s]`` the first safe and progressing action
    found for ``s`` in ``W`` (0 elsewhere; the smallest unsigned integer type holding the
    actions, as it is held through the rounds); following it from ``W``, every
    adversary reaches the goal with probability 1.

    Each test reads the boxes a block of rows at a time
    (:func:`~reference.confidence.row_blocks`): besides the boxes, it holds
    two masks of the pairs and the sums of one block.
    """
    S, A = boxes.n_states, boxes.n_actions
    indptr, col, lo, hi, h = boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen
    stored = np.diff(indptr)
    free = np.empty(S * A, dtype=bool)
    for r0, r1, e0, e1, local in row_blocks(indptr):
        free[r0:r1] = 1.0 - np.bincount(local, weights=lo[e0:e1], minlength=r1 - r0) > 0
    spread = free & (h > 0)
    action = np.zeros(S, dtype=np.min_scalar_type(A - 1))
    W = np.ones(S, dtype=bool)
    safe, good = np.empty(S * A, dtype=bool), np.empty(S * A, dtype=bool)
    while True:
        w_ext = np.append(W, True)
        n_w = int(W.sum())
        for r0, r1, e0, e1, local in row_blocks(indptr):
            outside = ~w_ext[col[e0:e1]]
            possible = (lo[e0:e1] > 0) | (np.repeat(free[r0:r1], stored[r0:r1]) & (hi[e0:e1] > 0))
            unseen_out = (S - n_w) - np.bincount(local, weights=outside, minlength=r1 - r0)
            safe[r0:r1] = (np.bincount(local, weights=possible & outside, minlength=r1 - r0)
                           == 0) & ~(spread[r0:r1] & (unseen_out > 0))
        R = np.append(np.zeros(S, dtype=bool), True)
        while True:
            n_r = int(R.sum())
            for r0, r1, e0, e1, local in row_blocks(indptr):
                in_r = R[col[e0:e1]]
                lo_r = np.bincount(local, weights=np.where(in_r, lo[e0:e1], 0.0),
                                   minlength=r1 - r0)
                hi_out = (np.bincount(local, weights=np.where(in_r, 0.0, hi[e0:e1]),
                                      minlength=r1 - r0)
                          + (S + 1 - n_r - (stored[r0:r1] - np.bincount(
                              local, weights=in_r, minlength=r1 - r0))) * h[r0:r1])
                good[r0:r1] = safe[r0:r1] & ((lo_r > 0) | (hi_out < 1.0 - SIMPLEX_SLACK))
            progress = good.reshape(S, A)
            new = W & progress.any(axis=1) & ~R[:S]
            if not new.any():
                break
            action[new] = np.argmax(progress[new], axis=1)
            R[:S] |= new
        if np.array_equal(R[:S], W):
            return W, np.where(W, action, 0)
        W = R[:S].copy()


def _robust_policy(kernels, boxes, costs, policy, poured=True):
    """Robust PI from ``policy``: ``(U, policy, kernel, n_iter, converged, message)``.

    The rounds that need no graph search run in the kernel ``robust_iteration``
    (:func:`reference.robust_rounds.robust_rounds`); the others run here, with the
    infinity decision of :func:`_robust_values`, and the same switches
    (:func:`reference.robust_rounds.improvement`). States with an infinite value that
    some policy can make finite first switch to the goal-forcing action of
    :func:`_goal_forcing`. With ``poured`` False the kernel is None: a caller that drops it
    saves its last pour.
    """
    S, A = boxes.n_states, boxes.n_actions
    start, forcing, total, n_round = np.zeros(S), None, 0, 0
    infinite = np.zeros(S, dtype=bool)
    while n_round < ROBUST_MAX_ITER:
        kernel = U = None  # the last kernel and values are freed before the next evaluation
        U, policy, kernel, rounds, n_iter, converged, dropped, r, status = (
            kernels.robust_iteration(boxes, costs, policy, start, ROBUST_MAX_ITER - n_round))
        n_round, total = n_round + rounds, total + n_iter
        if rounds:
            infinite = np.zeros(S, dtype=bool)
        if status in (DONE, LIMIT):
            break
        if status == OPEN:
            kernel = None
            U, kernel, infinite, n_iter, converged, dropped, r = _robust_values(
                kernels, boxes, costs[np.arange(S), policy], policy, U)
            n_round, total = n_round + 1, total + n_iter
        kernel = _Poured(kernel.order, np.arange(S) * A + policy)
        if np.isinf(U).any():
            forcing = _goal_forcing(boxes) if forcing is None else forcing
            rescue = np.isinf(U) & forcing[0] & (policy != forcing[1])
            if rescue.any():
                policy = np.where(rescue, forcing[1], policy)
                start = np.where(np.isfinite(U), U, 0.0)
                continue
        switch, best = improvement(kernels.pour_values, boxes, costs, policy, U)
        if not switch.any():
            status = DONE
            break
        policy = np.where(switch, best, policy)
        start = np.where(np.isfinite(U), U, 0.0)
    converged = converged and status == DONE
    message = _check_message("robust", int(infinite.sum()), dropped, r, total, converged)
    return U, policy, _poured(kernels, boxes, kernel) if poured else None, total, converged, message


@dataclass(frozen=True)
class _Poured:
    """An adversary's kernel kept as its pour order and rows while goal forcing and the
    switches run (:func:`_poured` pours it again)."""

    order: np.ndarray
    rows: np.ndarray


def _poured(kernels, boxes, kernel):
    """``kernel``, poured again along its order when it was kept as a :class:`_Poured`
    (``pour_kernel`` reads its values only through their pour order: the same kernel)."""
    if not isinstance(kernel, _Poured):
        return kernel
    return kernels.pour_kernel(boxes, kernel.rows, order_values(kernel.order, True), True)


@NUMPY_KERNELS.bind
def robust_optimal_values(kernels, counts, costs, delta, kind="kl", policy=None):
    r"""The policy minimising the worst-case value over the boxes, and that value, checked.

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
        Starting policy (for example EVI's); by default the optimist's policy
        of :func:`optimistic_values`.

    Returns
    -------
    RobustValuesResult
        ``policy`` is ``pi_U`` and ``values`` its checked ``U^{pi_U}``.

    Notes
    -----
    Robust policy iteration: compute ``U^{pi_k}`` as in
    :func:`robust_policy_values`, then switch every state to

    .. math::

        \arg\min_a \Big\{ c(s, a) + \max_{p \in B(s, a)} \sum_{s'} p(s') U^{\pi_k}(s') \Big\}

    where it gains more than ``SWITCH_RTOL`` (or turns an infinite value
    finite). ``T_{pi_{k+1}} U^{pi_k} <= U^{pi_k}`` then gives
    ``U^{pi_{k+1}} <= U^{pi_k}``, so the values decrease and the iteration
    stops. The returned values pass the same check as
    :func:`robust_policy_values`.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros((1, 2, 2)); counts[0, 0] = [1000, 0]; counts[0, 1] = [0, 1000]
    >>> out = robust_optimal_values(counts, np.ones((1, 2)), 0.1)
    >>> int(out.policy[0]), bool(np.isfinite(out.values[0]))
    (1, True)
    """
    boxes, costs = checked_inputs(kernels, counts, costs, delta, kind)
    if policy is None:
        policy = _optimistic(kernels, boxes, costs, np.argmin(costs, axis=1))[1]
    policy = check_policy(policy, boxes.n_states, boxes.n_actions)
    U, policy, kernel, n_iter, converged, message = _robust_policy(kernels, boxes, costs, policy)
    return RobustValuesResult(values=U, policy=policy, p_bound=kernel, infinite=~np.isfinite(U),
                              n_iter=n_iter, converged=converged, message=message)
