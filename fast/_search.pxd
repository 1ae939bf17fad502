# cython: language_level=3
"""A breadth-first search on reversed edges, written once for the compiled kernels.

Cimported by ``fast/_graphs.pyx`` (the kernel ``reaching``), ``fast/_poured.pyx``
(``reaches_goal``) and ``fast/_closable.pyx`` (the kernel ``closable``); it has no module of
its own.
"""

from libc.stdint cimport int64_t
from libc.string cimport memset


cdef inline Py_ssize_t _search_back(Py_ssize_t n, Py_ssize_t m, const int64_t* tails,
                                    const int64_t* heads, int64_t* scratch,
                                    int64_t* queue, Py_ssize_t tail,
                                    unsigned char* seen) noexcept nogil:
    """Mark in ``seen`` (``n`` nodes) every node with a path into the ``tail`` nodes already
    in ``queue`` (and marked), along the edges ``tails[k] -> heads[k]``, ``k < m``, entries
    in ``[0, n)`` (unchecked); returns the number of marked nodes the search reached,
    ``queue[:tail]`` included. ``scratch`` holds ``2 n + 1 + m`` entries: the reversed
    edges grouped by head (a counting sort), ``O(n + m)``."""
    cdef int64_t* start = scratch
    cdef int64_t* fill = scratch + n + 1
    cdef int64_t* by_head = fill + n
    cdef Py_ssize_t head = 0, i, k
    cdef int64_t node
    memset(start, 0, (n + 1) * sizeof(int64_t))
    for k in range(m):
        start[heads[k] + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
        fill[i] = start[i]
    for k in range(m):
        by_head[fill[heads[k]]] = tails[k]
        fill[heads[k]] += 1
    while head < tail:
        node = queue[head]
        head += 1
        for k in range(start[node], start[node + 1]):
            if not seen[by_head[k]]:
                seen[by_head[k]] = 1
                queue[tail] = by_head[k]
                tail += 1
    return tail
