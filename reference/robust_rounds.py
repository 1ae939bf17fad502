r"""The robust policy iteration's rounds that need no graph search, in numpy: the loop behind
the kernel ``robust_iteration`` of ``docs/backends.md``.

A round of :func:`reference.robust.robust_optimal_values` evaluates the policy against the
adversary (the infinity decision, the kernel ``adversary_iteration``, the Bellman check
``upper_check``), then switches the states where another action gains. When every cost of
the policy is positive and the kernel ``closable`` finds no set the adversary could keep
the chain in, no state is infinite and no state reaches no positive cost, so the round
needs neither the adversary's graph nor goal forcing: :func:`robust_rounds` runs such
rounds one after the other, and hands the others back to the caller
(:func:`reference.robust.optimal._robust_policy`), which runs them with the same floats.
The compiled kernel set runs the same loop in one call (``fast/_robust_pi.pyx``).
"""

import numpy as np

from .robust_loops import SWITCH_RTOL

__all__ = []

DONE = "done"
"""No state switches: the answer of the policy iteration."""

INFINITE = "infinite"
"""The round's checked values have an infinite entry: the caller goes on from them."""

OPEN = "open"
"""The next round may have infinite or zero-cost states: the caller runs it."""

LIMIT = "limit"
"""The rounds allowed are made."""

IMPROVEMENT_BLOCK_PAIRS = 1 << 15
"""Pairs :func:`improvement` pours at a time (each pair's pour is the same in any block)."""


def improvement(pour_values, boxes, costs, policy, values):
    r"""The states that switch and their new actions: ``(switch, best)``.

    With :math:`q(s, a) = c(s, a) + \max_{p \in B(s, a)} \sum_{s'} p(s') U(s')`
    (the kernel ``pour_values``, by decreasing value), ``best`` is the first
    action of the least Q-value and a state switches when
    :math:`q(s, \mathrm{best}) < q(s, \pi(s)) - \mathrm{SWITCH\_RTOL} \max(1, \max U)`
    (the largest finite ``U``), or turns an infinite Q-value finite.
    """
    S, A = costs.shape
    v_ext = np.append(values, 0.0)
    tol = SWITCH_RTOL * max(1.0, float(values[np.isfinite(values)].max(initial=0.0)))
    switch, best = np.empty(S, dtype=bool), np.empty(S, dtype=np.int64)
    for s0, s1 in _state_blocks(S, A):
        states = np.arange(s1 - s0)
        q = costs[s0:s1] + pour_values(boxes, np.arange(s0 * A, s1 * A), v_ext,
                                       True).reshape(s1 - s0, A)
        best[s0:s1] = np.argmin(q, axis=1)
        current = q[states, policy[s0:s1]]
        switch[s0:s1] = ((q[states, best[s0:s1]] < current - tol)
                         | (np.isinf(current) & np.isfinite(q[states, best[s0:s1]])))
    return switch, best


def block_states(n_actions, pairs):
    """The states of at most ``pairs`` pairs of ``n_actions`` actions each (one at least)."""
    return max(1, pairs // max(1, n_actions))


def _state_blocks(n_states, n_actions):
    """``(s0, s1)``: the states in blocks of at most :data:`IMPROVEMENT_BLOCK_PAIRS` pairs
    (one state at least), so the Q-values of :func:`improvement` are never held whole."""
    size = block_states(n_actions, IMPROVEMENT_BLOCK_PAIRS)
    return [(s0, min(n_states, s0 + size)) for s0 in range(0, n_states, size)]


def robust_rounds(closable, adversary_iteration, upper_check, pour_values, boxes, costs,
                  policy, start, rounds):
    r"""Rounds of robust policy iteration from ``policy`` and ``start`` while no state can be
    infinite, at most ``rounds`` of them.

    A round runs here when every cost of the policy is positive and
    ``closable`` finds no state: it evaluates the policy by
    ``adversary_iteration`` (no infinite state) from the last values, checks
    the values by ``upper_check`` (no exact zero), and switches the states of
    :func:`improvement`.

    Parameters
    ----------
    closable, adversary_iteration, upper_check, pour_values : callable
        The kernels of those names of the kernel set.
    boxes : ConfidenceBoxes
        The boxes (:func:`reference.confidence.confidence_boxes`).
    costs : ndarray of float64, shape (S, A)
        Costs, ``>= 0``.
    policy : ndarray of int64, shape (S,)
        The first policy (not modified).
    start : ndarray of float64, shape (S,)
        Finite values the first evaluation starts from.
    rounds : int
        Most rounds, ``>= 1``.

    Returns
    -------
    values : ndarray of float64, shape (S,)
        The checked values of the last round (``start`` when no round ran).
    policy : ndarray of int64, shape (S,)
        The policy the next round would evaluate (the last one evaluated, for
        :data:`DONE` and :data:`INFINITE`).
    kernel : PouredKernel or None
        The adversary's kernel of the last round (None when no round ran, and
        for :data:`OPEN`: the caller evaluates that policy afresh).
    n_rounds, n_iter : int
        Rounds made, and the adversary's evaluations over them.
    converged : bool
        Whether the last round's adversary iteration converged.
    dropped : int
        States the last round's check set to ``+inf``.
    r : float
        The last round's check slack.
    status : str
        :data:`DONE`, :data:`INFINITE`, :data:`OPEN` or :data:`LIMIT`.
    """
    S, A = costs.shape
    states = np.arange(S)
    nowhere = np.zeros(S, dtype=bool)
    policy = policy.copy()
    values, kernel, n_iter, converged, dropped, r = start, None, 0, False, 0, 0.0
    for n_round in range(rounds):
        rows = states * A + policy
        costs_pi = costs[states, policy]
        if not (costs_pi > 0).all() or closable(boxes, rows).any():
            return values, policy, None, n_round, n_iter, converged, dropped, r, OPEN
        kernel = None
        candidate, kernel, evaluations, converged = adversary_iteration(
            boxes, rows, costs_pi, nowhere, values)
        n_iter += evaluations
        values, dropped, r = upper_check(boxes, rows, costs_pi, candidate, nowhere)
        if np.isinf(values).any():
            return values, policy, kernel, n_round + 1, n_iter, converged, dropped, r, INFINITE
        switch, best = improvement(pour_values, boxes, costs, policy, values)
        if not switch.any():
            return values, policy, kernel, n_round + 1, n_iter, converged, dropped, r, DONE
        policy = np.where(switch, best, policy)
    return values, policy, kernel, rounds, n_iter, converged, dropped, r, LIMIT
