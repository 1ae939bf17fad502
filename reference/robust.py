r"""Pessimistic (robust) and optimistic values over per-entry confidence boxes, as checked bounds.

Two games on the boxes of :mod:`reference.confidence`:

- the **adversary** (pessimism) picks, for a fixed policy, the kernel in the
  boxes that maximises the expected cost: its value ``U^pi`` bounds ``V^pi``
  from above on the confidence event;
- the **optimist** picks both the action and the kernel that minimise the
  cost: its value (the fixed point of EVI's operator) bounds ``V*`` from below.

Both inner problems are the greedy pour of App. B: start every next state at
its lower end and pour the remaining mass into next states in a fixed order,
each up to its upper end. The optimist pours by increasing value, the goal
first; the adversary by **decreasing** value, the goal last (ties to the lower
index either way). Both values are computed by policy iteration whose kernels are kept as
:class:`~reference.poured.PouredKernel` (``O(S + stored)`` memory, whatever
the samples behind the boxes) and evaluated by the kernel ``poured_chain_values``
(:func:`reference.chains.poured_values` in the numpy kernel set; never by value
iteration from 0,
whose iterates lie below the pessimistic fixed point and certify nothing);
each value is accepted only after an explicit check of the Bellman inequality
that makes it a bound; see :func:`robust_policy_values` and
:func:`optimistic_values`.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ._checks import as_float_array, check_policy
from .chains import UNIT_ROUNDOFF, _reaching
from .confidence import SIMPLEX_SLACK, confidence_boxes
from .errors import ConvergenceError, ParameterError
from .evi import checked_box
from .kernels import NUMPY_KERNELS, pour, pour_order, segment_positions
from .poured import PouredKernel
from .results import Result

__all__ = [
    "ROBUST_MAX_ITER",
    "RobustValuesResult",
    "pessimistic_inner",
    "robust_policy_values",
    "robust_optimal_values",
    "optimistic_values",
]

ROBUST_MAX_ITER = 1_000
"""Largest number of evaluations of each policy iteration."""

SWITCH_RTOL = 1e-10
"""Policy iteration switches a row or an action only for a gain above
``SWITCH_RTOL * max(1, max|V|)`` (or the evaluation's residual, if larger)."""

CHECK_MAX_SLACK = 1e-6
"""Largest relative inflation (upper bound) or deflation (lower bound) of the Bellman check."""


@dataclass(frozen=True, repr=False)
class RobustValuesResult(Result):
    """Checked bounds over the boxes: the output of the public functions of this module.

    Attributes
    ----------
    values : ndarray of float64, shape (S,)
        The certified bound (``+inf`` where none is finite).
    policy : ndarray of int64, shape (S,)
        The policy the values belong to.
    p_bound : PouredKernel, shape (S, S+1)
        The kernel of ``policy`` in the boxes attaining the bound (the
        adversary's or the optimist's last choice), ``O(S + stored)`` bytes
        (:class:`~reference.poured.PouredKernel`; ``p_bound.tocsr()`` for the
        explicit matrix).
    infinite : ndarray of bool, shape (S,)
        States where the value is ``+inf``.
    n_iter : int
        Policy evaluations made (the kernel ``poured_chain_values``,
        :func:`reference.chains.poured_values` in the numpy kernel set).
    converged : bool
        Whether policy iteration stopped on its own (no improving switch).
    message : str
        How the computation ended and what the check found.
    """

    values: np.ndarray
    policy: np.ndarray
    p_bound: PouredKernel
    infinite: np.ndarray
    n_iter: int
    converged: bool
    message: str


def pessimistic_inner(lo, hi, v):
    r"""Exact maximiser of ``sum_s' p(s') v(s')`` over a box intersected with the simplex.

    The mirror of :func:`reference.evi.optimistic_inner`: start at the lower
    ends, then pour the remaining mass into next states by **decreasing**
    ``v``, ties to the lower index and the goal last, each up to its upper end.

    Parameters
    ----------
    lo, hi : ndarray of float64, shape (..., S+1)
        Box ends, ``0 <= lo <= hi <= 1`` with ``sum lo <= 1 <= sum hi``.
    v : ndarray of float64, shape (S+1,)
        Values of the next states, ``>= 0``, the goal last.

    Returns
    -------
    ndarray of float64, shape (..., S+1)
        The maximiser ``p``:

        .. math::

            p = \arg\max \Big\{ \sum_{s'} p(s') v(s') :
            lo \le p \le hi,\ \sum_{s'} p(s') = 1 \Big\}.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError
        On shapes that disagree, non-finite entries, a box outside ``[0, 1]``
        or missing the simplex, or a negative ``v``.

    Examples
    --------
    >>> import numpy as np
    >>> lo = np.array([0.1, 0.1, 0.2]); hi = np.array([0.5, 0.6, 0.9])
    >>> pessimistic_inner(lo, hi, np.array([1.0, 3.0, 0.0])).round(3).tolist()
    [0.2, 0.6, 0.2]
    """
    lo, hi, v = checked_box(lo, hi, v)
    if np.any(v < 0):
        raise ParameterError(f"`v` must be >= 0; got min {float(np.min(v))!r}.")
    return pour(lo, hi - lo, 1.0 - lo.sum(axis=-1, keepdims=True), pour_order(v, True))


def _policy_rows(boxes, policy):
    return np.arange(boxes.n_states) * boxes.n_actions + policy


def _row_entries(boxes, rows):
    """Stored entries of ``rows``: ``(row position, column, lo, hi)``."""
    stored = np.diff(boxes.indptr)[rows]
    entry = np.repeat(boxes.indptr[rows], stored) + segment_positions(stored)
    return (np.repeat(np.arange(rows.size), stored), boxes.indices[entry], boxes.lo[entry],
            boxes.hi[entry])


def _adversary_graph(boxes, rows):
    """Edges the adversary can give positive mass, for the policy rows ``rows`` (one per state).

    Returns ``(row, col, lo, hi, free, h, tails, heads, spread)``: the stored
    entries, the free mass ``1 - sum lo`` and unseen upper end of every row,
    the explicit edges between non-goal states, and the rows that can put
    mass on every unseen next state.
    """
    S = boxes.n_states
    row, col, lo, hi = _row_entries(boxes, rows)
    free = 1.0 - np.bincount(row, weights=lo, minlength=S)
    h = boxes.hi_unseen[rows]
    edge = (lo > 0) | ((free[row] > 0) & (hi > 0))
    inner = edge & (col < S)
    spread = (free > 0) & (h > 0)
    return row, col, lo, hi, free, h, row[inner], col[inner], spread


def _with_hub(tails, heads, spread, members):
    """Edges plus a hub node ``S``: every spreading member -> hub -> every member."""
    S = members.size
    hub_in = np.flatnonzero(spread & members)
    hub_out = np.flatnonzero(members)
    return (np.concatenate([tails, hub_in, np.full(hub_out.size, S)]),
            np.concatenate([heads, np.full(hub_in.size, S), hub_out]))


def _closable(n_states, row, col, lo, hi, h):
    r"""The largest set ``X`` of states that every state of it can keep the chain in, by sums.

    A state stays in ``X`` when none of its lower ends lies outside ``X`` (the
    goal is outside) and its upper ends inside ``X`` (``h`` for each unseen
    state of ``X``) sum to at least ``1 - SIMPLEX_SLACK``; states that do not
    are removed until none is. ``row, col, lo, hi`` are the stored entries of
    the policy's rows and ``h`` their unseen upper ends
    (:func:`_adversary_graph`). Each component that :func:`_infinite_states`
    keeps passes these tests inside itself, so inside any ``X`` containing it
    (the rounded sums of non-negative terms only grow with the set): the
    result contains every one, and the splitting into components can start
    from it.
    """
    alive = np.ones(n_states, dtype=bool)
    while True:
        inside = np.append(alive, False)[col]
        leaks = np.bincount(row, weights=(lo > 0) & ~inside, minlength=n_states) > 0
        room = (np.bincount(row, weights=np.where(inside, hi, 0.0), minlength=n_states)
                + (int(alive.sum()) - np.bincount(row, weights=inside, minlength=n_states)) * h)
        keep = alive & ~leaks & (room >= 1.0 - SIMPLEX_SLACK)
        if np.array_equal(keep, alive):
            return alive
        alive = keep


def _infinite_states(boxes, policy, costs_pi, graph=None):
    r"""States where the adversary can make the cost of ``policy`` infinite, decided on graphs.

    The adversary makes the value infinite at ``s`` exactly when some kernel in
    the boxes leads ``s``, with positive probability, into a closed class
    holding a positive cost. A set ``X`` can be made closed when every state
    of it has no lower end outside ``X`` (the goal is outside) and upper ends
    summing to at least 1 inside ``X``; the closed classes are the strongly
    connected sets of that kind (the maximal end components of the
    adversary's choices), found by alternately splitting into strongly
    connected components and removing the states that cannot stay in their
    component. The answer is every state with a path into one holding a
    positive cost. With every cost positive this is the largest set whose
    lower ends put no mass outside it, and the states reaching it. The
    splitting starts from :func:`_closable`, which holds every such set (no
    state is infinite when it is empty). ``graph`` is :func:`_adversary_graph`
    of the policy's rows when the caller has it.
    """
    S = boxes.n_states
    if graph is None:
        graph = _adversary_graph(boxes, _policy_rows(boxes, policy))
    row, col, lo, hi, free, h, tails, heads, spread = graph
    alive = _closable(S, row, col, lo, hi, h)
    if not alive.any():
        return alive
    while True:
        edge_ok = alive[tails] & alive[heads]
        t, hd = _with_hub(tails[edge_ok], heads[edge_ok], spread, alive)
        adjacency = sp.csr_array((np.ones(t.size), (t, hd)), shape=(S + 1, S + 1))
        labels = connected_components(adjacency, directed=True, connection="strong")[1][:S]
        labels = np.where(alive, labels, -1)
        label_ext = np.append(labels, -1)
        inside = (label_ext[col] == labels[row]) & (labels[row] >= 0)
        leaks = np.bincount(row, weights=(lo > 0) & ~inside, minlength=S) > 0
        size = np.bincount(labels[alive], minlength=S + 1)
        n_inside = np.bincount(row, weights=inside, minlength=S)
        room = (np.bincount(row, weights=np.where(inside, hi, 0.0), minlength=S)
                + (np.where(alive, size[np.maximum(labels, 0)], 0) - n_inside) * h)
        keep = alive & ~leaks & (room >= 1.0 - SIMPLEX_SLACK)
        if np.array_equal(keep, alive):
            break
        alive = keep
    costly = np.bincount(labels[alive], weights=costs_pi[alive] > 0, minlength=S + 1) > 0
    bad = alive & costly[np.maximum(labels, 0)]
    t, hd = _with_hub(tails, heads, spread, np.ones(S, dtype=bool))
    return _reaching(t, hd, np.append(bad, bad.any()))[:S]


def _expected(kernel, v_ext):
    """``kernel @ v_ext`` (``0 * inf = 0``): one product of the kernel when ``v_ext`` is finite."""
    return kernel._apply(v_ext) if np.isfinite(v_ext).all() else kernel @ v_ext


def _switch_tolerance(values, residual):
    """Smallest gain that switches: ``SWITCH_RTOL * max(1, max|V|)`` over the finite values,
    or the residual of their evaluation when it is larger."""
    scale = max(1.0, float(values[np.isfinite(values)].max(initial=0.0)))
    return max(SWITCH_RTOL * scale, residual)


def _emptied(kernel, rows):
    """``kernel`` with the rows of the mask ``rows`` put to 0 (no stored entry, width 0)."""
    lengths = np.where(rows, 0, np.diff(kernel.indptr))
    entry = np.repeat(kernel.indptr[:-1], lengths) + segment_positions(lengths)
    kept = ~rows
    return PouredKernel(kernel.order, np.concatenate([[0], np.cumsum(lengths)]),
                        kernel.indices[entry], kernel.data[entry],
                        np.where(kept, kernel.width, 0.0), np.where(kept, kernel.reach, 0),
                        np.where(kept, kernel.partial, 0.0), kernel.descending, check=False)


def _evaluate(kernels, kernel, costs_pi, infinite, start):
    """Values of ``kernel`` (``(S, S+1)``) and the solve's residual, ``+inf`` on ``infinite``
    (the kernel ``poured_chain_values`` of ``kernels``, warm-started from ``start``).

    The rows of the other states put no mass on ``infinite`` (every state the
    adversary can move into ``infinite`` is in it), so their values do not
    depend on the rows of ``infinite``: those are emptied before the solve,
    which spends no work on the adversary's traps (a near-closed class is an
    ill-conditioned system), and their values are set to ``+inf``.

    Serves both policy iterations (the optimist's with ``infinite`` all
    false). A solve that finds no acceptable candidate (``ConvergenceError``)
    is a failed candidate: every value is ``+inf`` and the residual ``+inf``,
    which marks the failure. Both policy iterations then stop, not converged
    (their messages say why); the adversary's Bellman check leaves the upper
    bound at ``+inf`` (0 where no kernel leads to a positive cost) and the
    optimist's sets the lower bound to 0 where its values are infinite.
    """
    if infinite.any():
        kernel = _emptied(kernel, infinite)
    try:
        values, residual = kernels.poured_chain_values(kernel, costs_pi, start)
    except ConvergenceError:
        return np.full(costs_pi.size, np.inf), np.inf
    values[infinite] = np.inf
    return values, residual


def _adversary(kernels, boxes, policy, costs_pi, infinite, start):
    """Adversary policy iteration for ``policy``: ``(values, kernel, n_iter, converged)``.

    Every iteration evaluates the current kernel and pours every row of the
    policy again against the values; the new kernel replaces it unless no
    finite row gains more than the tolerance of :func:`_switch_tolerance`.
    """
    rows = _policy_rows(boxes, policy)
    finite = ~infinite
    values = np.where(infinite, np.inf, start)
    kernel = kernels.pour_kernel(boxes, rows, np.append(values, 0.0), True)
    for n_iter in range(1, ROBUST_MAX_ITER + 1):
        values, residual = _evaluate(kernels, kernel, costs_pi, infinite, values)
        if np.isinf(residual):
            return values, kernel, n_iter, False
        v_ext = np.append(values, 0.0)
        poured = kernels.pour_kernel(boxes, rows, v_ext, True)
        tol = _switch_tolerance(values, residual)
        if not np.any(finite & (_expected(poured, v_ext) > _expected(kernel, v_ext) + tol)):
            return values, kernel, n_iter, True
        kernel = poured
    return values, kernel, ROBUST_MAX_ITER, False


def _rounding(n_states, totals, scale):
    r"""Bound on the rounding error of computed Bellman values, shape of ``totals``.

    ``totals`` are computed values :math:`c + \sum_{s'} p(s') W(s')` of pours
    against finite values ``W >= 0`` of largest entry ``scale``. A pour's
    probabilities come from sums of at most ``S + 1`` lower ends and widths
    (the leftover mass, the mass filled before each position), each off by at
    most :math:`(S + 1) u` of the unit mass, so the pour's value moves by at
    most :math:`2 (S + 1) u` ``scale``; its sum, in any order and through
    prefix sums along the pour order (the compiled kernel), adds at most
    :math:`2 (S + 1) u` (``totals + scale``). The bound
    :math:`\gamma\,(\mathrm{totals} + \mathrm{scale})` with
    :math:`\gamma = (8 (S + 1) + 32) u` doubles both first-order terms.
    """
    gamma = (8.0 * (n_states + 1) + 32.0) * UNIT_ROUNDOFF
    return gamma * (totals + scale)


def _slack(gap, values, costs):
    r"""Relative slack ``r`` of the Bellman check and the states no slack can save.

    ``gap`` is how far the rounded-safe check misses (``T U + rounding - U``
    for the upper bound, ``L - (T L - rounding)`` for the lower one, clipped
    at 0) and ``costs`` the smallest cost of each state. Scaling ``U`` by
    ``1 + r`` adds ``r c`` to the room of the check and scales the rest by
    ``1 + r``, so ``r = 2 (gap + 4 u |U|) / c`` covers ``gap``, and the
    rounding of the scaling and of the comparison. Returns ``(r, hopeless)``
    with ``r`` the largest need at most :data:`CHECK_MAX_SLACK` and
    ``hopeless`` the states whose need exceeds it (``c = 0`` with a positive
    need among them): the check would decide those by rounding, so they fail.
    """
    margin = 2.0 * (gap + 4.0 * UNIT_ROUNDOFF * np.abs(values))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(gap > 0, margin / costs, 0.0)
    hopeless = need > CHECK_MAX_SLACK
    return float(need[~hopeless].max(initial=0.0)), hopeless


def _zero_states(boxes, policy, costs_pi, graph=None):
    """States from which no kernel in the boxes reaches a positive cost under ``policy``: their
    value is exactly 0 in every kernel (the graph of :func:`_infinite_states`, ``graph`` as
    there); none when every cost is positive (each state has its own)."""
    S = boxes.n_states
    positive = costs_pi > 0
    if positive.all():
        return np.zeros(S, dtype=bool)
    if graph is None:
        graph = _adversary_graph(boxes, _policy_rows(boxes, policy))
    tails, heads, spread = graph[6:]
    t, hd = _with_hub(tails, heads, spread, np.ones(S, dtype=bool))
    return ~_reaching(t, hd, np.append(positive, positive.any()))[:S]


def _check_upper(kernels, boxes, policy, costs_pi, values, graph=None):
    r"""Accept ``values`` as an upper bound only where ``U >= 0`` and ``T_pi U <= U`` hold.

    The check is made safe from rounding: a state passes when the computed
    :math:`T_\pi U` plus the bound of :func:`_rounding` is at most ``U``, or
    when no kernel leads it to a positive cost (:func:`_zero_states`, where
    ``U = 0`` is exact). ``U`` is first inflated by the smallest relative
    factor ``1 + r`` (:func:`_slack`, ``r <= CHECK_MAX_SLACK``) that absorbs
    the solver's residual and that rounding; states needing more, and states
    where the check still fails, are set to ``+inf``, which can make their
    predecessors fail, until the check holds everywhere. ``graph`` is
    :func:`_adversary_graph` of the policy's rows when the caller has it.
    Returns ``(U, number of states set to inf by the check, r)``.
    """
    S = boxes.n_states
    rows = _policy_rows(boxes, policy)
    exact_zero = _zero_states(boxes, policy, costs_pi, graph)

    def upper_bellman(U):
        finite = np.isfinite(U)
        T = costs_pi + kernels.pour_values(boxes, rows, np.append(U, 0.0), True)
        return T + _rounding(S, T, float(U[finite].max(initial=0.0)))

    U = np.where(exact_zero, 0.0, values)
    finite = np.isfinite(U) & ~exact_zero
    gap = np.zeros(S)
    gap[finite] = np.maximum(upper_bellman(U)[finite] - U[finite], 0.0)
    r, hopeless = _slack(gap, np.where(finite, U, 0.0), costs_pi)
    U = np.where(finite & ~hopeless, U * (1.0 + r), np.where(exact_zero, 0.0, np.inf))
    dropped = int((finite & hopeless).sum())
    while True:
        fail = np.isfinite(U) & ~exact_zero & ~((upper_bellman(U) <= U) & (U >= 0))
        if not fail.any():
            return U, dropped, r
        dropped += int(fail.sum())
        U[fail] = np.inf


def _robust_values(kernels, boxes, costs_pi, policy, start=None):
    """``U^pi`` of ``policy`` with the infinity decision, adversary PI and the Bellman check."""
    S = boxes.n_states
    graph = _adversary_graph(boxes, _policy_rows(boxes, policy))
    infinite = _infinite_states(boxes, policy, costs_pi, graph)
    start = np.zeros(S) if start is None else np.where(np.isfinite(start), start, 0.0)
    values, kernel, n_iter, converged = _adversary(kernels, boxes, policy, costs_pi, infinite,
                                                   start)
    U, dropped, r = _check_upper(kernels, boxes, policy, costs_pi, values, graph)
    return U, kernel, infinite, n_iter, converged, dropped, r


def _how(converged, n_iter):
    """How a policy iteration of ``n_iter`` evaluations ended, for its message."""
    if converged:
        return "converged"
    if n_iter >= ROBUST_MAX_ITER:
        return "stopped at the iteration limit"
    return "stopped: an evaluation found no acceptable solution"


def _check_message(kind, n_inf, dropped, r, n_iter, converged):
    how = _how(converged, n_iter)
    text = (f"{kind} policy iteration {how} after {n_iter} evaluations; "
            f"{n_inf} state(s) infinite on the graph test")
    if dropped:
        return f"{text}; the Bellman check failed on {dropped} state(s), set to inf."
    return f"{text}; the Bellman check holds everywhere (relative slack {r:.2g})."


def checked_inputs(kernels, counts, costs, delta, kind):
    """The boxes of ``counts`` (built by ``kernels``) and the checked costs (float64 ``(S, A)``,
    ``>= 0``)."""
    boxes = kernels.call(confidence_boxes, counts, delta, kind)
    S, A = boxes.n_states, boxes.n_actions
    costs = as_float_array("costs", costs, (S, A))
    if np.any(costs < 0):
        s, a = (int(i) for i in np.argwhere(costs < 0)[0])
        raise ParameterError(f"`costs` must be >= 0; got costs[{s}, {a}] = {costs[s, a]!r}.")
    return boxes, costs


@NUMPY_KERNELS.bind
def robust_policy_values(kernels, counts, costs, policy, delta, kind="kl"):
    r"""Worst-case value ``U^pi`` of a policy over the confidence boxes, checked.

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    costs : array_like of shape (S, A)
        Costs, ``>= 0``.
    policy : array_like of int, shape (S,)
        The policy.
    delta : float in (0, 1)
        Confidence level of the boxes.
    kind : {"kl", "bernstein", "paper"}, default "kl"
        The boxes (:func:`reference.confidence.confidence_boxes`).

    Returns
    -------
    RobustValuesResult
        ``values`` is ``U``, with ``V^pi <= U`` in every state on the event
        that the true kernel lies in the boxes.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError
        On counts, costs, policy, ``delta`` or ``kind`` as in
        :func:`reference.confidence.confidence_boxes`, or negative costs.

    Notes
    -----
    1. **Infinity, exactly.** ``U = inf`` exactly where the adversary can
       lead the policy with positive probability into a closed class holding
       a positive cost; this is decided on graphs of lower ends (mass the
       adversary must place) and upper ends (mass it may place), with no
       arithmetic on probabilities (:func:`_infinite_states`).
    2. **Adversary policy iteration.** Evaluate the current kernel ``P``
       (the kernel ``poured_chain_values``, :func:`reference.chains.poured_values`
       in the numpy kernel set: ``V = c + P V`` up to its
       residual), then pour every row of the policy again against ``V``, by
       decreasing ``V``, into ``P'``. The pour is the exact maximiser of each
       box against ``V``, so ``P' V >= P V`` row by row. When no state
       outside the infinite ones gains more than the tolerance
       (``SWITCH_RTOL``, relative, or the residual if larger), ``P`` and
       ``V`` are kept. Otherwise ``P'`` replaces ``P`` whole: a row that
       gains less than the tolerance moves by at most that much, and never
       down, so ``c + P' V - V = P' V - P V >= 0`` and
       :math:`V' - V = (I - Q')^{-1} (c + P' V - V) \ge 0`. The values only
       increase (up to the rounding and residual of the evaluations), every
       step raises the states that gain by more than the tolerance, and a
       kernel, fixed by its pour order, never comes back, so the iteration
       stops (within ``ROBUST_MAX_ITER`` evaluations in any case). The rows
       of the other states put no mass on the infinite ones (the adversary
       could otherwise lead them there): the rows of the infinite states are
       left out of the evaluation and their values are ``+inf``.
    3. **The check is the certificate.** With :math:`T_\pi U(s) = c(s, \pi(s))
       + \max_{p \in B(s, \pi(s))} \sum_{s'} p(s') U(s')`, ``U`` is accepted
       where

       .. math::

           U \ge 0 \quad\text{and}\quad T_\pi U \le U

       with the computed :math:`T_\pi U` raised by a bound on its rounding
       (:func:`_rounding`, about ``8 (S+1) u`` of ``T U + max U``), after a
       relative inflation of at most ``CHECK_MAX_SLACK`` that absorbs the
       solver's residual; failing states, and those needing a larger
       inflation, get ``+inf`` (a state that reaches no positive cost keeps
       its exact 0). So the inequality holds for the exact operator, not only
       for its rounded evaluation. On the
       event, the true kernel ``P`` is in the boxes, so
       :math:`c_\pi + P U \le U`; iterating,
       :math:`\sum_{t < n} P^t c_\pi \le U - P^n U \le U`, hence
       :math:`V^\pi \le U` for any costs ``>= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros((1, 1, 2)); counts[0, 0] = [0, 2000]
    >>> out = robust_policy_values(counts, np.ones((1, 1)), [0], 0.1)
    >>> bool(1.0 <= out.values[0] < 1.01)
    True
    """
    boxes, costs = checked_inputs(kernels, counts, costs, delta, kind)
    S = boxes.n_states
    policy = check_policy(policy, S, boxes.n_actions)
    costs_pi = costs[np.arange(S), policy]
    U, kernel, infinite, n_iter, converged, dropped, r = _robust_values(kernels, boxes, costs_pi,
                                                                        policy)
    message = _check_message("adversary", int(infinite.sum()), dropped, r, n_iter, converged)
    return RobustValuesResult(values=U, policy=policy, p_bound=kernel, infinite=~np.isfinite(U),
                              n_iter=n_iter, converged=converged, message=message)


def _goal_forcing(boxes):
    r"""States from which some policy reaches the goal with probability 1 against every adversary.

    The almost-sure reachability of a game on the boxes, as a nested fixpoint:
    ``W`` is the greatest set such that every state of ``W`` belongs to the
    least set ``R`` containing the goal and every state with an action that
    is **safe** (the adversary can put mass only inside ``W`` and the goal)
    and **progressing** (every kernel of the box puts positive mass on ``R``:
    lower ends in ``R``, or upper ends outside ``R`` summing below 1). Returns
    ``(W, action)`` with ``action[s]`` the first safe and progressing action
    found for ``s`` in ``W`` (0 elsewhere); following it from ``W``, every
    adversary reaches the goal with probability 1.
    """
    S, A = boxes.n_states, boxes.n_actions
    rows_all = np.arange(S * A)
    row, col, lo, hi = _row_entries(boxes, rows_all)
    free = 1.0 - np.bincount(row, weights=lo, minlength=S * A)
    h = boxes.hi_unseen
    possible = (lo > 0) | ((free[row] > 0) & (hi > 0))
    spread = (free > 0) & (h > 0)
    stored = np.diff(boxes.indptr)
    action = np.zeros(S, dtype=np.int64)
    W = np.ones(S, dtype=bool)
    while True:
        w_ext = np.append(W, True)
        outside = ~w_ext[col]
        n_out = np.bincount(row, weights=outside, minlength=S * A)
        unseen_out = (S - int(W.sum())) - n_out
        safe = (np.bincount(row, weights=possible & outside, minlength=S * A) == 0) & ~(
            spread & (unseen_out > 0))
        R = np.append(np.zeros(S, dtype=bool), True)
        while True:
            in_r = R[col]
            lo_r = np.bincount(row, weights=np.where(in_r, lo, 0.0), minlength=S * A)
            hi_out = (np.bincount(row, weights=np.where(in_r, 0.0, hi), minlength=S * A)
                      + (S + 1 - int(R.sum()) - (stored - np.bincount(row, weights=in_r,
                                                                     minlength=S * A))) * h)
            good = (safe & ((lo_r > 0) | (hi_out < 1.0 - SIMPLEX_SLACK))).reshape(S, A)
            new = W & good.any(axis=1) & ~R[:S]
            if not new.any():
                break
            action[new] = np.argmax(good[new], axis=1)
            R[:S] |= new
        if np.array_equal(R[:S], W):
            return W, np.where(W, action, 0)
        W = R[:S].copy()


def _robust_policy(kernels, boxes, costs, policy):
    """Robust PI from ``policy``: ``(U, policy, kernel, n_iter, converged, message)``.

    States with an infinite value that some policy can make finite first
    switch to the goal-forcing action of :func:`_goal_forcing`.
    """
    S, A = boxes.n_states, boxes.n_actions
    states, all_rows = np.arange(S), np.arange(S * A)
    policy = policy.copy()
    U, total, start, forcing = None, 0, None, None
    for _ in range(ROBUST_MAX_ITER):
        costs_pi = costs[states, policy]
        U, kernel, infinite, n_iter, converged, dropped, r = _robust_values(
            kernels, boxes, costs_pi, policy, start)
        total += n_iter
        if np.isinf(U).any():
            if forcing is None:
                forcing = _goal_forcing(boxes)
            rescue = np.isinf(U) & forcing[0] & (policy != forcing[1])
            if rescue.any():
                policy = np.where(rescue, forcing[1], policy)
                start = np.where(np.isfinite(U), U, 0.0)
                continue
        q = costs + kernels.pour_values(boxes, all_rows, np.append(U, 0.0), True).reshape(S, A)
        best = np.argmin(q, axis=1)
        current = q[states, policy]
        tol = SWITCH_RTOL * max(1.0, float(U[np.isfinite(U)].max(initial=0.0)))
        switch = ((q[states, best] < current - tol)
                  | (np.isinf(current) & np.isfinite(q[states, best])))
        if not switch.any():
            message = _check_message("robust", int(infinite.sum()), dropped, r, total, converged)
            return U, policy, kernel, total, converged, message
        policy = np.where(switch, best, policy)
        start = U
    message = _check_message("robust", int(infinite.sum()), dropped, r, total, False)
    return U, policy, kernel, total, False, message


@NUMPY_KERNELS.bind
def robust_optimal_values(kernels, counts, costs, delta, kind="kl", policy=None):
    r"""The policy minimising the worst-case value over the boxes, and that value, checked.

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    costs : array_like of shape (S, A)
        Costs, ``>= 0``.
    delta : float in (0, 1)
        Confidence level of the boxes.
    kind : {"kl", "bernstein", "paper"}, default "kl"
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


def _check_lower(kernels, boxes, costs, values, q_values=None):
    r"""Accept ``values`` as a lower bound where ``L >= 0`` and ``L <= T L`` (optimist's ``T``).

    The check is made safe from rounding: each computed Q-value counts for
    itself less the bound of :func:`_rounding`. ``L`` is deflated by the
    smallest relative factor ``1 - r`` (:func:`_slack`, ``r <=
    CHECK_MAX_SLACK``) absorbing the solver's residual and that rounding;
    states needing more, and states still failing, are set to 0 until the
    check holds (``L = 0`` passes it). ``q_values``, when given, are the Q-values
    ``c + min_p p V`` of ``values`` (shape ``(S, A)``, the caller's last pour of
    every pair): the first check reuses them when ``L`` is ``values`` to the bit.
    Returns ``(L, number of states set to 0, r)``.
    """
    S, A = boxes.n_states, boxes.n_actions
    all_rows = np.arange(S * A)

    def lower_bellman(L, q=None):
        if q is None:
            q = costs + kernels.pour_values(boxes, all_rows, np.append(L, 0.0),
                                            False).reshape(S, A)
        return (q - _rounding(S, q, float(L.max(initial=0.0)))).min(axis=1)

    L = np.where(np.isfinite(values), np.maximum(values, 0.0), 0.0)
    same = q_values is not None and np.array_equal(L.view(np.uint64), values.view(np.uint64))
    shortfall = np.maximum(L - lower_bellman(L, q_values if same else None), 0.0)
    r, hopeless = _slack(shortfall, L, costs.min(axis=1))
    hopeless &= L > 0
    L = np.where(hopeless, 0.0, L * (1.0 - r))
    dropped = int(hopeless.sum())
    while True:
        fail = ~(lower_bellman(L) >= L) & (L > 0)
        if not fail.any():
            return L, dropped, r
        dropped += int(fail.sum())
        L[fail] = 0.0


def _optimistic(kernels, boxes, costs, policy, start=None):
    """Optimist's PI from ``policy``: ``(L, policy, kernel, n_iter, converged, message)``.

    The first kernel is the pour of ``policy`` against ``start`` (finite
    values, shape ``(S,)``; zeros by default): values close to the fixed point
    (EVI's ``v_tilde``) give a first kernel close to the last and save
    evaluations; each evaluation starts from the previous values. Every
    iteration pours all the rows of the new policy again, by increasing value
    (one pour order per kernel). The start changes the work, never the check,
    which reuses the Q-values of the last evaluation.
    """
    S, A = boxes.n_states, boxes.n_actions
    states, all_rows = np.arange(S), np.arange(S * A)
    policy = policy.copy()
    no_trap = np.zeros(S, dtype=bool)
    values = np.zeros(S) if start is None else start
    kernel = kernels.pour_kernel(boxes, states * A + policy, np.append(values, 0.0), False)
    converged = False
    q = None
    for n_iter in range(1, ROBUST_MAX_ITER + 1):
        values, residual = _evaluate(kernels, kernel, costs[states, policy], no_trap, values)
        if np.isinf(residual):
            q = None
            break
        v_ext = np.append(values, 0.0)
        q = costs + kernels.pour_values(boxes, all_rows, v_ext, False).reshape(S, A)
        best = np.argmin(q, axis=1)
        current = costs[states, policy] + _expected(kernel, v_ext)
        tol = _switch_tolerance(values, residual)
        switch = ((q[states, best] < current - tol)
                  | (np.isinf(current) & np.isfinite(q[states, best])))
        if not switch.any():
            converged = True
            break
        policy = np.where(switch, best, policy)
        kernel = kernels.pour_kernel(boxes, states * A + policy, v_ext, False)
    L, dropped, r = _check_lower(kernels, boxes, costs, values, q)
    how = _how(converged, n_iter)
    if dropped:
        message = (f"optimistic policy iteration {how} after {n_iter} evaluations; the "
                   f"Bellman check failed on {dropped} state(s), set to 0.")
    else:
        message = (f"optimistic policy iteration {how} after {n_iter} evaluations; the "
                   f"Bellman check holds everywhere (relative slack {r:.2g}).")
    return L, policy, kernel, n_iter, converged, message


@NUMPY_KERNELS.bind
def optimistic_values(kernels, counts, costs, delta, kind="kl", policy=None):
    r"""The fixed point of EVI's operator over the boxes: a checked lower bound on ``V*``.

    Parameters
    ----------
    counts : ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    costs : array_like of shape (S, A)
        Costs, ``>= 0``.
    delta : float in (0, 1)
        Confidence level of the boxes.
    kind : {"kl", "bernstein", "paper"}, default "kl"
        The boxes.
    policy : array_like of int, shape (S,), optional
        Starting policy (for example EVI's); by default the cheapest action.

    Returns
    -------
    RobustValuesResult
        ``values`` is ``L`` with ``L <= V*`` on the event (``V*`` the best
        value over proper policies), ``policy`` the optimistic policy and
        ``p_bound`` its optimistic kernel (a
        :class:`~reference.poured.PouredKernel`, poured goal first).

    Notes
    -----
    Policy iteration over (action, kernel) pairs for the minimising player:
    every optimistic kernel pours into the goal first, so every policy it
    builds is proper in its kernel and each step evaluates it
    (the kernel ``poured_chain_values``). Each step switches the actions
    that gain more than the tolerance (``SWITCH_RTOL``, relative, or the
    evaluation's residual if larger) and pours every row of the new policy
    again against the values ``V``, by increasing value: the pour is the
    exact minimiser of each box, so ``c' + P' V <= c + P V = V`` row by row
    (a row that keeps its action changes by at most the rounding, a switched
    one gains more than the tolerance), hence
    :math:`V' - V = (I - Q')^{-1} (c' + P' V - V) \le 0`: the values only
    decrease (up to the rounding and residual of the evaluations), and the
    iteration stops when no action gains more than the tolerance. The result
    ``L`` is accepted where

    .. math::

        L \ge 0 \quad\text{and}\quad L \le \tilde T L = \min_a \Big\{ c(s, a) +
        \min_{p \in B(s, a)} \sum_{s'} p(s') L(s') \Big\}

    with every computed Q-value lowered by a bound on its rounding
    (:func:`_rounding`), after a relative deflation of at most
    ``CHECK_MAX_SLACK``; failing states, and those needing a larger
    deflation, are set to 0. On the event, for any proper policy ``pi`` with true
    kernel ``P_pi``, :math:`L \le \tilde T^n L \le \sum_{t<n} P_\pi^t c_\pi +
    P_\pi^n L \to V^\pi`, so ``L <= V*``. EVI's iterates from 0 converge to
    the same fixed point from below.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros((1, 1, 2)); counts[0, 0] = [0, 2000]
    >>> out = optimistic_values(counts, np.ones((1, 1)), 0.1)
    >>> bool(0.99 < out.values[0] <= 1.0)
    True
    """
    boxes, costs = checked_inputs(kernels, counts, costs, delta, kind)
    if policy is None:
        policy = np.argmin(costs, axis=1)
    policy = check_policy(policy, boxes.n_states, boxes.n_actions)
    L, policy, kernel, n_iter, converged, message = _optimistic(kernels, boxes, costs, policy)
    return RobustValuesResult(values=L, policy=policy, p_bound=kernel,
                              infinite=np.zeros(boxes.n_states, dtype=bool), n_iter=n_iter,
                              converged=converged, message=message)
