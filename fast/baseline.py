"""The plug-in baseline on the compiled kernels.

The functions of :mod:`reference.baseline`, with
:data:`fast.kernels.COMPILED_KERNELS` bound to its kernel functions; the rest
is re-exported unchanged.
"""

from reference import baseline
from reference.baseline import PlugInResult

from .kernels import COMPILED_KERNELS

__all__ = [
    "PlugInResult",
    "plug_in",
]

plug_in = COMPILED_KERNELS.bind(baseline.plug_in, module=__name__)
