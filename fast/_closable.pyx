# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""The compiled kernel ``closable``: the first step of the adversary's infinity decision.

Private module of the ``fast`` backend. :func:`closable` makes the tests of
``reference.adversary_sets.closable`` in typed loops over the policy's rows, with the same
floats (each row's sum of upper ends inside the set added in the order of its stored
entries, from 0, as ``np.bincount`` does): one search on the reversed edges of positive
lower ends (``fast._search._search_back``), then the removal of the states that cannot stay.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from ._search cimport _search_back


def closable(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] lo,
             const double[::1] hi, const double[::1] hi_unseen, const int64_t[::1] rows,
             double need, unsigned char[::1] out):
    """Write into ``out`` (uint8 ``(S,)``) 1 for the states of the largest set whose rows
    ``rows`` (int64 ``(S,)``, entries in ``[0, len(indptr) - 1)``, not checked) can keep the
    chain in it: no positive lower end outside the set (the goal ``S`` is outside), upper
    ends inside summing to at least ``need``; 0 for the others. Returns the size of the set.
    """
    cdef Py_ssize_t S = rows.shape[0], s, tail = 0, size, n_edges = 0, k
    cdef int64_t e, c, count
    cdef double room
    cdef bint changed, stays
    for s in range(S):
        for e in range(indptr[rows[s]], indptr[rows[s] + 1]):
            if lo[e] > 0.0:
                n_edges += 1
    cdef int64_t* block = <int64_t*>malloc((3 * (S + 1) + 1 + 3 * n_edges) * sizeof(int64_t))
    if block == NULL:
        raise MemoryError()
    cdef int64_t* tails = block + 2 * (S + 1) + 1 + n_edges
    cdef int64_t* heads = tails + n_edges
    cdef int64_t* queue = heads + n_edges
    cdef unsigned char* seen = <unsigned char*>malloc((S + 1) * sizeof(unsigned char))
    if seen == NULL:
        free(block)
        raise MemoryError()
    with nogil:
        k = 0
        for s in range(S):
            for e in range(indptr[rows[s]], indptr[rows[s] + 1]):
                if lo[e] > 0.0:
                    tails[k] = s
                    heads[k] = indices[e]
                    k += 1
        for s in range(S):
            seen[s] = 0
        seen[S] = 1
        queue[0] = S
        _search_back(S + 1, n_edges, tails, heads, block, queue, 1, seen)
        size = 0
        for s in range(S):
            out[s] = 1 - seen[s]
            size += out[s]
        changed = size > 0
        while changed:
            changed = False
            count = 0
            for s in range(S):
                if not out[s]:
                    continue
                stays = True
                room = 0.0
                k = 0
                for e in range(indptr[rows[s]], indptr[rows[s] + 1]):
                    c = indices[e]
                    if c < S and out[c]:
                        room = room + hi[e]
                        k += 1
                    elif lo[e] > 0.0:
                        stays = False
                if stays:
                    room = room + (<double>size - <double>k) * hi_unseen[rows[s]]
                    stays = room >= need
                seen[s] = stays
                count += stays
            if count < size:
                for s in range(S):
                    if out[s] and not seen[s]:
                        out[s] = 0
                size = count
                changed = size > 0
    free(seen)
    free(block)
    return size
