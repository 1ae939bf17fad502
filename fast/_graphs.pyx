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

from ._search cimport _search_back


def reaching(const int64_t[::1] tails, const int64_t[::1] heads,
             const unsigned char[::1] targets, unsigned char[::1] out):
    """Write into ``out`` (uint8 ``(n,)``, ``n = targets.size``) 1 for every node with a path
    (possibly empty) into the nodes where ``targets`` (uint8 ``(n,)``) is nonzero, 0 for the
    others. ``tails -> heads`` (int64, equal sizes, entries in ``[0, n)``, not checked: the
    callers pass their own graphs) are the edges."""
    cdef Py_ssize_t n = targets.shape[0], m = tails.shape[0], i, tail = 0
    if heads.shape[0] != m or out.shape[0] != n:
        raise ValueError("reaching: `heads` must match `tails` and `out` must match `targets`")
    cdef int64_t* block = <int64_t*>malloc((3 * n + 1 + m) * sizeof(int64_t))
    if block == NULL:
        raise MemoryError()
    cdef int64_t* queue = block + 2 * n + 1 + m
    with nogil:
        for i in range(n):
            out[i] = 1 if targets[i] else 0
            if out[i]:
                queue[tail] = i
                tail += 1
        if n > 0:
            _search_back(n, m, &tails[0] if m else NULL, &heads[0] if m else NULL, block,
                         queue, tail, &out[0])
    free(block)
