r"""What a certificate may claim when costs can be zero: properness, ``V*_theta``, ``D``.

Three facts the certificates of :mod:`reference.certified` and Alg. 3's
answer rest on when ``c_min = 0`` (docs/certified-soundness.md proves each):

- **Properness from the boxes.** A policy is proper in every kernel of the
  boxes from every state when no kernel of the boxes leads a state, with
  positive probability, into a closed class avoiding the goal; on the
  confidence event the true kernel is one of them. A certificate is never
  ``certified`` without it: with zero costs a policy that never reaches the
  goal can have ``upper = lower = 0``.
- **A lower bound on** ``V*_theta`` **from the perturbed costs.** With
  ``c' = max(c, nu)`` and ``H(s) >= D_s`` (the robust unit-cost value of a
  policy, an upper bound on ``D_s`` on the event), every ``pi`` in
  ``Pi_theta`` has ``V^pi_{c'}(s) <= V^pi(s) + nu theta H(s)``, so
  ``V*_theta(s) >= L'(s) - nu theta H(s)`` for the optimist's ``L' <= V*_{c'}``.
- **Upper bounds on** ``D_s`` **from the same boxes**, which is what Alg. 3's
  ``nu = eps / (2 theta D_hat)`` needs of ``D_hat``.
"""

import numpy as np

from .robust import _infinite_states, _optimistic, _robust_policy, _robust_values

__all__ = []

MAX_HALVINGS = 30
"""Relative target with ``theta``: most halvings of ``nu`` on one round's boxes."""


def proper_everywhere(boxes, policy, costs_pi, infinite):
    """Whether ``policy`` is proper from every state in every kernel of ``boxes``.

    ``infinite`` are the states where the adversary makes the cost
    ``costs_pi`` infinite (:func:`reference.robust._infinite_states`): with
    every cost positive they are exactly the states from which some kernel
    makes the policy improper. Otherwise the same decision is made on unit
    costs, where every closed class avoiding the goal costs something.
    """
    if (costs_pi > 0).all():
        return not bool(infinite.any())
    ones = np.ones(boxes.n_states)
    return not bool(_infinite_states(boxes, policy, ones).any())


def hitting_bound(kernels, boxes, policy=None):
    r"""``(H, pi, optimist, converged)``: ``H(s) >= D_s`` on the event.

    ``policy`` starts the optimist's policy iteration on unit costs (zeros
    by default; ``optimist`` is its output tuple, which holds the pour order of its
    last kernel, :func:`round_bounds`), whose policy starts the
    robust policy iteration; ``H`` is the checked robust unit-cost value of
    the policy ``pi`` it ends with, so
    :math:`H(s) \ge \mathbb E[\tau_\pi(s)] \ge D_s` in the true kernel on the
    event, and ``+inf`` where no finite bound holds.
    """
    S, A = boxes.n_states, boxes.n_actions
    unit = np.ones((S, A))
    start = np.zeros(S, dtype=np.int64) if policy is None else policy
    low = _optimistic(kernels, boxes, unit, start)
    robust = _robust_policy(kernels, boxes, unit, low[1], poured=False)
    return robust[0], robust[1], low, low[4] and robust[4]


def theta_bounds(kernels, boxes, costs, policy, upper_perturbed, lower_perturbed, nu, theta,
                 hitting):
    r"""``(upper, lower)`` with ``V^pi <= upper`` and ``lower <= V*_theta`` on the event.

    Parameters
    ----------
    kernels : KernelSet
    boxes : ConfidenceBoxes
    costs : ndarray of float64, shape (S, A)
        The original costs ``c`` (zeros allowed).
    policy : ndarray of int64, shape (S,)
    upper_perturbed, lower_perturbed : ndarray of float64, shape (S,)
        The checked ``U' >= V^pi_{c'}`` and ``L' <= V*_{c'}`` of the costs
        ``c' = max(c, nu)``.
    nu, theta : float
    hitting : ndarray of float64, shape (S,)
        ``H >= D`` per state (:func:`hitting_bound`).

    Returns
    -------
    upper : ndarray of float64, shape (S,)
        ``min(U', U_c)`` with ``U_c`` the policy's checked robust value on
        ``c``: both bound ``V^pi`` (``c <= c'``).
    lower : ndarray of float64, shape (S,)
        :math:`\max(0, L' - \nu\theta H)`, a lower bound on ``V*_theta``.
    """
    costs_pi = costs[np.arange(boxes.n_states), policy]
    start = np.where(np.isfinite(upper_perturbed), upper_perturbed, 0.0)
    upper_c = _robust_values(kernels, boxes, costs_pi, policy, start)[0]
    upper = np.minimum(upper_perturbed, upper_c)
    with np.errstate(invalid="ignore"):
        lower = np.maximum(lower_perturbed - nu * theta * hitting, 0.0)
    return upper, np.where(np.isnan(lower), 0.0, lower)


def perturbation_binds(upper, lower, lower_perturbed, eps):
    """Whether a failed relative stop would hold at every failing state without the ``nu`` term."""
    fail = ~(upper <= (1.0 + eps) * lower)
    return bool(fail.any()) and bool((upper[fail] <= (1.0 + eps) * lower_perturbed[fail]).all())


def round_bounds(kernels, boxes, costs, policies):
    """Optimist and adversary on positive ``costs``: ``((L, pi_L, order_L, U), parts)``.

    ``order_L`` is the pour order of the optimist's last kernel, which is all
    of it the sampling needs: the kernel ``pour_kernel`` reads its values only
    through their pour order, so the kernel is built again from it
    (:func:`reference.certified_sampling._adaptive_draws`) and not held while
    the adversary runs. ``parts`` are the arguments of the certificate of
    ``pi_U`` after the boxes (``reference.certified._certificate``).
    """
    lower, policy_l, order_l, _, lower_converged, lower_message = _optimistic(
        kernels, boxes, costs, policies.get("lower", np.argmin(costs, axis=1)))
    policies["lower"] = policy_l
    upper, policy_u, _, _, upper_converged, _ = _robust_policy(kernels, boxes, costs, policy_l,
                                                               poured=False)
    parts = (policy_u, lower, upper, lower_message, lower_converged and upper_converged,
             bool(np.isfinite(upper).all()))
    return (lower, policy_l, order_l, upper), parts


def theta_round(kernels, boxes, costs, eps, theta, relative, policies):
    r"""One round of :func:`~reference.certified.solve_certified` with ``theta``.

    Returns ``(costs', (L', pi_L, order_L, U'), parts, D_hat, nu)`` with
    ``parts`` the certificate's arguments after the boxes: ``pi_U`` with the
    bounds :func:`theta_bounds` (``lower <= V*_theta``, ``upper >= V^pi`` of
    ``costs``), and the other bounds those of ``costs' = max(costs, nu)``,
    ``nu = eps / (2 theta D_hat)``, ``D_hat = max H`` (:func:`hitting_bound`).
    While ``D_hat`` is infinite the round works on unit costs, to find the
    goal. With ``relative``, ``nu`` is halved on the same boxes (at most
    :data:`MAX_HALVINGS` times) while the stop fails only through the term
    ``nu theta H`` (:func:`perturbation_binds`); every ``nu`` gives valid
    bounds, so the choice costs nothing in ``delta``.
    """
    S, A = boxes.n_states, boxes.n_actions
    hitting, unit_policy, low, converged = hitting_bound(kernels, boxes, policies.get("unit"))
    policies["unit"] = unit_policy
    D_hat = float(hitting.max())
    if not np.isfinite(D_hat):
        parts = (unit_policy, low[0], hitting, low[5], converged, False)
        return np.ones((S, A)), (low[0], low[1], low[2], hitting), parts, D_hat, None
    nu = eps / (2.0 * theta * D_hat)
    for halving in range(MAX_HALVINGS + 1):
        nu = nu / 2.0 if halving else nu
        work = np.maximum(costs, nu)
        state, parts = round_bounds(kernels, boxes, work, policies)
        upper, lower = theta_bounds(kernels, boxes, costs, parts[0], parts[2], parts[1], nu, theta,
                                    hitting)
        if not (relative and perturbation_binds(upper, lower, parts[1], eps)):
            break
    return work, state, (parts[0], lower, upper, *parts[3:]), D_hat, nu


def alg3_hitting_check(kernels, boxes, D_hat):
    """``(ok, H_max)``: whether the robust unit-cost bound of ``boxes`` is at most ``D_hat``.

    ``boxes`` are the KL boxes of Alg. 3's certificate: on their event
    ``D <= H_max``, and ``H_max <= D_hat`` then gives ``nu theta D <= eps / 2``
    without Alg. 4's own event or Lemma 9.
    """
    H_max = float(hitting_bound(kernels, boxes)[0].max())
    return bool(H_max <= D_hat), H_max
