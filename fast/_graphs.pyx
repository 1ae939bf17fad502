# cython: language_level=3, cdivision=True, embedsignature=True
# boundscheck, wraparound, initializedcheck: set by setup.py (off; on with SSPGM_DEBUG=1)
"""Compiled graph searches of the policy iterations' infinity decision.

Private module of the ``fast`` backend. :func:`reaching` is the kernel
``reaching`` (``docs/backends.md``): which nodes of a graph given by its edges
have a path into a set of targets, by a breadth-first search on the reversed
edges, grouped by a counting sort, ``O(nodes + edges)`` with one allocation.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset


def reaching(const int64_t[::1] tails, const int64_t[::1] heads,
             const unsigned char[::1] targets, unsigned char[::1] out):
    """Write into ``out`` (uint8 ``(n,)``, ``n = targets.size``) 1 for every node with a path
    (possibly empty) into the nodes where ``targets`` (uint8 ``(n,)``) is nonzero, 0 for the
    others. ``tails -> heads`` (int64, equal sizes, entries in ``[0, n)``) are the edges."""
    cdef Py_ssize_t n = targets.shape[0], m = tails.shape[0], i, head = 0, tail = 0
    cdef int64_t k, node
    if heads.shape[0] != m or out.shape[0] != n:
        raise ValueError("reaching: `heads` must match `tails` and `out` must match `targets`")
    # One block: the reversed edges' row pointers (n + 1, zeroed), their fill, their tails
    # and the queue of the search, each written before it is read.
    cdef int64_t* block = <int64_t*>malloc((3 * n + 1 + m) * sizeof(int64_t))
    if block == NULL:
        raise MemoryError()
    cdef int64_t* start = block
    cdef int64_t* fill = block + n + 1
    cdef int64_t* by_head = fill + n
    cdef int64_t* queue = by_head + m
    memset(start, 0, (n + 1) * sizeof(int64_t))
    with nogil:
        for k in range(m):
            start[heads[k] + 1] += 1
        for i in range(n):
            start[i + 1] += start[i]
            fill[i] = start[i]
        for k in range(m):
            by_head[fill[heads[k]]] = tails[k]
            fill[heads[k]] += 1
        for i in range(n):
            out[i] = 1 if targets[i] else 0
            if out[i]:
                queue[tail] = i
                tail += 1
        while head < tail:
            node = queue[head]
            head += 1
            for k in range(start[node], start[node + 1]):
                if not out[by_head[k]]:
                    out[by_head[k]] = 1
                    queue[tail] = by_head[k]
                    tail += 1
    free(block)
