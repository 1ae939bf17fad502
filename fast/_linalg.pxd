# Inline helpers shared by the compiled kernels of the ``fast`` backend.


cdef inline double sparse_dot(const double* data, const int* cols, Py_ssize_t n,
                              const double* y) noexcept nogil:
    """Dot product of a CSR row segment with a dense vector."""
    cdef double acc = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        acc += data[k] * y[cols[k]]
    return acc
