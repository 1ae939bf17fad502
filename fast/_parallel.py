"""How many OpenMP threads a compiled sweep gets."""

from reference.threads import get_num_threads

PARALLEL_MIN_WORK = 4_000_000
"""Smallest sweep (in multiply-adds, a few milliseconds) split among threads.

Below it one thread is safer: a parallel region ends at a barrier that waits
for every thread, which costs microseconds on idle cores but up to a
scheduler time slice (milliseconds) when another process holds one of them.
"""


def sweep_threads(work):
    """Threads for a sweep of ``work`` multiply-adds: the setting, or 1 for small sweeps."""
    return get_num_threads() if work >= PARALLEL_MIN_WORK else 1
