"""The compiled kernel set: the ``fast`` backend's implementation of the kernel protocol.

Thin wrappers around the Cython kernels of :mod:`fast._evi` and
:mod:`fast._vi` with the contracts of :class:`reference.backend.KernelSet`
(``docs/backends.md``). The boxes of Lemma 5 are computed once per EVI call;
each sweep sorts ``v`` once (only as far as any pour can reach) and solves
every inner problem by the greedy pour with early exit. CSR counts are never
densified: every next state a pair has not reached shares the box
``[0, beta_0]``, so a run of them is poured in one step and a sweep costs
``O(k^2)`` for a pair with ``k`` stored next states, whatever the pour length.
"""

import numpy as np
import scipy.sparse as sp
from reference.backend import KernelSet
from reference.kernels import pour_order

from . import _evi, _robust, _vi
from ._parallel import sweep_threads

__all__ = ["COMPILED_KERNELS"]


def radius(counts, delta):
    """Kernel ``radius``: Lemma 5's ``beta`` of dense counts, by :func:`fast._evi.radius_dense`."""
    out = np.empty_like(counts)
    _evi.radius_dense(counts, delta, out)
    return out


class DenseBoxes:
    """Boxes of dense counts ``(S, A, S+1)``: lower ends (also as CSR), widths, leftover mass."""

    def __init__(self, counts, delta):
        S, A, S1 = counts.shape
        self.n_states, self.n_actions = S, A
        beta = radius(counts, delta)
        self.lo = beta
        self.gap = np.empty_like(counts)
        self.mass = np.empty((S, A))
        _evi.boxes_dense(counts, beta, self.lo, self.gap, self.mass)
        self.upper_mass = self.lo.sum(axis=2) + self.gap.sum(axis=2)
        self.prefix = S1
        lo_csr = sp.csr_array(self.lo.reshape(S * A, S1))
        self.lo_parts = (lo_csr.indptr.astype(np.int64), lo_csr.indices.astype(np.int32),
                         lo_csr.data)

    def sweep(self, costs, v_ext, order, v_out, policy_out):
        work = self.lo_parts[2].size + self.mass.size * order.size // 4
        _evi.sweep_dense(*self.lo_parts, self.gap, self.mass, costs, v_ext, order, v_out,
                         policy_out, sweep_threads(work))

    def kernel(self, policy, order):
        out = np.empty((self.n_states, self.n_states + 1))
        _evi.kernel_dense(self.lo, self.gap, self.mass, policy, order, out)
        return out


class SparseBoxes:
    """Boxes of CSR counts: one box per stored entry plus ``[0, beta_0]`` per pair."""

    def __init__(self, csr, delta):
        S = csr.shape[1] - 1
        A = csr.shape[0] // S
        self.n_states, self.n_actions = S, A
        self.indptr = csr.indptr.astype(np.int64)
        self.cols = csr.indices.astype(np.int32)
        beta = np.empty(csr.nnz)
        beta_unseen = np.empty(S * A)
        _evi.radius_csr(self.indptr, csr.data, S, A, delta, beta, beta_unseen)
        self.lo, self.gap = beta, np.empty(csr.nnz)
        self.gap_unseen, self.mass = np.empty(S * A), np.empty(S * A)
        longest = _evi.boxes_csr(self.indptr, csr.data, beta, beta_unseen, self.lo, self.gap,
                                 self.gap_unseen, self.mass)
        stored = np.diff(self.indptr)
        rows = np.repeat(np.arange(S * A), stored)
        upper_mass = np.bincount(rows, weights=self.lo + self.gap, minlength=S * A)
        self.upper_mass = (upper_mass + (S + 1 - stored) * self.gap_unseen).reshape(S, A)
        self.prefix = min(longest, S + 1)
        self.rank = np.full(S + 1, -1, dtype=np.intp)
        self.widest = max(int(stored.max()), 1)
        self.scratch = None

    def sweep(self, costs, v_ext, order, v_out, policy_out):
        n_threads = sweep_threads(self.lo.size + 8 * self.mass.size)
        if self.scratch is None or self.scratch.shape[0] < n_threads:
            self.scratch = np.empty((n_threads, 2 * self.widest), dtype=np.intp)
        _evi.sweep_csr(self.indptr, self.cols, self.lo, self.gap, self.gap_unseen, self.mass,
                       costs, v_ext, order, self.rank, self.scratch, v_out, policy_out,
                       n_threads)

    def kernel(self, policy, order):
        indptr, indices, data = _evi.kernel_csr(self.indptr, self.cols, self.lo, self.gap,
                                                self.gap_unseen, self.mass, self.n_actions,
                                                policy, order)
        S = self.n_states
        return sp.csr_array((data, indices, indptr), shape=(S, S + 1))


def boxes(counts, delta):
    """Kernel ``boxes``: :class:`SparseBoxes` of CSR counts, :class:`DenseBoxes` of dense ones."""
    return SparseBoxes(counts, delta) if sp.issparse(counts) else DenseBoxes(counts, delta)


def evi_sweep(boxes, costs, v_ext, v_out, policy_out):
    """Kernel ``evi_sweep``: the partial sort of ``v`` and the compiled backup."""
    order = _evi.smallest_order(v_ext[:-1], boxes.prefix)
    boxes.sweep(costs, v_ext, order, v_out, policy_out)


def optimistic_kernel(boxes, v_ext, policy):
    """Kernel ``optimistic_kernel``: the compiled pour of the pairs of ``policy``."""
    return boxes.kernel(policy, _evi.smallest_order(v_ext[:-1], boxes.prefix))


class VIModel:
    """A known SSP for the compiled VI sweep: its dense kernel, or its CSR kernel's arrays."""

    def __init__(self, ssp):
        self.sparse = ssp.is_sparse
        if self.sparse:
            csr = ssp.kernel_csr()
            self.parts = (csr.indptr.astype(np.int64), csr.indices.astype(np.int32),
                          np.ascontiguousarray(csr.data, dtype=np.float64))
        else:
            self.parts = (ssp.kernel_dense(),)
        self.n_threads = sweep_threads(self.parts[-1].size)


def vi_sweep(model, costs, v_ext, v_out, policy_out):
    """Kernel ``vi_sweep``: :func:`fast._vi.sweep_csr` or :func:`fast._vi.sweep_dense`."""
    compiled = _vi.sweep_csr if model.sparse else _vi.sweep_dense
    compiled(*model.parts, costs, v_ext, v_out, policy_out, model.n_threads)


def _pour_arguments(boxes, rows, v_ext, descending):
    """The order of the pour and the prefix sums :mod:`fast._robust` walks it with."""
    S = boxes.n_states
    order = pour_order(v_ext, descending).astype(np.int64)
    rank = np.empty(S + 1, dtype=np.int64)
    rank[order] = np.arange(S + 1)
    along = v_ext[order]
    infinite = np.isinf(along)
    cum_v = np.concatenate([[0.0], np.cumsum(np.where(infinite, 0.0, along))])
    cum_inf = np.concatenate([[0], np.cumsum(infinite)]).astype(np.int64)
    return (boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
            np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(v_ext), order, rank,
            cum_v, cum_inf, np.empty(len(rows)), int(np.diff(boxes.indptr).max(initial=0)))


def pour_values(boxes, rows, v_ext, descending):
    """Kernel ``pour_values``, by :func:`fast._robust.pour_values` (threads over rows)."""
    arguments = _pour_arguments(boxes, rows, v_ext, descending)
    work = 8 * (boxes.lo.size + len(rows))
    _robust.pour_values(*arguments, sweep_threads(work))
    return arguments[11]


def pour_kernel(boxes, rows, v_ext, descending):
    """Kernel ``pour_kernel``, by :func:`fast._robust.pour_kernel`."""
    arguments = _pour_arguments(boxes, rows, v_ext, descending)
    indptr, indices, data = _robust.pour_kernel(*arguments)
    kernel = sp.csr_array((data, indices, indptr), shape=(len(rows), boxes.n_states + 1))
    kernel.sort_indices()
    return arguments[11], kernel


COMPILED_KERNELS = KernelSet(
    name="compiled",
    radius=radius,
    boxes=boxes,
    evi_sweep=evi_sweep,
    optimistic_kernel=optimistic_kernel,
    vi_model=VIModel,
    vi_sweep=vi_sweep,
    pour_values=pour_values,
    pour_kernel=pour_kernel,
)
"""The kernel set of the ``fast`` backend."""
