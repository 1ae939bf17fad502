"""Certificates and the certified solver on the compiled kernels.

The functions of :mod:`reference.certified`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import certified
from reference.certified import (
    GROWTH,
    INITIAL_PER_PAIR,
    SAMPLINGS,
    TARGETS,
    Certificate,
    CertifiedResult,
    CertifiedRound,
)

from .kernels import COMPILED_KERNELS

__all__ = [
    "INITIAL_PER_PAIR",
    "GROWTH",
    "SAMPLINGS",
    "TARGETS",
    "Certificate",
    "CertifiedRound",
    "CertifiedResult",
    "certify",
    "solve_certified",
]

certify = COMPILED_KERNELS.bind(certified.certify, module=__name__)
solve_certified = COMPILED_KERNELS.bind(certified.solve_certified, module=__name__)
