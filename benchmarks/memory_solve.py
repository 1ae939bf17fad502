"""Peak memory of ``fast.solve`` on a sparse garnet, round by round, against the sample store.

Usage: ``python benchmarks/memory_solve.py [ROUNDS] [S]`` (defaults: 4 rounds,
S = 10^5). Runs ``fast.solve`` on ``reference.garnet(S, 4, 3, sparse=True)``
(``eps = 0.1``, ``delta = 0.1``, seed 0) in this process, and after every
round of SEARCH prints the samples per pair, the bytes of the sample store
(its CSR counts) and the growth of the peak resident set size
(``resource.getrusage``) since the model was built, then stops after ROUNDS
rounds. A full run is out of reach of a benchmark (the allocation asks for
millions of samples per pair); the rounds show whether the peak grows with
the samples per pair or stays a constant times the store.
"""

import resource
import sys
import time

import fast
import reference


class _Stop(Exception):
    """Raised by the callback once the rounds asked for are done."""


def peak_bytes():
    """Peak resident set size of this process so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(rounds=4, n_states=100_000):
    ssp = reference.garnet(n_states, 4, 3, seed=0, sparse=True)
    model = fast.TabularGenerativeModel(ssp)
    store_nnz = ssp.kernel_csr().nnz
    base = peak_bytes()
    start = time.perf_counter()
    done = []
    print(f"garnet(S = {n_states}, A = 4, branching 3): {store_nnz} stored pairs-next-states; "
          f"peak RSS after building it {base / 2**20:.0f} MiB")
    print(f"{'round':>5} {'samples/pair':>13} {'store MiB':>10} {'peak growth MiB':>16} "
          f"{'growth / store':>15} {'seconds':>8}")

    def callback(round_):
        done.append(round_)
        store = store_nnz * (8 + 4) + (n_states * 4 + 1) * 4
        growth = peak_bytes() - base
        print(f"{len(done):5d} {round_.target:13d} {store / 2**20:10.1f} {growth / 2**20:16.1f} "
              f"{growth / store:15.2f} {time.perf_counter() - start:8.1f}", flush=True)
        if len(done) >= rounds:
            raise _Stop

    try:
        fast.solve(model, ssp.costs, 0.1, 0.1, seed=0, callback=callback)
    except _Stop:
        pass


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:3]))
