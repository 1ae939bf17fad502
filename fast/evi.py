"""Lemma 5's confidence sets and extended value iteration on the compiled kernels.

The functions of :mod:`reference.evi`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import evi
from reference.evi import (
    EVI_DENSE_LIMIT_BYTES,
    EVI_MAX_ITER,
    EVIResult,
    bernstein_radius_sum,
    confidence_box,
    optimistic_inner,
)

from .kernels import COMPILED_KERNELS

__all__ = [
    "EVIResult",
    "EVI_MAX_ITER",
    "EVI_DENSE_LIMIT_BYTES",
    "bernstein_radius",
    "bernstein_radius_sum",
    "confidence_box",
    "optimistic_inner",
    "extended_value_iteration",
]

bernstein_radius = COMPILED_KERNELS.bind(evi.bernstein_radius, module=__name__)
extended_value_iteration = COMPILED_KERNELS.bind(evi.extended_value_iteration, module=__name__)
