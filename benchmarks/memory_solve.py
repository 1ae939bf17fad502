"""Peak memory of ``fast.solve`` on a sparse garnet, round by round, against the sample store.

Usage: ``python benchmarks/memory_solve.py [ROUNDS] [S]`` (defaults: 4 rounds,
S = 10^5). Runs ``fast.solve`` on ``reference.garnet(S, 4, 3, sparse=True)``
(``eps = 0.1``, ``delta = 0.1``, seed 0) in this process, and after every
round of SEARCH prints the samples per pair, the bytes of the sample store
(its CSR counts), the peak of the memory allocated during the round and
still live at once (``tracemalloc``, which numpy reports to; the sample
store included), and the growth of the peak resident set size
(``resource.getrusage``) since the model was built, then stops after ROUNDS
rounds. The resident set reuses what building the model freed and grows by
the allocator's steps; the traced peak is the round's own. A full run is out
of reach of a benchmark (the allocation asks for millions of samples per
pair); the rounds show whether the peak grows with the samples per pair or
stays a constant times the store.

After the last round, the EVI of that round is run again on its samples (read
back from the run's checkpoint) to print the size of its optimistic kernel
``p_tilde`` (a :class:`reference.PouredKernel`) against the explicit CSR
matrix of the same kernel, which is what grew with the samples per pair
before. Then ``fast.certify`` certifies that EVI's policy on the same samples,
started at its ``v_tilde`` (as ``solve`` does at its end): the script prints
the peak of the memory it allocated and held at once (``tracemalloc``; the
counts, read before, are not included) against the store, its seconds, and
the certificate's gap.
"""

import os
import resource
import sys
import tempfile
import time
import tracemalloc

import numpy as np

import fast
import reference


class _Stop(Exception):
    """Raised by the callback once the rounds asked for are done."""


EPS = 0.1
DELTA = 0.1


def peak_bytes():
    """Peak resident set size of this process so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(rounds=4, n_states=100_000):
    ssp = reference.garnet(n_states, 4, 3, seed=0, sparse=True)
    model = fast.TabularGenerativeModel(ssp)
    store_nnz = ssp.kernel_csr().nnz
    store = store_nnz * (8 + 4) + (n_states * 4 + 1) * 4
    base = peak_bytes()
    start = time.perf_counter()
    done = []
    print(f"garnet(S = {n_states}, A = 4, branching 3): {store_nnz} stored pairs-next-states; "
          f"peak RSS after building it {base / 2**20:.0f} MiB")
    print(f"{'round':>5} {'samples/pair':>13} {'store MiB':>10} {'live peak MiB':>14} "
          f"{'live / store':>13} {'RSS growth MiB':>15} {'RSS / store':>12} {'seconds':>8}")

    def callback(round_):
        done.append(round_)
        live = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        growth = peak_bytes() - base
        print(f"{len(done):5d} {round_.target:13d} {store / 2**20:10.1f} {live / 2**20:14.1f} "
              f"{live / store:13.2f} {growth / 2**20:15.1f} {growth / store:12.2f} "
              f"{time.perf_counter() - start:8.1f}", flush=True)
        if len(done) >= rounds:
            raise _Stop

    with tempfile.TemporaryDirectory() as directory:
        checkpoint = os.path.join(directory, "run.npz")
        tracemalloc.start()
        try:
            fast.solve(model, ssp.costs, EPS, DELTA, seed=0, callback=callback,
                       checkpoint=checkpoint)
        except _Stop:
            pass
        tracemalloc.stop()
        counts = reference.SampleStore.load(checkpoint)[0].counts_csr()
    last = done[-1]
    mu = float(ssp.costs.min()) * EPS / (6.0 * last.scale)
    evi = fast.extended_value_iteration(counts, ssp.costs, DELTA, mu)
    p_tilde = evi.p_tilde
    explicit = p_tilde.nnz * (8 + 4) + (n_states + 1) * 4
    print(f"p_tilde of round {len(done)}: {p_tilde!r}; {p_tilde.nbytes / 2**20:.1f} MiB "
          f"({p_tilde.nbytes / store:.2f} x the store) against {explicit / 2**20:.1f} MiB as "
          f"an explicit CSR matrix ({explicit / store:.1f} x the store, "
          f"{p_tilde.nnz / n_states:.0f} entries per row)", flush=True)
    tracemalloc.start()
    begin = time.perf_counter()
    certificate = fast.certify(counts, ssp.costs, evi.policy, DELTA, start=evi.v_tilde)
    seconds = time.perf_counter() - begin
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"certify of round {len(done)}: traced peak {peak / 2**20:.1f} MiB "
          f"({peak / store:.1f} x the store), {seconds:.1f} s; gap {certificate.gap:.6g}, "
          f"{int(np.isinf(certificate.upper).sum())} infinite upper bound(s); "
          f"{certificate.message}")


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:3]))
