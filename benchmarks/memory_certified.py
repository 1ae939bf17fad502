"""Peak memory of ``fast.solve_certified`` on a sparse garnet, round by round, against the store.

Usage: ``python benchmarks/memory_certified.py [ROUNDS] [S] [BACKEND] [SEED] [BRANCHING]``
(defaults: 8 rounds, S = 10^5, ``fast``, seed 0, branching 5). Runs ``solve_certified`` on
``reference.garnet(S, 4, BRANCHING, sparse=True, seed=SEED)`` (relative ``eps = 0.5``,
``delta = 0.1``, sampling seed ``SEED``) in this process and after every round prints:

- the calls so far and the bytes of the sample store (its CSR counts: int64
  data, the indices and ``indptr`` as the store keeps them);
- the peak of the memory allocated during the round and live at once
  (``tracemalloc``, which numpy reports to; the store included), and its
  ratio to the store;
- the memory still allocated at the end of the round (what the run holds
  between rounds), to show whether it grows with the rounds;
- the peak resident set size of the process (``resource.getrusage``) and
  its growth since the model was built;
- the round's relative gap and seconds.

The store is read from the run's own :class:`~reference.SampleStore`
(``counts_csr`` is wrapped to remember the last matrix it returned), so
nothing is copied for the measure.
"""

import resource
import sys
import time
import tracemalloc

import fast
import reference
from reference.generative import samples


class _Stop(Exception):
    """Raised by the callback once the rounds asked for are done."""


def rss_peak():
    """Peak resident set size of this process so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def store_bytes(csr):
    """Bytes of the store's CSR counts."""
    return csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes


def measured_run(module, ssp, eps, rounds=None, seed=0, **options):
    """Run ``module.solve_certified(ssp, relative eps, delta 0.1, seed)`` printing one line a
    round (the columns of this module's docstring); stop after ``rounds`` rounds if given.
    Returns the result, or ``None`` when stopped."""
    model = module.TabularGenerativeModel(ssp)
    last = {}
    original = samples.SampleStore.counts_csr

    def remembered(self):
        last["csr"] = original(self)
        return last["csr"]

    samples.SampleStore.counts_csr = remembered
    base = rss_peak()
    done = []
    print(f"{module.__name__}.solve_certified on {ssp!r}: relative eps {eps}, delta 0.1, "
          f"{options}; peak RSS after building it {base / 2**20:.0f} MiB", flush=True)
    print(f"{'round':>5} {'calls':>12} {'store MiB':>10} {'peak MiB':>9} {'peak/store':>11} "
          f"{'held MiB':>9} {'held/store':>11} {'RSS MiB':>8} {'RSS growth/store':>17} "
          f"{'rel. gap':>9} {'seconds':>8}", flush=True)
    clock = [time.perf_counter()]

    def callback(round_):
        done.append(round_)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        store = store_bytes(last["csr"])
        rss = rss_peak()
        now = time.perf_counter()
        print(f"{len(done):5d} {round_.n_calls:12d} {store / 2**20:10.1f} {peak / 2**20:9.1f} "
              f"{peak / store:11.2f} {held / 2**20:9.1f} {held / store:11.2f} "
              f"{rss / 2**20:8.0f} {(rss - base) / store:17.2f} {round_.relative_gap:9.3g} "
              f"{now - clock[0]:8.1f}", flush=True)
        clock[0] = now
        if rounds is not None and len(done) >= rounds:
            raise _Stop

    tracemalloc.start()
    try:
        return module.solve_certified(model, ssp.costs, eps, 0.1, relative=True, seed=seed,
                                      callback=callback, **options)
    except _Stop:
        return None
    finally:
        tracemalloc.stop()
        samples.SampleStore.counts_csr = original


def main(rounds=8, n_states=100_000, backend="fast", seed=0, branching=5):
    module = {"fast": fast, "reference": reference}[backend]
    measured_run(module, reference.garnet(n_states, 4, branching, seed=seed, sparse=True), 0.5,
                 rounds, seed)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(int(x) for x in args[:2]), *args[2:3], *(int(x) for x in args[3:5]))
