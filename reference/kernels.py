"""The numpy kernel set: the reference backend's implementation of the kernel protocol.

Readable array code, one operation over all pairs at a time; the protocol is
described in :class:`reference.backend.KernelSet` and ``docs/backends.md``.
CSR counts are densified (refused above :data:`EVI_DENSE_LIMIT_BYTES`), so the
boxes are always dense ``(S, A, S+1)`` arrays.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import box_kinds, lemma5
from ._checks import check_dense_size, largest_count
from .adversary_sets import closable as _closable
from .backend import KernelSet
from .chains import poured_occupancy, poured_values
from .chains.explicit import _reaching
from .robust_checks import lower_check as _lower_check
from .robust_checks import upper_check as _upper_check
from .robust_loops import adversary_loop, optimist_loop
from .robust_rounds import robust_rounds
from .sampling_kernels import merge_counts, split_calls
from .poured import PouredKernel, segment_positions

__all__ = ["NUMPY_KERNELS", "EVI_DENSE_LIMIT_BYTES"]

EVI_DENSE_LIMIT_BYTES = 256 * 1024**2
"""Largest dense ``(S, A, S+1)`` float64 array the numpy kernels build from CSR counts."""


def densify(counts, max_bytes=EVI_DENSE_LIMIT_BYTES):
    """Dense float64 counts ``(S, A, S+1)`` of CSR counts ``(S*A, S+1)``, within ``max_bytes``.

    Raises
    ------
    TooLargeError
        If the dense array would exceed ``max_bytes``.
    """
    S = counts.shape[1] - 1
    A = counts.shape[0] // S
    check_dense_size(
        "the reference EVI densifies `counts` to an array", (S, A, S + 1), max_bytes,
        "use the `fast` backend.",
    )
    return np.asarray(counts.toarray(), dtype=np.float64).reshape(S, A, S + 1)


def radius_and_p_hat(counts, delta):
    """Lemma 5's radius ``beta`` and ``p_hat`` of dense counts, both ``(S, A, S+1)``."""
    S, A = counts.shape[:2]
    n_plus = np.maximum(1.0, counts.sum(axis=2, keepdims=True))
    p_hat = counts / n_plus
    return lemma5.radius(p_hat, lemma5.log_term(n_plus, S, A, delta), n_plus), p_hat


def radius(counts, delta):
    """Kernel ``radius``: Lemma 5's ``beta`` of dense counts, shape ``(S, A, S+1)``."""
    return radius_and_p_hat(counts, delta)[0]


def box_ends(counts, delta):
    """``lo = max(0, p_hat - beta)`` and ``hi = min(1, p_hat + beta)`` of dense counts."""
    beta, p_hat = radius_and_p_hat(counts, delta)
    return np.maximum(0.0, p_hat - beta), np.minimum(1.0, p_hat + beta)


@dataclass(frozen=True)
class Boxes:
    """Dense boxes: lower ends, widths and leftover mass ``1 - sum lo`` of every pair."""

    lo: np.ndarray
    gap: np.ndarray
    remaining: np.ndarray
    upper_mass: np.ndarray
    sparse_input: bool

    @property
    def n_states(self):
        return self.lo.shape[0]

    @property
    def n_actions(self):
        return self.lo.shape[1]


@dataclass(frozen=True)
class DenseScan:
    """Dense counts ``(S, A, S+1)`` and their :func:`~reference._checks.largest_count`."""

    counts: np.ndarray
    largest: float


def scan_counts(counts):
    """Kernel ``scan_counts``: one uint64 maximum over the counts (:func:`largest_count`)."""
    return DenseScan(counts=counts, largest=largest_count(counts))


def boxes(counts, delta):
    """Kernel ``boxes``: the dense boxes of CSR counts or of the scan of dense counts."""
    sparse_input = sp.issparse(counts)
    lo, hi = box_ends(densify(counts) if sparse_input else counts.counts, delta)
    return Boxes(lo=lo, gap=hi - lo, remaining=1.0 - lo.sum(axis=2, keepdims=True),
                 upper_mass=hi.sum(axis=2), sparse_input=sparse_input)


def residual(v_out, v_ext):
    """``max_s |v_out(s) - v_ext(s)|``: the change made by one sweep."""
    return float(np.max(np.abs(v_out - v_ext[:-1])))


def goal_first_order(v_ext):
    """Next states by ascending value: a stable sort of ``(g, 0, 1, ..., S-1)``."""
    S = v_ext.shape[0] - 1
    goal_first = np.concatenate([[S], np.arange(S)])
    return goal_first[np.argsort(v_ext[goal_first], kind="stable")]


def pour(lo, gaps, remaining, order):
    """The greedy inner solution: from ``lo``, pour ``remaining`` into ``order``, up to the gaps.

    ``lo`` and ``gaps`` have shape ``(..., S+1)``, ``remaining = 1 - sum lo``
    shape ``(..., 1)``; the leading dimensions index independent problems.
    """
    ordered = gaps[..., order]
    poured_before = np.cumsum(ordered, axis=-1) - ordered
    p = lo.copy()
    p[..., order] += np.clip(remaining - poured_before, 0.0, ordered)
    return p


def evi_sweep(boxes, costs, v_ext, v_out, policy_out):
    """Kernel ``evi_sweep``: every inner problem at ``v_ext``, then the greedy backup."""
    p = pour(boxes.lo, boxes.gap, boxes.remaining, goal_first_order(v_ext))
    q = costs + p @ v_ext
    policy_out[:] = np.argmin(q, axis=1)
    v_out[:] = q[np.arange(q.shape[0]), policy_out]
    return residual(v_out, v_ext)


def optimistic_kernel(boxes, v_ext, policy):
    """Kernel ``optimistic_kernel``: the inner solutions at ``v_ext`` of the pairs of ``policy``,
    as the :class:`~reference.poured.PouredKernel` of :func:`poured_kernel`."""
    states = np.arange(boxes.n_states)
    return poured_kernel(boxes.lo[states, policy], boxes.gap[states, policy],
                         goal_first_order(v_ext))


def poured_kernel(lo, gap, order):
    r"""The greedy pour of dense box rows along ``order``, in the pieces of a :class:`PouredKernel`.

    Parameters
    ----------
    lo, gap : ndarray of float64, shape (n, S+1)
        Lower ends and widths ``hi - lo`` of the boxes of ``n`` pairs.
    order : ndarray of int64, shape (S+1,)
        The pour order.

    Returns
    -------
    PouredKernel
        Row ``i`` the minimiser of :func:`reference.evi.optimistic_inner` when
        ``order`` sorts its values.

    Notes
    -----
    The canonical pieces, the same in both backends: a row's **unseen** next
    states are those with ``lo = 0`` and the smallest width ``w`` among them
    (the common box ``[0, w]`` of the next states without samples); every other
    next state is stored. The mass ``m = 1 - sum lo`` is summed in index
    order and poured by :func:`greedy_pour`. Here the rows are dense (``O(S)``
    each); the compiled kernel on CSR boxes pours a row of ``k`` stored
    entries in ``O(k log k)``.
    """
    n = lo.shape[0]
    zero = lo == 0.0
    smallest = np.min(np.where(zero, gap, np.inf), axis=1)
    width = np.where(np.isfinite(smallest), smallest, 0.0)
    row, col = np.nonzero(~(zero & (gap == width[:, None])))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=n))])
    mass = 1.0 - np.cumsum(lo, axis=1)[:, -1]
    return greedy_pour(order, indptr, col, lo[row, col], gap[row, col], width, mass)


def greedy_pour(order, indptr, indices, lo, gap, width, mass, descending=False):
    r"""The greedy pour of ``n`` box rows along ``order``, as a :class:`PouredKernel`.

    Row ``i`` stores the next states ``indices[indptr[i]:indptr[i+1]]``
    (ascending) with boxes ``[lo, lo + gap]``; every other next state has the
    box ``[0, width[i]]``. From the lower ends, the row's free mass ``mass[i]``
    is poured into the next states in ``order``, each up to its upper end.

    Parameters
    ----------
    order : ndarray of int64, shape (S+1,)
        The pour order, a permutation of ``0 .. S``.
    indptr : ndarray of int64, shape (n+1,)
    indices : ndarray of int64, shape (stored,)
    lo, gap : ndarray of float64, shape (stored,)
        Lower ends and widths of the stored entries.
    width : ndarray of float64, shape (n,)
        Upper end ``w`` of the unseen next states.
    mass : ndarray of float64, shape (n,)
        Free mass ``m = 1 - sum lo`` of each row (as the caller summed it).
    descending : bool, default False
        Recorded in the kernel (the direction ``order`` was sorted in).

    Returns
    -------
    PouredKernel
        Shape ``(n, S+1)``: ``data = lo`` plus the mass poured into each stored
        entry, and the reach and partial of each row.

    Notes
    -----
    The arithmetic every backend repeats step for step, so that their pieces
    are equal: the pour walks the stored entries by position in ``order``. A
    run of ``l`` unseen states before a stored entry (or the end of the order)
    is filled whole if ``l w < m`` (``m -= l w``); otherwise ``q = trunc(m /
    w)`` of them are filled and the next gets ``m - q w`` (clipped to ``[0,
    w]``), where the pour stops. A stored entry of width ``g`` takes ``min(g,
    m)``, the pour stopping at it when it takes ``m``. A row with ``m <= 0``
    pours nothing (reach 0). ``O(S + stored log stored)``: one vectorised
    step per stored entry of the longest row.
    """
    n, n_next = indptr.size - 1, order.size
    rank = np.empty(n_next, dtype=np.int64)
    rank[order] = np.arange(n_next)
    stored = np.diff(indptr)
    row = np.repeat(np.arange(n), stored)
    data, mass = lo.copy(), mass.copy()
    # Stored entries by row, then by position in the order; one sentinel past the last.
    walk = np.append(np.lexsort((rank[indices], row)), 0)
    walk_rank = np.append(rank[indices][walk[:-1]], n_next)
    reach, partial = np.zeros(n, dtype=np.int64), np.zeros(n)
    start = np.zeros(n, dtype=np.int64)
    pouring = np.flatnonzero(mass > 0.0)
    for t in range(int(stored.max(initial=0)) + 1):
        # The run of unseen next states before the t-th stored entry by rank (or the end).
        last = stored[pouring] == t
        at = np.where(last, walk.size - 1, indptr[pouring] + t)
        entry, stop = walk[at], walk_rank[at]
        length = stop - start[pouring]
        run = length * width[pouring]
        fits = run < mass[pouring]
        mass[pouring[fits]] -= run[fits]
        ends, ends_length = pouring[~fits], length[~fits]
        q = np.minimum((mass[ends] / width[ends]).astype(np.int64), ends_length)
        left = np.where(q < ends_length, mass[ends] - q * width[ends], 0.0)
        reach[ends], partial[ends] = start[ends] + q, np.clip(left, 0.0, width[ends])
        reach[pouring[fits & last]] = n_next
        # The t-th stored entry takes its width, or what is left.
        going = fits & ~last
        pouring, entry, stop = pouring[going], entry[going], stop[going]
        takes_all = gap[entry] >= mass[pouring]
        data[entry] += np.where(takes_all, mass[pouring], gap[entry])
        reach[pouring[takes_all]] = stop[takes_all]
        pouring, entry, stop = pouring[~takes_all], entry[~takes_all], stop[~takes_all]
        mass[pouring] -= gap[entry]
        start[pouring] = stop + 1
    return PouredKernel(order, indptr, indices, data, width, reach, partial, descending,
                        check=False)


def vi_model(ssp):
    """Kernel ``vi_model``: the CSR kernel ``(S*A, S+1)`` of ``ssp``."""
    return ssp.kernel_csr()


def vi_sweep(kernel, costs, v_ext, v_out, policy_out):
    """Kernel ``vi_sweep``: ``min_a c(s,a) + sum_s' p(s'|s,a) v(s')``, ties to the lowest action."""
    q = costs + (kernel @ v_ext).reshape(costs.shape)
    policy_out[:] = q.argmin(axis=1)
    v_out[:] = q[np.arange(q.shape[0]), policy_out]
    return residual(v_out, v_ext)


def pour_order(v_ext, descending):
    """Next states in pour order: decreasing ``v``, goal last, or increasing, goal first."""
    S = v_ext.size - 1
    if descending:
        return np.append(np.lexsort((np.arange(S), -v_ext[:S])), S)
    return np.append(S, np.lexsort((np.arange(S), v_ext[:S])))


def order_values(order, descending):
    """Values whose :func:`pour_order` in the direction ``descending`` is ``order``.

    ``order`` is a pour order, ``(S+1,)`` (the goal last when ``descending``,
    first otherwise); the values are distinct along it, ``v[order[i]] = i``
    (increasing) or ``S - i`` (decreasing), so no tie is broken. A kernel
    ``pour_kernel`` reads its values only through their pour order, so these
    values pour it again.
    """
    ranks = np.arange(order.size, dtype=np.float64)
    values = np.empty(order.size)
    values[order] = ranks[::-1] if descending else ranks
    return values


def filled_before(row, gap, n_rows):
    """Within each row (entries contiguous, in pour order), the sum of the gaps before each entry.

    Accumulated position by position across all rows at once, so that no
    row's sum carries the rounding of the rows before it (a global cumulative
    sum would leave stray mass of order ``1e-16`` in the wrong places).
    """
    lengths = np.bincount(row, minlength=n_rows)
    starts = np.cumsum(lengths) - lengths
    by_length = np.argsort(-lengths, kind="stable")
    descending_lengths = lengths[by_length]
    before = np.zeros_like(gap)
    for t in range(1, int(lengths.max(initial=0))):
        n_long = int(np.searchsorted(-descending_lengths, -t, side="left"))
        at = starts[by_length[:n_long]] + t
        before[at] = before[at - 1] + gap[at - 1]
    return before


def explicit_pour(boxes, rows, v_ext, descending):
    r"""The greedy inner problem of every row in ``rows``, entry by entry over the poured positions.

    Parameters
    ----------
    boxes : reference.confidence.ConfidenceBoxes
    rows : ndarray of int64, shape (n,)
        Pairs ``s*A + a``.
    v_ext : ndarray of float64, shape (S+1,)
        Values of the next states, ``>= 0``, ``+inf`` allowed, ``v_ext[S] = 0``.
    descending : bool
        The adversary's pour (decreasing ``v``, goal last) or the optimist's.

    Returns
    -------
    row, col : ndarray of int64, shape (m,)
        Row position (in ``rows``) and next state of every expanded entry,
        by row then by position in the pour order.
    p : ndarray of float64, shape (m,)
        Its poured probability (0 past the end of the pour).

    Notes
    -----
    A row's unseen next states all have the box ``[0, h]``, so its pour never
    passes position ``k + ceil(m / h) + 1`` of the order (``k`` stored entries,
    ``m = 1 - sum lo``): only the stored entries and those first positions are
    expanded, never the dense row. Each entry gets
    ``lo + clip(m - filled before it, 0, hi - lo)``.
    """
    S = boxes.n_states
    order = pour_order(v_ext, descending)
    rank = np.empty(S + 1, dtype=np.int64)
    rank[order] = np.arange(S + 1)
    start, stored = boxes.indptr[rows], np.diff(boxes.indptr)[rows]
    entry = np.repeat(start, stored) + segment_positions(stored)
    e_row = np.repeat(np.arange(rows.size), stored)
    e_col = boxes.indices[entry]
    e_lo = boxes.lo[entry]
    h = boxes.hi_unseen[rows]
    m = 1.0 - np.bincount(e_row, weights=e_lo, minlength=rows.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(h > 0, np.ceil(np.maximum(m, 0.0) / h), 0.0)
    n_first = np.where(h > 0, np.minimum(S + 1, stored + reach + 1), 0).astype(np.int64)
    c_row = np.repeat(np.arange(rows.size), n_first)
    c_col = order[segment_positions(n_first)]
    unseen = ~np.isin(c_row * (S + 1) + c_col, e_row * (S + 1) + e_col)
    row = np.concatenate([e_row, c_row[unseen]])
    col = np.concatenate([e_col, c_col[unseen]])
    lo = np.concatenate([e_lo, np.zeros(int(unseen.sum()))])
    gap = np.concatenate([boxes.hi[entry] - e_lo, h[c_row[unseen]]])
    sort = np.lexsort((rank[col], row))
    row, col, lo, gap = row[sort], col[sort], lo[sort], gap[sort]
    return row, col, lo + np.clip(m[row] - filled_before(row, gap, rows.size), 0.0, gap)


def pour_values(boxes, rows, v_ext, descending):
    """Kernel ``pour_values``: ``sum p v`` over the positive entries of :func:`explicit_pour`."""
    row, col, p = explicit_pour(boxes, rows, v_ext, descending)
    positive = p > 0
    terms = np.where(positive, p * np.where(positive, v_ext[col], 0.0), 0.0)
    return np.bincount(row, weights=terms, minlength=rows.size)


def pour_kernel(boxes, rows, v_ext, descending):
    r"""Kernel ``pour_kernel``: the pour of the rows ``rows`` against ``v_ext``, as a
    :class:`PouredKernel` of shape ``(n, S+1)``.

    The order is :func:`pour_order` of ``v_ext``; a row stores the entries
    its box stores (data: ``lo`` plus what the pour added), its unseen width
    is ``hi_unseen`` and its free mass ``1 - sum lo`` summed in index order;
    the pour is :func:`greedy_pour`, ``O(S log S + stored log stored)``
    whatever the samples behind the boxes.
    """
    stored = np.diff(boxes.indptr)[rows]
    entry = np.repeat(boxes.indptr[rows], stored) + segment_positions(stored)
    lo = boxes.lo[entry]
    mass = 1.0 - np.bincount(np.repeat(np.arange(rows.size), stored), weights=lo,
                             minlength=rows.size)
    return greedy_pour(pour_order(v_ext, descending), np.concatenate([[0], np.cumsum(stored)]),
                       boxes.indices[entry], lo, boxes.hi[entry] - lo, boxes.hi_unseen[rows],
                       mass, descending)


def closable(boxes, rows):
    """Kernel ``closable``: :func:`reference.adversary_sets.closable` on the kernel
    ``reaching``."""
    return _closable(_reaching, boxes, rows)


def adversary_iteration(boxes, rows, costs_pi, infinite, start):
    """Kernel ``adversary_iteration``: :func:`reference.robust_loops.adversary_loop` on
    :func:`pour_kernel` and :func:`reference.chains.poured_values`."""
    return adversary_loop(pour_kernel, poured_values, boxes, rows, costs_pi, infinite, start)


def optimist_iteration(boxes, costs, policy, start):
    """Kernel ``optimist_iteration``: :func:`reference.robust_loops.optimist_loop` on
    :func:`pour_kernel`, :func:`pour_values` and :func:`reference.chains.poured_values`."""
    return optimist_loop(pour_kernel, pour_values, poured_values, boxes, costs, policy, start)


def robust_iteration(boxes, costs, policy, start, rounds):
    """Kernel ``robust_iteration``: :func:`reference.robust_rounds.robust_rounds` on
    :func:`closable`, :func:`adversary_iteration`, :func:`upper_check` and
    :func:`pour_values`."""
    return robust_rounds(closable, adversary_iteration, upper_check, pour_values, boxes, costs,
                         policy, start, rounds)


def upper_check(boxes, rows, costs_pi, values, exact_zero):
    """Kernel ``upper_check``: :func:`reference.robust_checks.upper_check` on
    :func:`pour_values`."""
    return _upper_check(pour_values, boxes, rows, costs_pi, values, exact_zero)


def lower_check(boxes, costs, values, q_values):
    """Kernel ``lower_check``: :func:`reference.robust_checks.lower_check` on
    :func:`pour_values`."""
    return _lower_check(pour_values, boxes, costs, values, q_values)


def bernoulli_kl(p, q):
    """Bernoulli KL divergence ``kl(p, q)`` (``0 log 0 = 0``) and a bound on its rounding error.

    Elementwise on float64 arrays of one shape. The error bound is
    ``KL_ROUNDOFF ((2 p + 4 (1 - p)) + 16 (|a| + |b|)) + KL_UNDERFLOW`` with
    ``a = p log(p / q)`` and ``b = (1 - p) log((1 - p) / (1 - q))`` as computed;
    :func:`reference.confidence.kl_interval` says why it holds. It is
    infinite (a point never tested outside) where ``a`` or ``b`` is.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
        spread = (2.0 * p + 4.0 * (1 - p)) + 16.0 * (np.abs(a) + np.abs(b))
        error = box_kinds.KL_ROUNDOFF * spread + box_kinds.KL_UNDERFLOW
    return a + b, error


def _kl_starts(p, r, side, upper):
    """Newton's starts on one side of frequencies ``p``: the closest of three outer bounds.

    ``side`` is ``p`` (lower side) or ``1 - p`` (upper side), positive; ``r``
    finite. See :func:`reference.confidence.kl_interval` for the bounds, taken
    at the lifted radius ``r + u (40 + 32 r)``; the start is the next float
    outwards of the closest bound.
    """
    other = p if upper else 1 - p
    lift = r + box_kinds.KL_ROUNDOFF * (40.0 + 32.0 * r)
    with np.errstate(over="ignore"):
        d = np.minimum(np.sqrt(2.0 * lift * np.minimum(0.25, side)),
                       lift + np.sqrt(lift * (lift + 2.0 * other)))
    q = p + d if upper else p - d
    near = np.flatnonzero(side < box_kinds.KL_EXP_START * r)
    if near.size:
        t = other[near]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            g = np.where(t > 0, t * np.log(t), 0.0)
            w = side[near] * np.exp(-(lift[near] - g) / side[near])
        q[near] = np.minimum(q[near], 1 - w) if upper else np.maximum(q[near], w)
    return np.nextafter(q, 1.0 if upper else 0.0)


def _kl_end(p, r, upper):
    """The ends of one side of the intervals (``upper``: the upper ends)."""
    outer = 1.0 if upper else 0.0
    side = 1 - p if upper else p
    end = np.full_like(p, outer)
    chains = np.flatnonzero((side > 0) & (r < np.inf))
    p, r, side = p[chains], r[chains], side[chains]
    q = _kl_starts(p, r, side, upper)
    kl, error = bernoulli_kl(p, q)
    strict = (q > p) & (q < 1) if upper else (q > 0) & (q < p)
    start = strict & (kl > r + error)
    live = np.flatnonzero(start)
    kl, error = kl[live], error[live]
    for _ in range(box_kinds.KL_NEWTON_STEPS):
        pl, rl, ql = p[live], r[live], q[live]
        slope = (ql - pl) / (ql * (1 - ql))
        margin = error + box_kinds.KL_ROUNDOFF * (ql * np.abs(slope))
        step = ql - (kl - (rl + 2.0 * margin)) / slope
        ahead = (step < ql) & (step > pl) if upper else (step > ql) & (step < pl)
        go = np.flatnonzero((kl > rl + 3.0 * margin) & ahead)
        if not go.size:
            break
        live, step = live[go], step[go]
        kl, error = bernoulli_kl(p[live], step)
        outside = np.flatnonzero(kl > r[live] + error)
        live, kl, error = live[outside], kl[outside], error[outside]
        q[live] = step[outside]
    rest = np.flatnonzero(~start & (q != outer))
    if rest.size:
        q[rest] = _kl_bisection(p[rest], r[rest], outer)
    end[chains] = q
    return end


def _kl_bisection(p, r, outer):
    """The fallback: the last of ``KL_BISECTIONS`` midpoints between ``p`` and ``outer`` that
    tested outside, or ``outer``."""
    inside, outside = p.copy(), np.full_like(p, outer)
    for _ in range(box_kinds.KL_BISECTIONS):
        mid = 0.5 * (inside + outside)
        kl, error = bernoulli_kl(p, mid)
        out = kl > r + error
        inside = np.where(out, inside, mid)
        outside = np.where(out, mid, outside)
    return outside


def kl_interval(p_hat, n, level):
    """Kernel ``kl_interval``: the ends of :func:`reference.confidence.kl_interval`, by Newton.

    ``p_hat``, ``n``, ``level``: checked float64 arrays of one shape. Each
    side of each entry is an independent chain (the method of
    :func:`reference.confidence.kl_interval`); the chains step together,
    masked, so every end is the float of the compiled kernel's chain.
    """
    with np.errstate(divide="ignore"):
        radius = np.where(n > 0, level / np.where(n > 0, n, 1.0), np.inf)
    return _kl_end(p_hat, radius, False), _kl_end(p_hat, radius, True)


def chernoff_rows(indptr, counts, n, level, rows, width, lo, hi, hi_unseen):
    """Kernel ``chernoff_rows``: the Chernoff ends of the rows ``rows`` of CSR counts.

    Row ``r = rows[i]`` (int64, ascending) of ``n[r]`` samples has the level
    ``level[i]``; its stored entries ``e`` get :func:`kl_interval` at
    ``counts[e] / n[r]`` (written into ``lo[e]``, ``hi[e]``) and its unseen next
    states the upper end at 0 (into ``hi_unseen[r]``; ``1`` when ``n[r] = 0``).
    Returns ``hi_sum``, float64 ``(m,)``: ``(width - k) hi_unseen[r]`` plus the
    ``k`` upper ends of the row summed in their order (``np.bincount``).
    """
    indptr, counts, n, level, rows = box_kinds.check_chernoff_rows(
        indptr, counts, n, level, rows, lo, hi, hi_unseen)
    stored = indptr[rows + 1] - indptr[rows]
    entry = np.repeat(indptr[rows], stored) + segment_positions(stored)
    n_row = n[rows]
    n_entry = np.repeat(n_row, stored)
    lo[entry], hi[entry] = kl_interval(counts[entry] / n_entry, n_entry,
                                       np.repeat(level, stored))
    hi_unseen[rows] = unseen = kl_interval(np.zeros_like(n_row), n_row, level)[1]
    return (width - stored) * unseen + np.bincount(
        np.repeat(np.arange(rows.size), stored), weights=hi[entry], minlength=rows.size)


NUMPY_KERNELS = KernelSet(
    name="numpy",
    radius=radius,
    scan_counts=scan_counts,
    boxes=boxes,
    evi_sweep=evi_sweep,
    optimistic_kernel=optimistic_kernel,
    vi_model=vi_model,
    vi_sweep=vi_sweep,
    pour_values=pour_values,
    pour_kernel=pour_kernel,
    kl_interval=kl_interval,
    chernoff_rows=chernoff_rows,
    poured_chain_values=poured_values,
    poured_chain_visits=poured_occupancy,
    reaching=_reaching,
    closable=closable,
    adversary_iteration=adversary_iteration,
    optimist_iteration=optimist_iteration,
    robust_iteration=robust_iteration,
    upper_check=upper_check,
    lower_check=lower_check,
    merge_counts=merge_counts,
    split_calls=split_calls,
)
"""The kernel set of the ``reference`` backend."""
