"""``set_num_threads`` / ``get_num_threads`` on both backends, and thread-independent results."""

import numpy as np
import pytest
import scipy.sparse as sp

import fast
import reference


@pytest.fixture
def restore_threads():
    yield
    reference.set_num_threads(None)


def test_setting_is_recorded_and_returned(backend, restore_threads):
    backend.set_num_threads(3)
    assert backend.get_num_threads() == 3
    assert backend.set_num_threads(1) == 3
    assert backend.get_num_threads() == 1


def test_none_restores_the_environment_default(backend, restore_threads, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    backend.set_num_threads(2)
    backend.set_num_threads(None)
    assert backend.get_num_threads() == 5


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
