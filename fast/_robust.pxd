# The pointer-level pour of ``fast/_robust.pyx``, for the compiled policy iterations
# (``fast/_iteration.pyx``), which call it without building Python arguments.

from libc.stdint cimport int64_t

from ._order cimport WholeOrder


cdef struct PourBoxes:
    # The arrays of a ConfidenceBoxes: row i < n_rows stores the entries indptr[i]:indptr[i+1].
    int64_t n_rows
    const int64_t* indptr
    const int64_t* cols
    const double* lo
    const double* hi
    const double* hi_unseen


cdef PourBoxes pour_boxes(const int64_t[::1] indptr, const int64_t[::1] cols,
                          const double[::1] lo, const double[::1] hi,
                          const double[::1] hi_unseen) except *

cdef WholeOrder whole_order(const int64_t[::1] order, const int64_t[::1] rank,
                            const double[::1] cum_v, const int64_t[::1] cum_inf,
                            const double[::1] v) noexcept nogil

cdef int pour_rows(const PourBoxes* b, const int64_t* rows, int64_t first, Py_ssize_t n,
                   const WholeOrder* o, int64_t n_next, double* out,
                   int n_threads) noexcept nogil

cdef int pour_failed(const PourBoxes* b, int status) except -1

cdef tuple pieces_of(const PourBoxes* b, const int64_t* rows, Py_ssize_t n, const int64_t* rank,
                     int64_t n_next, int n_threads)
