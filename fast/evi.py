"""Extended value iteration on the compiled kernels of :mod:`fast._evi`.

Same public functions, signatures, results and errors as :mod:`reference.evi`
(the docstrings are the reference's). The boxes of Lemma 5 are computed once
per call; each sweep sorts ``v`` once (only as far as any pour can reach) and
solves every inner problem by the greedy pour with early exit. CSR counts are
never densified: every next state a pair has not reached shares the box
``[0, beta_0]``, so a run of them is poured in one step and a sweep costs
``O(k^2)`` for a pair with ``k`` stored next states, whatever the pour length.
"""

import numpy as np
import scipy.sparse as sp

from reference import evi as _reference
from reference._checks import as_float_array, check_int, check_real, csr_position
from reference.errors import ParameterError
from reference.evi import EVI_MAX_ITER, EVIResult, _stop_message

from . import _evi
from ._parallel import sweep_threads

__all__ = ["bernstein_radius", "extended_value_iteration"]

_SIMPLEX_SLACK = 1e-12


def bernstein_radius(counts, delta):
    dense, _ = _reference._counts_array(counts)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    out = np.empty_like(dense)
    _evi.radius_dense(dense, delta, out)
    return out


def _csr_counts(counts):
    """Canonical CSR float64 counts ``(S*A, S+1)`` after the reference's checks, never dense."""
    S, A = _reference._csr_sizes(counts)
    csr = sp.csr_array(counts, dtype=np.float64, copy=True)
    csr.sum_duplicates()
    _reference._check_count_values(csr.data, lambda k: csr_position(csr, k, A))
    return csr


def _miss_simplex(short, samples, delta):
    s, a = (int(i) for i in np.argwhere(short)[0])
    return ParameterError(
        f"the confidence set of the pair (s, a) = ({s}, {a}) misses the simplex "
        f"(it has {int(samples[s, a])} samples and `delta` = {delta!r}); sample "
        "every pair at least once or use a smaller `delta`."
    )


class _DenseBoxes:
    """Dense boxes of Lemma 5 and the compiled sweep over them."""

    def __init__(self, dense, delta):
        S, A, S1 = dense.shape
        self.shape = (S, A)
        beta = np.empty_like(dense)
        _evi.radius_dense(dense, delta, beta)
        self.lo = beta
        self.gap = np.empty_like(dense)
        self.mass = np.empty((S, A))
        _evi.boxes_dense(dense, beta, self.lo, self.gap, self.mass)
        short = (self.lo.sum(axis=2) + self.gap.sum(axis=2)) < 1.0 - _SIMPLEX_SLACK
        if short.any():
            raise _miss_simplex(short, dense.sum(axis=2), delta)
        self.prefix = S1
        lo_csr = sp.csr_array(self.lo.reshape(S * A, S1))
        self.lo_parts = (lo_csr.indptr.astype(np.int64), lo_csr.indices.astype(np.int32),
                         lo_csr.data)

    def sweep(self, costs, v_ext, order, v_out, policy_out):
        work = self.lo_parts[2].size + self.mass.size * order.size // 4
        _evi.sweep_dense(*self.lo_parts, self.gap, self.mass, costs, v_ext, order, v_out,
                         policy_out, sweep_threads(work))

    def kernel(self, policy, order):
        out = np.empty((self.shape[0], self.shape[0] + 1))
        _evi.kernel_dense(self.lo, self.gap, self.mass, policy, order, out)
        return out


class _SparseBoxes:
    """Boxes of CSR counts: one box per stored entry plus ``[0, beta_0]`` per pair."""

    def __init__(self, csr, delta):
        S = csr.shape[1] - 1
        A = csr.shape[0] // S
        self.shape = (S, A)
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
        hi_sum = np.bincount(rows, weights=self.lo + self.gap, minlength=S * A)
        hi_sum = hi_sum + (S + 1 - stored) * self.gap_unseen
        short = (hi_sum < 1.0 - _SIMPLEX_SLACK).reshape(S, A)
        if short.any():
            samples = np.asarray(csr.sum(axis=1)).reshape(S, A)
            raise _miss_simplex(short, samples, delta)
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
                                                self.gap_unseen, self.mass, self.shape[1],
                                                policy, order)
        S = self.shape[0]
        return sp.csr_array((data, indices, indptr), shape=(S, S + 1))


def extended_value_iteration(counts, costs, delta, mu, max_iter=EVI_MAX_ITER):
    if sp.issparse(counts):
        csr = _csr_counts(counts)
        S, A = csr.shape[1] - 1, csr.shape[0] // (csr.shape[1] - 1)
    else:
        dense, _ = _reference._counts_array(counts)
        S, A = dense.shape[:2]
    costs = as_float_array("costs", costs, (S, A))
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    mu = check_real("mu", mu, 0.0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    boxes = _SparseBoxes(csr, delta) if sp.issparse(counts) else _DenseBoxes(dense, delta)
    v_ext = np.zeros(S + 1)
    v_next = np.empty(S)
    policy = np.empty(S, dtype=np.intp)
    for j in range(max_iter):
        order = _evi.smallest_order(v_ext[:S], boxes.prefix)
        boxes.sweep(costs, v_ext, order, v_next, policy)
        residual = float(np.max(np.abs(v_next - v_ext[:S])))
        if residual <= mu:
            break
        if j + 1 < max_iter:
            v_ext[:S] = v_next
    converged = residual <= mu
    message = _stop_message(j, residual, mu, max_iter)
    return EVIResult(
        values=v_ext[:S].copy(),
        policy=policy.astype(np.int64),
        kernel=boxes.kernel(policy, order),
        iterations=j,
        residual=residual,
        converged=converged,
        message=message,
    )


bernstein_radius.__doc__ = _reference.bernstein_radius.__doc__
extended_value_iteration.__doc__ = _reference.extended_value_iteration.__doc__
