"""Pessimistic and optimistic values over confidence boxes on the compiled kernels.

The functions of :mod:`reference.robust`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import robust
from reference.robust import ROBUST_MAX_ITER, RobustValuesResult, pessimistic_inner

from .kernels import COMPILED_KERNELS

__all__ = [
    "ROBUST_MAX_ITER",
    "RobustValuesResult",
    "pessimistic_inner",
    "robust_policy_values",
    "robust_optimal_values",
    "optimistic_values",
]

robust_policy_values = COMPILED_KERNELS.bind(robust.robust_policy_values, module=__name__)
robust_optimal_values = COMPILED_KERNELS.bind(robust.robust_optimal_values, module=__name__)
optimistic_values = COMPILED_KERNELS.bind(robust.optimistic_values, module=__name__)
