"""``set_num_threads`` / ``get_num_threads`` on both backends, thread-independent results, and
the thread choice of the compiled sweeps."""

import numpy as np
import pytest
import scipy.sparse as sp

import fast
import reference


@pytest.fixture
def restore_threads():
    yield
    reference.set_num_threads(None)


@pytest.mark.shared
def test_setting_is_recorded_and_returned(backend, restore_threads):
    backend.set_num_threads(3)
    assert backend.get_num_threads() == 3
    assert backend.set_num_threads(1) == 3
    assert backend.get_num_threads() == 1


@pytest.mark.shared
def test_none_restores_the_environment_default(backend, restore_threads, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    backend.set_num_threads(2)
    backend.set_num_threads(None)
    assert backend.get_num_threads() == 5


def test_the_default_is_every_core_without_omp_num_threads(restore_threads, monkeypatch):
    import os

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    reference.set_num_threads(None)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert fast.get_num_threads() == reference.get_num_threads() == cores


@pytest.mark.parametrize(("environ", "expected"), [
    ({"PYTEST_XDIST_WORKER": "gw1"}, "1"),                          # the workers share the cores
    ({"PYTEST_XDIST_WORKER": "gw0", "OMP_NUM_THREADS": "3"}, "3"),  # the user's choice wins
    ({}, None),                                                     # not a worker: untouched
])
def test_an_xdist_worker_gets_one_thread_unless_told_otherwise(environ, expected):
    from conftest import one_thread_per_worker

    one_thread_per_worker(environ)
    assert environ.get("OMP_NUM_THREADS") == expected


@pytest.mark.shared
@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_invalid_thread_counts_are_rejected(backend, bad):
    with pytest.raises(backend.ParameterError, match="`n`"):
        backend.set_num_threads(bad)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_fast_results_do_not_depend_on_threads(restore_threads, monkeypatch, sparse):
    monkeypatch.setattr(fast._parallel, "PARALLEL_MIN_WORK", 0)
    rng = np.random.default_rng(4)
    S, A = 300, 4
    P = rng.dirichlet(np.full(S + 1, 0.05), size=(S, A))
    counts = np.stack([[rng.multinomial(200, P[s, a]) for a in range(A)] for s in range(S)])
    if sparse:
        counts = sp.csr_array(counts.reshape(S * A, S + 1))
    costs = rng.random((S, A))
    runs = []
    for n in (1, 2):
        fast.set_num_threads(n)
        assert fast._parallel.sweep_threads(1) == n
        runs.append(fast.extended_value_iteration(counts, costs, 0.1, 1e-4))
    assert np.array_equal(runs[0].v_tilde, runs[1].v_tilde)
    assert np.array_equal(runs[0].policy, runs[1].policy)
    assert runs[0].n_iter == runs[1].n_iter


class _Clock:
    """A clock that stands still until a stand-in sweep advances it."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _timed_sweep(seconds_by_threads, calls, clock):
    """A stand-in sweep that records its thread count and takes the time given for it."""

    def sweep(tag, n_threads):
        calls.append(n_threads)
        clock.now += seconds_by_threads[n_threads]
        return tag

    return sweep


def _choice(work):
    clock = _Clock()
    return fast._parallel.ThreadChoice(work, clock=clock), clock


@pytest.mark.parametrize(("seconds", "kept"), [({1: 2.0, 2: 1.0}, 2), ({1: 1.0, 2: 2.0}, 1)],
                         ids=["parallel-faster", "serial-faster"])
def test_thread_choice_keeps_the_faster_count(restore_threads, seconds, kept):
    fast.set_num_threads(2)
    calls = []
    choice, clock = _choice(fast._parallel.PARALLEL_MIN_WORK)
    sweep = _timed_sweep(seconds, calls, clock)
    assert [choice.run(sweep, k) for k in range(5)] == list(range(5))
    assert calls == [2, 1, kept, kept, kept]


def test_thread_choice_measures_again_after_a_new_setting(restore_threads):
    fast.set_num_threads(2)
    calls = []
    choice, clock = _choice(fast._parallel.PARALLEL_MIN_WORK)
    sweep = _timed_sweep({1: 1.0, 2: 3.0, 3: 0.5}, calls, clock)
    for _ in range(3):
        choice.run(sweep, None)
    fast.set_num_threads(3)
    for _ in range(3):
        choice.run(sweep, None)
    assert calls == [2, 1, 1, 3, 1, 3]


def test_thread_choice_measures_again_every_probe_period(restore_threads):
    fast.set_num_threads(2)
    calls = []
    choice, clock = _choice(fast._parallel.PARALLEL_MIN_WORK)
    seconds = {1: 1.0, 2: 2.0}
    sweep = _timed_sweep(seconds, calls, clock)
    for _ in range(fast._parallel.PROBE_EVERY):
        choice.run(sweep, None)
    seconds[2] = 0.5
    for _ in range(3):
        choice.run(sweep, None)
    assert calls[-3:] == [2, 1, 2]


def test_thread_choice_keeps_small_sweeps_serial(restore_threads):
    fast.set_num_threads(2)
    calls = []
    choice, clock = _choice(fast._parallel.PARALLEL_MIN_WORK - 1)
    for _ in range(3):
        choice.run(_timed_sweep({1: 1.0}, calls, clock), None)
    assert calls == [1, 1, 1]
