"""The compiled kernel set: the ``fast`` backend's implementation of the kernel protocol.

Thin wrappers around the Cython kernels of :mod:`fast._boxes`, :mod:`fast._evi`,
:mod:`fast._pieces`, :mod:`fast._vi`, :mod:`fast._robust`, :mod:`fast._poured`,
:mod:`fast._graphs`, :mod:`fast._kl` and :mod:`fast._sampling`, with the contracts of :class:`reference.backend.KernelSet`
(``docs/backends.md``). Dense counts are read once, by one compiled pass that
gives the argument check their largest entry and keeps their nonzero entries
when few (:func:`scan_counts`); the boxes of Lemma 5 are then built from those
in the CSR layout, whose zeros are never stored. Every next state a pair has not
reached shares the box ``[0, beta_0]``, so a run of them is poured in one
step and a sweep costs ``O(k log k)`` for a pair with ``k`` stored next
states, whatever the pour length. Each sweep sorts ``v`` only as far as any
pour can reach, starting from the order the previous sweep on the same boxes
left (an insertion sort repairs it in ``O(S + inversions)`` while ``v`` moves
little; a heap sorts afresh when it moves more), and runs on the threads
:class:`fast._parallel.ThreadChoice` picks. The certificates' pours repair the last
order poured on the thread by insertion, or take its whole walk when they pour the same
vector again (:func:`_pour_walk`); their kernels' products run compiled
(:class:`CompiledPouredKernel`).
"""

import threading
import weakref

import numpy as np
import scipy.sparse as sp
from reference import box_kinds
from reference.chains import explicit as explicit_chains
from reference.chains import poured as poured_chains
from reference.backend import KernelSet
from reference.chains import UNIT_ROUNDOFF
from reference.box_kinds import SIMPLEX_SLACK
from reference.check_rounding import SUBNORMAL_UNIT
from reference.kernels import goal_first_order, pour_order
from reference.errors import ConvergenceError, ParameterError, ShapeError
from reference.robust_checks import CHECK_MAX_SLACK
from reference.robust_loops import ROBUST_MAX_ITER, SWITCH_RTOL
from reference.robust_rounds import block_states
from reference.sampling_kernels import check_layouts, check_split
from reference.poured import PouredKernel

from . import (_boxes, _checks, _closable, _evi, _graphs, _iteration, _kl, _pieces, _poured,
               _robust, _robust_pi, _sampling, _vi)
from ._parallel import ThreadChoice, sweep_threads

__all__ = ["COMPILED_KERNELS"]

KL_WORK = 200
"""Multiply-adds of one Chernoff interval, for :func:`fast._parallel.sweep_threads`: two sides
of about four evaluations of ``kl`` (a start and three Newton steps), each two logarithms and
two divisions (10^4 entries take 1.7 ms on one thread)."""


def radius(counts, delta):
    """Kernel ``radius``: Lemma 5's ``beta`` of dense counts, by
    :func:`fast._boxes.radius_dense`."""
    out = np.empty_like(counts)
    _boxes.radius_dense(counts, delta, out)
    return out


def scan_counts(counts):
    """Kernel ``scan_counts``: :func:`fast._boxes.scan_dense`, the one compiled pass over dense
    counts (their largest entry, and their nonzero entries when at most
    :data:`fast._boxes.DENSE_MAX_FILL` of them are nonzero)."""
    return _boxes.scan_dense(counts, int(_boxes.DENSE_MAX_FILL * counts.size))


class Boxes:
    """The compiled boxes (:class:`fast._boxes.CsrBoxes` or :class:`fast._boxes.DenseBoxes`) and
    the thread choice of their repeated sweep."""

    def __init__(self, counts, delta):
        if sp.issparse(counts):
            S = counts.shape[1] - 1
            self.compiled = _boxes.boxes_from_csr(
                counts.indptr.astype(np.int64, copy=False),
                counts.indices.astype(np.int32, copy=False),
                counts.data, S, counts.shape[0] // S, delta)
        else:
            self.compiled = _boxes.boxes_from_scan(counts, delta)
        self.sparse = isinstance(self.compiled, _boxes.CsrBoxes)
        self.n_states = self.compiled.n_states
        self.n_actions = self.compiled.n_actions
        self.upper_mass = self.compiled.upper_mass
        self.threads = ThreadChoice(self.compiled.work)

    @property
    def nbytes(self):
        """Bytes of the boxes, the row pointers included (not the counts' own columns)."""
        extra = self.compiled.indptr.nbytes if self.sparse else 0
        return self.compiled.nbytes + extra


def evi_sweep(boxes, costs, v_ext, v_out, policy_out):
    """Kernel ``evi_sweep``: :func:`fast._evi.sweep_csr` or :func:`fast._evi.sweep_dense`."""
    compiled = _evi.sweep_csr if boxes.sparse else _evi.sweep_dense
    return boxes.threads.run(compiled, boxes.compiled, costs, v_ext, v_out, policy_out)


def optimistic_kernel(boxes, v_ext, policy):
    """Kernel ``optimistic_kernel``: the compiled pour of the pairs of ``policy``, as the
    :class:`~reference.poured.PouredKernel` pieces of :func:`fast._pieces.kernel_pieces`
    along the full pour order (:func:`fast._pieces.goal_first_ranks`, a radix sort in
    ``O(S)``; :func:`~reference.kernels.goal_first_order` when it returns None: on a NaN
    value, or when its scratch space cannot be allocated)."""
    ranked = _pieces.goal_first_ranks(v_ext)
    if ranked is None:
        order = goal_first_order(v_ext).astype(np.int64, copy=False)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
    else:
        order, rank = ranked
    pieces = _pieces.kernel_pieces(boxes.compiled, policy, rank)
    return PouredKernel.along(order, rank, pieces, descending=False)


class VIModel:
    """A known SSP for the compiled VI sweep: the CSR arrays of its kernel when at most
    ``fast._vi.CSR_MAX_FILL`` of the entries are nonzero (whatever its storage), else its
    dense kernel; and the thread choice of the repeated sweep."""

    def __init__(self, ssp):
        S, A = ssp.n_states, ssp.n_actions
        csr = ssp.kernel_csr()
        self.sparse = csr.nnz <= _vi.CSR_MAX_FILL * S * A * (S + 1)
        if self.sparse:
            self.parts = (csr.indptr.astype(np.int64), csr.indices.astype(np.int32),
                          np.ascontiguousarray(csr.data, dtype=np.float64))
        else:
            self.parts = (ssp.kernel_dense(),)
        self.threads = ThreadChoice(self.parts[-1].size)


def vi_sweep(model, costs, v_ext, v_out, policy_out):
    """Kernel ``vi_sweep``: :func:`fast._vi.sweep_csr` or :func:`fast._vi.sweep_dense`."""
    compiled = _vi.sweep_csr if model.sparse else _vi.sweep_dense
    return model.threads.run(compiled, *model.parts, costs, v_ext, v_out, policy_out)


_LAST_POUR = threading.local()
"""The last pour kept on each thread (:func:`_pour_walk`): ``(descending, key, walk)``."""


REPAIR_MOVES = 16
"""Most moves, per next state, of the insertion that repairs a kept pour order
(:func:`fast._robust.repair_order`) before a sort takes over."""

KEPT_WALK_STATES = 1 << 12
"""The most next states of a pour whose whole walk :func:`_pour_walk` keeps for a pour of the
same vector (at most 160 KiB held, the vector's bytes included); larger pours keep their order."""


def _pour_walk(v_ext, descending, keep=True):
    """``(order, rank, cum_v, cum_inf)``: :func:`pour_order`, the position of every next state
    in it, and the prefix sums of the finite values and counts of the infinite ones along it.

    The last pour kept on the thread, when of the same direction, gives its walk whole when
    it poured the same vector, bit for bit (the policy iterations and the robust rounds pour
    one vector two or three times; kept up to :data:`KEPT_WALK_STATES` next states). Otherwise
    its order (its values moved little, or not at all) is repaired into the new one by
    insertion (:func:`fast._robust.repair_order`, the same permutation as
    :func:`pour_order`; ``O(S)`` when nothing moved), and sorted afresh when that would take
    more than :data:`REPAIR_MOVES` moves a next state: by the radix sort of
    :func:`fast._robust.sort_order` (the same permutation), or by :func:`pour_order` on a
    NaN. Only the new walk is kept (read-only: kernels built on it and later pours share
    it), the last one dropped, and none with ``keep`` False (the policy iterations' first
    pour: they repair their own orders after it).
    """
    last = getattr(_LAST_POUR, "walk", None)
    _LAST_POUR.walk = None
    key = v_ext.tobytes() if v_ext.size <= KEPT_WALK_STATES else None
    if last is not None and last[0] == descending and key is not None and last[1] == key:
        walk = last[2]
    else:
        order = None
        if last is not None and last[0] == descending and last[2][0].size == v_ext.size:
            order = last[2][0].copy()
            if not _robust.repair_order(v_ext, order, descending, REPAIR_MOVES * v_ext.size):
                order = None
        last = None
        if order is None:
            order = np.empty(v_ext.size, dtype=np.int64)
            if not _robust.sort_order(v_ext, order, descending):
                order = pour_order(v_ext, descending).astype(np.int64)
        rank = np.empty(order.size, dtype=np.int64)
        cum_v, cum_inf = np.empty(order.size + 1), np.empty(order.size + 1, dtype=np.int64)
        _robust.pour_walk(v_ext, order, rank, cum_v, cum_inf)
        walk = order, rank, cum_v, cum_inf
        for array in walk:
            array.flags.writeable = False
    if keep:
        _LAST_POUR.walk = (descending, key, walk if key is not None else walk[:1])
    return walk


def _pour_arguments(boxes, rows, v_ext, descending):
    """The order of the pour and the prefix sums :mod:`fast._robust` walks it with."""
    v_ext = np.ascontiguousarray(v_ext, dtype=np.float64)
    order, rank, cum_v, cum_inf = _pour_walk(v_ext, descending)
    return (boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
            np.ascontiguousarray(rows, dtype=np.int64), v_ext, order, rank,
            cum_v, cum_inf, np.empty(len(rows)))


def pour_values(boxes, rows, v_ext, descending):
    """Kernel ``pour_values``, by :func:`fast._robust.pour_values` (threads over rows); a pour
    of every pair by increasing value that :func:`_pour_blocks` just made on the same boxes
    and vector (:func:`_poured_pairs`) is copied instead."""
    kept = _poured_pairs(boxes, rows, v_ext, descending)
    if kept is not None:
        return kept
    arguments = _pour_arguments(boxes, rows, v_ext, descending)
    work = 8 * (boxes.lo.size + len(rows))
    _robust.pour_values(*arguments, sweep_threads(work))
    return arguments[11]


def pour_kernel(boxes, rows, v_ext, descending):
    """Kernel ``pour_kernel``: the :class:`~reference.poured.PouredKernel` pieces of
    :func:`fast._robust.pour_pieces` (threads over rows) along :func:`pour_order`."""
    order, rank = _pour_walk(np.ascontiguousarray(v_ext, dtype=np.float64), descending)[:2]
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    per_row = boxes.lo.size / max(1, boxes.hi_unseen.size)
    pieces = _robust.pour_pieces(boxes.indptr, boxes.indices, boxes.lo, boxes.hi,
                                 boxes.hi_unseen, rows, rank,
                                 sweep_threads(int(8 * rows.size * (per_row + 1))))
    return CompiledPouredKernel.along(order, rank, pieces, descending)


class CompiledPouredKernel(PouredKernel):
    """A :class:`~reference.poured.PouredKernel` whose products run in
    :func:`fast._poured.poured_apply` and, for vectors with infinities,
    :func:`fast._poured.poured_infinities` (the same floats as the numpy ones)."""

    __slots__ = ()

    def finite_product(self, x, positive=False):
        """``kernel @ x`` for finite ``x`` (compiled; with ``positive``, the numpy count of
        :meth:`reference.poured.PouredKernel.finite_product`)."""
        if positive:
            return super().finite_product(x, positive)
        out = np.empty(self.shape[0])
        _poured.poured_apply(self.order, self.rank, self.indptr, self.indices, self.data,
                             self.width, self.reach, self.partial,
                             np.ascontiguousarray(x, dtype=np.float64),
                             np.empty(self.order.size + 1), out)
        return out

    def extended_product(self, x):
        """``kernel @ x`` for ``x`` that may hold infinities (compiled: :func:`finite_product`
        of the finite part, then :func:`fast._poured.poured_infinities`; the floats of
        :meth:`reference.poured.PouredKernel.extended_product`). A finite ``x`` takes the
        finite product alone: no infinity to place, and no copy of ``x``."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        if np.isfinite(x).all():
            return self.finite_product(x)
        out = self.finite_product(np.where(np.isfinite(x), x, 0.0))
        _poured.poured_infinities(*_chain_arrays(self), x, np.empty(x.size + 1, np.int64),
                                  np.empty(x.size + 1, np.int64), out)
        return out


def _chain_arrays(kernel):
    """The arrays of a square ``PouredKernel`` that :mod:`fast._poured` reads."""
    return (kernel.order, kernel.rank, kernel.indptr, kernel.indices, kernel.data, kernel.width,
            kernel.reach, kernel.partial)


def _solve(kernel, active, rhs, x, transposed=False):
    """:func:`fast._poured.poured_solve` on the ``active`` states (int8 mask) from ``x``
    (overwritten by the candidate), with the refinement limits of
    :mod:`reference.chains.poured`: ``(backward error, residual)``."""
    return _poured.poured_solve(
        *_chain_arrays(kernel), active, rhs, x, poured_chains.POURED_RTOL,
        poured_chains.POURED_ROUNDS * (1 + explicit_chains.REFINEMENT_STEPS),
        explicit_chains.KRYLOV_MAXITER, transposed)


def _accepted(omega):
    """Whether a candidate of backward error ``omega`` is a chain's values:
    :data:`reference.chains.POURED_ACCEPT` (or ``POURED_FAIL``, if lower) at most."""
    return omega <= min(poured_chains.POURED_ACCEPT, poured_chains.POURED_FAIL)


def poured_chain_values(kernel, costs, start):
    """Kernel ``poured_chain_values``: the split of
    :func:`reference.chains.poured.poured_splits`, then :func:`fast._poured.poured_solve`
    (compiled BiCGSTAB on the kernel's ``O(S + stored)`` products) on the transient states
    from ``start``, which also gives the residual; when its backward error exceeds
    :data:`reference.chains.POURED_ACCEPT` (or ``POURED_FAIL``, if lower),
    :func:`reference.chains.poured_values` answers instead (exact up to
    ``DENSE_MAX_STATES`` states, its own iterative solve and fallbacks above). No search
    splits the states when every cost is positive and :func:`fast._poured.reaches_goal`
    shows that every state reaches the goal: then every state is transient."""
    if np.all(costs > 0) and _poured.reaches_goal(*_chain_arrays(kernel)):
        infinite, transient = np.zeros(costs.size, dtype=bool), np.ones(costs.size, dtype=bool)
    else:
        infinite, transient = poured_chains.poured_splits(kernel, costs)
    values = np.where(infinite, np.inf, 0.0)
    if not transient.any():
        return values, poured_chains.poured_residual(kernel, costs, values)
    x = np.where(transient & np.isfinite(start) & (start >= 0), start, 0.0)
    omega, residual = _solve(kernel, transient.view(np.int8), np.where(transient, costs, 0.0), x)
    if not _accepted(omega):
        return poured_chains.poured_values(kernel, costs, start)
    values[transient] = np.maximum(x[transient], 0.0)
    return values, residual


def poured_chain_visits(kernel, start):
    """Kernel ``poured_chain_visits``: when :func:`fast._poured.reaches_goal` shows the chain
    proper, :func:`fast._poured.poured_solve` on the transposed system (compiled BiCGSTAB on
    the kernel's ``O(S + stored)`` products ``y Q``) from zero; when it does not, or when the
    solve's backward error exceeds :data:`reference.chains.poured.OCCUPANCY_RTOL`,
    :func:`reference.chains.poured_occupancy` answers instead (zeros for a chain that is
    not proper, a sparse LU up to ``DENSE_MAX_STATES`` states)."""
    S = kernel.shape[0]
    start = np.ascontiguousarray(start, dtype=np.float64)
    if not _poured.reaches_goal(*_chain_arrays(kernel)):
        return poured_chains.poured_occupancy(kernel, start)
    visits = np.zeros(S)
    omega = _solve(kernel, np.ones(S, dtype=np.int8), start, visits, transposed=True)[0]
    if not omega <= poured_chains.OCCUPANCY_RTOL:
        return poured_chains.poured_occupancy(kernel, start)
    return np.where(np.isfinite(visits), np.maximum(visits, 0.0), 0.0)


def reaching(tails, heads, targets):
    """Kernel ``reaching``, by :func:`fast._graphs.reaching` (a breadth-first search on the
    reversed edges, grouped by a counting sort)."""
    targets = np.ascontiguousarray(targets, dtype=bool)
    out = np.empty(targets.size, dtype=bool)
    _graphs.reaching(np.ascontiguousarray(tails, dtype=np.int64),
                     np.ascontiguousarray(heads, dtype=np.int64), targets.view(np.uint8),
                     out.view(np.uint8))
    return out


def closable(boxes, rows):
    """Kernel ``closable``, by :func:`fast._closable.closable` (one search and the removal in
    typed loops over the policy's rows), after checking ``rows``."""
    S, A = boxes.n_states, boxes.n_actions
    out = np.empty(S, dtype=bool)
    _closable.closable(boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
                       _checked("rows", rows, np.int64, (S,), S * A, "rows"),
                       1.0 - SIMPLEX_SLACK, out.view(np.uint8))
    return out


def kl_interval(p_hat, n, level):
    """Kernel ``kl_interval``, by :func:`fast._kl.kl_interval` (threads over entries)."""
    lo, hi = np.empty_like(p_hat), np.empty_like(p_hat)
    _kl.kl_interval(p_hat, n, level, lo, hi, box_kinds.KL_BISECTIONS,
                    box_kinds.KL_NEWTON_STEPS, box_kinds.KL_EXP_START, box_kinds.KL_ROUNDOFF,
                    box_kinds.KL_UNDERFLOW, sweep_threads(KL_WORK * p_hat.size))
    return lo, hi


def chernoff_rows(indptr, counts, n, level, rows, width, lo, hi, hi_unseen):
    """Kernel ``chernoff_rows``, by :func:`fast._kl.chernoff_rows` (the rows' entries and unseen
    ends in short lists for the blocks of :func:`fast._kl.kl_interval`, threads over blocks),
    after :func:`reference.box_kinds.check_chernoff_rows` (no call for no rows)."""
    indptr, counts, n, level, rows = box_kinds.check_chernoff_rows(
        indptr, counts, n, level, rows, lo, hi, hi_unseen)
    hi_sum = np.empty(rows.size)
    if not rows.size:
        return hi_sum
    per_row = 1.0 + lo.size / max(1, n.size)
    _kl.chernoff_rows(indptr, counts, n, level, rows, width, lo, hi, hi_unseen, hi_sum,
                      box_kinds.KL_BISECTIONS, box_kinds.KL_NEWTON_STEPS,
                      box_kinds.KL_EXP_START, box_kinds.KL_ROUNDOFF, box_kinds.KL_UNDERFLOW,
                      sweep_threads(KL_WORK * per_row * rows.size))
    return hi_sum


def _iteration_tools(boxes):
    """The :class:`fast._iteration.Tools` of a policy iteration on ``boxes``: their arrays, the
    pour order of :func:`_pour_walk` (for the first pour, not kept: the loop repairs its own
    orders by :data:`REPAIR_MOVES`), :func:`poured_chain_values`, its fallback and its solve's
    limits, the threads of :func:`pour_kernel` and :func:`pour_values` (``S`` and ``S*A``
    rows)."""
    S, A = boxes.n_states, boxes.n_actions
    per_row = boxes.lo.size / max(1, boxes.hi_unseen.size)
    return _iteration.Tools(
        boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
        lambda v_ext, descending: _pour_walk(v_ext, descending, False),
        poured_chain_values, poured_chains.poured_values, CompiledPouredKernel.along,
        ConvergenceError,
        sweep_threads(int(8 * S * (per_row + 1))), sweep_threads(8 * (boxes.lo.size + S * A)),
        poured_chains.POURED_RTOL,
        poured_chains.POURED_ROUNDS * (1 + explicit_chains.REFINEMENT_STEPS),
        explicit_chains.KRYLOV_MAXITER, min(poured_chains.POURED_ACCEPT, poured_chains.POURED_FAIL),
        ROBUST_MAX_ITER, SWITCH_RTOL, REPAIR_MOVES)


def _checked(name, array, dtype, shape, high=None, form=None):
    """``array`` as a C-contiguous ``dtype`` array, checked to have ``shape`` (and, with
    ``high``, every entry in ``[0, high)``): the compiled iterations and checks index with it
    unchecked.
    Raises :class:`~reference.errors.ShapeError` or
    :class:`~reference.errors.ParameterError` naming ``name``."""
    array = np.ascontiguousarray(array, dtype=dtype)
    if array.shape != shape:
        raise ShapeError(f"`{name}` must have shape {shape}; got {array.shape}.")
    if high is not None and array.size and not (array.min() >= 0 and array.max() < high):
        raise ParameterError(f"`{name}` must hold {form} in [0, {high}); got entries from "
                             f"{array.min()} to {array.max()}.")
    return array


def adversary_iteration(boxes, rows, costs_pi, infinite, start):
    """Kernel ``adversary_iteration``: the whole loop in one call of
    :func:`fast._iteration.adversary_iteration` (compiled pours, solves and products on the
    kernels' pieces), after checking the shapes (``(S,)`` each) and that ``rows`` lie in
    ``[0, S*A)``."""
    S, A = boxes.n_states, boxes.n_actions
    return _iteration.adversary_iteration(
        _iteration_tools(boxes), _checked("rows", rows, np.int64, (S,), S * A, "rows"),
        _checked("costs_pi", costs_pi, np.float64, (S,)),
        _checked("infinite", infinite, bool, (S,)), _checked("start", start, np.float64, (S,)))


def optimist_iteration(boxes, costs, policy, start):
    """Kernel ``optimist_iteration``: the whole loop in one call of
    :func:`fast._iteration.optimist_iteration` (one ``(S, A)`` array of Q-values, filled in
    place), after checking the shapes (``costs`` ``(S, A)``, the others ``(S,)``) and that
    ``policy`` lies in ``[0, A)``."""
    S, A = boxes.n_states, boxes.n_actions
    return _iteration.optimist_iteration(
        _iteration_tools(boxes), _checked("costs", costs, np.float64, (S, A)),
        _checked("policy", policy, np.int64, (S,), A, "actions"),
        _checked("start", start, np.float64, (S,)))


POUR_BLOCK_PAIRS = 1 << 15
"""Pairs the pours of every pair make at a time (:func:`lower_check`,
:func:`robust_iteration`): their Q-values are never held whole."""


_POURED_PAIRS = threading.local()
"""The last pour of every pair by increasing value that :func:`_pour_blocks` made on the thread
(:func:`_poured_pairs`)."""

_BOX_ARRAYS = ("indptr", "indices", "lo", "hi", "hi_unseen")


def _frozen_arrays(boxes):
    """Weak references to ``boxes`` and its arrays ``_BOX_ARRAYS`` when none can be written (each
    and every array it views read-only, as ``store_boxes`` makes them); else None."""
    for array in (arrays := [getattr(boxes, name) for name in _BOX_ARRAYS]):
        while isinstance(array, np.ndarray) and not array.flags.writeable:
            array = array.base
        if array is not None:
            return None
    try:
        return tuple(weakref.ref(item) for item in [boxes, *arrays])
    except TypeError:
        return None


def _poured_pairs(boxes, rows, v_ext, descending):
    """A copy of the pour of every pair by increasing value against ``v_ext`` when
    :func:`_pour_blocks` made it last on the thread, on these boxes and this vector bit for
    bit, and ``rows`` are all the pairs in order (the lower check's pour of the optimist's
    values, which the adaptive sampling pours again); else None. Kept up to
    :data:`POUR_BLOCK_PAIRS` pairs and :data:`KEPT_WALK_STATES` next states, for boxes whose
    arrays cannot be written (:func:`_frozen_arrays`), while they hold the same ones."""
    kept = getattr(_POURED_PAIRS, "kept", None)
    n_pairs = boxes.hi_unseen.size
    if descending or kept is None or kept[0][0]() is not boxes or len(rows) != n_pairs:
        return None
    rows = np.asarray(rows)
    if not (rows[0] == 0 and rows[-1] == n_pairs - 1 and (rows[1:] > rows[:-1]).all()
            and kept[1] == np.ascontiguousarray(v_ext, dtype=np.float64).tobytes()):
        return None
    same = all(ref() is getattr(boxes, name) for ref, name in zip(kept[0][1:], _BOX_ARRAYS))
    return kept[2].copy() if same and _frozen_arrays(boxes) is not None else None


def _pour_blocks(boxes, v_ext, descending):
    """The function of ``(r0, r1)`` that pours the pairs ``r0:r1`` against ``v_ext``: the
    compiled :func:`fast._robust.pour_values` along one :func:`_pour_walk` of ``v_ext``
    (the floats of :func:`pour_values`, row by row). A pour of every pair by increasing value
    on boxes whose arrays cannot be written is kept, read-only, for :func:`_poured_pairs`."""
    v_ext = np.ascontiguousarray(v_ext, dtype=np.float64)
    walk = _pour_walk(v_ext, descending)
    per_row = boxes.lo.size / max(1, boxes.hi_unseen.size)
    owner = None
    if not descending:
        _POURED_PAIRS.kept = None
        if v_ext.size <= KEPT_WALK_STATES and boxes.hi_unseen.size <= POUR_BLOCK_PAIRS:
            owner = _frozen_arrays(boxes)

    def pour(r0, r1):
        out = np.empty(r1 - r0)
        _robust.pour_values(boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
                            np.arange(r0, r1, dtype=np.int64), v_ext, *walk, out,
                            sweep_threads(int(8 * (r1 - r0) * (per_row + 1))))
        if owner is not None and r0 == 0 and r1 == boxes.hi_unseen.size:
            out.flags.writeable = False
            _POURED_PAIRS.kept = (owner, v_ext.tobytes(), out)
        return out

    return pour


def robust_iteration(boxes, costs, policy, start, rounds):
    """Kernel ``robust_iteration``: the rounds in one call of
    :func:`fast._robust_pi.robust_iteration` (the compiled ``closable``, adversary iteration
    and check called directly, the check's pours and those of every pair by
    :class:`fast._iteration.Pours`, :data:`POUR_BLOCK_PAIRS` pairs at a time), after
    checking the shapes (``costs`` ``(S, A)``, the others ``(S,)``) and that ``policy`` lies
    in ``[0, A)``."""
    S, A = boxes.n_states, boxes.n_actions
    tools = _iteration_tools(boxes)
    pours = _iteration.Pours(tools, True, KEPT_WALK_STATES)
    return _robust_pi.robust_iteration(
        tools, pours.rows, pours.pairs, block_states(A, POUR_BLOCK_PAIRS),
        boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
        _checked("costs", costs, np.float64, (S, A)),
        _checked("policy", policy, np.int64, (S,), A, "actions"),
        _checked("start", start, np.float64, (S,)), int(rounds), 1.0 - SIMPLEX_SLACK,
        UNIT_ROUNDOFF, SUBNORMAL_UNIT, CHECK_MAX_SLACK, SWITCH_RTOL)


def upper_check(boxes, rows, costs_pi, values, exact_zero):
    """Kernel ``upper_check``: the whole check in one call of
    :func:`fast._checks.upper_check`, each pour by :func:`pour_values`, after checking the
    shapes (``(S,)`` each) and that ``rows`` lie in ``[0, S*A)``."""
    S, A = boxes.n_states, boxes.n_actions
    rows = _checked("rows", rows, np.int64, (S,), S * A, "rows")
    return _checks.upper_check(
        lambda v_ext: pour_values(boxes, rows, v_ext, True), boxes.indptr, boxes.indices,
        boxes.lo, boxes.hi, boxes.hi_unseen, rows, _checked("costs_pi", costs_pi, np.float64, (S,)),
        _checked("values", values, np.float64, (S,)),
        _checked("exact_zero", exact_zero, bool, (S,)).view(np.uint8), UNIT_ROUNDOFF,
        SUBNORMAL_UNIT, CHECK_MAX_SLACK)


def lower_check(boxes, costs, values, q_values):
    """Kernel ``lower_check``: the whole check in one call of
    :func:`fast._checks.lower_check`, each pour of every pair by :func:`_pour_blocks`,
    :data:`POUR_BLOCK_PAIRS` pairs at a time, after checking the shapes (``costs`` and
    ``q_values`` ``(S, A)``, ``values`` ``(S,)``)."""
    S, A = boxes.n_states, boxes.n_actions
    if q_values is not None:
        q_values = _checked("q_values", q_values, np.float64, (S, A)).ravel()
    return _checks.lower_check(
        lambda v_ext: _pour_blocks(boxes, v_ext, False), boxes.indptr, boxes.lo,
        boxes.hi_unseen, _checked("costs", costs, np.float64, (S, A)).ravel(),
        _checked("values", values, np.float64, (S,)), q_values, UNIT_ROUNDOFF,
        SUBNORMAL_UNIT, CHECK_MAX_SLACK, block_states(A, POUR_BLOCK_PAIRS))


def merge_counts(indptr, indices, data, inc_indptr, inc_indices, inc_data):
    """Kernel ``merge_counts``, by :func:`fast._sampling.merge_counts` (a pass over both
    terms for the sum's row lengths, one to write it), after the checks of the numpy
    kernel's arguments that take ``O(1)`` (its first pass refuses decreasing row pointers)."""
    check_layouts(indptr, indices, data, inc_indptr, inc_indices, inc_data)
    return _sampling.merge_counts(indptr, indices, data, inc_indptr, inc_indices, inc_data)


def split_calls(more, total, grid):
    """Kernel ``split_calls``, by :func:`fast._sampling.split_calls` (numpy's sum of ``more``
    computed here; the remainders ordered by a radix sort of their 32-bit keys)."""
    more = np.ascontiguousarray(more, dtype=np.float64)
    check_split(more, total, grid)
    draws = np.empty(more.size, dtype=np.int64)
    _sampling.split_calls(more, total / more.sum(), total, grid, draws)
    return draws


COMPILED_KERNELS = KernelSet(
    name="compiled",
    radius=radius,
    scan_counts=scan_counts,
    boxes=Boxes,
    evi_sweep=evi_sweep,
    optimistic_kernel=optimistic_kernel,
    vi_model=VIModel,
    vi_sweep=vi_sweep,
    pour_values=pour_values,
    pour_kernel=pour_kernel,
    kl_interval=kl_interval,
    chernoff_rows=chernoff_rows,
    poured_chain_values=poured_chain_values,
    poured_chain_visits=poured_chain_visits,
    reaching=reaching,
    closable=closable,
    adversary_iteration=adversary_iteration,
    optimist_iteration=optimist_iteration,
    robust_iteration=robust_iteration,
    upper_check=upper_check,
    lower_check=lower_check,
    merge_counts=merge_counts,
    split_calls=split_calls,
)
"""The kernel set of the ``fast`` backend."""
