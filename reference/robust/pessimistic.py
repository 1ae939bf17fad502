"""The adversary's values of a fixed policy: :func:`robust_policy_values`, an upper bound on
``V^pi``."""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._checks import check_policy
from ..adversary_sets import stays
from ..confidence import EntryBlocks
from ..errors import ParameterError
from ..evi import checked_box
from ..kernels import NUMPY_KERNELS, order_values, pour, pour_order
from .common import (
    RobustValuesResult,
    _check_message,
    _policy_rows,
    checked_inputs,
)

__all__ = ["pessimistic_inner", "robust_policy_values"]


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


def _adversary_graph(boxes, rows):
    """Edges the adversary can give positive mass, for the policy rows ``rows`` (one per state).

    Returns an :class:`_AdversaryGraph`.
    """
    return _AdversaryGraph(boxes, rows)


class _AdversaryGraph:
    """The adversary's graph of the policy rows ``rows`` (one per state) of ``boxes``.

    Attributes
    ----------
    blocks : EntryBlocks
        The rows' stored entries (:class:`~reference.confidence.EntryBlocks`),
        which the searches read: the graph holds no copy of them.
    h : ndarray of float64, shape (S,)
        The rows' unseen upper ends.
    spread : ndarray of bool, shape (S,)
        The rows that can put mass on every unseen next state (free mass
        ``1 - sum lo`` and ``h`` positive).
    edges : tuple of ndarray of int64
        ``(tails, heads)``, the explicit edges between non-goal states (an
        entry with a positive lower end, or a positive upper end in a row with
        free mass), tails ascending; listed when first read (the infinity
        decision needs none when no state can be closed in), then kept.
    """

    def __init__(self, boxes, rows):
        self.boxes, self.blocks = boxes, EntryBlocks(boxes.indptr, rows)
        self.free = np.empty(boxes.n_states, dtype=bool)
        for s0, s1, local, entry in self.blocks:
            self.free[s0:s1] = 1.0 - np.bincount(local, weights=boxes.lo[entry],
                                                 minlength=s1 - s0) > 0
        self.h = boxes.hi_unseen[rows]
        self.spread = self.free & (self.h > 0)
        self._edges = None

    @property
    def edges(self):
        if self._edges is None:
            boxes, free = self.boxes, self.free
            self._edges = _edge_lists(boxes, self.blocks, lambda s0, local, entry: (
                ((boxes.lo[entry] > 0) | (free[s0:][local] & (boxes.hi[entry] > 0)))
                & (boxes.indices[entry] < boxes.n_states)))
        return self._edges


def _edge_lists(boxes, blocks, select):
    """``(tails, heads)``: the states and next states of the stored entries of ``blocks`` (the
    rows of the states, :class:`~reference.confidence.EntryBlocks`) that
    ``select(s0, local, entry)`` keeps (a mask of the entries of a block of states from
    ``s0``), tails ascending. Over several blocks, two passes, so the lists are written once
    in arrays of their size."""
    if blocks.single is not None:
        s0, _, local, entry = blocks.single
        edge = select(s0, local, entry)
        return s0 + local[edge], boxes.indices[entry[edge]]
    ends = [0]
    for s0, _, local, entry in blocks:
        ends.append(ends[-1] + int(np.count_nonzero(select(s0, local, entry))))
    tails, heads = np.empty(ends[-1], dtype=np.int64), np.empty(ends[-1], dtype=np.int64)
    for (s0, _, local, entry), e0, e1 in zip(blocks, ends, ends[1:]):
        edge = select(s0, local, entry)
        tails[e0:e1], heads[e0:e1] = s0 + local[edge], boxes.indices[entry[edge]]
    return tails, heads


def _with_hub(tails, heads, spread, members):
    """Edges plus a hub node ``S``: every spreading member -> hub -> every member."""
    S = members.size
    hub_in = np.flatnonzero(spread & members)
    hub_out = np.flatnonzero(members)
    return (np.concatenate([tails, hub_in, np.full(hub_out.size, S)]),
            np.concatenate([heads, np.full(hub_in.size, S), hub_out]))


def _strong_components(tails, heads, spread, alive):
    """Component labels, ``(S,)``, of the strongly connected components of the edges between
    ``alive`` states with the hub of :func:`_with_hub`.

    The adjacency is the CSR matrix scipy builds from the edge lists of
    :func:`_with_hub` (every row's edges in their order, then its hub edge),
    written in place from ``tails`` (ascending, as :func:`_adversary_graph`
    gives them) without copying the lists.
    """
    S = alive.size
    keep = alive[tails] & alive[heads]
    kept_tails = tails[keep]
    hub_in = spread & alive
    index = np.int32 if kept_tails.size + hub_in.sum() + S < 2**31 else np.int64
    indptr = np.zeros(S + 2, dtype=index)
    np.cumsum(np.bincount(kept_tails, minlength=S) + hub_in, out=indptr[1:S + 1])
    indptr[S + 1] = indptr[S] + np.count_nonzero(alive)
    indices = np.empty(int(indptr[-1]), dtype=index)
    rank = np.arange(kept_tails.size) - np.searchsorted(kept_tails, kept_tails)
    indices[indptr[kept_tails] + rank] = heads[keep]
    del kept_tails, rank
    indices[indptr[1:S + 1][hub_in] - 1] = S
    indices[indptr[S]:] = np.flatnonzero(alive)
    adjacency = sp.csr_array((np.ones(indices.size), indices, indptr), shape=(S + 1, S + 1))
    return connected_components(adjacency, directed=True, connection="strong")[1][:S]


def _staying(boxes, blocks, h, alive, inside, size):
    r"""The states of ``alive`` whose rows can keep the chain in their own set, by sums.

    A state stays when none of its lower ends lies outside its set and its
    upper ends inside it (``h`` for each of the ``size`` unseen states of it)
    sum to at least ``1 - SIMPLEX_SLACK``. ``inside(s0, s1, local, col)``
    tells, for the stored entries of the states ``s0:s1`` (a block of
    ``blocks``, :class:`~reference.confidence.EntryBlocks`) and their next
    states ``col``, whether each lies in its state's set; ``size`` is the size
    of every state's set, shape ``(S,)``; the sums are
    :func:`reference.adversary_sets.stays`.
    """
    keep = np.empty(alive.size, dtype=bool)
    col, lo, hi = boxes.indices, boxes.lo, boxes.hi
    for s0, s1, local, entry in blocks:
        keep[s0:s1] = alive[s0:s1] & stays(local, s1 - s0, inside(s0, s1, local, col[entry]),
                                           lo[entry] > 0, hi[entry], size[s0:s1], h[s0:s1])
    return keep


def _infinite_states(boxes, policy, costs_pi, graph=None, kernels=NUMPY_KERNELS):
    r"""States where the adversary can make the cost of ``policy`` infinite, decided on graphs.

    The adversary makes the value infinite at ``s`` exactly when some kernel in
    the boxes leads ``s``, with positive probability, into a closed class
    holding a positive cost. A set ``X`` can be made closed when every state
    of it has no lower end outside ``X`` (the goal is outside) and upper ends
    summing to at least 1 inside ``X``; the closed classes are the strongly
    connected sets of that kind (the maximal end components of the
    adversary's choices), found by alternately splitting into strongly
    connected components and removing the states that cannot stay in their
    component (:func:`_staying`). The answer is every state with a path into one holding a
    positive cost. With every cost positive this is the largest set whose
    lower ends put no mass outside it, and the states reaching it. The
    splitting starts from the kernel ``closable`` of ``kernels``
    (:func:`reference.adversary_sets.closable`): each component kept passes
    its tests inside itself, so inside any set containing it, and the result
    holds every one (no state is infinite when it is empty, and no graph is
    built then). ``graph`` is :func:`_adversary_graph` of the policy's rows
    when the caller has it; the searches are the kernel ``reaching`` of
    ``kernels``.
    """
    S = boxes.n_states
    rows = _policy_rows(boxes, policy)
    alive = kernels.closable(boxes, rows)
    if not alive.any():
        return alive
    if graph is None:
        graph = _adversary_graph(boxes, rows)
    blocks, h, spread = graph.blocks, graph.h, graph.spread
    tails, heads = graph.edges
    while True:
        labels = np.where(alive, _strong_components(tails, heads, spread, alive), -1)
        label_ext = np.append(labels, -1)
        size = np.bincount(labels[alive], minlength=S + 1)
        keep = _staying(boxes, blocks, h, alive,
                        lambda s0, s1, local, col: ((label_ext[col] == labels[s0:s1][local])
                                                    & (labels[s0:s1][local] >= 0)),
                        np.where(alive, size[np.maximum(labels, 0)], 0))
        if np.array_equal(keep, alive):
            break
        alive = keep
    costly = np.bincount(labels[alive], weights=costs_pi[alive] > 0, minlength=S + 1) > 0
    bad = alive & costly[np.maximum(labels, 0)]
    t, hd = _with_hub(tails, heads, spread, np.ones(S, dtype=bool))
    return kernels.reaching(t, hd, np.append(bad, bad.any()))[:S]


def _zero_states(boxes, policy, costs_pi, graph=None, kernels=NUMPY_KERNELS):
    """States from which no kernel in the boxes reaches a positive cost under ``policy``: their
    value is exactly 0 in every kernel (the graph of :func:`_infinite_states`, ``graph`` and
    ``kernels`` as there); none when every cost is positive (each state has its own)."""
    S = boxes.n_states
    positive = costs_pi > 0
    if positive.all():
        return np.zeros(S, dtype=bool)
    if graph is None:
        graph = _adversary_graph(boxes, _policy_rows(boxes, policy))
    (tails, heads), spread = graph.edges, graph.spread
    t, hd = _with_hub(tails, heads, spread, np.ones(S, dtype=bool))
    return ~kernels.reaching(t, hd, np.append(positive, positive.any()))[:S]


def _check_upper(kernels, boxes, policy, costs_pi, values, graph=None):
    r"""Accept ``values`` as an upper bound only where ``U >= 0`` and ``T_pi U <= U`` hold.

    The check is made safe from rounding: a state passes when the computed
    :math:`T_\pi U` plus the bound of its row
    (:func:`~reference.check_rounding.rounding_bound`) is at most ``U``, or
    when no kernel leads it to a positive cost (:func:`_zero_states`, where
    ``U = 0`` is exact). A row whose free mass rounds to about 0 fails when it
    gives a state of infinite ``U`` a positive width
    (:func:`reference.robust_checks.meets_infinite`: the exact pour might put a
    little mass there). ``U`` is first inflated by the smallest relative factor ``1 + r``
    (:func:`reference.robust_checks.slack`, ``r <= CHECK_MAX_SLACK``) that absorbs
    the solver's residual and that rounding; states needing more, and states
    where the check still fails, are set to ``+inf``, which can make their
    predecessors fail, until the check holds everywhere. ``graph`` is
    :func:`_adversary_graph` of the policy's rows when the caller has it. The
    check is the kernel ``upper_check``. Returns ``(U, number of states set to inf by
    the check, r)``.
    """
    exact_zero = _zero_states(boxes, policy, costs_pi, graph, kernels)
    return kernels.upper_check(boxes, _policy_rows(boxes, policy), costs_pi, values, exact_zero)


def _robust_values(kernels, boxes, costs_pi, policy, start=None):
    """``U^pi`` of ``policy`` with the infinity decision, adversary PI (the kernel
    ``adversary_iteration``) and the Bellman check (each builds the adversary's graph
    only when a search needs it). The adversary's kernel is kept as its pour order while
    the check runs, then poured again from it (``pour_kernel`` reads its values only
    through their pour order: the same kernel)."""
    S = boxes.n_states
    rows = _policy_rows(boxes, policy)
    infinite = _infinite_states(boxes, policy, costs_pi, None, kernels)
    if start is None:
        start = np.zeros(S)
    elif not np.isfinite(start).all():
        start = np.where(np.isfinite(start), start, 0.0)
    values, kernel, n_iter, converged = kernels.adversary_iteration(boxes, rows, costs_pi,
                                                                    infinite, start)
    order = kernel.order
    del kernel
    U, dropped, r = _check_upper(kernels, boxes, policy, costs_pi, values)
    kernel = kernels.pour_kernel(boxes, rows, order_values(order, True), True)
    return U, kernel, infinite, n_iter, converged, dropped, r


@NUMPY_KERNELS.bind
def robust_policy_values(kernels, counts, costs, policy, delta, kind="kl"):
    r"""Worst-case value ``U^pi`` of a policy over the confidence boxes, checked.

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts.
    costs : array_like of shape (S, A)
        Costs, ``>= 0``.
    policy : array_like of int, shape (S,)
        The policy.
    delta : float in (0, 1)
        Confidence level of the boxes.
    kind : {"kl", "mixture", "bernstein", "paper"}, default "kl"
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
       (:func:`~reference.check_rounding.rounding_bound`, about ``8 N u``
       of ``T U + max U`` for a row whose pour can touch ``N <= S + 1``
       next states), after a
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
