"""SEARCH (Alg. 2) on the compiled kernels.

The functions of :mod:`reference.range_search`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import range_search
from reference.range_search import SolveResult

from .kernels import COMPILED_KERNELS

__all__ = [
    "SolveResult",
    "search",
]

search = COMPILED_KERNELS.bind(range_search.search, module=__name__)
