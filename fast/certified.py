"""Certificates and the certified solver on the compiled kernels.

The functions of :mod:`reference.certified`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import certified
from reference.certified import (
    ALLOCATIONS,
    GROWTH,
    INITIAL_PER_PAIR,
    TARGETS,
    Certificate,
    CertifiedResult,
    CertifiedRound,
)

from .kernels import COMPILED_KERNELS

__all__ = [
    "ALLOCATIONS",
    "INITIAL_PER_PAIR",
    "GROWTH",
    "TARGETS",
    "Certificate",
    "CertifiedRound",
    "CertifiedResult",
    "certify",
    "solve_certified",
]

certify = COMPILED_KERNELS.bind(certified.certify, module=__name__)
solve_certified = COMPILED_KERNELS.bind(certified.solve_certified, module=__name__)
