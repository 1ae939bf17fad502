"""The certified round's speed: ``fast.solve_certified`` against the reference, and its compiled share.

Usage, from the repository root after building the extensions::

    python benchmarks/certified_round.py                 # garnet(200, 4, 5) and garnet(1000, 4, 5)
    python benchmarks/certified_round.py --sizes 200 --repeats 3
    python benchmarks/certified_round.py --sizes 200 --seeds 1 2   # other instances

For each dense ``garnet(S, 4, 5)`` (instance seed 0, or each of ``--seeds``),
``solve_certified`` runs with the relative accuracy ``eps = 0.5`` and ``delta = 0.1`` from
seed 0 on both backends, interleaved in this process (each repeat runs the two backends,
alternating which goes first, then ``fast`` once more), and the ratio is the least CPU time
(``time.process_time``) of the reference over the least of ``fast``. Both runs make the same
calls (checked). The **compiled share** is the CPU time of one ``fast`` run spent inside
the compiled kernels (every function of the ``fast._*`` extension modules, timed by a
wrapper around each; the policy iterations of ``fast._iteration``, the checks of
``fast._checks`` and the robust rounds of ``fast._robust_pi`` count only through the kernels
they call, their own loops as Python: the functions of those modules, and the chain
solves, products, goal searches and pours they call as C functions, timed by
``fast._iteration.direct_seconds``) or drawing samples (``SampleStore._draw``, which
``SampleStore.draw_pairs`` and the solver's own draws call), over the run's CPU time.
Threads are pinned to one (BLAS and OpenMP) unless the environment sets them: every timer
here reads the process CPU time, which counts all its threads, so the shares are those of
one thread only when pinned.
"""

import argparse
import os
import sys
import time
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fast  # noqa: E402
import reference  # noqa: E402
from fast import (_boxes, _closable, _evi, _graphs, _iteration, _kl, _pieces, _poured,  # noqa: E402
                  _robust, _sampling, _vi)
from reference.generative import SampleStore  # noqa: E402

EPS = 0.5
DELTA = 0.1
COMPILED_MODULES = (_boxes, _closable, _evi, _graphs, _kl, _pieces, _poured, _robust, _sampling,
                    _vi)


def run(backend, ssp):
    """One certified run: ``(cpu seconds, result)``."""
    start = time.process_time()
    result = backend.solve_certified(ssp, ssp.costs, EPS, DELTA, relative=True, seed=0)
    return time.process_time() - start, result


def ratio(ssp, repeats):
    """``(reference cpu, fast cpu, calls)``: least CPU times of interleaved runs."""
    ref_times, fast_times, calls = [], [], set()
    for k in range(repeats):
        order = (reference, fast) if k % 2 == 0 else (fast, reference)
        for backend in order:
            seconds, result = run(backend, ssp)
            (ref_times if backend is reference else fast_times).append(seconds)
            calls.add(result.n_calls)
        seconds, result = run(fast, ssp)
        fast_times.append(seconds)
        calls.add(result.n_calls)
    if len(calls) != 1:
        raise SystemExit(f"the backends made different calls: {sorted(calls)}")
    return min(ref_times), min(fast_times), calls.pop()


class Timed:
    """Wraps the compiled functions and the sampling with CPU timers while active."""

    def __init__(self):
        self.seconds = {"compiled": 0.0, "sampling": 0.0}
        self.saved = []

    def _wrap(self, owner, name, bucket):
        original = getattr(owner, name)
        seconds = self.seconds

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[bucket] += time.process_time() - start

        self.saved.append((owner, name, original))
        setattr(owner, name, timed)

    def __enter__(self):
        for module in COMPILED_MODULES:
            for name in dir(module):
                value = getattr(module, name)
                if callable(value) and not isinstance(value, type) and not name.startswith("__"):
                    self._wrap(module, name, "compiled")
        self._wrap(SampleStore, "_draw", "sampling")
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)


def share(ssp):
    """``(compiled share, sampling share)`` of one fast run's CPU time."""
    _iteration.direct_seconds(True)
    try:
        with Timed() as timed:
            total = run(fast, ssp)[0]
    finally:
        direct = _iteration.direct_seconds(False)
    return (timed.seconds["compiled"] + direct) / total, timed.seconds["sampling"] / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--repeats", type=int, default=1,
                        help="reference runs per size (fast runs twice as many)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="instance seeds of the garnets (default 0)")
    parser.add_argument("--no-reference", action="store_true",
                        help="only the compiled share (no reference run)")
    args = parser.parse_args(argv)
    print("| instance | calls | reference / fast (CPU) | compiled | sampling "
          "| compiled + sampling |")
    print("|---|---|---|---|---|---|")
    for S, seed in ((S, seed) for S in args.sizes for seed in args.seeds):
        ssp = reference.garnet(S, 4, 5, seed=seed)
        if args.no_reference:
            calls, text = run(fast, ssp)[1].n_calls, "-"
        else:
            ref_cpu, fast_cpu, calls = ratio(ssp, args.repeats)
            text = f"{ref_cpu / fast_cpu:.1f}x ({ref_cpu:.2f} s / {fast_cpu:.3f} s)"
        compiled, sampling = share(ssp)
        name = f"garnet({S}, 4, 5)" + (f", seed {seed}" if seed else "")
        print(f"| {name} | {calls:,} | {text} | {compiled:.0%} | {sampling:.0%} "
              f"| {compiled + sampling:.0%} |", flush=True)


if __name__ == "__main__":
    main()
