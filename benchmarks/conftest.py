"""Benchmark instances, shared by every ``bench_*.py`` file.

Threads are pinned before numpy loads, so the BLAS pool and the OpenMP pool
of the ``fast`` kernels do not fight over the two cores: one thread each by
default, the setting of the tracked run (``README.md``); the thread-scaling
run sets ``OMP_NUM_THREADS=2`` explicitly, which wins over these defaults.

Instances (``A = 4`` throughout):

- ``dense-S`` (S = 100, 500, 2000): a dense random kernel, each row
  Dirichlet(1) over the ``S+1`` next states, and counts of ``N = 10^5``
  multinomial samples per pair drawn from it;
- ``sparse-S`` (S = 10^4, 10^5): ``reference.garnet(S, 4, 5, sparse=True)``
  (branching 5) and counts of ``N = 10^5`` samples per pair on its support,
  kept in CSR form;
- ``sparse-1000000``: counts only (no model; a garnet of that size takes
  seconds and gigabytes to check), 5 random next states per pair with
  Dirichlet(1) weights and ``N = 10^5`` samples per pair, in CSR form with
  int32 indices;
- ``few-S`` (S = 500, 2000): dense counts ``(S, A, S+1)`` with 5 random next
  states per pair and ``N = 200`` samples per pair, the counts an early round
  of SEARCH hands to EVI; ``densestored-2000``: ``reference.garnet(2000, 4,
  5)`` stored dense, for value iteration.

``N = 10^5`` is the order of the allocation function at moderate accuracy, so
the confidence boxes are narrow and the greedy pour is short, as in SEARCH's
late rounds.
"""

import math
import os
import time

for _name, _value in (("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"),
                      ("MKL_NUM_THREADS", "1"), ("BLIS_NUM_THREADS", "1")):
    os.environ.setdefault(_name, _value)

from dataclasses import dataclass  # noqa: E402
from functools import lru_cache  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import reference  # noqa: E402

N_ACTIONS = 4
BRANCHING = 5
SAMPLES_PER_PAIR = 100_000
DELTA = 0.1
DENSE_SIZES = (100, 500, 2000)
SPARSE_SIZES = (10_000, 100_000)
SIZES = [f"dense-{S}" for S in DENSE_SIZES] + [f"sparse-{S}" for S in SPARSE_SIZES]
LARGE = "sparse-1000000"
FEW_SAMPLES = 200
FEW_SIZES = ["few-500", "few-2000"]
SPAN_SECONDS = 4.0
"""Process time a row of short calls spans (:func:`rounds_spanning`; less when it hits its
largest number of rounds).

This shared host slows memory-bound loops in bursts that last a second or
more (``benchmarks/README.md``, "Targets"); a row's minimum is the
undisturbed time only when some of its rounds fall outside a burst.
"""


def rounds_spanning(call, least, most=400):
    """Rounds of ``call()`` that together take about :data:`SPAN_SECONDS` of process time.

    Estimated from one timed call (which also warms the caches), and kept
    between ``least`` and ``most``.
    """
    start = time.process_time()
    call()
    spent = time.process_time() - start
    return int(min(most, max(least, math.ceil(SPAN_SECONDS / max(spent, 1e-9)))))


@dataclass(frozen=True)
class Instance:
    """A benchmark problem: its SSP, sample counts, costs and a value vector."""

    name: str
    ssp: object
    n_states: int
    counts: object
    costs: np.ndarray
    values: np.ndarray

    @property
    def sparse(self):
        return hasattr(self.counts, "indptr")


def _random_supports(rng, n_rows, n_next, k):
    """``k`` distinct next states per row, ascending, drawn at random among ``n_next``."""
    return np.sort(rng.integers(0, n_next - k + 1, size=(n_rows, k)), axis=1) + np.arange(k)


@lru_cache(maxsize=None)
def instance(name):
    """Build (once per session) the instance called ``KIND-S`` (see the module docstring)."""
    kind, size = name.split("-")
    S = int(size)
    rng = np.random.default_rng(S)
    if kind == "few":
        cols = _random_supports(rng, S * N_ACTIONS, S + 1, BRANCHING)
        weights = rng.dirichlet(np.ones(BRANCHING), size=S * N_ACTIONS)
        counts = np.zeros((S * N_ACTIONS, S + 1))
        np.put_along_axis(counts, cols, rng.multinomial(FEW_SAMPLES, weights), axis=1)
        costs = rng.uniform(0.1, 1.0, size=(S, N_ACTIONS))
        return Instance(name, None, S, counts.reshape(S, N_ACTIONS, S + 1), costs, None)
    if kind == "densestored":
        ssp = reference.garnet(S, N_ACTIONS, BRANCHING, seed=0)
        return Instance(name, ssp, S, None, np.asarray(ssp.costs), None)
    if name == LARGE:
        n_rows = S * N_ACTIONS
        cols = _random_supports(rng, n_rows, S + 1, BRANCHING).astype(np.int32).ravel()
        data = rng.multinomial(SAMPLES_PER_PAIR, rng.dirichlet(np.ones(BRANCHING), size=n_rows))
        indptr = np.arange(0, BRANCHING * n_rows + 1, BRANCHING, dtype=np.int32)
        counts = sp.csr_array((data.ravel().astype(np.float64), cols, indptr), shape=(n_rows, S + 1))
        costs = rng.uniform(0.1, 1.0, size=(S, N_ACTIONS))
        return Instance(name, None, S, counts, costs, rng.uniform(1.0, 10.0, size=S))
    if kind == "dense":
        P = rng.dirichlet(np.ones(S + 1), size=S * N_ACTIONS)
        counts = rng.multinomial(SAMPLES_PER_PAIR, P).reshape(S, N_ACTIONS, S + 1)
        costs = rng.uniform(0.1, 1.0, size=(S, N_ACTIONS))
        ssp = reference.SSP(P.reshape(S, N_ACTIONS, S + 1), costs, require_proper=False)
    else:
        ssp = reference.garnet(S, N_ACTIONS, BRANCHING, seed=0, sparse=True)
        P = ssp.kernel_csr()
        data = rng.multinomial(SAMPLES_PER_PAIR, P.data.reshape(-1, BRANCHING)).ravel()
        counts = sp.csr_array((data.astype(np.float64), P.indices, P.indptr), shape=P.shape)
        costs = np.asarray(ssp.costs)
    values = rng.uniform(1.0, 10.0, size=S)
    return Instance(name, ssp, S, counts, costs, values)
