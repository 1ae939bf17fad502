"""The diameter estimate (Alg. 4) on the compiled kernels.

The functions of :mod:`reference.diameter_estimate`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import diameter_estimate
from reference.diameter_estimate import DiameterEstimate

from .kernels import COMPILED_KERNELS

__all__ = [
    "DiameterEstimate",
    "estimate_diameter",
]

estimate_diameter = COMPILED_KERNELS.bind(diameter_estimate.estimate_diameter, module=__name__)
