r"""Values of absorbing Markov chains with non-negative costs: exact for explicit chains,
candidates for poured kernels.

The one solver behind :func:`~reference.evaluation.policy_values`,
:func:`~reference.evaluation.hitting_times`, policy iteration, the optimal values
and the diameter. It answers

.. math::

    V = c + Q V, \qquad V \ge 0,

on the states of a chain ``P`` (shape ``(S, S+1)``, goal last), with the
finite / infinite / zero split decided on the support graph (docs/semantics.md,
"Model"), which is exact for every function here. The finite values are:

- exact for an explicit chain (CSR or dense): :func:`chain_values` (and
  :func:`transient_values`) certifies them to :data:`CERTIFIED_RTOL` relative
  accuracy or computes them by a subtraction-free elimination (GTH) whose
  relative accuracy does not depend on the conditioning;
- for a :class:`~reference.poured.PouredKernel` with more than
  :data:`DENSE_MAX_STATES` states, uncertified candidates:
  :func:`poured_values` and :func:`poured_occupancy` solve iteratively in
  ``O(S + stored)`` memory, and the residual :func:`poured_values` returns
  does not bound the forward error (its callers check the values against
  the Bellman operator); with fewer states :func:`poured_values` expands
  the kernel and is exact as :func:`chain_values`, and
  :func:`poured_occupancy` uses a sparse LU (uncertified). The compiled
  kernel set evaluates poured kernels of every size iteratively (its kernel
  ``poured_chain_values``, docs/backends.md), with :func:`poured_values` as
  its fallback.

The chain is read as given: the probability of leaving a state is the sum of
its stored probabilities to the goal and to other states, never ``1 - P[s, s]``.
A row's rounding defect (at most ``ROW_SUM_TOL`` after validation) is thereby
attributed to staying put, so that a goal probability of ``1e-17`` next to a
self-loop of ``1`` means an expected ``1e17`` steps, not a singular system.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgWarning, lu_factor, lu_solve
from scipy.sparse.csgraph import breadth_first_order, connected_components
from scipy.sparse.linalg import LinearOperator, MatrixRankWarning, bicgstab, gmres, spsolve

from .errors import ConvergenceError, ParameterError, ShapeError
from .poured import PouredKernel

__all__ = []

CERTIFIED_RTOL = 1e-10
r"""Largest certified relative error of a value from a floating-point solve.

A direct or iterative solution is kept only where the a posteriori bound of
:func:`_certified` proves :math:`|\hat V(s) - V(s)| \le` ``CERTIFIED_RTOL``
:math:`\cdot V(s)` for every state; otherwise the whole block is solved by
elimination (:func:`_gth`).
"""

DENSE_MAX_STATES = 1_000
"""Largest chain solved by dense LU (LAPACK) before the elimination is tried; a sparse one
below :data:`ITERATIVE_MIN_STATES` is densified for it."""

ITERATIVE_MIN_STATES = 1_000
"""Sparse transient systems with at least this many states are tried with BiCGSTAB first."""

KRYLOV_MAXITER = 200
"""BiCGSTAB iterations per run before elimination takes over."""

REFINEMENT_STEPS = 2
"""BiCGSTAB runs on the residual after the first one (iterative refinement)."""

DENSE_SWITCH_STATES = 300
"""Sparse elimination hands the remaining states to the dense elimination below this many."""

DENSE_SWITCH_FILL = 0.2
"""... or once the remaining matrix holds this fraction of its ``n**2`` entries."""

ELIMINATION_MAX_STATES = 4_000
"""Largest dense block the elimination accepts (about 20 s of numpy updates)."""

UNIT_ROUNDOFF = 2.0**-53
"""Unit roundoff ``u`` of float64."""


def _reaching(tails, heads, targets):
    """Mask of the nodes with a path (possibly empty) into ``targets``.

    ``tails -> heads`` are the edges of a graph on ``targets.size`` nodes. The reversed
    edges, and one from an extra node to every target, are grouped by their tail into CSR
    by a stable sort (numpy's radix sort, on 16-bit keys, below ``2**16`` nodes), and the
    mask is what a breadth-first search from the extra node reaches.
    """
    n = targets.size
    if not targets.any():
        return np.zeros(n, dtype=bool)
    sources = np.flatnonzero(targets)
    rows = np.concatenate([heads, np.full(sources.size, n)])
    cols = np.concatenate([tails, sources])
    by_row = np.argsort(rows.astype(np.uint16) if n < 2**16 else rows, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n + 1))])
    reverse = sp.csr_array((np.ones(rows.size), cols[by_row], indptr), shape=(n + 1, n + 1))
    order = breadth_first_order(reverse, n, directed=True, return_predecessors=False)
    mask = np.zeros(n + 1, dtype=bool)
    mask[order] = True
    return mask[:n]


def closed_classes(chain):
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
    labels, closed = _closed(S, tails, heads, edges.row[~inner])
    return labels, closed, tails, heads


def _closed(n, tails, heads, exit_from):
    """Strongly connected components of a graph on ``n`` nodes and whether each is closed.

    ``tails -> heads`` are its edges; the nodes ``exit_from`` also leave the
    graph (towards the goal). Returns the component of each node and whether
    it has no edge leaving it, as :func:`closed_classes`.
    """
    graph = sp.csr_array((np.ones(tails.size), (tails, heads)), shape=(n, n))
    n_comp, labels = connected_components(graph, directed=True, connection="strong")
    exit_from = np.concatenate([exit_from, tails[labels[tails] != labels[heads]]])
    has_exit = np.zeros(n_comp, dtype=bool)
    has_exit[labels[exit_from]] = True
    return labels, ~has_exit[labels]


def direct_exits(chain):
    """Mask of the rows of ``chain`` (CSR or dense, ``(n, S+1)``, goal last) with a positive goal entry."""
    goal = chain.shape[1] - 1
    if not sp.issparse(chain):
        return chain[:, goal] > 0
    chain.sort_indices()
    stored = np.diff(chain.indptr) > 0
    last = chain.indptr[1:][stored] - 1
    exits = np.zeros(chain.shape[0], dtype=bool)
    exits[stored] = (chain.indices[last] == goal) & (chain.data[last] > 0)
    return exits


def has_closed_class(chain):
    """Whether the chain (CSR or dense, ``(S, S+1)``) has a closed class of non-goal states."""
    if direct_exits(chain).all():
        return False
    return bool(closed_classes(sp.csr_array(chain))[1].any())


def _splits(chain, costs):
    """The support-graph split of :func:`chain_values`: masks ``(infinite, transient)``.

    With every cost positive every closed class is costly, and the states
    reaching one are those reaching a state that cannot reach the goal (each
    closed class is among those, and each of those reaches one): two
    searches, no strongly connected components.
    """
    S = chain.shape[0]
    direct_exit = direct_exits(chain)
    positive = costs > 0
    if direct_exit.all() and positive.all():
        return np.zeros(S, dtype=bool), np.ones(S, dtype=bool)
    if positive.all():
        edges = sp.csr_array(chain).tocoo()
        inner = edges.col < S
        tails, heads = edges.row[inner], edges.col[inner]
        stuck = ~_reaching(tails, heads, direct_exit)
        infinite = _reaching(tails, heads, stuck)
        return infinite, ~infinite
    labels, closed, tails, heads = closed_classes(sp.csr_array(chain))
    costly_class = np.bincount(labels, weights=positive.astype(float)) > 0
    infinite = _reaching(tails, heads, closed & costly_class[labels])
    return infinite, _reaching(tails, heads, positive) & ~infinite


def _restricted(chain, states):
    """Off-diagonal block ``Q`` on ``states`` and the exit mass of each (never ``1 - Q[s, s]``).

    Returns
    -------
    Q : CSR or ndarray, shape (n, n)
        :math:`P_\\pi` restricted to ``states``, diagonal set to zero (dense) or
        removed (CSR). Dense when ``chain`` is, or when the block is small
        enough for the dense LU of :func:`transient_values` (fewer than
        :data:`ITERATIVE_MIN_STATES`, at most :data:`DENSE_MAX_STATES` states).
    exits : ndarray of float64, shape (n,)
        The summed probability of moving outside ``states`` (goal included).
    """
    S = chain.shape[0]
    small = states.size < ITERATIVE_MIN_STATES and states.size <= DENSE_MAX_STATES
    if states.size == S and (small or not sp.issparse(chain)):
        chain = chain.toarray() if sp.issparse(chain) else chain.copy()
        Q = chain[:, :S]
        np.fill_diagonal(Q, 0.0)
        return Q, chain[:, S].copy()
    inside = np.zeros(S + 1, dtype=bool)
    inside[states] = True
    rows = chain[states]
    if sp.issparse(rows):
        rows = sp.csr_array(rows)
        if small:
            rows = rows.toarray()
    if sp.issparse(rows):
        keep = inside[rows.indices]
        exits = np.bincount(
            np.repeat(np.arange(states.size), np.diff(rows.indptr))[~keep],
            weights=rows.data[~keep], minlength=states.size,
        )
        Q = rows[:, states]
        Q = _without_diagonal(sp.csr_array(Q))
        return Q, exits
    exits = rows[:, ~inside].sum(axis=1)
    Q = rows[:, states]
    np.fill_diagonal(Q, 0.0)
    return Q, exits


def _without_diagonal(Q):
    """CSR ``Q`` with its diagonal entries and explicit zeros dropped."""
    Q = Q.tocoo()
    keep = (Q.row != Q.col) & (Q.data != 0.0)
    return sp.csr_array((Q.data[keep], (Q.row[keep], Q.col[keep])), shape=Q.shape)


def _row_sums(Q):
    """Row sums of a non-negative ``Q`` (CSR or dense), shape ``(n,)``."""
    return np.asarray(Q.sum(axis=1)).ravel()


def _certified(Q, exits, rhs, values, times):
    r"""Which entries of ``values`` are certified to :data:`CERTIFIED_RTOL` relative error.

    Parameters
    ----------
    Q : CSR or ndarray, shape (n, n)
        Off-diagonal transition block, non-negative.
    exits : ndarray of float64, shape (n,)
        Exit mass of each state.
    rhs : ndarray of float64, shape (n,)
        Costs, ``> 0`` somewhere downstream of every state.
    values, times : ndarray of float64, shape (n,)
        Candidate solutions of :math:`M V = c` and :math:`M \tau = 1`.

    Returns
    -------
    ndarray of bool, shape (n,)

    Notes
    -----
    With :math:`d = e + Q 1` and :math:`M = \mathrm{diag}(d) - Q`, a non-singular
    M-matrix (:math:`M^{-1} \ge 0`), the error of any candidate obeys
    :math:`|\hat V - V| \le M^{-1} R \le \|R\|_\infty \tau`, where :math:`R`
    bounds the true residual: the computed one plus the rounding of computing
    it (and of :math:`d`), at most :math:`\gamma (c + d |\hat V| + Q |\hat V|)`
    with :math:`\gamma = (2k + 8) u` for rows of ``k`` nonzero entries (a zero
    entry of a dense ``Q`` contributes exact zeros, no rounding). Applied to
    :math:`\hat\tau` itself, :math:`\tau \le \hat\tau / (1 - \rho)` with
    :math:`\rho = \|R_\tau\|_\infty < 1`. A state is certified when

    .. math::

        b(s) = \frac{\|R\|_\infty\, \hat\tau(s)}{1 - \rho}, \qquad
        b(s) \le \mathrm{CERTIFIED\_RTOL} \cdot (\hat V(s) - b(s)).

    The bound is relative to the exit masses as summed in floating point; the
    exact sums differ from them by a relative ``k u``, which moves every value
    by a relative ``O(n k u)`` at most (a componentwise perturbation of a
    non-negative chain, the argument behind :func:`_gth`).
    """
    n = rhs.size
    if not (np.all(values > 0) and np.all(times > 0)
            and np.isfinite(values.max()) and np.isfinite(times.max())):
        return np.zeros(n, dtype=bool)
    width = np.diff(Q.indptr).max() if sp.issparse(Q) else np.count_nonzero(Q, axis=1).max()
    gamma = (2 * int(width) + 8) * UNIT_ROUNDOFF
    d = exits + _row_sums(Q)

    def bound(target, candidate):
        stay = d * candidate
        flow = Q @ candidate
        residual = np.abs(target - stay + flow)
        return float((residual + gamma * (target + stay + flow)).max())

    rho = bound(np.ones(n), times)
    if not rho < 1.0:
        return np.zeros(n, dtype=bool)
    error = bound(rhs, values) * times / (1.0 - rho)
    return error <= CERTIFIED_RTOL * (values - error)


def _lu_values(Q, exits, rhs):
    """Dense LU solution of :math:`M [V, \\tau] = [c, 1]` (see :func:`_certified`)."""
    M = -Q
    M[np.diag_indices_from(M)] = exits + _row_sums(Q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)
        both = lu_solve(lu_factor(M, overwrite_a=True, check_finite=False),
                        np.column_stack([rhs, np.ones(rhs.size)]), check_finite=False)
    return both[:, 0], both[:, 1]


def _bicgstab(system, diagonal, rhs, enough=0.0):
    """Jacobi-preconditioned BiCGSTAB with iterative refinement; ``None`` on failure.

    Each run solves for the correction of the current iterate from the
    normalised residual (BiCGSTAB's breakdown tests are absolute); the
    refinement stops once the residual's 2-norm is at most ``enough``.
    """
    jacobi = LinearOperator(system.shape, matvec=lambda r: r / diagonal, dtype=np.float64)
    values, residual = np.zeros_like(rhs), rhs
    for _ in range(1 + REFINEMENT_STEPS):
        scale = np.linalg.norm(residual)
        if scale <= enough:
            break
        step, info = bicgstab(system, residual / scale, rtol=1e-13, atol=0.0,
                              maxiter=KRYLOV_MAXITER, M=jacobi)
        if info != 0:
            return None
        values = values + scale * step
        residual = rhs - system @ values
    return values


def _krylov_values(Q, exits, rhs):
    """BiCGSTAB solutions of :math:`M V = c` and :math:`M \\tau = 1`; ``None`` on failure."""
    diagonal = exits + _row_sums(Q)
    system = (sp.diags_array(diagonal) - Q).tocsr()
    values = _bicgstab(system, diagonal, rhs)
    times = None if values is None else _bicgstab(system, diagonal, np.ones(rhs.size))
    if times is None:
        return None
    return values, times


def _hash_order(ids):
    """A fixed pseudo-random number in ``[0, 1)`` per state index (tie-breaks, no RNG)."""
    return ((ids.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(2**32)) / 2.0**32


def _independent_set(Q, ids):
    """States to eliminate together: pairwise non-adjacent, of locally minimal degree.

    Luby's rule on the symmetrised support of ``Q``: a candidate (degree at most
    twice the smallest, plus two) is taken when its key, degree plus a fixed
    tie-break in ``[0, 1)``, is below the key of every candidate neighbour;
    taken states and their neighbours leave the candidates; a few rounds.
    """
    graph = (Q + Q.T).tocsr()
    n = graph.shape[0]
    degree = np.diff(graph.indptr)
    key = degree + _hash_order(ids)
    candidate = degree <= 2 * degree.min() + 2
    chosen = np.zeros(n, dtype=bool)
    owner = np.repeat(np.arange(n), degree)
    linked = degree > 0
    for _ in range(4):
        if not candidate.any():
            break
        neighbour_key = np.where(candidate[graph.indices], key[graph.indices], np.inf)
        smallest = np.full(n, np.inf)
        if graph.nnz:
            smallest[linked] = np.minimum.reduceat(neighbour_key, graph.indptr[:-1][linked])
        new = candidate & (key < smallest)
        chosen |= new
        blocked = new.copy()
        blocked[graph.indices[new[owner]]] = True
        candidate &= ~blocked
    return chosen


def _gth_dense(A, exits, B, names):
    """Subtraction-free elimination on a dense block (overwrites its arguments).

    Parameters
    ----------
    A : ndarray of float64, shape (n, n)
        Off-diagonal transition block (the diagonal is never read).
    exits : ndarray of float64, shape (n,)
    B : ndarray of float64, shape (n, m)
        Right-hand sides.
    names : ndarray of int, shape (n,)
        The chain's names of the states, for messages.

    Returns
    -------
    values : ndarray of float64, shape (n, m)
    pivots : ndarray of float64, shape (n,)
        The leaving probability of each state when it was eliminated.
    """
    n = A.shape[0]
    pivots = np.empty(n)
    for k in range(n):
        row = A[k, k + 1:]
        pivots[k] = exits[k] + row.sum()
        _check_pivots(pivots[k:k + 1], names[k:k + 1])
        column = A[k + 1:, k] / pivots[k]
        hit = np.flatnonzero(column)
        if hit.size:
            weight = column[hit]
            rows = k + 1 + hit
            A[rows, k + 1:] += np.outer(weight, row)
            exits[rows] += weight * exits[k]
            B[rows] += np.outer(weight, B[k])
    values = np.empty_like(B)
    for k in range(n - 1, -1, -1):
        values[k] = (B[k] + A[k, k + 1:] @ values[k + 1:]) / pivots[k]
    return values, pivots


def _gth(Q, exits, B, states):
    r"""Subtraction-free solution of :math:`M X = B` (GTH-style state elimination).

    Parameters
    ----------
    Q : CSR or ndarray, shape (n, n)
        Off-diagonal transition block, non-negative.
    exits : ndarray of float64, shape (n,)
        Exit mass of each state.
    B : ndarray of float64, shape (n, m)
        Non-negative right-hand sides.
    states : ndarray of int, shape (n,)
        The chain's names of the ``n`` states, for messages.

    Returns
    -------
    values : ndarray of float64, shape (n, m)
    stats : dict
        ``levels`` (sparse rounds), ``dense`` (size of the final dense block),
        ``nnz`` (stored entries of ``Q`` at the start of each round and of the
        dense block), the fill-in record.

    Raises
    ------
    ConvergenceError
        If the dense block exceeds :data:`ELIMINATION_MAX_STATES`, or a state
        leaves with a probability that underflows to zero.

    Notes
    -----
    Eliminating a state ``k`` of leaving probability
    :math:`d_k = e_k + \sum_{j \ne k} Q_{kj}` (the exit and the states still
    present, never :math:`1 - Q_{kk}`) replaces, for every ``i``,

    .. math::

        Q_{ij} \mathrel{+}= \frac{Q_{ik} Q_{kj}}{d_k}, \qquad
        e_i \mathrel{+}= \frac{Q_{ik} e_k}{d_k}, \qquad
        B_i \mathrel{+}= \frac{Q_{ik} B_k}{d_k},

    and back-substitution gives :math:`X_k = (B_k + \sum_{j\ \mathrm{later}} Q_{kj} X_j) / d_k`.
    Every operation adds, multiplies or divides non-negative numbers, so every
    rounding error is a relative perturbation of at most ``u`` of a
    non-negative quantity: no cancellation, and the relative error of each
    entry is bounded by a low-degree polynomial in ``n`` times ``u``, however
    ill-conditioned :math:`M` is (the GTH argument). Sparse chains are
    eliminated in rounds: each round takes an independent set of states of
    small degree (:func:`_independent_set`), whose eliminations do not
    interact, as one sparse Schur complement; the remainder, once small or
    dense, goes through the dense loop (:func:`_gth_dense`).
    """
    n = exits.size
    if not sp.issparse(Q) and np.count_nonzero(Q) < DENSE_SWITCH_FILL * n**2:
        Q = sp.csr_array(Q)
    B = np.array(B, dtype=np.float64, copy=True)
    exits = np.array(exits, dtype=np.float64, copy=True)
    ids = np.arange(n)
    rounds, stats = [], {"levels": 0, "nnz": []}
    if sp.issparse(Q):
        Q = sp.csr_array(Q)
        while Q.shape[0] > DENSE_SWITCH_STATES and Q.nnz < DENSE_SWITCH_FILL * Q.shape[0] ** 2:
            stats["nnz"].append(int(Q.nnz))
            chosen = _independent_set(Q, ids)
            pick, rest = np.flatnonzero(chosen), np.flatnonzero(~chosen)
            out = Q[pick]
            pivots = exits[pick] + _row_sums(out)
            _check_pivots(pivots, states[ids[pick]])
            forward = out[:, rest].tocsr()
            inward = Q[rest][:, pick].tocsr()
            inward.data /= pivots[inward.indices]
            Q = _without_diagonal(sp.csr_array(Q[rest][:, rest] + inward @ forward))
            exits = exits[rest] + inward @ exits[pick]
            rounds.append((ids[pick], ids[rest], forward, pivots, B[pick]))
            B = B[rest] + inward @ B[pick]
            ids = ids[rest]
        stats["levels"] = len(rounds)
        if Q.shape[0] > ELIMINATION_MAX_STATES:
            _too_large(states[ids])
        stats["nnz"].append(int(Q.nnz))
        Q = Q.toarray()
    elif n > ELIMINATION_MAX_STATES:
        _too_large(states)
    else:
        Q = np.array(Q, dtype=np.float64, copy=True)
    stats["dense"] = int(Q.shape[0])
    values = np.empty((n, B.shape[1]))
    values[ids] = _gth_dense(Q, exits, B, states[ids])[0]
    for pick, rest, forward, pivots, rhs in reversed(rounds):
        values[pick] = (rhs + forward @ values[rest]) / pivots[:, None]
    return values, stats


def _check_pivots(pivots, names):
    if not np.all(pivots > 0.0):
        s = int(names[np.flatnonzero(~(pivots > 0.0))[0]])
        raise ConvergenceError(
            f"the probability of leaving state {s} towards the goal underflows to zero in "
            "double precision: its expected cost is beyond the float64 range."
        )


def _too_large(names):
    raise ConvergenceError(
        f"no floating-point solve could be certified to relative accuracy {CERTIFIED_RTOL:g} "
        f"on the {names.size} states {_name_states(names)}, and their exact elimination "
        f"needs a dense block of {names.size} states, above `ELIMINATION_MAX_STATES` = "
        f"{ELIMINATION_MAX_STATES}."
    )


def _name_states(names):
    shown = ", ".join(str(int(s)) for s in names[:8])
    return f"[{shown}{', ...' if names.size > 8 else ''}]"


def transient_values(Q, exits, rhs, states):
    r"""Values of the transient states: :math:`V = c + Q V` with exit mass ``exits``.

    Parameters
    ----------
    Q : CSR or ndarray, shape (n, n)
        Off-diagonal transition block of the transient states, non-negative.
    exits : ndarray of float64, shape (n,)
        The probability of leaving the block from each state, ``> 0`` somewhere
        downstream of every state.
    rhs : ndarray of float64, shape (n,)
        Costs; every state reaches a positive one.
    states : ndarray of int, shape (n,)
        The chain's names of the states, for messages.

    Returns
    -------
    ndarray of float64, shape (n,), all ``> 0``

    Raises
    ------
    ConvergenceError
        If a value exceeds the float64 range, or the exact elimination is too
        large (:func:`_gth`).

    Notes
    -----
    A sparse block (or a dense one above :data:`DENSE_MAX_STATES` states,
    stored sparse) of at least :data:`ITERATIVE_MIN_STATES` states is solved
    by BiCGSTAB, any other block of at most :data:`DENSE_MAX_STATES` states by
    dense LU (a sparse one densified: a few milliseconds at 500 states, where
    the elimination's loop of row updates takes tens); the answer is kept
    where :func:`_certified` proves the relative error at most
    :data:`CERTIFIED_RTOL`, with the rounding of the residual bounded by the
    stored entries of the rows. Anything else (uncertified answers, failed
    solves) is solved by subtraction-free elimination (:func:`_gth`).
    """
    n = rhs.size
    if n == 0:
        return np.zeros(0)
    candidate = None
    if not sp.issparse(Q) and n > DENSE_MAX_STATES:
        Q = sp.csr_array(Q)
    if sp.issparse(Q) and n >= ITERATIVE_MIN_STATES:
        candidate = _krylov_values(Q, exits, rhs)
    elif n <= DENSE_MAX_STATES:
        candidate = _lu_values(Q.toarray() if sp.issparse(Q) else Q, exits, rhs)
    if candidate is not None and _certified(Q, exits, rhs, *candidate).all():
        values = candidate[0]
    else:
        values = _gth(Q, exits, rhs[:, None], states)[0][:, 0]
    if not np.all(np.isfinite(values)):
        raise ConvergenceError(
            f"the expected cost from the states {_name_states(states[~np.isfinite(values)])} "
            "exceeds the float64 range."
        )
    return values


def chain_values(chain, costs):
    """Exact values of a Markov chain with costs, ``+inf`` where they diverge.

    Parameters
    ----------
    chain : scipy.sparse CSR or ndarray, shape (S, S+1)
        Transition matrix of the policy (the last column is the goal).
    costs : ndarray of float64, shape (S,)
        Cost of each state under the policy, ``>= 0``.

    Returns
    -------
    ndarray of float64, shape (S,), all ``>= 0``
        ``+inf`` on the states that reach a closed class holding a positive
        cost, ``0`` on those that reach no positive cost, and the solution of
        :func:`transient_values` on the others.
    """
    S = chain.shape[0]
    infinite, transient = _splits(chain, costs)
    values = np.zeros(S)
    values[infinite] = np.inf
    states = np.flatnonzero(transient)
    if states.size:
        Q, exits = _restricted(chain, states)
        values[states] = transient_values(Q, exits, costs[states], states)
    return values


POURED_RTOL = 1e-14
"""Backward error at which :func:`_poured_solve` stops refining (about the rounding floor
of the kernel's product)."""

POURED_ACCEPT = 1e-11
"""Backward error above which :func:`_poured_solve` turns to its fallbacks."""

POURED_FAIL = 1e-6
"""Backward error of the best candidate above which :func:`poured_values` raises: a system
perturbed by this much (relative) is no longer the chain's."""

POURED_ROUNDS = 4
"""Most calls of :func:`_bicgstab` (each with its own refinement) on the current residual."""

GMRES_RESTART = 20
"""Krylov vectors kept by the GMRES fallback of :func:`_poured_solve` (its memory is this many
vectors of the transient states)."""

JACOBI_SWEEPS = 500
"""Jacobi sweeps of the last fallback of :func:`_poured_solve`."""

OCCUPANCY_RTOL = 1e-8
"""Backward error (:func:`_poured_solve`) above which :func:`poured_occupancy` reports a
failed solve (zeros)."""


def _check_poured(kernel, vectors):
    """The number of states ``S`` of a square ``(S, S+1)`` kernel, after checking the arguments."""
    if not isinstance(kernel, PouredKernel):
        raise ParameterError(
            f"`kernel` must be a PouredKernel; got {type(kernel).__name__}."
        )
    S = kernel.shape[0]
    if kernel.shape[1] != S + 1:
        raise ShapeError(f"`kernel` must have shape (S, S+1); got {kernel.shape}.")
    for name, vector in vectors.items():
        if vector.shape != (S,):
            raise ShapeError(f"`{name}` must have shape (S,) = ({S},); got {vector.shape}.")
    return S


def _poured_leaving(kernel):
    r"""Leaving probability :math:`\sum_{j \ne s} P[s, j]` (goal included) of every row of a
    square ``PouredKernel``, shape ``(S,)``.

    Summed from the row's pieces, never ``1 - P[s, s]``: its stored entries
    other than ``s``, ``width`` times the number of unseen next states before
    the reach other than ``s``, and the partial unless it falls on ``s``.
    """
    S = kernel.shape[0]
    rows = kernel._rows()
    before = kernel.rank[kernel.indices] < kernel.reach[rows]
    other = kernel.indices != rows
    stored_self = np.zeros(S, dtype=bool)
    stored_self[rows[~other]] = True
    own = kernel.rank[:S]
    self_before = ~stored_self & (own < kernel.reach)
    self_at_reach = ~stored_self & (own == kernel.reach)
    unseen = kernel.reach - np.bincount(rows[before], minlength=S) - self_before
    partial = np.where(kernel._unseen_at_reach() & ~self_at_reach, kernel.partial, 0.0)
    stored = np.bincount(rows[other], weights=kernel.data[other], minlength=S)
    return stored + kernel.width * unseen + partial


def _offdiagonal_products(kernel):
    r"""Products by the off-diagonal part :math:`Q` of a square ``PouredKernel``, in ``O(S +
    stored)`` each, with the pieces of the rows found once.

    Returns
    -------
    forward : callable
        ``x -> Q x``, ``x`` finite of shape ``(S+1,)`` (goal last), result ``(S,)``.
    backward : callable
        ``y -> y Q``, ``y`` finite of shape ``(S,)``, result ``(S+1,)``.

    Notes
    -----
    The kernel's ``kernel @ x`` and ``y @ kernel`` (its prefix and suffix sums
    along ``order``), with the diagonal entry of every row left out rather
    than subtracted afterwards: a stored self-loop of probability close to 1
    would otherwise swamp the flow from the other states (the convention of
    this module, never ``1 - P[s, s]``). A self-loop through the width is
    taken out of the row's prefix sum, within the rounding of that sum.
    """
    S = kernel.shape[0]
    rows, before, _ = kernel._stored_before_reach()
    other = kernel.indices != rows
    o_rows, o_cols, o_data = rows[other], kernel.indices[other], kernel.data[other]
    b_rows, b_cols = rows[before], kernel.indices[before]
    stored_self = np.zeros(S, dtype=bool)
    stored_self[rows[~other]] = True
    own = kernel.rank[:S]
    self_before = ~stored_self & (own < kernel.reach)
    self_at_reach = ~stored_self & (own == kernel.reach)
    partial = np.where(kernel._unseen_at_reach() & ~self_at_reach, kernel.partial, 0.0)
    partial_to = kernel.order[np.minimum(kernel.reach, S)]
    width = kernel.width

    def forward(x):
        along = np.concatenate([[0.0], np.cumsum(x[kernel.order])])
        unseen = (along[kernel.reach] - np.bincount(b_rows, weights=x[b_cols], minlength=S)
                  - np.where(self_before, x[:S], 0.0))
        stored = np.bincount(o_rows, weights=o_data * x[o_cols], minlength=S)
        return stored + width * unseen + partial * x[partial_to]

    def backward(y):
        full = width * y
        reaching = np.bincount(kernel.reach, weights=full, minlength=S + 2)
        out = np.zeros(S + 1)
        out[kernel.order] = np.cumsum(reaching[::-1])[::-1][1:]
        out -= np.bincount(b_cols, weights=full[b_rows], minlength=S + 1)
        out[:S] -= np.where(self_before, full, 0.0)
        out += np.bincount(partial_to, weights=partial * y, minlength=S + 1)
        return out + np.bincount(o_cols, weights=o_data * y[o_rows], minlength=S + 1)

    return forward, backward


def _interval_edges(owners, lo, hi, n_leaves, leaf_nodes, base):
    """Edges from ``owners`` to the nodes of a bottom-up segment tree covering ``[lo, hi)``.

    The tree has ``n_leaves`` leaves (leaf ``j`` is the node ``leaf_nodes[j]``)
    and internal nodes ``1 .. n_leaves - 1`` (node ``v`` is ``base + v``, with
    children ``2v`` and ``2v + 1``); every interval takes at most
    ``2 log2(n_leaves)`` of them, whose leaves are exactly the interval.
    """
    lo, hi = lo + n_leaves, hi + n_leaves
    tails, heads = [owners[:0]], [lo[:0]]
    while True:
        active = lo < hi
        if not active.any():
            break
        owners, lo, hi = owners[active], lo[active], hi[active]
        left = (lo & 1) == 1
        tails.append(owners[left])
        heads.append(lo[left])
        lo = lo + left
        right = (hi & 1) == 1
        hi = hi - right
        tails.append(owners[right])
        heads.append(hi[right])
        lo, hi = lo >> 1, hi >> 1
    heads = np.concatenate(heads)
    heads = np.where(heads >= n_leaves, leaf_nodes[np.maximum(heads - n_leaves, 0)],
                     base + heads)
    return np.concatenate(tails), heads


def _poured_graph(kernel):
    r"""The support graph of a square ``PouredKernel`` in ``O(S + stored)`` edges, unexpanded.

    Returns
    -------
    n_nodes : int
        Nodes ``0 .. S-1`` are the states, node ``S`` stands for the goal (no
        edge), the others are auxiliary.
    tails, heads : ndarray of int64
        Edges between nodes (none into the goal).
    exits : ndarray of bool, shape (n_nodes,)
        The nodes with an edge to the goal.

    Notes
    -----
    A row of positive width moves to every unseen next state ranked before
    its reach. Node ``S + k`` (:math:`P_k`, ``k = 1 .. S+1``) stands for the
    first ``k`` positions of ``order``, with edges :math:`P_k \to`
    ``order[k-1]`` and :math:`P_k \to P_{k-1}`; a row moves to :math:`P_a`
    with ``a`` its reach, or the rank of its first stored entry of probability
    0 before the reach when it has one. The unseen runs between such entries
    (rare: a box ``[0, 0]`` among boxes of positive width) are covered by the
    nodes of a segment tree over ``order`` (:func:`_interval_edges`, ``O(log
    S)`` edges each). The row's partial (when positive, at an unseen next
    state) and its positive stored entries are direct edges. Hence
    ``O(S + stored + Z log S)`` edges for ``Z`` stored zeros before the reach.

    For the states the graph answers as the expanded support graph: an
    auxiliary node reaches, within auxiliary nodes, exactly next states that
    every row pointing to it reaches in one step, so a state reaches another
    (or the goal) here iff it does in the chain, and the strongly connected
    components restricted to the states are the chain's classes. Auxiliary
    nodes form an acyclic graph and each reaches a state or the goal, so no
    class of auxiliary nodes alone is closed, and a class is closed here iff
    its states form a closed class of the chain: an edge leaving it into an
    auxiliary node leads on to a state (or the goal) outside it.
    """
    S = kernel.shape[0]
    goal, n_next = S, S + 1
    rows = kernel._rows()
    at = kernel.rank[kernel.indices]
    reach = kernel.reach
    spread = kernel.width > 0
    blocking = (kernel.data == 0.0) & (at < reach[rows]) & spread[rows]
    blocked_rows, blocked_at = rows[blocking], at[blocking]
    by_rank = np.lexsort((blocked_at, blocked_rows))
    blocked_rows, blocked_at = blocked_rows[by_rank], blocked_at[by_rank]
    first = reach.copy()
    np.minimum.at(first, blocked_rows, blocked_at)
    prefix = spread & (first > 0)
    partial_to = kernel._unseen_at_reach() & (kernel.partial > 0)
    positive = kernel.data > 0
    positions = np.arange(1, n_next + 1)
    tails = [np.flatnonzero(prefix), S + positions, S + positions[1:],
             np.flatnonzero(partial_to), rows[positive]]
    heads = [S + first[prefix], kernel.order, S + positions[:-1],
             kernel.order[reach[partial_to]], kernel.indices[positive]]
    n_nodes = 2 * S + 2
    if blocked_rows.size:
        run_end = np.append(blocked_at[1:], 0)
        same_row = np.append(blocked_rows[1:] == blocked_rows[:-1], False)
        hi = np.where(same_row, run_end, reach[blocked_rows])
        lo = blocked_at + 1
        keep = lo < hi
        t, h = _interval_edges(blocked_rows[keep], lo[keep], hi[keep], n_next, kernel.order,
                               n_nodes)
        tails.append(t)
        heads.append(h)
        n_nodes += n_next
        internal = np.arange(1, n_next)
        children = np.concatenate([2 * internal, 2 * internal + 1])
        tails.append(np.concatenate([n_nodes - n_next + internal] * 2))
        heads.append(np.where(children >= n_next,
                              kernel.order[np.minimum(children - n_next, S)],
                              n_nodes - n_next + children))
    tails, heads = np.concatenate(tails), np.concatenate(heads)
    to_goal = heads == goal
    exits = np.zeros(n_nodes, dtype=bool)
    exits[tails[to_goal]] = True
    return n_nodes, tails[~to_goal], heads[~to_goal], exits


def _poured_exits(kernel):
    """Mask of the rows of a square ``PouredKernel`` with a positive goal probability, shape
    ``(S,)``: a stored goal entry, or an unseen goal before the reach (positive width) or at
    it (positive partial)."""
    S = kernel.shape[0]
    rows = kernel._rows()
    goal_entry = kernel.indices == S
    stored = np.zeros(S, dtype=bool)
    stored[rows[goal_entry]] = True
    exits = np.zeros(S, dtype=bool)
    exits[rows[goal_entry & (kernel.data > 0)]] = True
    at = kernel.rank[S]
    unseen = ~stored & (((at < kernel.reach) & (kernel.width > 0))
                        | ((at == kernel.reach) & (kernel.partial > 0)))
    return exits | unseen


def _poured_splits(kernel, costs):
    """The split of :func:`chain_values` of a square ``PouredKernel``: masks ``(infinite,
    transient)`` of shape ``(S,)``, decided on :func:`_poured_graph` as :func:`_splits` does
    (with every cost positive, the states reaching a state that cannot reach the goal; an
    auxiliary node that cannot reaches such a state). No search when every cost is positive
    and every row moves to the goal (:func:`_poured_exits`): every state is transient."""
    S = costs.size
    if np.all(costs > 0) and _poured_exits(kernel).all():
        return np.zeros(S, dtype=bool), np.ones(S, dtype=bool)
    n_nodes, tails, heads, exits = _poured_graph(kernel)
    positive = np.zeros(n_nodes, dtype=bool)
    positive[:S] = costs > 0
    if positive[:S].all():
        stuck = ~_reaching(tails, heads, exits)
        stuck[S:] = False
        infinite = _reaching(tails, heads, stuck)[:S]
        return infinite, ~infinite
    labels, closed = _closed(n_nodes, tails, heads, np.flatnonzero(exits))
    costly_class = np.bincount(labels, weights=positive.astype(float)) > 0
    infinite = _reaching(tails, heads, closed & costly_class[labels])
    return infinite[:S], (_reaching(tails, heads, positive) & ~infinite)[:S]


def _poured_solve(offdiagonal, diagonal, rhs, start=None):
    r"""Best candidate of :math:`M x = b`, :math:`M = \mathrm{diag}(d) - Q`, from products by
    ``Q``.

    Parameters
    ----------
    offdiagonal : callable
        ``x -> Q x`` for ``x`` of shape ``(n,)``, ``Q`` non-negative with a zero
        diagonal.
    diagonal : ndarray of float64, shape (n,)
        ``d > 0``, with :math:`M` a non-singular M-matrix.
    rhs : ndarray of float64, shape (n,)
        ``b``.
    start : ndarray of float64, shape (n,), optional
        A finite candidate, kept if it beats zero.

    Returns
    -------
    x : ndarray of float64, shape (n,)
        The candidate of smallest backward error met (zero if none was finite).
    error : float
        Its componentwise backward error

        .. math::

            \omega(x) = \max_s \frac{|b - M x|_s}{|b_s| + d_s |x_s| + (Q |x|)_s}

        (``0/0 = 0``): ``x`` solves exactly a system whose entries are
        perturbed by a relative :math:`\omega`. Unlike the residual, it does not
        grow with the rounding of large values.

    Notes
    -----
    Calls of :func:`_bicgstab` on the current residual, while
    :math:`\omega` falls by at least half, until it is at most
    :data:`POURED_RTOL`; short of :data:`POURED_ACCEPT`, GMRES (restarted every
    :data:`GMRES_RESTART` vectors) on the residual of the best candidate, then
    up to :data:`JACOBI_SWEEPS` Jacobi sweeps :math:`x \leftarrow (b + Q x^+) / d`
    from it, which converge for a non-singular M-matrix.
    """
    n = rhs.size

    def product(x):
        x = np.ravel(x)
        return diagonal * x - offdiagonal(x)

    def error(x):
        flow = offdiagonal(x)
        residual = np.abs(rhs - diagonal * x + flow)
        if np.any(x < 0):
            flow = offdiagonal(np.abs(x))
        scale = np.abs(rhs) + diagonal * np.abs(x) + flow
        return float(np.max(residual / np.where(residual > 0, scale, 1.0), initial=0.0))

    system = LinearOperator((n, n), matvec=product, dtype=np.float64)
    best = [np.zeros(n), error(np.zeros(n))]

    def offer(x):
        if not np.all(np.isfinite(x)):
            return False
        omega = error(x)
        improved = omega < best[1]
        if improved:
            best[:] = [x, omega]
        return improved

    if start is not None:
        offer(start)
    for _ in range(POURED_ROUNDS):
        if best[1] <= POURED_RTOL:
            break
        previous = best[1]
        enough = POURED_RTOL * float(np.min(np.abs(rhs) + diagonal * np.abs(best[0])))
        step = _bicgstab(system, diagonal, rhs - product(best[0]), enough=enough)
        if step is None or not offer(best[0] + step) or best[1] > 0.5 * previous:
            break
    if best[1] > POURED_ACCEPT:
        jacobi = LinearOperator((n, n), matvec=lambda r: np.ravel(r) / diagonal, dtype=np.float64)
        residual = rhs - product(best[0])
        scale = float(np.abs(residual).max())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            step, _ = gmres(system, residual / scale, rtol=1e-13, atol=0.0,
                            restart=GMRES_RESTART, maxiter=KRYLOV_MAXITER // GMRES_RESTART,
                            M=jacobi)
        offer(best[0] + scale * step)
    x = best[0]
    for _ in range(JACOBI_SWEEPS):
        if best[1] <= POURED_ACCEPT:
            break
        x = (rhs + offdiagonal(np.maximum(x, 0.0))) / diagonal
        offer(x)
    return best[0], best[1]


def _poured_residual(kernel, costs, values):
    """``max |c + P V - V|`` over the finite positive entries of ``values`` (``kernel @``, one
    product of the kernel when every value is finite)."""
    v_ext = np.append(values, 0.0)
    flow = kernel._apply(v_ext) if np.isfinite(values).all() else kernel @ v_ext
    finite = np.isfinite(values) & (values > 0)
    return float(np.abs(costs[finite] + flow[finite] - values[finite]).max(initial=0.0))


def poured_values(kernel, costs, start=None):
    r"""Values of a Markov chain given as a :class:`~reference.poured.PouredKernel`, ``+inf``
    where they diverge, in ``O(S + stored)`` memory.

    Parameters
    ----------
    kernel : PouredKernel, shape (S, S+1)
        Row ``s`` is the chain's row of state ``s`` (the last column is the goal).
    costs : ndarray of float64, shape (S,)
        Cost of each state, ``>= 0``.
    start : ndarray of float64, shape (S,), optional
        Candidate values (a previous policy's) to start the iterative solve
        from; entries that are not finite and ``>= 0`` count as 0.

    Returns
    -------
    values : ndarray of float64, shape (S,), all ``>= 0``
        ``+inf`` exactly on the states that reach a closed class holding a
        positive cost, ``0`` exactly on those that reach no positive cost
        (the masks of :func:`chain_values`, decided on the support graph), and
        on the others a candidate solution of :math:`V = c + Q V`.
    residual : float
        :math:`\max |c + P V - V|` over the states of finite positive value,
        with ``P V`` the kernel's product (``0 \cdot \infty = 0``).

    Raises
    ------
    ParameterError
        If ``kernel`` is not a ``PouredKernel``.
    ShapeError
        If it is not of shape ``(S, S+1)``, or ``costs`` or ``start`` not of shape ``(S,)``.
    ConvergenceError
        For ``S <=`` :data:`DENSE_MAX_STATES`, as :func:`chain_values`; above,
        if the best candidate's backward error (:func:`_poured_solve`) exceeds
        :data:`POURED_FAIL` (a chain too ill-conditioned for the solve, or
        values beyond the float64 range).

    Notes
    -----
    With ``S <=`` :data:`DENSE_MAX_STATES` the kernel is expanded into a dense
    array (at most 8 MB, built faster than its CSR form) and solved by
    :func:`chain_values` (exact, certified to :data:`CERTIFIED_RTOL`; ``start``
    is not used). Above, nothing of size ``S^2`` is formed: the split is decided
    on :func:`_poured_graph` (``O(S + stored)`` edges), and the transient
    states solve :math:`M V = c`, :math:`M = \mathrm{diag}(d) - Q` with
    :math:`d` the leaving probability of each state (its off-diagonal entries
    summed, goal included; never :math:`1 - P[s, s]`) and :math:`Q` the
    off-diagonal block, applied by the kernel's prefix sums with the diagonal
    left out (:func:`_offdiagonal_products`), by :func:`_poured_solve`
    (BiCGSTAB with refinement, then GMRES, then Jacobi sweeps; the candidate
    of smallest backward error wins) from ``start`` when it beats zero.
    These values are candidates: nothing certifies them (callers check them
    against the Bellman operator). ``residual`` measures how well they solve
    the system, not how far they are from its solution: the forward error
    can exceed it by the condition number of :math:`M`, large when the chain
    leaves a set of states with a small probability. On well-conditioned
    chains of :math:`10^4`--:math:`10^5` states it is a few ``1e-15``
    :math:`\|V\|_\infty` and the values agree with an explicit sparse LU to
    about ``1e-12``. The memory peaks at about 13
    ``(S + stored)`` float64 (the support graph's searches; the Krylov
    vectors take less), whatever the number of entries of the expanded
    kernel.
    """
    costs = np.asarray(costs, dtype=np.float64)
    vectors = {"costs": costs}
    if start is not None:
        start = np.asarray(start, dtype=np.float64)
        vectors["start"] = start
    S = _check_poured(kernel, vectors)
    if S <= DENSE_MAX_STATES:
        values = chain_values(kernel.toarray(), costs)
        return values, _poured_residual(kernel, costs, values)
    infinite, transient = _poured_splits(kernel, costs)
    values = np.zeros(S)
    values[infinite] = np.inf
    states = np.flatnonzero(transient)
    if states.size:
        leaving = _poured_leaving(kernel)
        full, forward = np.zeros(S + 1), _offdiagonal_products(kernel)[0]

        def offdiagonal(x):
            full[states] = x
            return forward(full)[states]

        guess = None
        if start is not None:
            guess = start[states]
            guess = np.where(np.isfinite(guess) & (guess >= 0), guess, 0.0)
        found, omega = _poured_solve(offdiagonal, leaving[states], costs[states], guess)
        if not omega <= POURED_FAIL:
            raise ConvergenceError(
                f"no candidate for the values of the {states.size} transient state(s) has a "
                f"backward error below {POURED_FAIL:g} (the best has {omega:.2g}): the chain is "
                f"too ill-conditioned for the iterative solve, or its values exceed the float64 "
                f"range."
            )
        values[states] = np.maximum(found, 0.0)
    return values, _poured_residual(kernel, costs, values)


def poured_occupancy(kernel, start):
    r"""Expected visits :math:`\nu^\top = \text{start}^\top (I - Q)^{-1}` of a proper chain
    given as a :class:`~reference.poured.PouredKernel`, in ``O(S + stored)`` memory.

    Parameters
    ----------
    kernel : PouredKernel, shape (S, S+1)
        Row ``s`` is the chain's row of state ``s`` (the last column is the goal).
    start : ndarray of float64, shape (S,)
        Initial distribution (any finite non-negative weights).

    Returns
    -------
    ndarray of float64, shape (S,), all ``>= 0``
        :math:`\nu(s)`, the expected number of visits of ``s``; zeros
        everywhere when the solve fails: when some state cannot reach the goal
        (the chain is not proper; decided on the support graph), when the
        sparse LU finds the system singular, or, above
        :data:`DENSE_MAX_STATES` states, when no candidate reaches a backward
        error of :data:`OCCUPANCY_RTOL` (:func:`_poured_solve`). Non-finite
        entries are zeros and negative ones clipped.

    Raises
    ------
    ParameterError, ShapeError
        As :func:`poured_values`.

    Notes
    -----
    Solves :math:`M^\top \nu = \text{start}` with :math:`M = \mathrm{diag}(d) - Q`
    as in :func:`poured_values` (leaving probabilities summed, never
    :math:`1 - P[s, s]`): with ``S <=`` :data:`DENSE_MAX_STATES` by a sparse LU
    of the expanded kernel, above by :func:`_poured_solve` with the products
    ``y Q``: the kernel's ``y @ kernel`` (``O(S + stored)``, suffix sums over
    the reaches) with the diagonal left out (:func:`_offdiagonal_products`).
    """
    start = np.asarray(start, dtype=np.float64)
    S = _check_poured(kernel, {"start": start})
    if _poured_splits(kernel, np.ones(S))[0].any():
        return np.zeros(S)
    leaving = _poured_leaving(kernel)
    if S <= DENSE_MAX_STATES:
        inner = _without_diagonal(sp.csr_array(kernel.tocsr()[:, :S]))
        system = (sp.diags_array(leaving) - inner).T.tocsc()
        with warnings.catch_warnings():
            warnings.simplefilter("error", MatrixRankWarning)
            try:
                visits = np.atleast_1d(spsolve(system, start))
            except MatrixRankWarning:
                return np.zeros(S)
    else:
        backward = _offdiagonal_products(kernel)[1]

        def offdiagonal(y):
            return backward(y)[:S]

        visits, error = _poured_solve(offdiagonal, leaving, start)
        if not error <= OCCUPANCY_RTOL:
            return np.zeros(S)
    return np.where(np.isfinite(visits), np.maximum(visits, 0.0), 0.0)
