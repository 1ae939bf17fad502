r"""A bound on a policy's own error from the confidence boxes, never looser than ``U - L``.

The value certificate bounds ``V^pi - V*`` by ``U - L``, the width of the
bracket on the values. A policy can be right long before its values are
pinned: where its action is separated from every other action, it loses
nothing there. ``docs/certificates.md`` proves the bound computed here:

.. math::

    a(s) = \Bigl(\bar Q(s, \pi(s)) - \min_{b \ne \pi(s)} \underline Q(s, b)\Bigr)^+,
    \qquad
    V^\pi(s) - V^*(s) \le \min\bigl(W(s),\ U(s) - L(s)\bigr),

with :math:`\bar Q(s, a) = c(s, a) + \max_{p \in B(s, a)} p \cdot U` (the
adversary's pour against ``U``), :math:`\underline Q(s, b) = c(s, b) +
\min_{p \in B(s, b)} p \cdot L` (the optimist's pour against ``L``), and
``W`` the worst case over the boxes of the expected total of ``a`` along
``pi``: the robust value of ``pi`` with the costs ``a``. It holds on the
event of the boxes, with ``L <= V*`` and ``U >= V^pi``.
"""

import numpy as np

from .robust import _robust_values

POLICY_GAP_MARGIN = 1e-9
"""Relative margin added to every ``a(s)``: it covers the rounding of the two pours, so that a
computed ``a(s) = 0`` never hides a positive exact one."""


def policy_gap_bound(kernels, boxes, costs, policy, lower, upper):
    r"""Per-state bound on ``V^pi - V*``: ``min(W, U - L)``, shape ``(S,)``.

    Parameters
    ----------
    kernels : Kernels
        The backend's kernel functions (pours).
    boxes : ConfidenceBoxes
        The boxes the bounds were computed on.
    costs : ndarray of float64, shape (S, A)
        Costs.
    policy : ndarray of int64, shape (S,)
        The policy ``pi``.
    lower : ndarray of float64, shape (S,)
        Checked ``L <= V*``.
    upper : ndarray of float64, shape (S,)
        Checked ``U >= V^pi`` (``+inf`` where no finite bound holds).

    Returns
    -------
    ndarray of float64, shape (S,)
        ``min(W, U - L)``, ``+inf`` where both are.

    Notes
    -----
    ``a`` gets a margin of :data:`POLICY_GAP_MARGIN` times
    ``|Q_up| + |Q_low|``, so its zeros are exact; ``W`` is the checked
    robust value of :func:`reference.robust.robust_policy_values`'s method.
    One action per state gives ``a = 0`` (the margin aside).
    """
    S, A = boxes.n_states, boxes.n_actions
    states = np.arange(S)
    rows = states * A + policy
    q_up = costs[states, policy] + kernels.pour_values(boxes, rows, np.append(upper, 0.0), True)
    q_low = costs + kernels.pour_values(boxes, np.arange(S * A), np.append(lower, 0.0),
                                        False).reshape(S, A)
    q_low[states, policy] = np.inf
    best_other = q_low.min(axis=1)
    with np.errstate(invalid="ignore"):
        margin = POLICY_GAP_MARGIN * (np.abs(q_up) + np.where(np.isfinite(best_other),
                                                               np.abs(best_other), 0.0))
        loss = np.maximum(q_up - best_other, 0.0) + margin
    loss = np.where(np.isnan(loss), np.inf, loss)
    width = np.where(np.isinf(upper), np.inf, upper - lower)
    if not np.isfinite(loss).all():
        return width
    robust = _robust_values(kernels, boxes, loss, policy)[0]
    return np.minimum(robust, width)
