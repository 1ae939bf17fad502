"""Exact planning tools, with plain value iteration on the compiled Bellman sweep.

The functions of :mod:`reference.evaluation`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to :func:`value_iteration`. Exact
policy evaluation (sparse LU, or BiCGSTAB from
``reference.evaluation.ITERATIVE_MIN_STATES`` transient states on) is
re-exported unchanged: on a sparse garnet with S = 10^5 about two thirds of its
time are scipy's CSR matrix-vector products, so a compiled copy would gain
little.
"""

from reference import evaluation
from reference.evaluation import (
    DiameterResult,
    OptimalValuesResult,
    PolicyIterationResult,
    RestrictedValuesResult,
    ValueIterationResult,
    b_star,
    diameter,
    hitting_times,
    is_proper,
    optimal_values,
    policy_iteration,
    policy_values,
    restricted_optimal_values,
)

from .kernels import COMPILED_KERNELS

__all__ = [
    "OptimalValuesResult",
    "PolicyIterationResult",
    "DiameterResult",
    "RestrictedValuesResult",
    "ValueIterationResult",
    "policy_values",
    "is_proper",
    "hitting_times",
    "optimal_values",
    "policy_iteration",
    "diameter",
    "b_star",
    "restricted_optimal_values",
    "value_iteration",
]

value_iteration = COMPILED_KERNELS.bind(evaluation.value_iteration, module=__name__)
