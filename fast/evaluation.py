"""Plain value iteration on the compiled Bellman sweep of :mod:`fast._vi`.

The iteration itself (stopping rule, diagnostics, messages) is the reference's
``_value_iteration``; only the sweep is swapped. Exact policy evaluation
(sparse LU, or BiCGSTAB from ``reference.evaluation.ITERATIVE_MIN_STATES``
transient states on) is :mod:`reference.evaluation`'s, re-exported unchanged:
on a sparse garnet with S = 10^5 about two thirds of its time are scipy's CSR
matrix-vector products, so a compiled copy would gain little.
"""

import numpy as np

from reference import evaluation as _reference

from . import _vi
from ._parallel import sweep_threads

__all__ = ["value_iteration"]


def _compiled_sweep(ssp):
    """A sweep with the contract of the reference's ``_bellman_sweep``, for ``ssp``.

    A dense model sweeps its dense kernel; a sparse one its CSR kernel, whose
    index arrays are converted once.
    """
    S = ssp.n_states
    if ssp.is_sparse:
        csr = ssp.kernel_csr()
        compiled = _vi.sweep_csr
        parts = (csr.indptr.astype(np.int64), csr.indices.astype(np.int32),
                 np.ascontiguousarray(csr.data, dtype=np.float64))
    else:
        compiled = _vi.sweep_dense
        parts = (ssp.kernel_dense(),)
    n_threads = sweep_threads(parts[-1].size)
    v_ext = np.zeros(S + 1)

    def sweep(kernel, costs, values):
        out, greedy = np.empty(S), np.empty(S, dtype=np.intp)
        v_ext[:S] = values
        compiled(*parts, costs, v_ext, out, greedy, n_threads)
        return out, greedy

    return sweep


def value_iteration(ssp, tol=1e-8, max_iter=100_000):
    _reference._check_ssp(ssp)
    return _reference._value_iteration(ssp, tol, max_iter, _compiled_sweep(ssp))


value_iteration.__doc__ = _reference.value_iteration.__doc__
