r"""How :func:`~reference.certified.solve_certified` spreads each round's new calls over the pairs.

Adaptive sampling aims the pairs of the optimistic policy at counts that
shrink the bracket ``U - L`` where it is still too wide, keeps every pair not
yet ruled out at a floor, and, when the run stops on the policy's own
certificate (:mod:`reference.policy_gap`), also samples the rival actions
whose separation from the policy's action is within reach.
"""

import math

import numpy as np

from .confidence import EntryBlocks
from .kernels import order_values
from .robust_rounds import _state_blocks


GROWTH = 1.05
"""Factor by which :func:`~reference.certified.solve_certified` grows the total number of calls
per round; the stop is checked after every round."""

SHARE_GRID = 2.0**16
"""Each pair's share of a round is rounded to a multiple of ``1 / SHARE_GRID`` calls
before it is split into whole calls, so that both backends (whose sums may differ in the
last bits) draw the same samples."""

RIVAL_REACH = 0.5
"""Rival sampling (:func:`_rivals`): the share of the policy's own bracket by which a rival's
empirical Q-value may fall short of the bracket's top and still be sampled."""

FLOOR_SHARE = 0.02
"""Adaptive sampling: every pair not yet ruled out is kept at this share of the mean count."""

def _means(boxes, rows, n, *vectors):
    """``p_hat . v`` of every pair in ``rows`` (``n`` their samples), for each ``v`` of
    ``vectors`` (each ``(S+1,)``); ``boxes`` of :func:`~reference.store_boxes.store_boxes`, whose
    frequencies are read at the entries of ``rows`` only, a block at a time
    (:class:`~reference.confidence.EntryBlocks`)."""
    means = tuple(np.empty(rows.size) for _ in vectors)
    for i0, i1, local, entry in EntryBlocks(boxes.indptr, rows):
        p_hat = boxes.counts[entry] / n[i0:i1][local]
        cols = boxes.indices[entry]
        for mean, v in zip(means, vectors):
            mean[i0:i1] = np.bincount(local, weights=p_hat * v[cols], minlength=i1 - i0)
    return means


def _rivals(boxes, costs, q_low, policy, lower, upper, q_up, n):
    r"""Per state, the rival of ``policy``'s action and whether sampling it could separate them.

    The rival of ``s`` is the other action of least optimistic Q-value
    ``q_low``. It is worth sampling when it is not yet separated
    (:math:`\underline Q(s, b) \le U(s)`) but its empirical Q-value
    :math:`c(s, b) + \hat p \cdot L` (where its optimistic one tends as its box
    shrinks) is above :math:`\bar Q - r (\bar Q - \underline Q)` on the bracket
    :math:`[\underline Q(s, \pi(s)), \bar Q(s, \pi(s))]` of the policy's own
    action, ``r`` = :data:`RIVAL_REACH`: separation is then within reach of the
    rival's samples and a share ``r`` of the policy's bracket. ``q_up`` is
    :math:`\bar Q(s, \pi(s))` (shape ``(S,)``: the cost plus the adversary's pour
    against ``upper``) and ``n`` the samples of every pair. Returns ``(rows, open)``:
    the rival's row of every state and the mask of those worth sampling.
    """
    S, A = boxes.n_states, boxes.n_actions
    states = np.arange(S)
    other = q_low.copy()
    other[states, policy] = np.inf
    rival = np.argmin(other, axis=1)
    rows = states * A + rival
    q_hat = costs[states, rival] + _means(boxes, rows, n[rows], np.append(lower, 0.0))[0]
    with np.errstate(invalid="ignore"):
        middle = q_up - RIVAL_REACH * (q_up - q_low[states, policy])
        open_ = (A > 1) & (other[states, rival] <= upper) & (q_hat > middle)
    return rows, open_


def _widths(kernels, boxes, rows, n, upper, lower, best):
    r"""Width term of the rival pairs ``rows``: :math:`(p^+ - \hat p) U + (\hat p - p^-) L`.

    ``p+`` is the adversary's pour against ``upper`` and ``p-`` the
    optimist's against ``lower``, whose values ``p- . L`` the caller has
    (``best``, shape of ``rows``) and ``n`` their samples; a pair that can
    reach an infinite ``upper`` gets ``inf``. Returns ``(width, p+ . U)``. A rival is
    separated when its optimistic Q-value rises above ``U``, so its own
    term reads ``L`` on the optimist's side.
    """
    u_ext, l_ext = np.append(upper, 0.0), np.append(lower, 0.0)
    worst = kernels.pour_values(boxes, rows, u_ext, True)
    mean_u, mean_l = _means(boxes, rows, n, u_ext, l_ext)
    with np.errstate(invalid="ignore"):
        width = (worst - np.where(n > 0, mean_u, 0.0)) + (mean_l - best)
    return np.where(np.isnan(width), np.inf, np.maximum(width, 0.0)), worst


def _policy_widths(kernels, boxes, rows, upper, kernel_l, worst=None):
    r"""Width term of the optimistic policy's pairs ``rows`` (one a state):
    :math:`(p^+ - p^-) \cdot U`.

    ``p+`` is the adversary's pour against ``upper`` and ``p-`` the row of
    the optimistic kernel ``kernel_l`` (``(S, S+1)``); a pair that can reach
    an infinite ``upper`` (in either pour) gets ``inf``. ``worst`` is ``p+ . U`` when the
    caller poured it already (before ``kernel_l``, so that the pour's arrays and the kernel
    are not held at once). Returns ``(width, p+ . U)``.
    """
    u_ext = np.append(upper, 0.0)
    if worst is None:
        worst = kernels.pour_values(boxes, rows, u_ext, True)
    with np.errstate(invalid="ignore"):
        width = worst - kernel_l @ u_ext
    return np.where(np.isfinite(width), np.maximum(width, 0.0), np.inf), worst


def _optimist_q(kernels, boxes, costs, l_ext, s0, s1):
    """``(p- . L, c + p- . L)`` of the pairs of the states ``s0:s1``: the optimist's pour of
    each against ``l_ext`` (``(S+1,)``), flat, and the Q-values, ``(s1 - s0, A)``."""
    A = boxes.n_actions
    best = kernels.pour_values(boxes, np.arange(s0 * A, s1 * A), l_ext, False)
    return best, costs[s0:s1] + best.reshape(s1 - s0, A)


def _adaptive_draws(kernels, boxes, costs, target_total, lower, policy_l, order_l, upper,
                    goal_gap, rivals):
    r"""New calls per pair, adaptive: occupancy of the optimistic policy times width, plus a floor.

    With ``nu`` the expected visits of the optimistic policy (in its kernel, by the
    kernel ``poured_chain_visits``; the kernel is poured again along its pour order
    ``order_l``, which gives it back) from the states whose gap exceeds the target, ``w``
    the width term of its pairs (:func:`_policy_widths`) and ``n`` their counts, the pairs of
    the optimistic policy aim at counts proportional to
    :math:`(\nu w \sqrt{n})^{2/3}`, the split minimising
    :math:`\sum \nu\, w` when ``w`` shrinks like :math:`1 / \sqrt{n}`. That sum
    bounds the gaps it aims at: with ``P-`` the optimistic kernel (``kernel_l``)
    and ``P+`` the adversary's pours of the same pairs against ``U``,
    :math:`U - L \le (P^+ - P^-) U + P^- (U - L)`, so
    :math:`U - L \le (I - P^-)^{-1} (P^+ - P^-) U`, up to the tolerances of the
    policy iterations (docs/certificates.md). Pairs
    whose optimistic Q-value does not already exceed ``upper`` are kept at
    :data:`FLOOR_SHARE` of the mean count. Infinite widths count as the
    largest finite one (at least 1). With ``rivals`` (the stop on the
    policy's certificate), the rival of each visited state that
    :func:`_rivals` finds worth sampling gets the same score with its own
    width (:func:`_widths`), at its state's visits. The optimist's pour of
    every pair against ``lower`` is made once (the Q-values and the rivals'
    widths read it; the policy's widths read ``kernel_l``; the compiled kernel set
    copies the lower check's pour of the same vector), and the
    adversary's pour of the policy's pairs against ``upper`` too (its widths
    and the rivals' brackets). Without rivals the Q-values are poured a block of states at a
    time (:func:`reference.robust_rounds._state_blocks`), never held whole.
    """
    S, A = boxes.n_states, boxes.n_actions
    start = (np.where(np.isinf(upper), np.inf, upper - lower) > goal_gap).astype(float)
    rows = np.arange(S) * A + policy_l
    worst = kernels.pour_values(boxes, rows, np.append(upper, 0.0), True)
    kernel_l = kernels.pour_kernel(boxes, rows, order_values(order_l, False), False)
    visits = kernels.poured_chain_visits(kernel_l, start)
    del start
    width, worst = _policy_widths(kernels, boxes, rows, upper, kernel_l, worst)
    del kernel_l
    finite = width[np.isfinite(width)]
    width = np.where(np.isfinite(width), width, max(1.0, float(finite.max(initial=0.0))))
    l_ext = np.append(lower, 0.0)
    if rivals:
        n = boxes.n
        best, q_low = _optimist_q(kernels, boxes, costs, l_ext, 0, S)
        rival, open_ = _rivals(boxes, costs, q_low, policy_l, lower, upper,
                               costs[np.arange(S), policy_l] + worst, n)
        open_ &= visits > 0
        rival = rival[open_]
        rival_width = _widths(kernels, boxes, rival, n[rival], upper, lower, best[rival])[0]
        rival_width = np.where(np.isfinite(rival_width), rival_width,
                               max(1.0, float(finite.max(initial=0.0))))
        rival_score = (visits[open_] * rival_width
                       * np.sqrt(np.maximum(n[rival], 1.0))) ** (2.0 / 3.0)
        alive = (q_low <= upper[:, None]).ravel()
        del best, q_low
    else:
        alive = np.empty(S * A, dtype=bool)
        for s0, s1 in _state_blocks(S, A):
            alive[s0 * A:s1 * A] = (_optimist_q(kernels, boxes, costs, l_ext, s0, s1)[1]
                                    <= upper[s0:s1, None]).ravel()
        n = boxes.n
    score = np.zeros(S * A)
    score[rows] = (visits * width * np.sqrt(np.maximum(n[rows], 1.0))) ** (2.0 / 3.0)
    if rivals:
        score[rival] += rival_score
    target, total_score = score, score.sum()
    if total_score > 0:
        target *= (1.0 - FLOOR_SHARE * 4) * target_total
        target /= total_score
    else:
        target.fill(0.0)
    np.maximum(target, FLOOR_SHARE * target_total / (S * A), out=target, where=alive)
    target -= n
    return np.maximum(target, 0.0, out=target)


def _next_draws(kernels, boxes, costs, sampling, n_calls, state, goal_gap, cap, rivals=False):
    """New calls per pair for the next round, int64 ``(S*A,)`` ``>= 0``, at most ``cap`` in total
    (``n_calls`` the samples the counts of ``boxes`` sum to, the sample store's total:
    uniform sampling tops every pair up to ``ceil(GROWTH n_calls / (S A))``, adaptive
    sampling aims at ``GROWTH n_calls`` in all and draws ``ceil((GROWTH - 1) n_calls)``;
    ``state`` of the round; ``rivals``: also sample the rivals of the policy's actions,
    :func:`_adaptive_draws`)."""
    S, A = boxes.n_states, boxes.n_actions
    if sampling == "uniform":
        per_pair = math.ceil(GROWTH * n_calls / (S * A))
        more = np.maximum(per_pair - boxes.n, 0.0)
        total = min(cap, int(more.sum()))
    else:
        more = _adaptive_draws(kernels, boxes, costs, GROWTH * n_calls, *state, goal_gap,
                               rivals)
        if not more.sum() > 0:
            more[np.arange(S) * A + state[1]] = 1.0
        total = min(cap, math.ceil((GROWTH - 1.0) * n_calls))
    return kernels.split_calls(more, total, SHARE_GRID)
