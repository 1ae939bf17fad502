"""Optimal values, with plain value iteration on the compiled Bellman sweep.

The functions of :mod:`reference.optimal`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to :func:`value_iteration`; the
rest (the linear program, policy iteration and their exact policy evaluation,
:mod:`reference.chains`) is re-exported unchanged.
"""

from reference import optimal
from reference.optimal import (
    OptimalValuesResult,
    PolicyIterationResult,
    ValueIterationResult,
    optimal_values,
    policy_iteration,
)

from .kernels import COMPILED_KERNELS

__all__ = [
    "OptimalValuesResult",
    "PolicyIterationResult",
    "ValueIterationResult",
    "optimal_values",
    "policy_iteration",
    "value_iteration",
]

value_iteration = COMPILED_KERNELS.bind(optimal.value_iteration, module=__name__)
