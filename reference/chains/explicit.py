r"""Exact values of explicit absorbing Markov chains (CSR or dense), with non-negative costs.

The finite / infinite / zero split on the support graph, then the finite
values certified to :data:`CERTIFIED_RTOL` relative accuracy or computed by a
subtraction-free elimination (GTH); see :mod:`reference.chains`.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgWarning, lu_factor, lu_solve
from scipy.sparse.csgraph import breadth_first_order, connected_components
from scipy.sparse.linalg import LinearOperator, bicgstab

from ..errors import ConvergenceError
from . import fill, monotone

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
    """Off-diagonal block ``Q`` on ``states``, exit masses (never ``1 - Q[s, s]``), their terms.

    Returns
    -------
    Q : CSR or ndarray, shape (n, n)
        :math:`P_\\pi` restricted to ``states``, diagonal set to zero (dense) or
        removed (CSR). Dense when ``chain`` is, or when the block is small
        enough for the dense LU of :func:`transient_values` (fewer than
        :data:`ITERATIVE_MIN_STATES`, at most :data:`DENSE_MAX_STATES` states).
    exits : ndarray of float64, shape (n,)
        The summed probability of moving outside ``states`` (goal included).
    terms : ndarray of int64, shape (n,)
        The stored (CSR) or nonzero (dense) probabilities each exit mass sums
        (:func:`reference.chains.monotone.sum_slack`): at most 1 if ``n = S``.
    """
    S = chain.shape[0]
    small = states.size < ITERATIVE_MIN_STATES and states.size <= DENSE_MAX_STATES
    if states.size == S and (small or not sp.issparse(chain)):
        chain = chain.toarray() if sp.issparse(chain) else chain.copy()
        Q = chain[:, :S]
        np.fill_diagonal(Q, 0.0)
        return Q, chain[:, S].copy(), (chain[:, S] != 0).astype(np.int64)
    inside = np.zeros(S + 1, dtype=bool)
    inside[states] = True
    rows = chain[states]
    if sp.issparse(rows):
        rows = sp.csr_array(rows)
        if small:
            rows = rows.toarray()
    if sp.issparse(rows):
        keep = inside[rows.indices]
        owners = np.repeat(np.arange(states.size), np.diff(rows.indptr))[~keep]
        exits = np.bincount(owners, weights=rows.data[~keep], minlength=states.size)
        terms = np.bincount(owners, minlength=states.size).astype(np.int64)
        return _without_diagonal(sp.csr_array(rows[:, states])), exits, terms
    leaving = rows[:, ~inside]
    Q = rows[:, states]
    np.fill_diagonal(Q, 0.0)
    return Q, leaving.sum(axis=1), np.count_nonzero(leaving, axis=1).astype(np.int64)


def _without_diagonal(Q):
    """CSR ``Q`` with its diagonal entries and explicit zeros dropped."""
    Q = Q.tocoo()
    keep = (Q.row != Q.col) & (Q.data != 0.0)
    return sp.csr_array((Q.data[keep], (Q.row[keep], Q.col[keep])), shape=Q.shape)


def _row_sums(Q):
    """Row sums of a non-negative ``Q`` (CSR or dense), shape ``(n,)``."""
    return np.asarray(Q.sum(axis=1)).ravel()


def _certified(Q, exits, rhs, values, times, exit_terms=1):
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
    exit_terms : int or array_like of int, shape (n,), default 1
        Terms of each exit mass (the ``terms`` of :func:`_restricted`).

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
    with :math:`\gamma = (2k + 8) u` for a row of ``k`` nonzero entries (a zero
    entry of a dense ``Q`` contributes exact zeros, no rounding), plus
    :math:`2 (j - 1) u\, e |\hat V|` for an exit mass summed from ``j`` stored
    probabilities (:func:`reference.chains.monotone.sum_slack`: the system is
    that of the exact sums). Applied to
    :math:`\hat\tau` itself, :math:`\tau \le \hat\tau / (1 - \rho)` with
    :math:`\rho = \|R_\tau\|_\infty < 1`. A state is certified when

    .. math::

        b(s) = \frac{\|R\|_\infty\, \hat\tau(s)}{1 - \rho}, \qquad
        b(s) \le \mathrm{CERTIFIED\_RTOL} \cdot (\hat V(s) - b(s)).
    """
    n = rhs.size
    if not (np.all(values > 0) and np.all(times > 0)
            and np.isfinite(values.max()) and np.isfinite(times.max())):
        return np.zeros(n, dtype=bool)
    gamma = (2 * monotone.row_lengths(Q) + 8) * UNIT_ROUNDOFF
    exit_slack = monotone.sum_slack(exit_terms) * exits
    d = exits + _row_sums(Q)

    def bound(target, candidate):
        stay = d * candidate
        flow = Q @ candidate
        residual = np.abs(target - stay + flow)
        margin = gamma * (target + stay + flow) + exit_slack * candidate
        return float((residual + margin).max())

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


def _krylov(Q, exits, rhs):
    """BiCGSTAB on :math:`M`, built once: the candidates and the correction map.

    Returns
    -------
    candidate : tuple of ndarray of float64, shape (n,), or None
        The solutions of :math:`M V = c` and :math:`M \\tau = 1`, ``None`` on failure.
    correct : callable
        ``correct(r)``: the solution of :math:`M z = r` (float64 ``(n,)``), ``None`` on failure.
    """
    diagonal = exits + _row_sums(Q)
    system = (sp.diags_array(diagonal) - Q).tocsr()
    values = _bicgstab(system, diagonal, rhs)
    times = None if values is None else _bicgstab(system, diagonal, np.ones(rhs.size))
    candidate = None if times is None else (values, times)
    return candidate, lambda residual: _bicgstab(system, diagonal, residual)


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
            fill.check_round(Q, pick, states[ids])
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
            fill.refuse_dense(states[ids], CERTIFIED_RTOL, ELIMINATION_MAX_STATES)
        stats["nnz"].append(int(Q.nnz))
        Q = Q.toarray()
    elif n > ELIMINATION_MAX_STATES:
        fill.refuse_dense(states, CERTIFIED_RTOL, ELIMINATION_MAX_STATES)
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


def transient_values(Q, exits, rhs, states, exit_terms=1):
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
    exit_terms : int or array_like of int, shape (n,), default 1
        Stored probabilities summed into each exit mass (an int bounds them all;
        ``1``: exact as given), the ``terms`` of :func:`_restricted`.

    Returns
    -------
    ndarray of float64, shape (n,), all ``> 0``

    Raises
    ------
    ConvergenceError
        If a value exceeds the float64 range, or the exact elimination is too
        large (:func:`_gth`, :mod:`reference.chains.fill`: refused before it fills in).

    Notes
    -----
    A sparse block (or a dense one above :data:`DENSE_MAX_STATES` states,
    stored sparse) of at least :data:`ITERATIVE_MIN_STATES` states is solved
    by BiCGSTAB, any other block of at most :data:`DENSE_MAX_STATES` states by
    dense LU (a sparse one densified: a few milliseconds at 500 states, where
    the elimination's loop of row updates takes tens); the answer is kept
    where :func:`_certified` or, failing it, the monotone bounds of
    :mod:`reference.chains.monotone` (after up to :data:`REFINEMENT_STEPS`
    BiCGSTAB corrections) prove the relative error at most
    :data:`CERTIFIED_RTOL` (docs/exact-evaluation.md). Anything else is
    solved by subtraction-free elimination (:func:`_gth`).
    """
    n = rhs.size
    if n == 0:
        return np.zeros(0)
    candidate, correct, values = None, None, None
    if not sp.issparse(Q) and n > DENSE_MAX_STATES:
        Q = sp.csr_array(Q)
    if sp.issparse(Q) and n >= ITERATIVE_MIN_STATES:
        candidate, correct = _krylov(Q, exits, rhs)
    elif n <= DENSE_MAX_STATES:
        candidate = _lu_values(Q.toarray() if sp.issparse(Q) else Q, exits, rhs)
    if candidate is not None and _certified(Q, exits, rhs, *candidate, exit_terms).all():
        values = candidate[0]
    elif candidate is not None:
        values = monotone.refined_values(
            monotone.Chain(Q, exits, rhs, exit_terms), *candidate, CERTIFIED_RTOL,
            correct, REFINEMENT_STEPS)
    if values is None:
        try:
            values = _gth(Q, exits, rhs[:, None], states)[0][:, 0]
        except MemoryError as err:
            raise ConvergenceError(fill.out_of_memory_message(states)) from err
    if not np.all(np.isfinite(values)):
        raise ConvergenceError(
            f"the expected cost from the states "
            f"{fill.name_states(states[~np.isfinite(values)])} exceeds the float64 range.")
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
        Q, exits, terms = _restricted(chain, states)
        values[states] = transient_values(Q, exits, costs[states], states, terms)
    return values
