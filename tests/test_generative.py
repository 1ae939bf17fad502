"""Generative models (exact call counting) and the sample store (sparse counts, save/load)."""

import re

import numpy as np
import pytest


def _ssp(backend):
    P = np.array(
        [
            [[0.2, 0.0, 0.8], [0.0, 0.5, 0.5]],
            [[0.1, 0.6, 0.3], [0.0, 0.0, 1.0]],
        ]
    )
    return backend.SSP(P, [[0.5, 1.0], [1.0, 0.2]])


def test_tabular_sample_counts_every_call(backend):
    ssp = _ssp(backend)
    model = backend.TabularGenerativeModel(ssp)
    rng = np.random.default_rng(0)
    total = 0
    for s, a, n in [(0, 0, 7), (1, 0, 1), (0, 0, 0), (1, 1, 5), (0, 0, 3)]:
        nxt, cnt = model.sample(s, a, n, rng)
        total += n
        assert cnt.sum() == n and (cnt > 0).all()
        assert np.all(np.diff(nxt) > 0)
        support, _ = ssp.row(s, a)
        assert set(nxt.tolist()) <= set(support.tolist())
    assert model.n_calls == total
    assert model.calls[0, 0] == 10 and model.calls[1, 0] == 1 and model.calls[1, 1] == 5


def test_tabular_sample_is_the_documented_multinomial(backend):
    ssp = _ssp(backend)
    model = backend.TabularGenerativeModel(ssp)
    nxt, cnt = model.sample(1, 0, 1000, np.random.default_rng(42))
    support, probs = ssp.row(1, 0)
    expected = np.random.default_rng(42).multinomial(1000, probs / probs.sum())
    assert np.array_equal(nxt, support[expected > 0])
    assert np.array_equal(cnt, expected[expected > 0])


def test_tabular_frequencies_match_the_kernel(backend):
    ssp = _ssp(backend)
    model = backend.TabularGenerativeModel(ssp)
    n = 200_000
    nxt, cnt = model.sample(1, 0, n, np.random.default_rng(1))
    support, probs = ssp.row(1, 0)
    assert np.array_equal(nxt, support)
    sd = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(cnt / n - probs) < 6 * sd)


def test_simulator_calls_step_once_per_sample(backend):
    ssp = _ssp(backend)
    seen = []

    def step(s, a, rng):
        seen.append((s, a))
        support, probs = ssp.row(s, a)
        return int(rng.choice(support, p=probs))

    model = backend.SimulatorGenerativeModel(step, 2, 2)
    nxt, cnt = model.sample(0, 1, 9, np.random.default_rng(3))
    assert len(seen) == 9 and set(seen) == {(0, 1)}
    assert cnt.sum() == 9 and set(nxt.tolist()) <= {1, 2}
    assert model.n_calls == 9 and model.calls[0, 1] == 9
    assert isinstance(model, backend.GenerativeModel)


@pytest.mark.parametrize("bad", [3, -1, 1.5, None, True])
def test_simulator_rejects_states_outside_s_prime(backend, bad):
    model = backend.SimulatorGenerativeModel(lambda s, a, rng: bad, 2, 2)
    pattern = (r"`step` must return a next state in 0\.\.2 \(goal = 2\); for the pair "
               rf"\(s, a\) = \(1, 0\) it returned {re.escape(repr(bad))}\.")
    with pytest.raises(backend.ParameterError, match=pattern):
        model.sample(1, 0, 2, np.random.default_rng(0))
    assert model.n_calls == 1


def test_simulator_accepts_numpy_integers_and_the_goal(backend):
    model = backend.SimulatorGenerativeModel(lambda s, a, rng: np.int32(2), 2, 2)
    nxt, cnt = model.sample(0, 0, 4, np.random.default_rng(0))
    assert nxt.tolist() == [2] and cnt.tolist() == [4]


@pytest.mark.parametrize(
    "args, error, pattern",
    [
        ((2, 0, [0], [1]), "ParameterError", r"`s` must be a non-goal state in 0\.\.1; got 2"),
        ((0, 2, [0], [1]), "ParameterError", r"`a` must be an action in 0\.\.1; got 2"),
        ((0, 0, [3], [1]), "ParameterError", r"`next_states` must lie in 0\.\.2; got \[3\]"),
        ((0, 0, [0], [-1]), "ParameterError", r"`counts` must be >= 0; got \[-1\]"),
        ((0, 0, [0, 1], [1]), "ShapeError", r"same length; got shapes \(2,\) and \(1,\)"),
    ],
)
def test_store_rejects_bad_samples(backend, args, error, pattern):
    store = backend.SampleStore(2, 2)
    with pytest.raises(getattr(backend, error), match=pattern):
        store.add(*args)
    assert store.n_samples == 0


def test_sample_rejects_bad_pairs(backend):
    model = backend.TabularGenerativeModel(_ssp(backend))
    rng = np.random.default_rng(0)
    with pytest.raises(backend.ParameterError, match="`s`"):
        model.sample(2, 0, 1, rng)
    with pytest.raises(backend.ParameterError, match="`a`"):
        model.sample(0, 2, 1, rng)
    with pytest.raises(backend.ParameterError, match="`n`"):
        model.sample(0, 0, -1, rng)


def test_store_merges_counts_sparsely(backend):
    store = backend.SampleStore(2, 2)
    store.add(0, 1, [2, 0], [3, 1])
    store.add(0, 1, [0, 1], [2, 4])
    store.add(1, 0, [2], [5])
    dense = np.zeros((2, 2, 3), dtype=np.int64)
    dense[0, 1] = [3, 4, 3]
    dense[1, 0, 2] = 5
    assert np.array_equal(store.counts_dense(), dense)
    csr = store.counts_csr()
    assert csr.shape == (4, 3) and csr.nnz == 4
    assert np.array_equal(csr.toarray().reshape(2, 2, 3), dense)
    assert np.array_equal(store.n_pair, dense.sum(axis=2))
    assert store.gamma_hat == 3
    with pytest.raises(backend.TooLargeError, match=r"\(2, 2, 3\) needs 96 bytes.*counts_csr"):
        store.counts_dense(max_bytes=95)
    assert store.counts_dense(max_bytes=96).shape == (2, 2, 3)


def test_top_up_reaches_the_target_deterministically(backend):
    ssp = _ssp(backend)
    stores = []
    for _ in range(2):
        store = backend.SampleStore(2, 2)
        model = backend.TabularGenerativeModel(ssp)
        store.add(1, 1, [2], [50])
        drawn = store.top_up(model, 20, np.random.default_rng(5))
        assert drawn == 3 * 20 == model.n_calls
        assert store.n_pair.min() == 20 and store.n_pair[1, 1] == 50
        stores.append(store.counts_dense())
    assert np.array_equal(stores[0], stores[1])


@pytest.mark.parametrize("bit_generator", ["PCG64", "MT19937", "Philox"])
def test_save_load_keeps_counts_and_generator(backend, tmp_path, bit_generator):
    ssp = _ssp(backend)
    rng = np.random.Generator(getattr(np.random, bit_generator)(11))
    store = backend.SampleStore(2, 2)
    store.top_up(backend.TabularGenerativeModel(ssp), 13, rng)
    path = tmp_path / "store.bin"
    store.save(path, rng, meta={"note": [1, 2.5]})
    loaded, rng2, meta = backend.SampleStore.load(path)
    assert meta == {"note": [1, 2.5]}
    assert np.array_equal(loaded.counts_dense(), store.counts_dense())
    assert np.array_equal(loaded.n_pair, store.n_pair)
    assert loaded.gamma_hat == store.gamma_hat
    assert np.array_equal(rng2.integers(0, 10**9, 20), rng.integers(0, 10**9, 20))
