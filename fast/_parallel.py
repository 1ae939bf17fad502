"""How many OpenMP threads a compiled sweep gets."""

import time

from reference.threads import get_num_threads

PARALLEL_MIN_WORK = 1_000_000
"""Smallest sweep (in multiply-adds, about a millisecond) split among threads.

Below it one thread is safer: a parallel region ends at a barrier that waits
for every thread, which costs microseconds on idle cores but up to a
scheduler time slice (milliseconds) when another process holds one of them.
Measured on the 2-core development machine (minimum over 15 calls, one thread
against two): the VI sweep gains 1.3x at 2 * 10^4 multiply-adds and 2.5x at
2 * 10^5, the sparse EVI sweep 1.6x at 5 * 10^5; the medians of the same
calls, with other processes busy, were slower with two threads at every size.
"""

PROBE_EVERY = 64
"""Calls of a repeated sweep between two measurements of one thread against the setting."""


def sweep_threads(work):
    """Threads for a sweep of ``work`` multiply-adds: the setting, or 1 for small sweeps."""
    return get_num_threads() if work >= PARALLEL_MIN_WORK else 1


class ThreadChoice:
    """Threads for a sweep repeated on the same data: the faster of one thread and the setting.

    A sweep below :data:`PARALLEL_MIN_WORK` runs on one thread. Above it,
    the first two calls run with the setting and with one thread, timed; the
    faster count is kept for the next :data:`PROBE_EVERY` calls, then
    measured again. On a machine shared with other processes a parallel sweep
    can be slower than a serial one (its barrier waits for a thread another
    process holds); this keeps the parallel one only while it is faster.
    Results never depend on the thread count.

    Parameters
    ----------
    work : int
        Multiply-adds of one sweep.
    clock : callable, default time.perf_counter
        Seconds, as a float, for the measurements.
    """

    def __init__(self, work, clock=time.perf_counter):
        self.work = work
        self.clock = clock
        self.setting = None
        self.calls = 0
        self.times = {}
        self.best = 1

    def run(self, sweep, *args):
        """Call ``sweep(*args, n_threads)`` with the chosen thread count; return its result.

        A change of :func:`fast.set_num_threads` starts a new measurement at
        the next call.
        """
        setting = sweep_threads(self.work)
        if setting == 1:
            return sweep(*args, 1)
        if setting != self.setting:
            self.setting, self.calls, self.times = setting, 0, {}
        phase = self.calls % PROBE_EVERY
        self.calls += 1
        if phase >= 2:
            return sweep(*args, self.best)
        n_threads = setting if phase == 0 else 1
        start = self.clock()
        out = sweep(*args, n_threads)
        self.times[n_threads] = self.clock() - start
        if phase == 1:
            self.best = min(self.times, key=self.times.get)
            self.times = {}
        return out
