r"""Exact evaluation of a deterministic policy: values, hitting times, properness.

The values of a policy are those of its Markov chain, solved by
:mod:`reference.chains`: the finite / infinite / zero split on the support
graph (docs/semantics.md, "Model"), then every finite value either certified
to a relative error of ``reference.chains.CERTIFIED_RTOL`` or computed by
subtraction-free elimination. No function densifies a CSR kernel (the
solver densifies only a transient block below
``reference.chains.ITERATIVE_MIN_STATES`` states, for its LU).
"""

import numpy as np

from . import chains
from ._checks import check_policy
from .errors import ParameterError

__all__ = ["policy_values", "is_proper", "hitting_times"]


def check_ssp(ssp):
    """Raise :class:`ParameterError` unless ``ssp`` is an SSP model."""
    if not (hasattr(ssp, "kernel_csr") and hasattr(ssp, "costs")):
        raise ParameterError(
            f"`ssp` must be an SSP model (with `kernel_csr()` and `costs`); "
            f"got {type(ssp).__name__}."
        )


def kernel_rows(ssp):
    """The kernel as one row per pair: dense ``(S*A, S+1)`` view or CSR, never densified."""
    if ssp.is_sparse:
        return ssp.kernel_csr()
    S, A = ssp.n_states, ssp.n_actions
    return ssp.kernel_dense().reshape(S * A, S + 1)


def policy_chain(kernel, n_actions, policy):
    """Rows of ``kernel`` (:func:`kernel_rows`) chosen by ``policy``: shape ``(S, S+1)``."""
    return kernel[np.arange(policy.size) * n_actions + policy]


def _checked_chain(ssp, policy):
    check_ssp(ssp)
    policy = check_policy(policy, ssp.n_states, ssp.n_actions)
    return policy_chain(kernel_rows(ssp), ssp.n_actions, policy), policy


def policy_values(ssp, policy):
    r"""Exact values :math:`V^\pi` of a deterministic policy, ``+inf`` where infinite.

    Parameters
    ----------
    ssp : SSP
        The model (dense or CSR kernel; a CSR kernel is never densified).
    policy : array_like of int, shape (S,)
        Action of each non-goal state.

    Returns
    -------
    ndarray of float64, shape (S,), all ``>= 0``
        :math:`V^\pi(s) = \mathbb{E}[\sum_{t < \tau_\pi(s)} c(s_t, \pi(s_t))]`.

    Raises
    ------
    ShapeError, ParameterError
        If ``policy`` has the wrong shape or an action out of range.
    ConvergenceError
        If a value exceeds the float64 range, or no certified solve exists and
        the exact elimination would need a dense block above
        ``reference.chains.ELIMINATION_MAX_STATES`` states or a round of more
        than ``reference.chains.fill.ELIMINATION_MAX_ENTRIES`` stored entries,
        refused before it is made (the message names the states and the size).

    See Also
    --------
    is_proper : whether the policy reaches the goal surely.
    hitting_times : the expected time to the goal.
    optimal_values : the best values.

    Notes
    -----
    docs/semantics.md, "Model", which overrides Sec. 2 of the paper here: the paper
    says an improper policy has an unbounded value somewhere, which fails when
    the only closed classes it reaches cost nothing; those states get finite
    values. The split is decided on the support graph of :math:`P_\pi`, never
    from floating point. A state that reaches, with positive probability, a
    closed class (a strongly connected set of non-goal states with no edge
    leaving it) holding a positive cost has :math:`V^\pi = +\infty`; a state
    that reaches no positive cost has :math:`V^\pi = 0`; on the remaining
    (transient) states :math:`T` the values solve

    .. math::

        d(s) V(s) = c_\pi(s) + \sum_{s' \in T, s' \ne s} P_\pi(s'|s) V(s'), \qquad
        d(s) = P_\pi(\text{leave } T | s) + \sum_{s' \in T, s' \ne s} P_\pi(s'|s),

    where the probability of leaving a state is summed from its stored
    entries (goal, states outside ``T``, other states), never taken as
    :math:`1 - P_\pi(s|s)`.

    Accuracy: every finite value has a relative error of at most
    ``reference.chains.CERTIFIED_RTOL`` = 1e-10 when it comes from a
    floating-point solve (dense LU up to ``DENSE_MAX_STATES`` states, BiCGSTAB
    on large sparse chains), proved a posteriori from the residual and the
    chain's hitting times, or from upper and lower solutions of the Bellman
    equation checked in extended precision, whatever the conditioning
    (docs/exact-evaluation.md); otherwise it comes from subtraction-free (GTH)
    elimination, whose relative error stays a modest multiple of the unit
    roundoff whatever the conditioning (measured: below 1e-13 on chains with
    values of 1e37). Non-negative costs never give a negative value.

    Examples
    --------
    >>> import numpy as np
    >>> import reference as sspgm
    >>> ssp = sspgm.chain(n=3, p=0.5)
    >>> sspgm.policy_values(ssp, np.zeros(3, dtype=int))
    array([6., 4., 2.])
    """
    chain, policy = _checked_chain(ssp, policy)
    return chains.chain_values(chain, np.asarray(ssp.costs)[np.arange(ssp.n_states), policy])


def is_proper(ssp, policy):
    r"""Whether ``policy`` reaches the goal with probability 1 from every state (Def. 2).

    Parameters
    ----------
    ssp : SSP
        The model.
    policy : array_like of int, shape (S,)
        Action of each non-goal state.

    Returns
    -------
    bool
        True when :math:`P_\pi` has no closed class among non-goal states,
        i.e. :math:`\Pr(\tau_\pi(s) < \infty) = 1` for every ``s``; decided on the
        support graph.

    See Also
    --------
    policy_values : infinite exactly where an improper policy costs.

    Examples
    --------
    On ``chain(n=3, p=0.5)``, action 1 in state 1 steps back to state 0, and
    states 0 and 1 then never reach state 2 or the goal:

    >>> import reference as sspgm
    >>> ssp = sspgm.chain(n=3, p=0.5)
    >>> sspgm.is_proper(ssp, [0, 0, 0]), sspgm.is_proper(ssp, [0, 1, 0])
    (True, False)
    """
    return not chains.has_closed_class(_checked_chain(ssp, policy)[0])


def hitting_times(ssp, policy):
    r"""Expected goal-hitting times :math:`\mathbb{E}[\tau_\pi(s)]`, ``+inf`` if not a.s. finite.

    Parameters
    ----------
    ssp : SSP
        The model.
    policy : array_like of int, shape (S,)
        Action of each non-goal state.

    Returns
    -------
    ndarray of float64, shape (S,)
        The values of ``policy`` with unit costs (docs/semantics.md, "Model"),
        with the accuracy stated in :func:`policy_values`:

        .. math::

            \mathbb{E}[\tau_\pi(s)] = V^\pi_{c \equiv 1}(s).

    See Also
    --------
    policy_values : the expected cost instead of the time.
    diameter : the smallest hitting times over policies.

    Examples
    --------
    Action 0 of ``chain(n=3, p=0.5)`` moves forward w.p. 1/2, so from state
    ``s`` the goal is ``3 - s`` forward moves away, each taking 2 steps on
    average; with action 1 in state 1, states 0 and 1 never reach the goal:

    >>> import reference as sspgm
    >>> ssp = sspgm.chain(n=3, p=0.5)
    >>> sspgm.hitting_times(ssp, [0, 0, 0])
    array([6., 4., 2.])
    >>> sspgm.hitting_times(ssp, [0, 1, 0])
    array([inf, inf,  2.])
    """
    return chains.chain_values(_checked_chain(ssp, policy)[0], np.ones(ssp.n_states))
