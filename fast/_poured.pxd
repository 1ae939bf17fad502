# The pointer-level chain solve, product and goal search of ``fast/_poured.pyx`` and the
# builder of their pieces, for the compiled policy iterations (``fast/_iteration.pyx``),
# which call them without building Python arguments.

from libc.stdint cimport int64_t


cdef struct ChainPieces:
    # A PouredKernel's pieces: n rows over S+1 next states, goal last (square: n = S).
    int64_t S
    int64_t n
    int64_t stored
    const int64_t* order
    const int64_t* rank
    const int64_t* indptr
    const int64_t* indices
    const double* data
    const double* width
    const int64_t* reach
    const double* partial


cdef ChainPieces chain_pieces(order, rank, indptr, indices, data, width, reach,
                              partial, str square=*) except *

cdef int chain_solve(const ChainPieces* k, const char* active, const double* rhs, double* x,
                     double rtol, int rounds, int maxiter, bint transposed, double* omega,
                     double* residual_out) noexcept nogil

cdef void chain_apply(const ChainPieces* k, const double* x, double* along,
                      double* out) noexcept nogil

cdef bint goal_reached(const ChainPieces* c) except -1
