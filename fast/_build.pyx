# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""How the compiled kernels of the ``fast`` backend were built.

Compiled with the same flags as the kernels, so ``OPENMP`` tells whether their
``prange`` loops run on OpenMP threads (True) or on one thread (False, when
the C compiler had no OpenMP at build time).
"""

cdef extern from *:
    """
    #ifdef _OPENMP
    #define SSPGM_OPENMP 1
    #else
    #define SSPGM_OPENMP 0
    #endif
    """
    int SSPGM_OPENMP

OPENMP = bool(SSPGM_OPENMP)
