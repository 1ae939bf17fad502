"""``solve`` (Alg. 1) end to end, backend x size, on dense garnets; the sample top-up.

The default ``sspgm solve`` (``gridworld()``, ``eps = delta = 0.1``, seed 0,
66,890,640 calls in 4 rounds) on both backends. Then
``reference.garnet(S, 4, 5, c_min=0.2, seed=0)`` with ``eps = 1``,
``delta = 0.1`` and seed 0, for S = 100 and 500. Smaller ``eps`` or larger
``S`` is out of reach of a benchmark run: the allocation function asks for
``10^5``-``10^6`` samples per pair, and the reference backend alone takes about
ten seconds per run at S = 500 (and runs its EVI on densified counts), so
S = 2000 and the sparse sizes are left out. Both backends draw the same
samples (same seed), so the rows compare the same work.

The top-up (``SampleStore.top_up`` from an empty store to ``10^3`` samples per
pair, seed 0, then ``counts_csr()``, which merges them) runs on the
``sparse-10000`` instance of ``conftest.py``: the sampling of every round of
SEARCH at the size where it used to cost seconds. Both backends share this
code (``fast`` re-exports the store and the model), so the two rows time the
same calls.
"""

import numpy as np
import pytest

import fast
import reference

from conftest import instance, rounds_spanning

SOLVE_SIZES = (100, 500)
EPS = 1.0
DELTA = 0.1
TOP_UP_INSTANCES = ("sparse-10000",)
TOP_UP_TARGET = 1000
GRIDWORLD_CALLS = 66_890_640
FAST_ROUNDS = 20


def _rounds(backend_name, n_states, run):
    """Rounds of a ``solve`` row: the reference's take seconds each (three at S = 500, five
    below); the fast ones a fraction of a second, so they run at least :data:`FAST_ROUNDS`
    times and as many as span :data:`conftest.SPAN_SECONDS`, and their minimum is not one
    short stretch of calls caught by another process on the shared machine."""
    if backend_name == "fast":
        return rounds_spanning(run, FAST_ROUNDS)
    return 3 if n_states >= 500 else 5


@pytest.mark.parametrize("n_states", SOLVE_SIZES, ids=[f"dense-{S}" for S in SOLVE_SIZES])
@pytest.mark.parametrize("backend_name", ["reference", "fast"])
def test_solve(benchmark, backend_name, n_states):
    benchmark.group = f"solve dense-{n_states}"
    backend = fast if backend_name == "fast" else reference
    ssp = reference.garnet(n_states, 4, 5, c_min=0.2, seed=0)

    def run():
        return backend.solve(backend.TabularGenerativeModel(ssp), ssp.costs, EPS, DELTA, seed=0)

    out = benchmark.pedantic(run, rounds=_rounds(backend_name, n_states, run), iterations=1)
    benchmark.extra_info["n_calls"] = out.n_calls
    assert out.converged


@pytest.mark.parametrize("backend_name", ["reference", "fast"])
def test_solve_gridworld(benchmark, backend_name):
    """The default ``sspgm solve``: Alg. 1 on ``gridworld()``, ``eps = delta = 0.1``, seed 0."""
    benchmark.group = "solve gridworld"
    backend = fast if backend_name == "fast" else reference
    ssp = reference.gridworld()

    def run():
        return backend.solve(backend.TabularGenerativeModel(ssp), ssp.costs, 0.1, 0.1, seed=0)

    out = benchmark(run)
    benchmark.extra_info["n_calls"] = out.n_calls
    assert out.n_calls == GRIDWORLD_CALLS


@pytest.mark.parametrize("name", TOP_UP_INSTANCES)
@pytest.mark.parametrize("backend_name", ["reference", "fast"])
def test_top_up(benchmark, backend_name, name):
    benchmark.group = f"top-up {name}"
    backend = fast if backend_name == "fast" else reference
    ssp = instance(name).ssp

    def fresh():
        model = backend.TabularGenerativeModel(ssp)
        store = backend.SampleStore(ssp.n_states, ssp.n_actions)
        return (store, model, np.random.default_rng(0)), {}

    def run(store, model, rng):
        drawn = store.top_up(model, TOP_UP_TARGET, rng)
        store.counts_csr()
        return drawn

    drawn = benchmark.pedantic(run, setup=fresh, rounds=5, iterations=1)
    assert drawn == TOP_UP_TARGET * ssp.n_states * ssp.n_actions
