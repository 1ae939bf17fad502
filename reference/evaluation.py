"""Exact planning tools on a known SSP: policy values, optimal values, diameter.

Everything here is exact up to floating-point linear algebra: policy values by
sparse linear solves (sparse LU, or BiCGSTAB held to the same backward error on
large systems), optimal values by a linear program (HiGHS) and,
independently, by Howard's policy iteration; plain value iteration is here as
the baseline that fails on empirical kernels (docs/semantics.md, "Confidence sets
and EVI"). Which value each function returns with zero-cost cycles follows
docs/semantics.md, "Model", where it is more precise than the paper.

No function densifies a CSR kernel: they all work on ``ssp.kernel_csr()``.
"""

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import breadth_first_order, connected_components
from scipy.sparse.linalg import LinearOperator, bicgstab, spsolve

from ._checks import check_int, check_policy, check_real
from .errors import ConvergenceError, NoProperPolicyError, ParameterError, TooLargeError
from .kernels import NUMPY_KERNELS
from .results import Result

__all__ = [
    "OptimalValuesResult",
    "PolicyIterationResult",
    "DiameterResult",
    "RestrictedValuesResult",
    "ValueIterationResult",
    "policy_values",
    "is_proper",
    "hitting_times",
    "optimal_values",
    "policy_iteration",
    "diameter",
    "b_star",
    "restricted_optimal_values",
    "value_iteration",
]

BEST_PROPER = (
    "best proper policy: min over proper policies of V^pi, computed exactly; "
    "equals V* when c_min > 0"
)
"""The ``which`` string of :func:`optimal_values` and :func:`diameter`."""

Q_OPTIMAL_RTOL = 1e-9
"""Actions with ``Q(s, a) - V(s) <= Q_OPTIMAL_RTOL * max(1, max|V|)`` count as optimal."""

IMPROVE_RTOL = 1e-10
"""Policy iteration switches only for a gain above ``IMPROVE_RTOL * max(1, max|V|)``."""

THETA_RTOL = 1e-9
"""Relative slack of the test ``E[tau_pi(s)] <= theta D_s`` (:func:`restricted_optimal_values`)."""

ITERATIVE_MIN_STATES = 1_000
"""Transient systems with at least this many states are tried with BiCGSTAB before sparse LU."""

SOLVE_RTOL = 1e-12
"""Largest accepted normwise backward error of a policy evaluation (:func:`policy_values`)."""

KRYLOV_MAXITER = 200
"""BiCGSTAB iterations per run before the sparse LU takes over."""

REFINEMENT_STEPS = 2
"""BiCGSTAB runs on the residual after the first one (iterative refinement)."""


@dataclass(frozen=True, repr=False)
class OptimalValuesResult(Result):
    """Best values over proper policies from the linear program, with a policy attaining them.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        The LP solution :math:`\\hat V(s) = \\min_{\\pi\\ \\mathrm{proper}} V^\\pi(s)`.
    policy : ndarray of int64, shape (S,)
        A proper deterministic policy whose values are ``values``.
    which : str
        Which value ``values`` is (:data:`BEST_PROPER`).
    status : int
        HiGHS status as reported by :func:`scipy.optimize.linprog` (0 = optimal).
    converged : bool
        Whether HiGHS solved the LP: always True on a returned result (a
        failure raises :class:`ConvergenceError`).
    message : str
        HiGHS message.
    """

    values: np.ndarray
    policy: np.ndarray
    which: str
    status: int
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class PolicyIterationResult(Result):
    """Outcome of Howard's policy iteration.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        Exact values :math:`V^\\pi` of the returned policy.
    policy : ndarray of int64, shape (S,)
        The last (proper) policy.
    n_iter : int
        Number of policy evaluations performed.
    converged : bool
        Whether no action improves on ``policy`` by more than the tolerance.
    message : str
        What happened, in words.
    """

    values: np.ndarray
    policy: np.ndarray
    n_iter: int
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class DiameterResult(Result):
    """Minimal expected hitting times of the goal (eq. 2 of the paper).

    Attributes
    ----------
    D_s : ndarray of float64, shape (S,)
        :math:`D_s = \\min_\\pi \\mathbb{E}[\\tau_\\pi(s)]`.
    D : float
        The SSP-diameter :math:`D = \\max_s D_s`.
    policy : ndarray of int64, shape (S,)
        A proper policy attaining every ``D_s`` at once.
    converged : bool
        Whether HiGHS solved the LP (always True on a returned result).
    message : str
        HiGHS message.
    """

    D_s: np.ndarray
    D: float
    policy: np.ndarray
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class RestrictedValuesResult(Result):
    """The restricted optimal values :math:`V^\\star_\\theta` (Def. 4 and 5), by enumeration.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        :math:`V^\\star_\\theta(s) = \\min_{\\pi \\in \\Pi_\\theta} V^\\pi(s)`, a minimum
        taken separately for each state.
    policies : ndarray of int64, shape (S, S)
        Row ``s`` is a policy of :math:`\\Pi_\\theta` attaining ``values[s]``
        (the first one in enumeration order).
    D_s : ndarray of float64, shape (S,)
        Minimal expected hitting times, from the same enumeration.
    theta : float
        The restriction parameter.
    n_policies : int
        Number of deterministic policies enumerated, ``A**S``.
    n_feasible : int
        Number of them in :math:`\\Pi_\\theta`.
    converged : bool
        Always True: the enumeration is exact.
    message : str
        What was enumerated, in words.
    """

    values: np.ndarray
    policies: np.ndarray
    D_s: np.ndarray
    theta: float
    n_policies: int
    n_feasible: int
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class ValueIterationResult(Result):
    """Outcome of plain SSP value iteration.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        The iterate :math:`V_k` at which the stopping test held (or the last
        one before ``max_iter`` sweeps).
    policy : ndarray of int64, shape (S,)
        Greedy policy with respect to ``values`` (the argmin that built
        :math:`V_{k+1}`), ties to the lowest action index.
    n_iter : int
        Number of sweeps performed (:math:`k + 1`).
    residual : float
        :math:`\\max_s |V_{k+1}(s) - V_k(s)|`.
    converged : bool
        Whether ``residual <= tol``.
    message : str
        What happened, in words.
    """

    values: np.ndarray
    policy: np.ndarray
    n_iter: int
    residual: float
    converged: bool
    message: str


def _check_ssp(ssp):
    if not (hasattr(ssp, "kernel_csr") and hasattr(ssp, "costs")):
        raise ParameterError(
            f"`ssp` must be an SSP model (with `kernel_csr()` and `costs`); "
            f"got {type(ssp).__name__}."
        )


def _require_proper_model(ssp):
    ok = ssp.proper_states()
    if not ok.all():
        s = int(np.flatnonzero(~ok)[0])
        raise NoProperPolicyError(
            f"`ssp` must admit a proper policy (Assumption 1); from state {s} no policy "
            "reaches the goal with probability 1 (the model was built with "
            "require_proper=False)."
        )


def _policy_kernel(kernel, n_actions, policy):
    """Rows of ``kernel`` (CSR, ``(S*A, S+1)``) chosen by ``policy``: CSR ``(S, S+1)``."""
    return kernel[np.arange(policy.size) * n_actions + policy]


def _checked_chain(ssp, policy):
    """Check ``ssp`` and ``policy``; return the chain of the policy (CSR ``(S, S+1)``) and it."""
    _check_ssp(ssp)
    policy = check_policy(policy, ssp.n_states, ssp.n_actions)
    return _policy_kernel(ssp.kernel_csr(), ssp.n_actions, policy), policy


def _q_values(kernel, costs, values):
    """Q-values :math:`c(s,a) + \\sum_{s' \\in S} p(s'|s,a) V(s')`, shape ``(S, A)``."""
    return costs + (kernel @ np.append(values, 0.0)).reshape(costs.shape)


def _reaching(tails, heads, targets):
    """Mask of the nodes with a path (possibly empty) into ``targets``.

    ``tails -> heads`` are the edges of a graph on ``targets.size`` nodes.
    """
    n = targets.size
    if not targets.any():
        return np.zeros(n, dtype=bool)
    sources = np.flatnonzero(targets)
    rows = np.concatenate([heads, np.full(sources.size, n)])
    cols = np.concatenate([tails, sources])
    reverse = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(n + 1, n + 1))
    order = breadth_first_order(reverse, n, directed=True, return_predecessors=False)
    mask = np.zeros(n + 1, dtype=bool)
    mask[order] = True
    return mask[:n]


def _closed_classes(chain):
    """Closed classes of the Markov chain ``chain`` (CSR ``(S, S+1)``) among non-goal states.

    Returns
    -------
    labels : ndarray of int, shape (S,)
        Strongly connected component of each state.
    closed : ndarray of bool, shape (S,)
        Whether the state lies in a component with no edge leaving it (the
        goal column counts as leaving).
    tails, heads : ndarray of int
        Edges between non-goal states.
    """
    S = chain.shape[0]
    edges = chain.tocoo()
    inner = edges.col < S
    tails, heads = edges.row[inner], edges.col[inner]
    graph = sp.csr_array((np.ones(tails.size), (tails, heads)), shape=(S, S))
    n_comp, labels = connected_components(graph, directed=True, connection="strong")
    exit_from = np.concatenate([edges.row[~inner], tails[labels[tails] != labels[heads]]])
    has_exit = np.zeros(n_comp, dtype=bool)
    has_exit[labels[exit_from]] = True
    return labels, ~has_exit[labels], tails, heads


def _transient_system(chain, states):
    """The matrix :math:`I - Q_{TT}` of the states ``T = states``: CSR, shape ``(|T|, |T|)``."""
    Q = chain[states][:, states]
    return (sp.identity(states.size, format="csr") - Q).tocsr()


def _backward_error(residual, norm, rhs, values):
    """Normwise backward error of ``values`` as a solution of :math:`M V = c`.

    Parameters
    ----------
    residual : ndarray of float64, shape (n,)
        :math:`c - M \\hat V`.
    norm : float
        :math:`\\|M\\|_\\infty`, the largest absolute row sum of :math:`M`.
    rhs : ndarray of float64, shape (n,)
        The right-hand side :math:`c`.
    values : ndarray of float64, shape (n,)
        The candidate solution :math:`\\hat V`.

    Returns
    -------
    float
        The smallest relative perturbation of :math:`M` and :math:`c` of which
        :math:`\\hat V` is the exact solution (Rigal and Gaches); NaN when
        ``values`` is not finite:

        .. math::

            \\eta = \\frac{\\|c - M \\hat V\\|_\\infty}
                       {\\|c\\|_\\infty + \\|M\\|_\\infty \\|\\hat V\\|_\\infty}.
    """
    largest = np.abs(residual).max()
    if largest == 0.0:
        return 0.0
    return float(largest / (np.abs(rhs).max() + norm * np.abs(values).max()))


def _bicgstab_solve(system, norm, rhs):
    """Solve ``system @ V = rhs`` by Jacobi-preconditioned BiCGSTAB with iterative refinement.

    Parameters
    ----------
    system : scipy.sparse CSR, shape (n, n)
        The matrix :math:`M = I - Q_{TT}`.
    norm : float
        :math:`\\|M\\|_\\infty`.
    rhs : ndarray of float64, shape (n,)
        The right-hand side :math:`c`.

    Returns
    -------
    ndarray of float64, shape (n,), or None
        A solution whose backward error (:func:`_backward_error`) is at most
        :data:`SOLVE_RTOL`; ``None`` when a run stops short of
        :data:`SOLVE_RTOL` (relative 2-norm residual) within
        :data:`KRYLOV_MAXITER` iterations, breaks down, or when
        :data:`REFINEMENT_STEPS` runs on the residual do not reach the target;
        also ``None`` when a diagonal entry :math:`1 - Q(s, s)` rounds to 0,
        so that the Jacobi preconditioner does not exist.

    Notes
    -----
    Each run solves for the correction of the current iterate from the
    normalised residual (BiCGSTAB's breakdown tests are absolute):

    .. math::

        r_k = c - M V_k, \\qquad M d_k = r_k / \\|r_k\\|_2, \\qquad
        V_{k+1} = V_k + \\|r_k\\|_2\\, d_k, \\qquad V_0 = 0.
    """
    diagonal = system.diagonal()
    if not np.all(diagonal > 0.0):
        return None
    jacobi = LinearOperator(system.shape, matvec=lambda r: r / diagonal, dtype=np.float64)
    values, residual = np.zeros_like(rhs), rhs
    for _ in range(1 + REFINEMENT_STEPS):
        scale = np.linalg.norm(residual)
        if scale == 0.0:
            return values
        step, info = bicgstab(
            system, residual / scale, rtol=SOLVE_RTOL, atol=0.0, maxiter=KRYLOV_MAXITER, M=jacobi
        )
        if info != 0:
            return None
        values = values + scale * step
        residual = rhs - system @ values
        if _backward_error(residual, norm, rhs, values) <= SOLVE_RTOL:
            return values
    return None


def _transient_solve(chain, costs, states):
    """Solve :math:`(I - Q_{TT})V = c_T` on ``T = states``; see :func:`policy_values`, Notes.

    Parameters
    ----------
    chain : scipy.sparse CSR, shape (S, S+1)
        Transition matrix of the policy.
    costs : ndarray of float64, shape (S,)
        Cost of each state under the policy.
    states : ndarray of int, shape (n,)
        The transient states ``T``.

    Returns
    -------
    ndarray of float64, shape (n,)

    Raises
    ------
    ConvergenceError
        If the sparse LU solution misses the backward-error target
        :data:`SOLVE_RTOL` (:math:`I - Q_{TT}` singular in double precision).
    """
    if states.size == 0:
        return np.zeros(0)
    system = _transient_system(chain, states)
    norm = float(abs(system).sum(axis=1).max())
    rhs = costs[states]
    if states.size >= ITERATIVE_MIN_STATES:
        values = _bicgstab_solve(system, norm, rhs)
        if values is not None:
            return values
    values = np.atleast_1d(spsolve(system.tocsc(), rhs))
    error = _backward_error(rhs - system @ values, norm, rhs, values)
    if not error <= SOLVE_RTOL:
        raise ConvergenceError(
            f"the sparse LU solution of (I - Q)V = c on {states.size} transient states has "
            f"backward error {error:.3g}, above `SOLVE_RTOL` = {SOLVE_RTOL:g}: I - Q is "
            "singular in double precision (the chain leaves these states with a probability "
            "lost to rounding)."
        )
    return values


def _chain_values(chain, costs, solve=_transient_solve):
    """Exact values of a Markov chain with costs, ``+inf`` where they diverge.

    Parameters
    ----------
    chain : scipy.sparse CSR, shape (S, S+1)
        Transition matrix of the policy (the last column is the goal).
    costs : ndarray of float64, shape (S,)
        Cost of each state under the policy, ``>= 0``.
    solve : callable
        ``solve(chain, costs, states) -> ndarray`` of shape ``(len(states),)``,
        the solution of :math:`(I - Q)V = c` restricted to ``states``.

    Returns
    -------
    ndarray of float64, shape (S,)
    """
    S = chain.shape[0]
    labels, closed, tails, heads = _closed_classes(chain)
    costly_class = np.bincount(labels, weights=(costs > 0).astype(float)) > 0
    infinite = _reaching(tails, heads, closed & costly_class[labels])
    transient = np.flatnonzero(~infinite & ~closed)
    values = np.zeros(S)
    values[infinite] = np.inf
    values[transient] = solve(chain, costs, transient)
    return values


def policy_values(ssp, policy):
    """Exact values :math:`V^\\pi` of a deterministic policy, ``+inf`` where infinite.

    Parameters
    ----------
    ssp : SSP
        The model (dense or CSR kernel; a CSR kernel is never densified).
    policy : array_like of int, shape (S,)
        Action of each non-goal state.

    Returns
    -------
    ndarray of float64, shape (S,)
        :math:`V^\\pi(s) = \\mathbb{E}[\\sum_{t < \\tau_\\pi(s)} c(s_t, \\pi(s_t))]`.

    Raises
    ------
    ShapeError, ParameterError
        If ``policy`` has the wrong shape or an action out of range.
    ConvergenceError
        If the linear system below is singular in double precision (the
        policy leaves the transient states with a probability lost to
        rounding), detected from the backward error of the sparse LU solution.

    Notes
    -----
    docs/semantics.md, "Model", which overrides Sec. 2 of the paper here: the paper
    says an improper policy has an unbounded value somewhere, which fails when
    the only closed classes it reaches cost nothing; those states get finite
    values. The finite/infinite split is decided on the support graph of
    :math:`P_\\pi`, never from floating point. Let the closed classes
    be the strongly connected components of non-goal states with no edge
    leaving them. A state that reaches, with positive probability, a closed
    class holding a positive cost has :math:`V^\\pi = +\\infty`; a state in a
    zero-cost closed class has :math:`V^\\pi = 0`; on the remaining (transient)
    states :math:`T` the values solve the sparse system

    .. math::

        (I - Q_{TT})\\, V_T = c_{\\pi,T}, \\qquad Q = P_\\pi \\text{ restricted to } T,

    where mass leaving ``T`` goes to the goal or to zero-cost classes (value 0).
    :math:`I - Q_{TT}` is non-singular because every transient state leaves
    ``T`` with positive probability within ``|T|`` steps.

    The system is solved by sparse LU (:func:`scipy.sparse.linalg.spsolve`)
    when :math:`|T| <` :data:`ITERATIVE_MIN_STATES`. From that size on, where
    LU can fill in badly (random sparse graphs: a minute at
    :math:`|T| = 10^4`), Jacobi-preconditioned BiCGSTAB is tried first, with
    up to :data:`REFINEMENT_STEPS` rounds of iterative refinement, and its
    answer is kept only if its normwise backward error is at most
    :data:`SOLVE_RTOL`:

    .. math::

        \\frac{\\|c_{\\pi,T} - (I - Q_{TT}) \\hat V_T\\|_\\infty}
             {\\|c_{\\pi,T}\\|_\\infty + \\|I - Q_{TT}\\|_\\infty
              \\|\\hat V_T\\|_\\infty} \\le \\mathrm{SOLVE\\_RTOL},

    the guarantee a backward-stable direct solve gives. Otherwise (slowly
    mixing chains such as long random walks, on which LU is cheap), sparse LU
    takes over once a run needs more than :data:`KRYLOV_MAXITER` iterations,
    breaks down, or the refinement falls short. The LU
    solution is held to the same target. Either way the error obeys
    :math:`|\\hat V_T - V_T| \\le \\|r\\|_\\infty\\, \\mathbb{E}[\\tau_T]`,
    with :math:`r` the residual and :math:`\\tau_T` the time spent in ``T``,
    since :math:`(I - Q_{TT})^{-1} \\ge 0` maps the ones to
    :math:`\\mathbb{E}[\\tau_T]`.
    """
    chain, policy = _checked_chain(ssp, policy)
    return _chain_values(chain, ssp.costs[np.arange(ssp.n_states), policy])


def is_proper(ssp, policy):
    """Whether ``policy`` reaches the goal with probability 1 from every state (Def. 2).

    Parameters
    ----------
    ssp : SSP
        The model.
    policy : array_like of int, shape (S,)
        Action of each non-goal state.

    Returns
    -------
    bool
        True when :math:`P_\\pi` has no closed class among non-goal states,
        i.e. :math:`\\Pr(\\tau_\\pi(s) < \\infty) = 1` for every ``s``; decided on the
        support graph.
    """
    return not _closed_classes(_checked_chain(ssp, policy)[0])[1].any()


def hitting_times(ssp, policy):
    """Expected goal-hitting times :math:`\\mathbb{E}[\\tau_\\pi(s)]`, ``+inf`` if not a.s. finite.

    Parameters
    ----------
    ssp : SSP
        The model.
    policy : array_like of int, shape (S,)
        Action of each non-goal state.

    Returns
    -------
    ndarray of float64, shape (S,)
        The values of ``policy`` with unit costs (docs/semantics.md, "Model"):

        .. math::

            \\mathbb{E}[\\tau_\\pi(s)] = V^\\pi_{c \\equiv 1}(s).
    """
    return _chain_values(_checked_chain(ssp, policy)[0], np.ones(ssp.n_states))


def _bfs_policy(kernel, n_states, n_actions, allowed):
    """Proper policy by backward breadth-first search from the goal over ``allowed`` pairs.

    A pair qualifies once its support meets the states already settled (the
    goal at the start); each round settles every unsettled state with a
    qualifying allowed pair, with the lowest such action. Every settled state
    then moves strictly closer to the goal with positive probability, so the
    policy is proper when all states get settled.

    Returns
    -------
    ndarray of int64, shape (S,)
        The policy, ``-1`` on the states never settled.
    """
    S, A = n_states, n_actions
    support = sp.csr_array(
        (np.ones(kernel.nnz), kernel.indices, kernel.indptr), shape=kernel.shape
    )
    policy = np.full(S, -1, dtype=np.int64)
    settled = np.zeros(S + 1, dtype=bool)
    settled[S] = True
    while True:
        hits = (support @ settled.astype(np.float64)) > 0
        ready = (hits & allowed).reshape(S, A) & ~settled[:S, None]
        new = ready.any(axis=1)
        if not new.any():
            return policy
        policy[new] = ready[new].argmax(axis=1)
        settled[:S] |= new


def _best_proper(kernel, costs):
    """LP values and a proper policy attaining them (see :func:`optimal_values`)."""
    S, A = costs.shape
    pair_state = np.repeat(np.arange(S), A)
    own = sp.csr_array((np.ones(S * A), (np.arange(S * A), pair_state)), shape=(S * A, S))
    constraints = (own - kernel[:, :S]).tocsr()
    lp = linprog(
        -np.ones(S), A_ub=constraints, b_ub=costs.ravel(), bounds=(None, None), method="highs"
    )
    if lp.status != 0:
        raise ConvergenceError(
            f"HiGHS failed on the SSP linear program: status {lp.status}, {lp.message}"
        )
    values = np.asarray(lp.x, dtype=np.float64)
    gap = _q_values(kernel, costs, values) - values[:, None]
    allowed = (gap <= Q_OPTIMAL_RTOL * max(1.0, np.abs(values).max())).ravel()
    policy = _bfs_policy(kernel, S, A, allowed)
    if (policy < 0).any():
        s = int(np.flatnonzero(policy < 0)[0])
        raise ConvergenceError(
            f"the LP values admit no proper greedy policy: from state {s} no Q-optimal "
            f"action (relative tolerance {Q_OPTIMAL_RTOL:g}) leads towards the goal; "
            "HiGHS returned an inaccurate solution."
        )
    return OptimalValuesResult(
        values=values, policy=policy, which=BEST_PROPER, status=int(lp.status),
        converged=True, message=str(lp.message),
    )


def optimal_values(ssp):
    """Best values over proper policies by linear programming (HiGHS), with a policy.

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).

    Returns
    -------
    OptimalValuesResult
        ``values`` (S,), ``policy`` (S,), ``which``, ``status``, ``message``.

    Raises
    ------
    NoProperPolicyError
        If the model admits no proper policy (built with ``require_proper=False``).
    ConvergenceError
        If HiGHS does not report an optimal solution.

    Notes
    -----
    The linear program of docs/semantics.md, "Model", with a sparse constraint
    matrix of shape ``(S*A, S)`` built from ``ssp.kernel_csr()``:

    .. math::

        \\max_V \\sum_{s \\in S} V(s) \\quad \\text{s.t.} \\quad
        V(s) - \\sum_{s' \\in S} p(s'|s,a) V(s') \\le c(s,a) \\quad \\forall (s, a).

    Every feasible ``V`` satisfies :math:`V \\le V^\\pi` for every proper
    :math:`\\pi`, and :math:`\\hat V = \\min_{\\pi\\ \\mathrm{proper}} V^\\pi` is
    feasible, so the solution is :math:`\\hat V`. It equals :math:`V^\\star`
    when :math:`c_{\\min} > 0`; with zero-cost cycles an improper policy may
    cost less (docs/semantics.md). The policy is built from the Q-optimal actions
    (:math:`Q(s,a) - \\hat V(s) \\le` :data:`Q_OPTIMAL_RTOL` :math:`\\cdot
    \\max(1, \\|\\hat V\\|_\\infty)`) by backward breadth-first search from the
    goal: an action qualifies once its support meets the states already
    settled, ties to the lowest action index. The result is proper and
    satisfies :math:`T_\\pi \\hat V = \\hat V`, hence :math:`V^\\pi = \\hat V`.
    """
    _check_ssp(ssp)
    _require_proper_model(ssp)
    return _best_proper(ssp.kernel_csr(), np.asarray(ssp.costs, dtype=np.float64))


def _policy_iteration(ssp, policy, max_iter, solve):
    """Howard's policy iteration; ``solve`` is the transient solver of :func:`_chain_values`."""
    _check_ssp(ssp)
    max_iter = check_int("max_iter", max_iter, 1)
    _require_proper_model(ssp)
    S, A = ssp.n_states, ssp.n_actions
    kernel, costs = ssp.kernel_csr(), ssp.costs
    states = np.arange(S)
    if policy is None:
        policy = _bfs_policy(kernel, S, A, np.ones(S * A, dtype=bool))
    else:
        chain, policy = _checked_chain(ssp, policy)
        closed = _closed_classes(chain)[1]
        if closed.any():
            raise ParameterError(
                "`policy` must be proper (reach the goal with probability 1 from every "
                f"state); from state {int(np.flatnonzero(closed)[0])} it does not."
            )
    for iteration in range(1, max_iter + 1):
        values = _chain_values(_policy_kernel(kernel, A, policy), costs[states, policy], solve)
        q = _q_values(kernel, costs, values)
        best = q.argmin(axis=1)
        tol = IMPROVE_RTOL * max(1.0, np.abs(values).max())
        switch = q[states, best] < q[states, policy] - tol
        if not switch.any():
            return PolicyIterationResult(
                values=values, policy=policy, n_iter=iteration, converged=True,
                message=f"no action improves by more than {tol:.3g}: policy is optimal "
                "among proper policies",
            )
        candidate = np.where(switch, best, policy)
        if _closed_classes(_policy_kernel(kernel, A, candidate))[1].any():
            return PolicyIterationResult(
                values=values, policy=policy, n_iter=iteration, converged=False,
                message="the improvement step would leave the proper policies (rounding "
                "in a zero-cost cycle); returning the last proper policy",
            )
        policy = candidate
    return PolicyIterationResult(
        values=values, policy=policy, n_iter=max_iter, converged=False,
        message=f"policy still improving after `max_iter` = {max_iter} evaluations",
    )


def policy_iteration(ssp, policy=None, max_iter=1_000):
    """Best proper policy by Howard's policy iteration with exact evaluation.

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).
    policy : array_like of int, shape (S,), optional
        Proper starting policy. By default one is built from the support graph
        (backward breadth-first search from the goal, lowest action first).
    max_iter : int, default 1000
        Largest number of policy evaluations.

    Returns
    -------
    PolicyIterationResult
        ``values`` (S,), ``policy`` (S,), ``n_iter``, ``converged``, ``message``.

    Raises
    ------
    ParameterError
        If ``policy`` is improper, or ``max_iter`` is not an integer ``>= 1``.
    NoProperPolicyError
        If the model admits no proper policy.
    ConvergenceError
        If an evaluation meets a system singular in double precision
        (:func:`policy_values`).

    Notes
    -----
    Each step evaluates :math:`V^{\\pi_k}` exactly (:func:`policy_values`) and
    switches the action of a state only when the gain exceeds
    :data:`IMPROVE_RTOL` :math:`\\cdot \\max(1, \\|V^{\\pi_k}\\|_\\infty)`:

    .. math::

        \\pi_{k+1}(s) = \\operatorname*{arg\\,min}_a Q^{\\pi_k}(s, a)
        \\ \\text{ if } \\ \\min_a Q^{\\pi_k}(s,a) < Q^{\\pi_k}(s, \\pi_k(s)) - \\mathrm{tol},
        \\qquad Q^{\\pi}(s,a) = c(s,a) + \\sum_{s' \\in S} p(s'|s,a) V^{\\pi}(s').

    Strict improvement keeps the policy proper even with zero costs (a new
    closed class would need zero costs and no strict gain inside it), and the
    result is checked on the support graph anyway: if rounding ever produced an
    improper candidate, iteration stops with ``converged=False``. The fixpoint
    is the best proper policy, the same value as :func:`optimal_values`; with
    zero-cost cycles an improper policy may cost less.
    """
    return _policy_iteration(ssp, policy, max_iter, _transient_solve)


def diameter(ssp):
    """Minimal expected hitting times :math:`D_s` and the SSP-diameter :math:`D` (eq. 2).

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).

    Returns
    -------
    DiameterResult
        ``D_s`` (S,), ``D`` and a policy attaining ``D_s``.

    Notes
    -----
    The optimal values with unit costs, from the linear program of
    :func:`optimal_values` (with :math:`c \\equiv 1 > 0` the best proper value
    is the optimal value):

    .. math::

        D_s = \\min_\\pi \\mathbb{E}[\\tau_\\pi(s)], \\qquad D = \\max_{s} D_s.
    """
    _check_ssp(ssp)
    _require_proper_model(ssp)
    lp = _best_proper(ssp.kernel_csr(), np.ones((ssp.n_states, ssp.n_actions)))
    return DiameterResult(D_s=lp.values, D=float(lp.values.max()), policy=lp.policy,
                          converged=lp.converged, message=lp.message)


def b_star(ssp):
    """:math:`B_\\star = \\max_s \\min_{\\pi\\ \\mathrm{proper}} V^\\pi(s)` (Sec. 2).

    Parameters
    ----------
    ssp : SSP
        The model; it must admit a proper policy (Assumption 1).

    Returns
    -------
    float
        The largest best-proper value, with :math:`\\hat V` from :func:`optimal_values`:

        .. math::

            B_\\star = \\max_{s \\in S} \\hat V(s).
    """
    return float(optimal_values(ssp).values.max())


def restricted_optimal_values(ssp, theta, max_policies=100_000):
    """:math:`V^\\star_\\theta` (Def. 4 and 5) by enumerating the deterministic policies.

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
        ``values`` (S,), ``policies`` (S, S), ``D_s`` (S,), ``theta``,
        ``n_policies``, ``n_feasible``.

    Raises
    ------
    TooLargeError
        If ``A**S > max_policies``.
    ParameterError
        If ``theta < 1`` or ``max_policies`` is not an integer ``>= 1``.

    Notes
    -----
    docs/semantics.md, "Model": exact only by enumeration. With
    :math:`D_s = \\min_\\pi \\mathbb{E}[\\tau_\\pi(s)]` taken over the same
    enumeration,

    .. math::

        \\Pi_\\theta = \\{\\pi : \\mathbb{E}[\\tau_\\pi(s)] \\le \\theta D_s\\ \\forall s\\},
        \\qquad V^\\star_\\theta(s) = \\min_{\\pi \\in \\Pi_\\theta} V^\\pi(s),

    a minimum taken separately for each state (different states may need
    different policies). Membership is tested with a relative slack
    :data:`THETA_RTOL` so that policies on the boundary are kept. Policies are
    enumerated in lexicographic order, state 0 most significant.
    """
    _check_ssp(ssp)
    theta = check_real("theta", theta, 1.0, allow_inf=True)
    max_policies = check_int("max_policies", max_policies, 1)
    S, A = ssp.n_states, ssp.n_actions
    n_policies = A**S
    if n_policies > max_policies:
        raise TooLargeError(
            f"`restricted_optimal_values` enumerates A**S = {A}**{S} = {n_policies} "
            f"policies, above `max_policies` = {max_policies}."
        )
    kernel, costs, states = ssp.kernel_csr(), ssp.costs, np.arange(S)
    all_policies = itertools.product(range(A), repeat=S)
    times = np.array(
        [_chain_values(_policy_kernel(kernel, A, np.array(p)), np.ones(S)) for p in all_policies]
    )
    D_s = times.min(axis=0)
    feasible = np.all(times <= theta * D_s * (1.0 + THETA_RTOL), axis=1)
    values = np.full((n_policies, S), np.inf)
    for i in np.flatnonzero(feasible):
        policy = np.array(np.unravel_index(i, (A,) * S), dtype=np.int64)
        values[i] = _chain_values(_policy_kernel(kernel, A, policy), costs[states, policy])
    best = values.argmin(axis=0)
    policies = np.array(np.unravel_index(best, (A,) * S), dtype=np.int64).T
    return RestrictedValuesResult(
        values=values[best, states], policies=policies, D_s=D_s, theta=theta,
        n_policies=n_policies, n_feasible=int(feasible.sum()), converged=True,
        message=f"enumerated {n_policies} policies, {int(feasible.sum())} of them in Pi_theta",
    )


@NUMPY_KERNELS.bind
def value_iteration(kernels, ssp, tol=1e-8, max_iter=100_000):
    """Plain SSP value iteration from :math:`V_0 = 0`: iterates the Bellman operator of eq. 1.

    Parameters
    ----------
    ssp : SSP
        The model; ``require_proper=False`` models (empirical kernels) are
        accepted, and divergence is then reported, not raised.
    tol : float, ``> 0``, default 1e-8
        Stop at the first ``k`` with :math:`\\max_s |V_{k+1}(s) - V_k(s)| \\le` ``tol``.
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

    Notes
    -----
    .. math::

        V_{k+1}(s) = \\min_{a} \\Big\\{ c(s,a) + \\sum_{s' \\in S} p(s'|s,a) V_k(s') \\Big\\}.

    From :math:`V_0 = 0` the iterates increase to the optimal value over all
    policies, which with zero-cost cycles may lie below the best proper value
    of :func:`optimal_values`. When the model has no proper policy the
    iterates can grow without bound: that failure is why EVI exists
    (docs/semantics.md, "Confidence sets and EVI").
    """
    _check_ssp(ssp)
    tol = check_real("tol", tol, 0.0, low_open=True)
    max_iter = check_int("max_iter", max_iter, 1)
    S = ssp.n_states
    model = kernels.vi_model(ssp)
    costs = np.ascontiguousarray(ssp.costs, dtype=np.float64)
    v_ext = np.zeros(S + 1)
    new_values = np.empty(S)
    greedy = np.empty(S, dtype=np.intp)
    for iteration in range(1, max_iter + 1):
        kernels.vi_sweep(model, costs, v_ext, new_values, greedy)
        residual = float(np.abs(new_values - v_ext[:S]).max())
        if residual <= tol or iteration == max_iter:
            break
        v_ext[:S] = new_values
    converged = residual <= tol
    if converged:
        message = f"converged: residual {residual:.3g} <= tol {tol:g}"
    else:
        message = f"not converged after `max_iter` = {max_iter} sweeps (residual {residual:.3g})"
        if not ssp.proper_states().all():
            message += (
                "; the model admits no proper policy (Assumption 1 fails), so plain VI "
                "may diverge"
            )
    return ValueIterationResult(
        values=v_ext[:S].copy(), policy=greedy.astype(np.int64), n_iter=iteration,
        residual=residual, converged=converged, message=message,
    )
