# The box types of the compiled EVI kernels: declared here, built by ``fast/_boxes.pyx``, swept
# by ``fast/_evi.pyx`` and read by ``fast/_pieces.pyx``.

cimport numpy as cnp
from libc.stdint cimport int64_t


cdef inline cnp.ndarray _empty(Py_ssize_t rows, int typenum, Py_ssize_t columns=-1):
    """A new C-contiguous array of shape ``(rows,)``, or ``(rows, columns)`` when ``columns``
    is given, by the numpy C API (``np.empty`` without its Python call)."""
    cdef cnp.npy_intp shape[2]
    shape[0] = rows
    shape[1] = columns
    return cnp.PyArray_EMPTY(1 if columns < 0 else 2, shape, typenum, 0)


cdef struct CsrSweep:
    # The arrays of one sweep on CSR boxes, as plain pointers (those of the boxes are set
    # when they are built, the others by each sweep).
    const int64_t* indptr
    const int* cols
    const double* lo
    const double* gap
    const double* gap_unseen
    const double* mass
    const double* costs  # (S, A), C order
    double* v_out
    Py_ssize_t* policy_out
    Py_ssize_t n_states
    Py_ssize_t n_actions
    Py_ssize_t widest
    double* order_val    # the pour order's buffers (see CsrBoxes), room entries
    Py_ssize_t* order_idx
    double* cum_v
    int* rank
    Py_ssize_t room


cdef struct DenseSweep:
    # The arrays of one sweep on dense boxes, as plain pointers.
    const int64_t* lo_ptr
    const int* lo_cols
    const double* lo_vals
    const double* gap    # (S, A, S+1), C order
    const double* mass   # (S, A)
    const double* costs  # (S, A)
    const double* v      # v_ext, (S+1,)
    const Py_ssize_t* order
    double* v_out
    Py_ssize_t* policy_out
    Py_ssize_t n_actions
    Py_ssize_t n_next
    bint bounded         # no value of v_ext is negative



cdef class DenseBoxes:
    cdef readonly Py_ssize_t n_states, n_actions
    cdef readonly object lo_ptr, lo_cols, lo_vals, gap, mass, upper_mass, order


cdef class CsrBoxes:
    cdef readonly Py_ssize_t n_states, n_actions, prefix, widest
    cdef readonly bint from_dense
    cdef readonly object indptr, cols, lo, gap, gap_unseen, mass, upper_mass, rank
    cdef readonly object order_val, order_idx, cum_v
    cdef Py_ssize_t ordered
    cdef CsrSweep arrays


cdef class DenseScan:
    cdef readonly object counts, indptr, cols, data
    cdef readonly double largest
