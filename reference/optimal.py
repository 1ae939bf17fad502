r"""Optimal values: the linear program, policy iteration and plain value iteration.

:func:`optimal_values` solves the linear program of docs/semantics.md, "Model"
(HiGHS), the proof of optimality among proper policies, and polishes its
policy by exact policy iteration, so that the returned values are the exact
values of an optimal policy. :func:`policy_iteration` starts from the policy
with the smallest expected hitting times, found by the same machinery.
Policy evaluation is :mod:`reference.evaluation`'s. Plain value iteration is
here as the baseline that fails on empirical kernels (docs/semantics.md,
"Confidence sets and EVI"); it is a kernel function (:mod:`reference.backend`),
its sweep the kernel set's ``vi_sweep``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from . import chains
from ._checks import check_int, check_policy, check_real
from .errors import ConvergenceError, NoProperPolicyError, ParameterError
from .evaluation import check_ssp, kernel_rows, policy_chain
from .kernels import NUMPY_KERNELS
from .results import Result, call_params

__all__ = [
    "OptimalValuesResult",
    "PolicyIterationResult",
    "ValueIterationResult",
    "optimal_values",
    "policy_iteration",
    "value_iteration",
]

BEST_PROPER = (
    "best proper policy: min over proper policies of V^pi, computed exactly; "
    "equals V* when c_min > 0"
)
"""The ``which`` string of :func:`optimal_values` and ``diameter``."""

LP_ACTION_RTOL = 1e-6
"""Actions with ``Q(s, a) - V_lp(s) <= LP_ACTION_RTOL * max(1, max|V_lp|)`` start the polish."""

IMPROVE_RTOL = 1e-13
r"""Policy iteration switches the action of ``s`` only for a gain above ``IMPROVE_RTOL * V(s)``."""

LP_AGREEMENT_RTOL = 1e-6
"""Largest accepted ``max|V - V_lp| / max(1, max V)`` between the polished and the LP values."""


@dataclass(frozen=True, repr=False)
class OptimalValuesResult(Result):
    r"""Best values over proper policies, exact values of an optimal policy.

    Attributes
    ----------
    values : ndarray of float64, shape (S,), read-only
        :math:`V^*`, the best values over proper policies
        :math:`\hat V(s) = \min_{\pi\ \mathrm{proper}} V^\pi(s)`: the exact values
        of ``policy``, Bellman residual at most ``IMPROVE_RTOL`` relative.
    policy : ndarray of int64, shape (S,), read-only
        A proper deterministic policy attaining ``values``.
    which : str
        Which value ``values`` is (:data:`BEST_PROPER`).
    lp_gap : float
        :math:`\max_s |\hat V(s) - V_{lp}(s)| / \max(1, \|\hat V\|_\infty)`,
        the distance to the linear program's solution.
    n_iter : int
        Policy evaluations of the polishing policy iteration.
    converged : bool
        Whether the polish converged (no action improves any state).
    status : int
        HiGHS status as reported by :func:`scipy.optimize.linprog` (0 = optimal).
    message : str
        HiGHS's message and the polish's.
    params : Params
        Empty: :func:`optimal_values` takes the model alone (:class:`~reference.results.Result`).
    """

    values: np.ndarray
    policy: np.ndarray
    which: str
    lp_gap: float
    n_iter: int
    converged: bool
    status: int
    message: str


@dataclass(frozen=True, repr=False)
class PolicyIterationResult(Result):
    r"""Outcome of Howard's policy iteration.

    Attributes
    ----------
    values : ndarray of float64, shape (S,), read-only
        :math:`V^\pi` of the returned policy, exact.
    policy : ndarray of int64, shape (S,), read-only
        The last evaluated (proper) policy.
    n_iter : int
        Number of policy evaluations performed (sweeps of the improvement step).
    converged : bool
        Whether no action improves on ``policy`` by more than the tolerance.
    message : str
        What happened, in words.
    params : Params
        ``max_iter`` (:class:`~reference.results.Result`).
    """

    values: np.ndarray
    policy: np.ndarray
    n_iter: int
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class ValueIterationResult(Result):
    r"""Outcome of plain SSP value iteration.

    Attributes
    ----------
    values : ndarray of float64, shape (S,), read-only
        The iterate :math:`V_k` at which the stopping test held (or the last
        one before ``max_iter`` sweeps): an approximation of :math:`V^*` (the
        iterates rise from 0), not a certified bound.
    policy : ndarray of int64, shape (S,), read-only
        Greedy policy with respect to ``values`` (the argmin that built
        :math:`V_{k+1}`), ties to the lowest action index.
    n_iter : int
        Number of sweeps performed (:math:`k + 1`).
    residual : float
        :math:`\max_s |V_{k+1}(s) - V_k(s)|`.
    converged : bool
        Whether ``residual <= tol``.
    message : str
        What happened, in words.
    params : Params
        ``tol`` and ``max_iter`` (:class:`~reference.results.Result`).
    """

    values: np.ndarray
    policy: np.ndarray
    n_iter: int
    residual: float
    converged: bool
    message: str


def require_proper_model(ssp):
    """Raise :class:`NoProperPolicyError` unless ``ssp`` satisfies Assumption 1.

    Every pair moving to the goal with positive probability settles it at once;
    otherwise the model decides on its support graph (``SSP.proper_states``).
    """
    if chains.direct_exits(kernel_rows(ssp)).all():
        return
    ok = ssp.proper_states()
    if not ok.all():
        s = int(np.flatnonzero(~ok)[0])
        raise NoProperPolicyError(
            f"`ssp` must admit a proper policy (Assumption 1); from state {s} no policy "
            "reaches the goal with probability 1 (the model was built with "
            "require_proper=False)."
        )


def q_values(kernel, costs, values):
    r"""Q-values :math:`c(s,a) + \sum_{s' \in S} p(s'|s,a) V(s')`, shape ``(S, A)``."""
    return costs + (kernel @ np.append(values, 0.0)).reshape(costs.shape)


def bfs_policy(kernel, n_states, n_actions, allowed):
    """Proper policy by backward breadth-first search from the goal over ``allowed`` pairs.

    A pair qualifies once its support meets the states already settled (the
    goal at the start); each round settles every unsettled state with a
    qualifying allowed pair, taking the one with the largest probability of
    moving into the settled states (ties to the lowest action). Every settled
    state then moves strictly closer to the goal with positive probability, so
    the policy is proper when all states get settled.

    Only the pairs with a next state settled in the previous round can
    qualify (an earlier one would have settled their state already), so each
    round reads those rows of the kernel alone, found through its transpose:
    ``O(S A (S+1))`` work in all for a dense kernel, ``O(stored)`` for CSR,
    however many rounds the search takes (a chain of ``n`` states takes
    ``n``). The probabilities are summed over each row's stored entries in
    column order, whatever the storage.

    Returns
    -------
    ndarray of int64, shape (S,)
        The policy, ``-1`` on the states never settled.
    """
    S, A = n_states, n_actions
    rows_of = sp.csr_array(kernel)
    into = rows_of.tocsc()
    policy = np.full(S, -1, dtype=np.int64)
    settled = np.zeros(S + 1)
    settled[S] = 1.0
    frontier = np.array([S])
    while True:
        starts, ends = into.indptr[frontier], into.indptr[frontier + 1]
        rows = np.unique(np.concatenate([into.indices[a:b] for a, b in zip(starts, ends)]))
        rows = rows[allowed[rows] & (settled[rows // A] == 0)]
        mass = np.zeros(S * A)
        mass[rows] = rows_of[rows] @ settled
        mass = mass.reshape(S, A)
        new = (mass > 0).any(axis=1)
        if not new.any():
            return policy
        policy[new] = mass[new].argmax(axis=1)
        settled[:S][new] = 1.0
        frontier = np.flatnonzero(new)


def _improper_state(chain):
    """A state from which the chain never reaches the goal surely, or ``None``."""
    if not chains.has_closed_class(chain):
        return None
    return int(np.flatnonzero(chains.closed_classes(sp.csr_array(chain))[1])[0])


def _iterate(kernel, costs, policy, max_iter):
    r"""Howard's policy iteration from a proper ``policy``: ``(values, policy, n_iter, converged, message)``."""
    S, A = costs.shape
    states = np.arange(S)
    chain = policy_chain(kernel, A, policy)
    for n_iter in range(1, max_iter + 1):
        values = chains.chain_values(chain, costs[states, policy])
        q = q_values(kernel, costs, values)
        best = q.argmin(axis=1)
        switch = q[states, best] < q[states, policy] * (1.0 - IMPROVE_RTOL)
        if not switch.any():
            return values, policy, n_iter, True, (
                f"no action improves any state by more than a relative {IMPROVE_RTOL:g}: "
                "the policy is optimal among proper policies"
            )
        candidate = np.where(switch, best, policy)
        candidate_chain = policy_chain(kernel, A, candidate)
        if _improper_state(candidate_chain) is not None:
            return values, policy, n_iter, False, (
                "the improvement step would leave the proper policies (rounding in a "
                "zero-cost cycle); returning the last proper policy and its values"
            )
        if n_iter < max_iter:
            policy, chain = candidate, candidate_chain
    return values, policy, max_iter, False, (
        f"policy still improving after `max_iter` = {max_iter} evaluations; returning the "
        "last evaluated policy and its values"
    )


def min_steps_policy(kernel, n_states, n_actions, max_iter=1_000):
    """The policy minimising every expected hitting time, by policy iteration with unit costs.

    Starts from :func:`bfs_policy` over all pairs.

    Returns
    -------
    tuple
        ``(times, policy, n_iter, converged, message)`` of :func:`_iterate`.
    """
    start = bfs_policy(kernel, n_states, n_actions, np.ones(n_states * n_actions, dtype=bool))
    return _iterate(kernel, np.ones((n_states, n_actions)), start, max_iter)


def _uniform_exit(kernel):
    """Whether every pair moves to the goal with one same positive probability."""
    exits = kernel[:, -1]
    if sp.issparse(exits):
        exits = exits.toarray().ravel()
    return bool(exits[0] > 0 and np.all(exits == exits[0]))


def policy_iteration(ssp, policy=None, max_iter=1_000):
    r"""Best proper policy by Howard's policy iteration with exact evaluation.

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).
    policy : array_like of int, shape (S,), optional
        Proper starting policy. By default, the policy with the smallest
        expected hitting times, itself found by policy iteration with unit
        costs from a breadth-first-search policy (:func:`bfs_policy`); its
        evaluations are not counted in ``n_iter``. When every pair moves to
        the goal with one same probability ``g`` (a discounted model, footnote
        1), every policy has :math:`\mathbb{E}[\tau] = 1/g` and the
        breadth-first-search policy is that start.
    max_iter : int, default 1000
        Largest number of policy evaluations.

    Returns
    -------
    PolicyIterationResult
        ``values`` (S,), ``policy`` (S,), ``n_iter``, ``converged``, ``message``.
        When ``max_iter`` runs out, ``policy`` is the last evaluated policy and
        ``values`` its own values.

    Raises
    ------
    ParameterError
        If ``policy`` is improper, or ``max_iter`` is not an integer ``>= 1``.
    NoProperPolicyError
        If the model admits no proper policy.
    ConvergenceError
        If an evaluation fails (``reference.evaluation.policy_values``).

    See Also
    --------
    optimal_values : the LP, polished by this iteration.

    Notes
    -----
    Each step evaluates :math:`V^{\pi_k}` exactly (``policy_values``) and
    switches the action of a state only for a relative gain above
    :data:`IMPROVE_RTOL`:

    .. math::

        \pi_{k+1}(s) = \operatorname*{arg\,min}_a Q^{\pi_k}(s, a)
        \ \text{ if } \ \min_a Q^{\pi_k}(s,a) < (1 - \mathrm{IMPROVE\_RTOL})\,
        Q^{\pi_k}(s, \pi_k(s)), \qquad
        Q^{\pi}(s,a) = c(s,a) + \sum_{s' \in S} p(s'|s,a) V^{\pi}(s').

    Strict improvement keeps the policy proper even with zero costs (a new
    closed class would need zero costs and no strict gain inside it), and the
    result is checked on the support graph anyway: if rounding ever produced an
    improper candidate, iteration stops with ``converged=False``. The fixpoint
    is the best proper policy, the value of :func:`optimal_values`; with
    zero-cost cycles an improper policy may cost less.

    Examples
    --------
    >>> import reference as sspgm
    >>> result = sspgm.policy_iteration(sspgm.chain(n=3, p=0.5))
    >>> result.values, result.policy, result.converged
    (array([6., 4., 2.]), array([0, 0, 0]), True)
    """
    params = call_params(max_iter=max_iter)
    check_ssp(ssp)
    max_iter = check_int("max_iter", max_iter, 1)
    require_proper_model(ssp)
    S, A = ssp.n_states, ssp.n_actions
    kernel, costs = kernel_rows(ssp), np.asarray(ssp.costs, dtype=np.float64)
    if policy is None and _uniform_exit(kernel):
        policy = bfs_policy(kernel, S, A, np.ones(S * A, dtype=bool))
    elif policy is None:
        policy = min_steps_policy(kernel, S, A, max_iter)[1]
    else:
        policy = check_policy(policy, S, A)
        s = _improper_state(policy_chain(kernel, A, policy))
        if s is not None:
            raise ParameterError(
                "`policy` must be proper (reach the goal with probability 1 from every "
                f"state); from state {s} it does not."
            )
    values, policy, n_iter, converged, message = _iterate(kernel, costs, policy, max_iter)
    return PolicyIterationResult(
        values=values, policy=np.array(policy), n_iter=n_iter, converged=converged,
        message=message, params=params,
    )


def best_proper(kernel, costs, max_iter=1_000):
    """LP values polished by policy iteration (see :func:`optimal_values`)."""
    S, A = costs.shape
    pair_state = np.repeat(np.arange(S), A)
    own = sp.csr_array((np.ones(S * A), (np.arange(S * A), pair_state)), shape=(S * A, S))
    constraints = (own - sp.csr_array(kernel)[:, :S]).tocsr()
    lp = linprog(
        -np.ones(S), A_ub=constraints, b_ub=costs.ravel(), bounds=(None, None), method="highs"
    )
    if lp.status != 0:
        raise ConvergenceError(
            f"HiGHS failed on the SSP linear program: status {lp.status}, {lp.message}"
        )
    lp_values = np.asarray(lp.x, dtype=np.float64)
    gap = q_values(kernel, costs, lp_values) - lp_values[:, None]
    allowed = (gap <= LP_ACTION_RTOL * max(1.0, np.abs(lp_values).max())).ravel()
    start = bfs_policy(kernel, S, A, allowed)
    if (start < 0).any():
        start = bfs_policy(kernel, S, A, allowed | (start < 0)[pair_state])
    values, policy, n_iter, converged, message = _iterate(kernel, costs, start, max_iter)
    lp_gap = float(np.abs(values - lp_values).max() / max(1.0, values.max()))
    if not lp_gap <= LP_AGREEMENT_RTOL:
        raise ConvergenceError(
            f"the polished values differ from the LP's by {lp_gap:.3g} relative, above "
            f"`LP_AGREEMENT_RTOL` = {LP_AGREEMENT_RTOL:g}: HiGHS returned an inaccurate solution."
        )
    return OptimalValuesResult(
        values=values, policy=np.array(policy), which=BEST_PROPER, lp_gap=lp_gap,
        n_iter=n_iter, converged=converged, status=int(lp.status),
        message=f"LP: {lp.message}; polish: {message}",
    )


def optimal_values(ssp):
    r"""Best values over proper policies: linear program (HiGHS), polished by policy iteration.

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).

    Returns
    -------
    OptimalValuesResult
        ``values`` (S,), ``policy`` (S,), ``which``, ``lp_gap``, ``n_iter``,
        ``converged``, ``status``, ``message``.

    Raises
    ------
    NoProperPolicyError
        If the model admits no proper policy (built with ``require_proper=False``).
    ConvergenceError
        If HiGHS does not report an optimal solution, or its values disagree
        with the polished ones by more than :data:`LP_AGREEMENT_RTOL`.

    See Also
    --------
    policy_iteration : Howard's policy iteration.
    value_iteration : plain value iteration.
    policy_values : the exact values of one policy.

    Notes
    -----
    The linear program of docs/semantics.md, "Model", with a sparse constraint
    matrix of shape ``(S*A, S)``:

    .. math::

        \max_V \sum_{s \in S} V(s) \quad \text{s.t.} \quad
        V(s) - \sum_{s' \in S} p(s'|s,a) V(s') \le c(s,a) \quad \forall (s, a).

    Every feasible ``V`` satisfies :math:`V \le V^\pi` for every proper
    :math:`\pi`, and :math:`\hat V = \min_{\pi\ \mathrm{proper}} V^\pi` is
    feasible, so the solution is :math:`\hat V`: the LP is the proof of
    optimality among proper policies. It equals :math:`V^\star` when
    :math:`c_{\min} > 0`; with zero-cost cycles an improper policy may cost
    less (docs/semantics.md).

    HiGHS is accurate to about 1e-7 relative on a thousand states, so its
    answer is polished: a proper policy is built from its nearly Q-optimal
    actions (within :data:`LP_ACTION_RTOL`, by :func:`bfs_policy`), and exact
    policy iteration runs from it. The returned ``values`` are the exact
    values of the returned ``policy`` (accuracy of ``policy_values``), and
    when ``converged`` they satisfy the Bellman equation to a relative
    :data:`IMPROVE_RTOL` in every state:

    .. math::

        0 \le \hat V(s) - \min_a \Big\{ c(s,a) + \sum_{s'} p(s'|s,a) \hat V(s') \Big\}
        \le \mathrm{IMPROVE\_RTOL} \cdot \hat V(s) \quad \text{(up to evaluation rounding)}.

    Examples
    --------
    >>> import reference as sspgm
    >>> best = sspgm.optimal_values(sspgm.chain(n=3, p=0.5))
    >>> best.values, best.policy, best.converged
    (array([6., 4., 2.]), array([0, 0, 0]), True)
    """
    check_ssp(ssp)
    require_proper_model(ssp)
    return best_proper(kernel_rows(ssp), np.asarray(ssp.costs, dtype=np.float64))


@NUMPY_KERNELS.bind
def value_iteration(kernels, ssp, tol=1e-8, max_iter=100_000):
    r"""Plain SSP value iteration from :math:`V_0 = 0`: iterates the Bellman operator of eq. 1.

    Parameters
    ----------
    ssp : SSP
        The model; ``require_proper=False`` models (empirical kernels) are
        accepted, and divergence is then reported, not raised.
    tol : float, ``> 0``, default 1e-8
        Stop at the first ``k`` with :math:`\max_s |V_{k+1}(s) - V_k(s)| \le` ``tol``.
    max_iter : int, ``>= 1``, default 100000
        Largest number of sweeps.

    Returns
    -------
    ValueIterationResult
        ``values`` (S,) = :math:`V_k`, ``policy`` (S,), ``n_iter``,
        ``residual``, ``converged``, ``message``.

    Raises
    ------
    ParameterError
        If ``tol <= 0`` or ``max_iter`` is not an integer ``>= 1``.

    See Also
    --------
    optimal_values : exact, by LP.
    extended_value_iteration : the optimistic version over confidence sets.

    Notes
    -----
    .. math::

        V_{k+1}(s) = \min_{a} \Big\{ c(s,a) + \sum_{s' \in S} p(s'|s,a) V_k(s') \Big\}.

    From :math:`V_0 = 0` the iterates increase to the optimal value over all
    policies, which with zero-cost cycles may lie below the best proper value
    of :func:`optimal_values`. When the model has no proper policy the
    iterates can grow without bound: that failure is why EVI exists
    (docs/semantics.md, "Confidence sets and EVI").

    Examples
    --------
    On ``chain(n=3, p=0.5)`` the iterates approach :math:`V^* = (n - s) / p`
    geometrically (each sweep halves the gap); on ``zero_cost_loop()`` they
    stay at the free improper loop's value 0, below the best proper value 1:

    >>> import numpy as np
    >>> import reference as sspgm
    >>> result = sspgm.value_iteration(sspgm.chain(n=3, p=0.5))
    >>> np.round(result.values, 6), result.policy, result.converged
    (array([6., 4., 2.]), array([0, 0, 0]), True)
    >>> loop = sspgm.zero_cost_loop()
    >>> sspgm.value_iteration(loop).values, sspgm.optimal_values(loop).values
    (array([0.]), array([1.]))
    """
    check_ssp(ssp)
    tol = check_real("tol", tol, 0.0, low_open=True)
    max_iter = check_int("max_iter", max_iter, 1)
    S = ssp.n_states
    model = kernels.vi_model(ssp)
    costs = np.ascontiguousarray(ssp.costs, dtype=np.float64)
    v_ext = np.zeros(S + 1)
    new_values = np.empty(S)
    greedy = np.empty(S, dtype=np.intp)
    for n_iter in range(1, max_iter + 1):
        residual = kernels.vi_sweep(model, costs, v_ext, new_values, greedy)
        if residual <= tol or n_iter == max_iter:
            break
        v_ext[:S] = new_values
    converged = residual <= tol
    if converged:
        message = f"converged: residual {residual:.3g} <= tol {tol:g}"
    else:
        message = (
            f"not converged after `max_iter` = {max_iter} sweeps (residual {residual:.3g}); "
            "plain VI may diverge when the model admits no proper policy (Assumption 1, "
            "`ssp.proper_states()`)"
        )
    return ValueIterationResult(
        values=v_ext[:S].copy(), policy=greedy.astype(np.int64), n_iter=n_iter,
        residual=residual, converged=converged, message=message,
    )
