# cython: language_level=3
"""Vector helpers of the compiled policy iterations and Bellman checks, written once.

Cimported by ``fast/_iteration.pyx`` (the adversary's and the optimist's loops),
``fast/_robust_pi.pyx`` (the robust rounds) and ``fast/_checks.pyx`` (the Bellman checks);
it has no module of its own.
"""

import numpy as np

from libc.math cimport isfinite


cdef inline object extended(const double[::1] values):
    """``np.append(values, 0.0)``: the values with the goal's 0 after them."""
    cdef Py_ssize_t S = values.shape[0], i
    out = np.empty(S + 1)
    cdef double[::1] o = out
    for i in range(S):
        o[i] = values[i]
    o[S] = 0.0
    return out


cdef inline double switch_tolerance(const double[::1] values, double switch_rtol):
    """``switch_rtol * max(1, largest finite value)``, as Python's ``max``."""
    cdef double scale = 0.0
    cdef Py_ssize_t i
    for i in range(values.shape[0]):
        if isfinite(values[i]) and values[i] > scale:
            scale = values[i]
    if not scale > 1.0:
        scale = 1.0
    return switch_rtol * scale
