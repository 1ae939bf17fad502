"""The kernel set of a backend, for tests that call kernels or the functions taking a kernel set."""

import importlib

from reference.kernels import NUMPY_KERNELS


def kernel_set(backend):
    """The kernel set of ``backend``: ``fast.kernels.COMPILED_KERNELS`` for ``fast`` (imported
    only then, so the reference's tests run without the compiled extensions), else
    ``reference.kernels.NUMPY_KERNELS``."""
    if backend.__name__ == "fast":
        return importlib.import_module("fast.kernels").COMPILED_KERNELS
    return NUMPY_KERNELS
