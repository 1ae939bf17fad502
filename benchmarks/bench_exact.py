"""Exact evaluation at scale: certified values of large sparse chains, time and memory.

Run with ``python -m pytest benchmarks/bench_exact.py --benchmark-only -q``.

- ``exact-10000``: ``reference.garnet(10000, 4, 5, seed=0, sparse=True)`` under
  the all-0 policy, largest hitting time 2.4e4: the residual certificate
  proves no state, the monotone bounds prove all (docs/exact-evaluation.md).
- ``exact-100000``: ``reference.garnet(100000, 4, 5, sparse=True)`` under the
  all-0 policy and a random one (seed 1); every value certified to 1e-10.

Each run stores in ``extra_info`` the peak of ``tracemalloc`` during the call
(MiB), the largest value and whether the elimination ran; the time is that of
one call (``policy_values``, the model built beforehand).
"""

import tracemalloc

import numpy as np
import pytest

import reference
from reference.chains import explicit

CASES = {
    "10000-zeros": (10_000, 5, 0, None),
    "100000-zeros": (100_000, 5, 0, None),
    "100000-random": (100_000, 5, 0, 1),
    "100000-b3-seed2": (100_000, 3, 2, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_exact_values(benchmark, monkeypatch, case):
    benchmark.group = "exact"
    S, branching, seed, policy_seed = CASES[case]
    ssp = reference.garnet(S, 4, branching, seed=seed, sparse=True)
    policy = (np.zeros(S, dtype=np.int64) if policy_seed is None
              else np.random.default_rng(policy_seed).integers(0, 4, S))
    eliminated = []
    eliminate = explicit._gth
    monkeypatch.setattr(explicit, "_gth", lambda *a: eliminated.append(1) or eliminate(*a))

    def measured():
        tracemalloc.start()
        try:
            return reference.policy_values(ssp, policy), tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    values, peak = benchmark.pedantic(measured, rounds=1, iterations=1)
    benchmark.extra_info.update({
        "peak MiB": round(peak / 2**20, 1), "largest value": float(values.max()),
        "eliminated": bool(eliminated),
    })
    assert np.all(np.isfinite(values)) and not eliminated
