r"""Quantities of the paper defined through hitting times: the diameter :math:`D`, :math:`B_\star` and :math:`V^\star_\theta`."""

import itertools
from dataclasses import dataclass

import numpy as np

from . import chains
from ._checks import check_int, check_real
from .errors import TooLargeError
from .evaluation import check_ssp, kernel_rows, policy_chain
from .optimal import best_proper, optimal_values, require_proper_model
from .results import Result, call_params

__all__ = [
    "DiameterResult",
    "RestrictedValuesResult",
    "diameter",
    "b_star",
    "restricted_optimal_values",
]

THETA_RTOL = 1e-9
"""Relative slack of the test ``E[tau_pi(s)] <= theta D_s`` (:func:`restricted_optimal_values`)."""


@dataclass(frozen=True, repr=False)
class DiameterResult(Result):
    r"""Minimal expected hitting times of the goal (eq. 2 of the paper).

    Attributes
    ----------
    D_s : ndarray of float64, shape (S,), read-only
        :math:`D_s = \min_\pi \mathbb{E}[\tau_\pi(s)]`.
    D : float
        The SSP-diameter :math:`D = \max_s D_s`.
    policy : ndarray of int64, shape (S,), read-only
        A proper policy attaining every ``D_s`` at once.
    n_iter : int
        Policy evaluations of the polish (see ``optimal_values``).
    converged : bool
        Whether the polish converged.
    message : str
        What happened, in words.
    params : Params
        Empty: :func:`diameter` takes the model alone (:class:`~reference.results.Result`).
    """

    D_s: np.ndarray
    D: float
    policy: np.ndarray
    n_iter: int
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class RestrictedValuesResult(Result):
    r"""The restricted optimal values :math:`V^\star_\theta` (Def. 4 and 5), by enumeration.

    Attributes
    ----------
    values : ndarray of float64, shape (S,), read-only
        :math:`V^\star_\theta(s) = \min_{\pi \in \Pi_\theta} V^\pi(s)`, a minimum
        taken separately for each state.
    policies : ndarray of int64, shape (S, S), read-only
        Row ``s`` is a policy of :math:`\Pi_\theta` attaining ``values[s]``
        (the first one in enumeration order).
    D_s : ndarray of float64, shape (S,), read-only
        Minimal expected hitting times, from the same enumeration.
    n_policies : int
        Number of deterministic policies enumerated, ``A**S``.
    n_feasible : int
        Number of them in :math:`\Pi_\theta`.
    converged : bool
        Always True: the enumeration is exhaustive.
    message : str
        What was enumerated, in words.
    params : Params
        ``theta`` and ``max_policies`` (:class:`~reference.results.Result`).
    """

    values: np.ndarray
    policies: np.ndarray
    D_s: np.ndarray
    n_policies: int
    n_feasible: int
    converged: bool
    message: str


def diameter(ssp):
    r"""Minimal expected hitting times :math:`D_s` and the SSP-diameter :math:`D` (eq. 2).

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).

    Returns
    -------
    DiameterResult
        ``D_s`` (S,), ``D``, a policy attaining ``D_s``, ``n_iter``,
        ``converged``, ``message``.

    See Also
    --------
    hitting_times : of one policy.
    estimate_diameter : Alg. 4, from samples.

    Notes
    -----
    The optimal values with unit costs, by ``optimal_values`` (the linear
    program polished by exact policy iteration, same accuracy); with
    :math:`c \equiv 1 > 0` the best proper value is the optimal value:

    .. math::

        D_s = \min_\pi \mathbb{E}[\tau_\pi(s)], \qquad D = \max_{s} D_s.

    Examples
    --------
    >>> import reference as sspgm
    >>> sspgm.diameter(sspgm.chain(n=3, p=0.5)).D
    6.0
    """
    check_ssp(ssp)
    require_proper_model(ssp)
    best = best_proper(kernel_rows(ssp), np.ones((ssp.n_states, ssp.n_actions)))
    return DiameterResult(
        D_s=best.values, D=float(best.values.max()), policy=best.policy, n_iter=best.n_iter,
        converged=best.converged, message=best.message,
    )


def b_star(ssp):
    r""":math:`B_\star = \max_s \min_{\pi\ \mathrm{proper}} V^\pi(s)` (Sec. 2).

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).

    Returns
    -------
    float
        The largest best-proper value, with :math:`\hat V` from ``optimal_values``:

        .. math::

            B_\star = \max_{s \in S} \hat V(s).

    See Also
    --------
    optimal_values : ``V*`` itself.

    Examples
    --------
    In ``tradeoff()`` the slow action (cost 0.1, goal w.p. 1/2) is the best
    proper policy, of value ``0.1 / 0.5``; the fast one reaches the goal in one
    step, so :math:`B_\star = 0.2` while the diameter is 1:

    >>> import reference as sspgm
    >>> ssp = sspgm.tradeoff()
    >>> round(sspgm.b_star(ssp), 12), sspgm.diameter(ssp).D
    (0.2, 1.0)
    """
    return float(optimal_values(ssp).values.max())


def restricted_optimal_values(ssp, theta, max_policies=100_000):
    r""":math:`V^\star_\theta` (Def. 4 and 5) by enumerating the deterministic policies.

    Parameters
    ----------
    ssp : SSP
        The model.
    theta : float, ``>= 1`` (``inf`` allowed)
        Restriction parameter.
    max_policies : int, default 100000
        Largest number ``A**S`` of policies to enumerate.

    Returns
    -------
    RestrictedValuesResult
        ``values`` (S,), ``policies`` (S, S), ``D_s`` (S,), ``n_policies``,
        ``n_feasible``, ``converged``, ``message``, ``params``.

    Raises
    ------
    TooLargeError
        If ``A**S > max_policies``.
    ParameterError
        If ``theta < 1`` or ``max_policies`` is not an integer ``>= 1``.

    See Also
    --------
    optimal_values : ``V*``, over every proper policy.

    Notes
    -----
    docs/semantics.md, "Model": exact only by enumeration. With
    :math:`D_s = \min_\pi \mathbb{E}[\tau_\pi(s)]` taken over the same
    enumeration,

    .. math::

        \Pi_\theta = \{\pi : \mathbb{E}[\tau_\pi(s)] \le \theta D_s\ \forall s\},
        \qquad V^\star_\theta(s) = \min_{\pi \in \Pi_\theta} V^\pi(s),

    a minimum taken separately for each state (different states may need
    different policies). Membership is tested with a relative slack
    :data:`THETA_RTOL` so that policies on the boundary are kept. Policies are
    enumerated in lexicographic order, state 0 most significant.

    Examples
    --------
    In ``theta_example()`` the free action 1 reaches the goal in 20 steps on
    average and the exit (action 0, cost 0.5) in one, so :math:`D = 1`: the
    free action belongs to :math:`\Pi_\theta` from ``theta = 20`` on only.

    >>> import reference as sspgm
    >>> ssp = sspgm.theta_example()
    >>> sspgm.restricted_optimal_values(ssp, 5).values
    array([0.5])
    >>> sspgm.restricted_optimal_values(ssp, 20).values
    array([0.])
    """
    params = call_params(theta=theta, max_policies=max_policies)
    check_ssp(ssp)
    theta = check_real("theta", theta, 1.0, allow_inf=True)
    max_policies = check_int("max_policies", max_policies, 1)
    S, A = ssp.n_states, ssp.n_actions
    n_policies = A**S
    if n_policies > max_policies:
        raise TooLargeError(
            f"`restricted_optimal_values` enumerates A**S = {A}**{S} = {n_policies} "
            f"policies, above `max_policies` = {max_policies}."
        )
    kernel, costs, states = kernel_rows(ssp), np.asarray(ssp.costs), np.arange(S)
    all_policies = itertools.product(range(A), repeat=S)
    times = np.array(
        [chains.chain_values(policy_chain(kernel, A, np.array(p)), np.ones(S))
         for p in all_policies]
    )
    D_s = times.min(axis=0)
    feasible = np.all(times <= theta * D_s * (1.0 + THETA_RTOL), axis=1)
    values = np.full((n_policies, S), np.inf)
    for i in np.flatnonzero(feasible):
        policy = np.array(np.unravel_index(i, (A,) * S), dtype=np.int64)
        values[i] = chains.chain_values(policy_chain(kernel, A, policy), costs[states, policy])
    best = values.argmin(axis=0)
    policies = np.array(np.unravel_index(best, (A,) * S), dtype=np.int64).T
    n_feasible = int(feasible.sum())
    return RestrictedValuesResult(
        values=values[best, states], policies=policies, D_s=D_s, n_policies=n_policies,
        n_feasible=n_feasible, converged=True,
        message=f"enumerated all {n_policies} deterministic policies; {n_feasible} lie in "
        "Pi_theta",
        params=params,
    )
