"""Speed of the parallel generative model: the two targets of its issue, measured in one process.

Usage: ``python benchmarks/parallel_speed.py [REPEATS]`` (default 3).

1. **Slow simulator, 2 workers against 1.** A ``step(s, a, rng)`` that spends 200 us of its
   own CPU time per call (a spin on ``time.thread_time``, so a step preempted by other
   processes takes longer on the wall, as a real simulator would) answers one request of
   40 pairs x 100 samples (4000 calls, 0.8 s of steps) on a model with its own 1 local
   process, then with its own 2 (``executor=1`` and ``executor=2``, ``chunk=200``). The pools
   are started and warmed before the clock runs; the two are timed alternately ``REPEATS``
   times, and the ratio of wall times (1 worker over 2) is printed per repeat, with the
   median. Target: >= 1.7 on a quiet 2-core machine. The same 4000 steps run as 20 plain
   tasks on a bare ``ProcessPoolExecutor`` of 1 and of 2 processes, timed in the same loop,
   give the ratio the machine allows at that moment (its ceiling under load). The same
   request with a step that sleeps 200 us instead (no CPU) gives the model's own
   parallelism whatever the load.
2. **Overhead per call of a cheap batched simulator at chunks of 10^5.** A ``step_batch``
   making ``n`` next states with one ``rng.random(n)`` and one ``np.where`` answers one
   request of 16 pairs x 10^6 samples with ``chunk=100_000``: in this process
   (``executor=None``) and on 1 local process. The same simulator called directly on the
   same sizes (blocks of ``STREAM_BLOCK_SIZE`` samples, as the model calls it) is timed in
   the same loop; the overhead per call is the difference over the 1.6 * 10^7 calls
   (streams, counting, transport and merge). Target: <= 5 us.

Times are wall-clock (``time.perf_counter``); run ``uptime`` next to it to know the load.
"""

import concurrent.futures as cf
import multiprocessing
import statistics
import sys
import time

import numpy as np

import reference
from reference.streams import STREAM_BLOCK_SIZE, block_generator

SPIN = 200e-6


def slow_step(s, a, rng):
    """A step of 200 us of CPU time: s + 1 with probability 0.8, else s."""
    start = time.thread_time()
    while time.thread_time() - start < SPIN:
        pass
    return s + 1 if rng.random() < 0.8 else s


def sleepy_step(s, a, rng):
    """A step sleeping 200 us (no CPU: a remote service, say): as ``slow_step``."""
    time.sleep(SPIN)
    return s + 1 if rng.random() < 0.8 else s


def cheap_batch(s, a, n, rng):
    """``n`` next states at once: s + 1 with probability 0.8, else s."""
    return np.where(rng.random(n) < 0.8, s + 1, s)


def bare_steps(seed):
    """200 steps of ``slow_step`` (a plain task, the machine's ceiling)."""
    rng = np.random.default_rng(seed)
    return [slow_step(0, 0, rng) for _ in range(200)]


def _timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def slow_simulator(repeats, step=slow_step, bare=True, label="200 us of CPU per step"):
    pairs, n = np.arange(40), np.full(40, 100)
    models = {w: reference.ParallelGenerativeModel(step, 40, 1, executor=w, chunk=200)
              for w in (1, 2)}
    context = multiprocessing.get_context("spawn")
    pools = {w: cf.ProcessPoolExecutor(w, mp_context=context) for w in (1, 2)}
    for w in (1, 2):
        models[w].sample_pairs(pairs, n, np.random.default_rng(99))
        list(pools[w].map(bare_steps, range(w)))
    ratios, ceilings = [], []
    for r in range(repeats):
        one = _timed(lambda: models[1].sample_pairs(pairs, n, np.random.default_rng(r)))
        two = _timed(lambda: models[2].sample_pairs(pairs, n, np.random.default_rng(r)))
        ratios.append(one / two)
        line = (f"  repeat {r}: model 1 worker {one:.3f} s, 2 workers {two:.3f} s, "
                f"ratio {one / two:.2f}")
        if bare:
            bare_one = _timed(lambda: list(pools[1].map(bare_steps, range(20))))
            bare_two = _timed(lambda: list(pools[2].map(bare_steps, range(20))))
            ceilings.append(bare_one / bare_two)
            line += (f"; bare pool 1 process {bare_one:.3f} s, 2 processes {bare_two:.3f} s, "
                     f"ratio {bare_one / bare_two:.2f}")
        print(line)
    for w in (1, 2):
        models[w].close()
        pools[w].shutdown()
    print(f"slow simulator ({label}), 2 workers vs 1: median ratio "
          f"{statistics.median(ratios):.2f} (target >= 1.7)"
          + (f"; bare pool, same steps: {statistics.median(ceilings):.2f}" if bare else ""))


def direct(pairs, n):
    """The simulator alone on the model's blocks, with generators made beforehand."""
    generators = [block_generator(0, 0, b) for b in range(4)]
    for pair in pairs.tolist():
        for start in range(0, n, STREAM_BLOCK_SIZE):
            cheap_batch(pair, 0, min(STREAM_BLOCK_SIZE, n - start), generators[start % 4])


def overhead(repeats):
    pairs, n = np.arange(16), 10**6
    calls = pairs.size * n
    models = {"this process": reference.ParallelGenerativeModel(
                  None, 17, 1, step_batch=cheap_batch, chunk=100_000),
              "1 local process": reference.ParallelGenerativeModel(
                  None, 17, 1, step_batch=cheap_batch, chunk=100_000, executor=1)}
    models["1 local process"].sample_pairs(pairs, 1, np.random.default_rng(0))
    rows = {name: [] for name in models}
    for r in range(repeats):
        bare = _timed(lambda: direct(pairs, n))
        for name, model in models.items():
            spent = _timed(lambda: model.sample_pairs(pairs, n, np.random.default_rng(r)))
            rows[name].append((spent - bare) / calls * 1e6)
        print(f"  repeat {r}: simulator alone {bare / calls * 1e9:.0f} ns/call; overhead "
              + ", ".join(f"{name} {rows[name][-1] * 1e3:.0f} ns/call" for name in models))
    models["1 local process"].close()
    print("cheap batched simulator, chunks of 10^5: overhead per call (median) "
          + ", ".join(f"{name} {statistics.median(v):.3f} us" for name, v in rows.items())
          + " (target <= 5 us)")


def main(argv):
    repeats = int(argv[0]) if argv else 3
    slow_simulator(repeats)
    slow_simulator(repeats, step=sleepy_step, bare=False, label="200 us asleep per step")
    overhead(repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
