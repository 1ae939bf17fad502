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
  kept in CSR form.

``N = 10^5`` is the order of the allocation function at moderate accuracy, so
the confidence boxes are narrow and the greedy pour is short, as in SEARCH's
late rounds.
"""

import os

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


@dataclass(frozen=True)
class Instance:
    """A benchmark problem: its SSP, sample counts, costs and a value vector."""

    name: str
    ssp: object
    counts: object
    costs: np.ndarray
    values: np.ndarray

    @property
    def sparse(self):
        return self.ssp.is_sparse

    @property
    def n_states(self):
        return self.ssp.n_states


@lru_cache(maxsize=None)
def instance(name):
    """Build (once per session) the instance called ``dense-S`` or ``sparse-S``."""
    kind, size = name.split("-")
    S = int(size)
    rng = np.random.default_rng(S)
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
    return Instance(name, ssp, counts, costs, values)
