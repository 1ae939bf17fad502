r"""Candidate values of poured kernels: :func:`poured_values` and :func:`poured_occupancy`.

A :class:`~reference.poured.PouredKernel` is evaluated without being expanded
(``O(S + stored)`` memory) by Krylov solves on its off-diagonal products; small
kernels are expanded and solved exactly as explicit chains
(:mod:`reference.chains.explicit`). See :mod:`reference.chains`.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, MatrixRankWarning, gmres, spsolve

from ..errors import ConvergenceError, ParameterError, ShapeError
from ..poured import PouredKernel
from . import explicit

__all__ = []


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


def poured_splits(kernel, costs):
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
        stuck = ~explicit._reaching(tails, heads, exits)
        stuck[S:] = False
        infinite = explicit._reaching(tails, heads, stuck)[:S]
        return infinite, ~infinite
    labels, closed = explicit._closed(n_nodes, tails, heads, np.flatnonzero(exits))
    costly_class = np.bincount(labels, weights=positive.astype(float)) > 0
    infinite = explicit._reaching(tails, heads, closed & costly_class[labels])
    return infinite[:S], (explicit._reaching(tails, heads, positive) & ~infinite)[:S]


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
        step = explicit._bicgstab(system, diagonal, rhs - product(best[0]), enough=enough)
        if step is None or not offer(best[0] + step) or best[1] > 0.5 * previous:
            break
    if best[1] > POURED_ACCEPT:
        jacobi = LinearOperator((n, n), matvec=lambda r: np.ravel(r) / diagonal, dtype=np.float64)
        residual = rhs - product(best[0])
        scale = float(np.abs(residual).max())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            step, _ = gmres(system, residual / scale, rtol=1e-13, atol=0.0,
                            restart=GMRES_RESTART,
                            maxiter=explicit.KRYLOV_MAXITER // GMRES_RESTART, M=jacobi)
        offer(best[0] + scale * step)
    x = best[0]
    for _ in range(JACOBI_SWEEPS):
        if best[1] <= POURED_ACCEPT:
            break
        x = (rhs + offdiagonal(np.maximum(x, 0.0))) / diagonal
        offer(x)
    return best[0], best[1]


def poured_residual(kernel, costs, values):
    """``max |c + P V - V|`` over the finite positive entries of ``values`` (``kernel @``, one
    product of the kernel when every value is finite)."""
    v_ext = np.append(values, 0.0)
    flow = kernel.finite_product(v_ext) if np.isfinite(values).all() else kernel @ v_ext
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
    if S <= explicit.DENSE_MAX_STATES:
        values = explicit.chain_values(kernel.toarray(), costs)
        return values, poured_residual(kernel, costs, values)
    infinite, transient = poured_splits(kernel, costs)
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
    return values, poured_residual(kernel, costs, values)


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
    if poured_splits(kernel, np.ones(S))[0].any():
        return np.zeros(S)
    leaving = _poured_leaving(kernel)
    if S <= explicit.DENSE_MAX_STATES:
        inner = explicit._without_diagonal(sp.csr_array(kernel.tocsr()[:, :S]))
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
