"""The paper's algorithms (SEARCH, Alg. 1, 3 and 4, the plug-in baseline) on the compiled kernels.

The functions of :mod:`reference.algorithms`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to them; the result classes are
re-exported unchanged.
"""

from reference import algorithms
from reference.algorithms import DiameterEstimate, PlugInResult, Round, SolveResult

from .kernels import COMPILED_KERNELS

__all__ = list(algorithms.__all__)

search = COMPILED_KERNELS.bind(algorithms.search, module=__name__)
estimate_diameter = COMPILED_KERNELS.bind(algorithms.estimate_diameter, module=__name__)
solve = COMPILED_KERNELS.bind(algorithms.solve, module=__name__)
plug_in = COMPILED_KERNELS.bind(algorithms.plug_in, module=__name__)
