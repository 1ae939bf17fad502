"""Alg. 1 and Alg. 3 on the compiled kernels.

The functions of :mod:`reference.algorithms`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import algorithms

from .kernels import COMPILED_KERNELS

__all__ = [
    "solve",
]

solve = COMPILED_KERNELS.bind(algorithms.solve, module=__name__)
