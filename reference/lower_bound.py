r"""How many calls any correct method needs on a known instance: a change-of-measure lower bound.

A method that calls the generative model, stops, and answers is
``(eps, delta)``-correct when on every instance its answer is right with
probability at least ``1 - delta``. For an alternative kernel ``P'`` whose
right answers are disjoint from those of the true ``P``, the transportation
inequality of the change of measure gives

.. math::

    \sum_{s, a} \mathbb E_P[N(s, a)]\, \mathrm{KL}\big(p(\cdot|s,a), p'(\cdot|s,a)\big)
    \ge \mathrm{kl}(\delta, 1 - \delta),

so every finite set of such alternatives bounds ``E[N]`` by a linear program.
:func:`instance_lower_bound` builds the alternatives (each checked with the
exact solvers before it enters the program), solves the program with HiGHS and
returns a bound certified by a feasible point of its dual. The derivation is in
docs/lower-bound.md.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import breadth_first_order

from ._checks import check_real
from .certified import TARGETS
from .errors import ParameterError, TooLargeError
from .evaluation import check_ssp, kernel_rows
from .model import SSP
from .optimal import bfs_policy, optimal_values, q_values
from .results import Record, Result, call_params

__all__ = ["MOVES", "Alternative", "LowerBoundResult", "instance_lower_bound",
           "kl_bernoulli"]

MOVES = ("goal", "away", "high", "high-next", "low-next", "tilt")
"""Families of alternatives (docs/lower-bound.md, "Alternatives")."""

MAX_STATES = 200
"""Largest ``S`` accepted (the alternatives are dense models, each solved exactly)."""

BISECTIONS = 40
"""Bisection steps on the size of each move."""

MIX_MAX = 1.0 - 1e-9
"""Largest mixture weight of a move: KL at most about ``log(1 / (1 - MIX_MAX))``."""

TILT_MAX = 20.0
"""Largest tilt, in units of ``1 / max V*``: a tilted row keeps at least about ``e^-20`` of
its mass on each next state it had (as a mixture keeps ``1 - MIX_MAX``)."""

SEARCH_MARGIN = 1e-6
"""The search aims at a change ``eps (1 + SEARCH_MARGIN)``; the exact check needs ``eps``
plus :data:`CHECK_TOL` ``* max(1, max V*)``."""

CHECK_TOL = 1e-9

REFINE_ROUNDS = 20
"""Most rounds of occupancy-weighted tilts, each aimed at the last program's calls."""

REFINE_RTOL = 0.01
"""The rounds stop once one raises the program's value by less than this fraction."""


@dataclass(frozen=True, repr=False)
class Alternative(Record):
    r"""A model whose right answers are disjoint from the true model's, checked exactly.

    Attributes
    ----------
    P : ndarray of float64, shape (S, A, S+1)
        The alternative's kernel ``P'`` (same costs).
    kl : ndarray of float64, shape (S, A)
        :math:`\mathrm{KL}(p(\cdot|s,a), p'(\cdot|s,a))` of every pair (0 where unchanged).
    move : str
        Its family (:data:`MOVES`) and where it applies.
    size : float
        The mixture weight (or tilt) found by bisection.
    values : ndarray of float64, shape (S,)
        ``V*`` of the alternative (exact solver).
    converged : bool
        Whether the exact solver converged on the alternative: always True on
        a returned alternative (the others are dropped).
    message : str
        How its answer differs from the true one.
    """

    P: np.ndarray
    kl: np.ndarray
    move: str
    size: float
    values: np.ndarray
    converged: bool
    message: str


@dataclass(frozen=True, repr=False)
class LowerBoundResult(Result):
    r"""Output of :func:`instance_lower_bound`.

    Attributes
    ----------
    bound : float
        A lower bound on the expected total calls of any ``(eps, delta)``-correct
        method on the instance: ``kl(delta, 1 - delta) * sum(weights)``.
    calls : ndarray of float64, shape (S, A)
        The linear program's expected calls per pair (``bound`` up to HiGHS's
        accuracy when summed).
    weights : ndarray of float64, shape (k,)
        A feasible point of the dual program, one weight per alternative:
        :math:`\sum_k w_k \mathrm{KL}_k(s, a) \le 1` for every pair, so
        ``sum(weights)`` bounds the program's value from below.
    alternatives : tuple of Alternative
        The alternatives of the program (all checked).
    kl_delta : float
        :math:`\mathrm{kl}(\delta, 1 - \delta)`.
    values : ndarray of float64, shape (S,)
        ``V*`` of the instance (exact), the values every alternative's answer
        differs from.
    converged : bool
        Whether HiGHS solved the program (``bound`` is valid either way).
    message : str
        One line: the bound, the alternatives, the program's status.
    params : Params
        ``eps``, ``delta``, ``target`` and ``moves`` (:class:`~reference.results.Result`).
    """

    bound: float
    calls: np.ndarray
    weights: np.ndarray
    alternatives: tuple[Alternative, ...]
    kl_delta: float
    values: np.ndarray
    converged: bool
    message: str


def kl_bernoulli(p, q):
    r""":math:`\mathrm{kl}(p, q) = p \log(p / q) + (1 - p) \log((1 - p) / (1 - q))`.

    Parameters
    ----------
    p, q : float in [0, 1]

    Returns
    -------
    float
        ``inf`` where ``q`` excludes an outcome ``p`` has.

    Examples
    --------
    >>> round(kl_bernoulli(0.1, 0.9), 6)
    1.757780
    """
    out = 0.0
    for a, b in ((p, q), (1.0 - p, 1.0 - q)):
        if a > 0:
            out += np.inf if b <= 0 else a * np.log(a / b)
    return float(out)


def _kl_rows(p, q):
    """KL of each row of ``p`` from the same row of ``q`` (``q > 0`` wherever ``p > 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / np.where(p > 0, q, 1.0)), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def _solve(P, costs, policy):
    """Howard's policy iteration from a proper ``policy``, numpy solves: ``(V, Q)``."""
    S = costs.shape[0]
    states = np.arange(S)
    for _ in range(10 * S + 100):
        try:
            v = np.linalg.solve(np.eye(S) - P[states, policy, :S], costs[states, policy])
        except np.linalg.LinAlgError:
            return None, None
        q = costs + P[:, :, :S] @ v
        best = q.argmin(axis=1)
        better = q[states, best] < q[states, policy] - 1e-12 * (1.0 + np.abs(v))
        if not better.any():
            return v, q
        policy = np.where(better, best, policy)
    return v, q


def _restricted(P, costs, allowed):
    """The model with every action outside ``allowed`` (S, A) replaced by an allowed one."""
    first = allowed.argmax(axis=1)
    keep = np.where(allowed, np.arange(costs.shape[1]), first[:, None])
    states = np.arange(costs.shape[0])[:, None]
    return P[states, keep], costs[states, keep]


def _best_restricted(P, costs, allowed):
    """``V*`` over the policies using ``allowed`` actions only (``inf`` where none is proper)."""
    S, A = costs.shape
    start = bfs_policy(P.reshape(S * A, S + 1), S, A, allowed.ravel())
    if (start < 0).any():
        return np.full(S, np.inf)
    Pr, cr = _restricted(P, costs, allowed)
    values = _solve(Pr, cr, start)[0]
    return np.full(S, np.inf) if values is None else values


class _Instance:
    """The true model, its exact ``V*`` and ``Q*``, and the tests of an alternative."""

    def __init__(self, ssp, eps, target):
        S, A = ssp.n_states, ssp.n_actions
        self.P = kernel_rows(ssp)
        self.P = (self.P.toarray() if hasattr(self.P, "toarray") else
                  np.asarray(self.P)).reshape(S, A, S + 1)
        self.costs = np.asarray(ssp.costs, dtype=np.float64)
        best = optimal_values(ssp)
        self.v, self.policy = np.asarray(best.values), np.asarray(best.policy)
        self.q = q_values(self.P.reshape(S * A, S + 1), self.costs, self.v)
        self.eps, self.target = eps, target
        self.tol = CHECK_TOL * max(1.0, float(self.v.max()))

    def quick(self, P):
        """``(V*, Q*)`` of ``P`` by numpy policy iteration from the true optimal policy."""
        return _solve(P, self.costs, self.policy)

    def wrong(self, P, v, q, margin):
        """How the answers of ``P`` (values ``v``, Q-values ``q``) differ, or ``None``."""
        eps = self.eps + (self.eps * margin if margin else self.tol)
        if self.target == "value":
            gap = np.abs(v - self.v)
            s = int(gap.argmax())
            return (f"|V*'(s) - V*(s)| = {gap[s]:.6g} > eps at state {s}"
                    if gap[s] > eps else None)
        good = self.q <= self.v[:, None] + eps
        both = good & (q <= v[:, None] + eps)
        models = (("there", P, v), ("here", self.P, self.v))
        while True:
            if not both.any(axis=1).all():
                s = int(np.flatnonzero(~both.any(axis=1))[0])
                return (f"state {s}: no action is kept by both models (eps-optimal here: "
                        f"{np.flatnonzero(good[s]).tolist()})")
            for name, model, values in models:
                over = _best_restricted(model, self.costs, both) - values
                if over.max() > eps:
                    s = int(over.argmax())
                    return (f"every policy on the actions kept is {over[s]:.6g} above V* "
                            f"at state {s} {name}")
            pruned = self.prune(models, both, eps)
            if not pruned.any():
                return None
            both &= ~pruned

    def prune(self, models, allowed, eps):
        """Pairs ``(s, a)`` such that every policy on ``allowed`` with ``pi(s) = a`` is more
        than ``eps`` above ``V*`` somewhere, in one of the two ``models``."""
        pruned = np.zeros_like(allowed)
        for s, a in zip(*np.nonzero(allowed & (allowed.sum(axis=1) > 1)[:, None])):
            forced = allowed.copy()
            forced[s] = False
            forced[s, a] = True
            for _, model, values in models:
                if (_best_restricted(model, self.costs, forced) - values).max() > eps:
                    pruned[s, a] = True
                    break
        return pruned

    def check(self, P):
        """The exact check with the project's solver: ``(differs or None, V*', converged)``;
        ``differs`` is None when the answers may agree or the solver did not converge."""
        best = optimal_values(SSP(P, self.costs))
        v = np.asarray(best.values)
        S, A = self.costs.shape
        q = q_values(P.reshape(S * A, S + 1), self.costs, v)
        return (self.wrong(P, v, q, 0.0) if best.converged else None), v, bool(best.converged)


def _mixture(P, rows, towards, weight):
    """``P`` with each row in ``rows`` mixed with ``towards`` (same shape) at ``weight``."""
    out = P.copy()
    out[rows] = (1.0 - weight) * P[rows] + weight * towards
    out[rows] /= out[rows].sum(axis=-1, keepdims=True)
    return out


def _tilted(P, rows, v_ext, etas):
    """``P`` with row ``i`` of ``rows`` tilted by ``etas[i]``: ``p'(y) ∝ p(y) exp(eta V*(y))``."""
    out = P.copy()
    logits = etas[:, None] * v_ext[None, :]
    logits = logits - np.where(P[rows] > 0, logits, -np.inf).max(axis=1, keepdims=True)
    tilted = P[rows] * np.exp(np.minimum(logits, 0.0))
    out[rows] = tilted / tilted.sum(axis=-1, keepdims=True)
    return out


def _moves(inst, moves):
    """Every candidate move: ``(name, rows, make(size) -> P', largest size)``."""
    P, v = inst.P, inst.v
    S, A = inst.costs.shape
    v_ext = np.append(v, 0.0)
    out = []
    for s in range(S):
        for a in range(A):
            rows = (np.array([s]), np.array([a]))
            p = P[s, a]
            support = np.flatnonzero(p[:S] > 0)
            targets = {"goal": S, "high": int(v.argmax())}
            if support.size:
                targets["high-next"] = int(support[v[support].argmax()])
            next_all = np.flatnonzero(p > 0)
            targets["low-next"] = int(next_all[v_ext[next_all].argmin()])
            for name, x in targets.items():
                if name in moves:
                    towards = np.zeros(S + 1)
                    towards[x] = 1.0
                    out.append((f"{name} at ({s}, {a})", rows, towards, MIX_MAX))
            if "away" in moves and 0 < p[S] < 1:
                towards = np.append(p[:S], 0.0) / (1.0 - p[S])
                out.append((f"away at ({s}, {a})", rows, towards, MIX_MAX))
    if "tilt" in moves:
        chain = sp.csr_array(P[np.arange(S), inst.policy, :S] > 0)
        for s0 in range(S):
            states = np.sort(breadth_first_order(chain, s0, return_predecessors=False))
            rows = (states, inst.policy[states])
            out.extend(_tilts(inst, f"along pi* from state {s0}", rows, np.ones(states.size)))
    return out


def _tilts(inst, where, rows, weights):
    """The two tilts (up and down) of ``rows`` with relative strengths ``weights`` (max 1)."""
    largest = TILT_MAX / max(float(inst.v.max()), 1e-12)
    return [(f"tilt {word} {where}", rows, ("tilt", sign * weights), largest)
            for sign, word in ((1.0, "up"), (-1.0, "down"))]


def _weighted_tilts(inst, calls):
    r"""Tilts weighted by occupancy over calls, the cheapest first-order move for ``calls``.

    From state ``s0`` and a first action ``b`` (``pi*(s0)`` for the value
    target, every action for the policy target), then ``pi*``: a pair with
    expected visits ``m(s, a)`` and ``n(s, a)`` calls is tilted by
    :math:`\eta\, m(s, a) / n(s, a)`, which minimises :math:`\sum n\,\mathrm{KL}`
    (about :math:`\sum n \eta_{sa}^2 \sigma_{sa}^2 / 2`) for a given first-order
    change :math:`\sum m\, \eta_{sa} \sigma_{sa}^2` of the value of ``s0``.
    With the policy target, also ``m`` of ``(s0, pi*(s0))`` less ``m`` of
    ``(s0, b)``: the same for the gap ``Q(s0, b) - Q(s0, pi*(s0))``.
    """
    P, policy = inst.P, inst.policy
    S, A = inst.costs.shape
    states = np.arange(S)
    visits = np.linalg.inv(np.eye(S) - P[states, policy, :S])
    calls = np.maximum(calls, max(float(calls.mean()), 1e-12) * 1e-3).ravel()

    def occupancy(s0, b):
        out = np.zeros((S, A))
        out[states, policy] = P[s0, b, :S] @ visits
        out[s0, b] += 1.0
        return out.ravel()

    out = []
    for s0 in range(S):
        best = occupancy(s0, policy[s0])
        for b in ([policy[s0]] if inst.target == "value" else range(A)):
            spreads = [("from", occupancy(s0, b))]
            if b != policy[s0]:
                spreads.append(("against", best - occupancy(s0, b)))
            for word, spread in spreads:
                pairs = np.flatnonzero(spread != 0)
                weights = spread[pairs] / calls[pairs]
                out.extend(_tilts(inst, f"weighted {word} ({s0}, {b})", (pairs // A, pairs % A),
                                  weights / np.abs(weights).max()))
    return out


def _apply(inst, rows, how, size):
    if isinstance(how, tuple):
        return _tilted(inst.P, rows, np.append(inst.v, 0.0), how[1] * size)
    return _mixture(inst.P, rows, how, size)


def _search(inst, rows, how, largest):
    """The smallest size (bisection) whose model is wrong by the quick test, or ``None``."""
    def wrong(size):
        P = _apply(inst, rows, how, size)
        v, q = inst.quick(P)
        return v is not None and inst.wrong(P, v, q, SEARCH_MARGIN) is not None

    if not wrong(largest):
        return None
    lo, hi = 0.0, largest
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if wrong(mid) else (mid, hi)
    return hi


def _alternatives(inst, candidates, found, seen):
    """Append to ``found`` the checked alternative of every candidate move that finds one."""
    for name, rows, how, largest in candidates:
        size = _search(inst, rows, how, largest)
        if size is None:
            continue
        for step in range(4):
            size = size if step == 0 else size + (largest - size) * 10.0 ** (step - 5)
            P = _apply(inst, rows, how, size)
            differs, values, converged = inst.check(P)
            if differs is not None:
                break
        if differs is None:
            continue
        kl = _kl_rows(inst.P, P)
        key = tuple(np.round(kl.ravel(), 12))
        if key in seen:
            continue
        seen.add(key)
        found.append(Alternative(P=P, kl=kl, move=name, size=float(size), values=values,
                                 converged=converged, message=differs))


def _program(kl_matrix):
    """``(value lower bound, calls per pair, dual weights, converged, message)`` of the program."""
    k, m = kl_matrix.shape
    if k == 0:
        return 0.0, np.zeros(m), np.zeros(0), True, "no alternative: the bound is 0"
    res = linprog(np.ones(m), A_ub=-kl_matrix, b_ub=-np.ones(k), bounds=(0, None),
                  method="highs")
    if res.status != 0:
        return 0.0, np.zeros(m), np.zeros(k), False, f"HiGHS: {res.message}"
    weights = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
    load = (kl_matrix.T @ weights).max()
    weights = weights / max(1.0, float(load))
    return float(weights.sum()), np.asarray(res.x), weights, True, f"HiGHS: {res.message}"


def instance_lower_bound(ssp, eps, delta, target="value", moves=MOVES):
    r"""A lower bound on the expected calls of any ``(eps, delta)``-correct method on ``ssp``.

    Parameters
    ----------
    ssp : SSP
        The instance, known; ``c_min > 0`` and at most :data:`MAX_STATES` states.
    eps : float > 0
        Accuracy.
    delta : float in (0, 1/2)
        Confidence level.
    target : {"value", "policy"}, default "value"
        ``"value"``: the method's answer pins ``V*`` to within ``eps / 2`` in
        every state; ``"policy"``: it is a deterministic policy with
        ``V^pi <= V* + eps`` in every state.
    moves : sequence of str, default MOVES
        The families of alternatives to try (:data:`MOVES`); fewer families
        give a smaller or equal bound.

    Returns
    -------
    LowerBoundResult
        The bound, the program's calls per pair, and the alternatives used.

    Raises
    ------
    ParameterError
        On ``eps``, ``delta``, ``target`` or ``moves`` out of form, or ``c_min = 0``.
    TooLargeError
        Beyond :data:`MAX_STATES` states.

    See Also
    --------
    solve_certified : the solver it measures.
    bounds.samp_comp_lower : the paper's minimax lower bound.

    Notes
    -----
    For each family and each pair (or each state's reach under the optimal
    policy, for the tilts) a bisection finds the smallest move that makes the
    answer wrong by a fast policy iteration; the move is kept only if
    :func:`~reference.optimal.optimal_values` of the alternative confirms it
    (docs/lower-bound.md). With :math:`\mathrm{KL}_k` the pairs' divergences
    of alternative ``k``,

    .. math::

        \mathbb E[N] \ge \mathrm{kl}(\delta, 1 - \delta)
        \min\Big\{\sum_{s,a} n(s,a) : n \ge 0,\
        \sum_{s,a} n(s,a)\, \mathrm{KL}_k(s,a) \ge 1\ \forall k\Big\},

    and any dual-feasible ``w`` (:math:`\sum_k w_k \mathrm{KL}_k \le 1`)
    bounds that minimum by ``sum(w)``.

    Examples
    --------
    One state, one action, unit cost, goal with probability 1/2 (``V* = 2``):

    >>> import numpy as np
    >>> import reference as sspgm
    >>> ssp = sspgm.SSP(np.array([[[0.5, 0.5]]]), np.ones((1, 1)))
    >>> res = sspgm.instance_lower_bound(ssp, eps=0.5, delta=0.1)
    >>> round(res.bound, 1), all(alt.message for alt in res.alternatives)
    (86.1, True)
    """
    check_ssp(ssp)
    params = call_params(eps=eps, delta=delta, target=target, moves=moves)
    eps = check_real("eps", eps, 0.0, None, low_open=True)
    delta = check_real("delta", delta, 0.0, 0.5, low_open=True, high_open=True)
    if target not in TARGETS:
        raise ParameterError(f"`target` must be one of {TARGETS}; got {target!r}.")
    moves = tuple(moves)
    if not moves or any(m not in MOVES for m in moves):
        raise ParameterError(f"`moves` must be a non-empty sequence of {MOVES}; got {moves!r}.")
    if ssp.n_states > MAX_STATES:
        raise TooLargeError(f"`ssp` has {ssp.n_states} states; instance_lower_bound solves "
                            f"dense models of at most MAX_STATES = {MAX_STATES} states.")
    if float(np.min(ssp.costs)) <= 0.0:
        raise ParameterError("`ssp` must have c_min > 0 (its costs have a zero): V* and the "
                             "eps-optimal policies are those of proper policies only then.")
    inst = _Instance(ssp, eps, target)
    found, seen = [], set()
    _alternatives(inst, _moves(inst, moves), found, seen)
    previous = 0.0
    for round_ in range(REFINE_ROUNDS + 1):
        kl_matrix = np.array([alt.kl.ravel() for alt in found]).reshape(len(found),
                                                                          inst.costs.size)
        value, calls, weights, converged, how = _program(kl_matrix)
        if (round_ == REFINE_ROUNDS or "tilt" not in moves or not found
                or value <= previous * (1.0 + REFINE_RTOL)):
            break
        previous = value
        _alternatives(inst, _weighted_tilts(inst, calls.reshape(inst.costs.shape)), found,
                      seen)
    kl_delta = kl_bernoulli(delta, 1.0 - delta)
    if not np.isfinite(kl_delta):
        kl_delta = (1.0 - 2.0 * delta) * (np.log1p(-delta) - np.log(delta))
    bound = kl_delta * value
    message = (f"{target} target at eps = {eps:g}, delta = {delta:g}: expected calls >= "
               f"{bound:.6g} from {len(found)} checked alternatives; {how}")
    S, A = inst.costs.shape
    return LowerBoundResult(
        bound=bound, calls=kl_delta * calls.reshape(S, A), weights=weights,
        alternatives=tuple(found), kl_delta=kl_delta, values=inst.v, converged=converged,
        message=message, params=params)
