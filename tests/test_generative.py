"""Generative models (exact call counting) and the sample store (sparse counts, save/load)."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _ssp(backend):
    P = np.array(
        [
            [[0.2, 0.0, 0.8], [0.0, 0.5, 0.5]],
            [[0.1, 0.6, 0.3], [0.0, 0.0, 1.0]],
        ]
    )
    return backend.SSP(P, [[0.5, 1.0], [1.0, 0.2]])


@pytest.mark.shared
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


@pytest.mark.shared
def test_tabular_sample_is_the_documented_multinomial(backend):
    ssp = _ssp(backend)
    model = backend.TabularGenerativeModel(ssp)
    nxt, cnt = model.sample(1, 0, 1000, np.random.default_rng(42))
    support, probs = ssp.row(1, 0)
    expected = np.random.default_rng(42).multinomial(1000, probs / probs.sum())
    assert np.array_equal(nxt, support[expected > 0])
    assert np.array_equal(cnt, expected[expected > 0])


@pytest.mark.shared
def test_tabular_frequencies_match_the_kernel(backend):
    ssp = _ssp(backend)
    model = backend.TabularGenerativeModel(ssp)
    n = 200_000
    nxt, cnt = model.sample(1, 0, n, np.random.default_rng(1))
    support, probs = ssp.row(1, 0)
    assert np.array_equal(nxt, support)
    sd = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(cnt / n - probs) < 6 * sd)


def _recording_simulator(backend):
    """A simulator of ``_ssp`` and the list of the pairs its ``step`` was called with."""
    ssp = _ssp(backend)
    seen = []

    def step(s, a, rng):
        seen.append((s, a))
        support, probs = ssp.row(s, a)
        return int(rng.choice(support, p=probs))

    return backend.SimulatorGenerativeModel(step, 2, 2), seen


@pytest.mark.shared
def test_simulator_calls_step_once_per_sample(backend):
    model, seen = _recording_simulator(backend)
    nxt, cnt = model.sample(0, 1, 9, np.random.default_rng(3))
    assert len(seen) == 9 and set(seen) == {(0, 1)}
    assert cnt.sum() == 9 and set(nxt.tolist()) <= {1, 2}
    assert model.n_calls == 9 and model.calls[0, 1] == 9
    assert isinstance(model, backend.GenerativeModel)


@pytest.mark.shared
@pytest.mark.parametrize("bad", [3, -1, 1.5, None, True])
def test_simulator_rejects_states_outside_s_prime(backend, bad):
    model = backend.SimulatorGenerativeModel(lambda s, a, rng: bad, 2, 2)
    pattern = (r"`step` must return a next state in 0\.\.2 \(goal = 2\); for the pair "
               rf"\(s, a\) = \(1, 0\) it returned {re.escape(repr(bad))}\.")
    with pytest.raises(backend.GenerativeModelError, match=pattern):
        model.sample(1, 0, 2, np.random.default_rng(0))
    assert model.n_calls == 1


@pytest.mark.shared
def test_simulator_accepts_numpy_integers_and_the_goal(backend):
    model = backend.SimulatorGenerativeModel(lambda s, a, rng: np.int32(2), 2, 2)
    nxt, cnt = model.sample(0, 0, 4, np.random.default_rng(0))
    assert nxt.tolist() == [2] and cnt.tolist() == [4]


@pytest.mark.shared
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


@pytest.mark.shared
def test_sample_rejects_bad_pairs(backend):
    model = backend.TabularGenerativeModel(_ssp(backend))
    rng = np.random.default_rng(0)
    with pytest.raises(backend.ParameterError, match="`s`"):
        model.sample(2, 0, 1, rng)
    with pytest.raises(backend.ParameterError, match="`a`"):
        model.sample(0, 2, 1, rng)
    with pytest.raises(backend.ParameterError, match="`n`"):
        model.sample(0, 0, -1, rng)


@pytest.mark.shared
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
    assert store.Gamma_hat == 3
    with pytest.raises(backend.TooLargeError, match=r"\(2, 2, 3\) needs 96 bytes.*counts_csr"):
        store.counts_dense(max_bytes=95)
    assert store.counts_dense(max_bytes=96).shape == (2, 2, 3)


@pytest.mark.shared
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


@pytest.mark.shared
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
    assert loaded.Gamma_hat == store.Gamma_hat
    assert np.array_equal(rng2.integers(0, 10**9, 20), rng.integers(0, 10**9, 20))


def _ragged_ssp(backend, seed, sparse, n_states=None):
    """A random SSP (``S`` random unless given) with supports of random lengths in 1..S+1."""
    rng = np.random.default_rng(seed)
    S, A = n_states or int(rng.integers(1, 40)), int(rng.integers(1, 4))
    P = rng.dirichlet(np.ones(S + 1), size=(S, A))
    sizes = rng.integers(1, S + 2, size=(S, A))
    for s in range(S):
        for a in range(A):
            P[s, a, rng.permutation(S + 1)[sizes[s, a]:]] = 0.0
    P /= P.sum(axis=2, keepdims=True)
    costs = rng.uniform(0.1, 1.0, size=(S, A))
    if sparse:
        P = sp.csr_array(P.reshape(S * A, S + 1))
    return backend.SSP(P, costs, require_proper=False)


def _twin_generators(seed):
    first = np.random.default_rng(seed)
    second = np.random.default_rng()
    second.bit_generator.state = first.bit_generator.state
    return first, second


@pytest.mark.shared
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), sparse=st.booleans())
def test_sample_pairs_makes_the_draws_of_sample_pair_after_pair(backend, seed, sparse):
    ssp = _ragged_ssp(backend, seed, sparse)
    S, A = ssp.n_states, ssp.n_actions
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, S * A, size=int(rng.integers(0, 3 * S * A)))
    n = rng.choice([0, 1, 7, 1000], size=pairs.size)
    batched, looped = backend.TabularGenerativeModel(ssp), backend.TabularGenerativeModel(ssp)
    rng_batched, rng_looped = _twin_generators(seed)
    indptr, next_states, counts = batched.sample_pairs(pairs, n, rng_batched)
    assert indptr.shape == (pairs.size + 1,) and indptr[0] == 0
    for i, (pair, n_i) in enumerate(zip(pairs, n)):
        nxt, cnt = looped.sample(*divmod(int(pair), A), int(n_i), rng_looped)
        assert np.array_equal(next_states[indptr[i]:indptr[i + 1]], nxt)
        assert np.array_equal(counts[indptr[i]:indptr[i + 1]], cnt)
    assert np.array_equal(batched.calls, looped.calls)
    assert rng_batched.bit_generator.state == rng_looped.bit_generator.state


@pytest.mark.shared
@pytest.mark.parametrize("n_states", [12, 200])
@pytest.mark.parametrize("sparse", [False, True])
def test_top_up_makes_the_draws_of_the_per_pair_loop(backend, sparse, n_states):
    ssp = _ragged_ssp(backend, 3, sparse, n_states)
    S, A = ssp.n_states, ssp.n_actions
    stores = [backend.SampleStore(S, A) for _ in range(2)]
    models = [backend.TabularGenerativeModel(ssp) for _ in range(2)]
    for store in stores:
        store.add(0, 0, [S], [40])
        store.add(S - 1, A - 1, [0, S], [2, 1])
    rng_batched, rng_looped = _twin_generators(8)
    for target in (5, 40, 41):
        drawn = stores[0].top_up(models[0], target, rng_batched)
        n_pair, before = stores[1].n_pair, stores[1].n_samples
        for s in range(S):
            for a in range(A):
                stores[1].draw(models[1], s, a, target - int(n_pair[s, a]), rng_looped)
        assert drawn == stores[1].n_samples - before
        assert np.array_equal(stores[0].counts_dense(), stores[1].counts_dense())
        assert np.array_equal(stores[0].n_pair, stores[1].n_pair)
        assert stores[0].Gamma_hat == stores[1].Gamma_hat
    assert np.array_equal(models[0].calls, models[1].calls)
    assert rng_batched.bit_generator.state == rng_looped.bit_generator.state
    assert stores[0].counts_csr().has_canonical_format


@pytest.mark.shared
def test_sample_pairs_answers_in_arrays_of_its_own_when_every_next_state_is_drawn(backend):
    """With every next state drawn, the answer is the draws of ``sample`` pair after pair,
    in arrays the caller may change without changing the next answer."""
    ssp = backend.garnet(20, 3, 4, seed=2)
    S, A = ssp.n_states, ssp.n_actions
    batched, looped = backend.TabularGenerativeModel(ssp), backend.TabularGenerativeModel(ssp)
    rng_batched, rng_looped = _twin_generators(2)
    pairs = np.arange(S * A)
    for _ in range(2):
        indptr, next_states, counts = batched.sample_pairs(pairs, 10**6, rng_batched)
        assert np.array_equal(np.diff(indptr), [ssp.row(*divmod(p, A))[0].size for p in pairs])
        for i, pair in enumerate(pairs):
            nxt, cnt = looped.sample(*divmod(int(pair), A), 10**6, rng_looped)
            assert np.array_equal(next_states[indptr[i]:indptr[i + 1]], nxt)
            assert np.array_equal(counts[indptr[i]:indptr[i + 1]], cnt)
        indptr[:], next_states[:] = 0, -1
    assert rng_batched.bit_generator.state == rng_looped.bit_generator.state


class _Wrapped:
    """A model that is not a ``TabularGenerativeModel``: the store checks its answers."""

    def __init__(self, inner):
        self.inner = inner
        self.n_states, self.n_actions = inner.n_states, inner.n_actions

    def sample_pairs(self, pairs, n, rng):
        return self.inner.sample_pairs(pairs, n, rng)


def _same_counts(first, second):
    for part in ("data", "indices", "indptr"):
        a, b = getattr(first.counts_csr(), part), getattr(second.counts_csr(), part)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert first.counts_csr().has_canonical_format and second.counts_csr().has_canonical_format
    assert np.array_equal(first.n_pair, second.n_pair)
    assert first.Gamma_hat == second.Gamma_hat and first.calls_made == second.calls_made


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True])
def test_a_tabular_model_is_merged_unchecked_as_its_checked_answers(backend, sparse):
    """The answers of a ``TabularGenerativeModel``, merged without checks (and in canonical
    order when the pairs ascend), give the store of the same answers checked and merged
    through a wrapper: top-ups, pairs in any order with repeats and zeros, samples added."""
    ssp = _ragged_ssp(backend, 11, sparse, 30)
    S, A = ssp.n_states, ssp.n_actions
    direct, wrapped = backend.TabularGenerativeModel(ssp), backend.TabularGenerativeModel(ssp)
    stores = [backend.SampleStore(S, A) for _ in range(2)]
    models = [direct, _Wrapped(wrapped)]
    rngs = _twin_generators(11)
    steps = [("top_up", 3), ("pairs", [5, 2, 2, 0, S * A - 1], [4, 0, 7, 1, 2]),
             ("top_up", 9), ("add", 1, 0, [0, S], [2, 2]), ("pairs", [1, 3], 30),
             ("pairs", np.arange(S * A), 1), ("top_up", 200)]
    for step in steps:
        for store, model, rng in zip(stores, models, rngs):
            if step[0] == "top_up":
                store.top_up(model, step[1], rng)
            elif step[0] == "pairs":
                store.draw_pairs(model, step[1], step[2], rng)
            else:
                store.add(*step[1:])
        _same_counts(*stores)
    assert np.array_equal(direct.calls, wrapped.calls)
    assert rngs[0].bit_generator.state == rngs[1].bit_generator.state


@pytest.mark.shared
def test_an_overridden_tabular_sample_pairs_is_checked(backend):
    """A subclass or an instance replacing ``sample_pairs`` has its answers checked."""
    ssp = _ssp(backend)

    class Short(backend.TabularGenerativeModel):
        def sample_pairs(self, pairs, n, rng):
            indptr, next_states, counts = super().sample_pairs(pairs, n, rng)
            return indptr, next_states, counts - (counts > 1)

    replaced = backend.TabularGenerativeModel(ssp)
    replaced.sample_pairs = lambda pairs, n, rng: (np.array([0, 1]), np.array([5]), [n[0]])
    for model in (Short(ssp), replaced):
        store = backend.SampleStore(2, 2)
        with pytest.raises(backend.GenerativeModelError):
            store.top_up(model, 4, np.random.default_rng(0))
        assert store.n_samples == 0


@pytest.mark.shared
def test_draw_pairs_calls_a_simulator_pair_after_pair(backend):
    model, seen = _recording_simulator(backend)
    store = backend.SampleStore(2, 2)
    store.draw_pairs(model, [3, 1, 3], [2, 0, 1], np.random.default_rng(0))
    assert seen == [(1, 1), (1, 1), (1, 1)]
    assert store.n_pair.tolist() == [[0, 0], [0, 3]]
    assert store.counts_csr()[[3], [2]].tolist() == [3]


@pytest.mark.shared
def test_draw_pairs_keeps_the_samples_drawn_before_a_failing_pair(backend):
    def step(s, a, rng):
        return 2 if s == 0 else -1

    store = backend.SampleStore(2, 2)
    model = backend.SimulatorGenerativeModel(step, 2, 2)
    with pytest.raises(backend.GenerativeModelError, match=r"\(s, a\) = \(1, 0\)"):
        store.top_up(model, 3, np.random.default_rng(0))
    assert store.n_pair.tolist() == [[3, 3], [0, 0]]
    assert store.counts_dense()[:, :, 2].tolist() == [[3, 3], [0, 0]]
    assert model.n_calls == 7


@pytest.mark.shared
@pytest.mark.parametrize(
    "pairs, n, error, pattern",
    [
        ([4], 1, "ParameterError", r"`pairs` must be pair indices s\*A \+ a in 0\.\.3; got \[4\]"),
        ([-1, 0], 1, "ParameterError", r"in 0\.\.3; got \[-1\]"),
        ([[0, 1]], 1, "ParameterError", r"`pairs` must be a 1-d array .* shape \(1, 2\)"),
        ([0.5], 1, "ParameterError", r"`pairs` must be .* dtype float64"),
        ([0, 1], [1, -2], "ParameterError", r"`n` must be >= 0; got \[-2\]"),
        ([0, 1], [1, 2, 3], "ShapeError",
         r"`n` must have one entry per pair, shape \(2,\); got \(3,\)"),
        ([0, 1], 1.5, "ParameterError", r"`n` must be an integer .* dtype float64"),
    ],
)
def test_batched_sampling_rejects_bad_requests(backend, pairs, n, error, pattern):
    model = backend.TabularGenerativeModel(_ssp(backend))
    store = backend.SampleStore(2, 2)
    rng = np.random.default_rng(0)
    for call in (lambda: model.sample_pairs(pairs, n, rng),
                 lambda: store.draw_pairs(model, pairs, n, rng)):
        with pytest.raises(getattr(backend, error), match=pattern):
            call()
    assert model.n_calls == 0 and store.n_samples == 0


@pytest.mark.shared
def test_store_drops_zero_counts_and_keeps_returned_matrices(backend):
    store = backend.SampleStore(2, 2)
    store.add(0, 0, [1, 2], [0, 4])
    before = store.counts_csr()
    store.add(0, 0, [1, 2, 2], [0, 1, 2])
    after = store.counts_csr()
    assert before.nnz == 1 and before[[0], [2]].tolist() == [4]
    assert after.nnz == 1 and after[[0], [2]].tolist() == [7]
    assert store.Gamma_hat == 1 and store.n_pair[0, 0] == 7


@pytest.mark.shared
@pytest.mark.parametrize("indptr", [[0, 2], [1, 1, 2], [0, 3, 2], [0, 1, 3]])
def test_draw_pairs_rejects_a_bad_sample_pairs_indptr(backend, indptr):
    class Batched:
        n_states, n_actions = 2, 2

        def sample_pairs(self, pairs, n, rng):
            return indptr, [0, 2], [1, 1]

    store = backend.SampleStore(2, 2)
    with pytest.raises(backend.GenerativeModelError,
                       match=r"`indptr` of shape \(3,\), non-decreasing "
                                                  r"from 0 to 2; got \["):
        store.draw_pairs(Batched(), [0, 1], 1, np.random.default_rng(0))
    assert store.n_samples == 0


class _Answers:
    """A model answering ``sample_pairs`` with the arrays it is given (any order, repeats)."""

    def __init__(self, n_states, n_actions):
        self.n_states, self.n_actions = n_states, n_actions
        self.answer = None

    def sample_pairs(self, pairs, n, rng):
        return self.answer


@pytest.mark.shared
def test_sample_pairs_reuses_the_layout_only_for_the_same_pairs(backend):
    """The layout kept from the last call serves the next call with the same pairs, and no
    other: pairs changed in place by the caller, other pairs, then the first ones again all
    make the draws of ``sample`` pair after pair."""
    ssp = _ragged_ssp(backend, 5, True, 30)
    S, A = ssp.n_states, ssp.n_actions
    batched, looped = backend.TabularGenerativeModel(ssp), backend.TabularGenerativeModel(ssp)
    rng_batched, rng_looped = _twin_generators(5)
    pairs = np.arange(S * A)
    asked = []
    for change in (None, None, "in place", "other", "first"):
        if change == "in place":
            pairs[:5] = pairs[5:10]
        elif change == "other":
            pairs = np.arange(S * A)[::-2].copy()
        elif change == "first":
            pairs = np.arange(S * A)
        asked.append(pairs.copy())
        n = np.full(pairs.size, 40)
        indptr, next_states, counts = batched.sample_pairs(pairs, n, rng_batched)
        for i, pair in enumerate(asked[-1]):
            nxt, cnt = looped.sample(*divmod(int(pair), A), 40, rng_looped)
            assert np.array_equal(next_states[indptr[i]:indptr[i + 1]], nxt)
            assert np.array_equal(counts[indptr[i]:indptr[i + 1]], cnt)
    assert np.array_equal(batched.calls, looped.calls)
    assert rng_batched.bit_generator.state == rng_looped.bit_generator.state


@pytest.mark.shared
def test_store_sums_a_repeated_support_as_scipy_does(backend):
    """Counts read after samples of exactly the stored entries (added on the stored
    structure) and after samples of new ones (a sparse addition) are scipy's sum, array for
    array and dtype for dtype; the matrices returned before stay as they were."""
    S, A = 3, 2
    store = backend.SampleStore(S, A)
    expected = sp.csr_array((S * A, S + 1), dtype=np.int64)
    returned = []
    for pair, cols, counts in [(0, [1, 3], [2, 5]), (0, [1, 3], [1, 1]), (0, [1, 3], [4, 4]),
                               (1, [0], [7]), (0, [1, 3], [1, 2]), (1, [0], [3])]:
        store.add(*divmod(pair, A), cols, counts)
        rows = np.full(len(cols), pair)
        expected = expected + sp.csr_array((counts, (rows, cols)), shape=expected.shape)
        got = store.counts_csr()
        for part in ("data", "indices", "indptr"):
            assert getattr(got, part).dtype == getattr(expected, part).dtype
            assert np.array_equal(getattr(got, part), getattr(expected, part))
        assert got.has_canonical_format
        returned.append((got, expected.toarray()))
    for got, dense in returned:
        assert np.array_equal(got.toarray(), dense)
    assert store.Gamma_hat == 2


@pytest.mark.shared
def test_store_count_table_is_the_checked_table(backend):
    """``count_table`` gives, unchecked, the arrays the checks give for the store's counts."""
    from reference.counts import Counts

    ssp = _ragged_ssp(backend, 7, True, 20)
    store = backend.SampleStore(ssp.n_states, ssp.n_actions)
    model = backend.TabularGenerativeModel(ssp)
    rng = np.random.default_rng(7)
    store.add(0, 0, [ssp.n_states, 0, 0], [0, 2, 3])
    for target in (1, 9, 30):
        store.top_up(model, target, rng)
        table, checked = store.count_table(), Counts(store.counts_csr()).table
        for part in ("data", "indices", "indptr"):
            assert getattr(table, part).dtype == getattr(checked, part).dtype
            assert np.array_equal(getattr(table, part), getattr(checked, part))
        assert table.shape == checked.shape


_ENTRY = st.tuples(st.integers(0, 3), st.integers(0, 3))
_BATCH = st.lists(st.tuples(st.integers(0, 5), st.lists(_ENTRY, max_size=4)), max_size=5)


@pytest.mark.shared
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(_BATCH, st.booleans(), st.booleans()), max_size=6))
def test_store_merges_batches_as_the_scipy_sum(backend, batches):
    """Every read of the counts equals the stored matrix plus the pending samples summed by
    scipy (COO to CSR, then a sparse addition), array for array and dtype for dtype, and the
    dense sum of every sample: batches in canonical order or not, pairs and next states
    repeated within and across batches, empty batches, zero counts."""
    S, A = 3, 2
    store = backend.SampleStore(S, A)
    model = _Answers(S, A)
    expected = sp.csr_array((S * A, S + 1), dtype=np.int64)
    dense = np.zeros((S * A, S + 1), dtype=np.int64)
    pending = []
    for batch, canonical, read in batches:
        if canonical:
            merged = {}
            for pair, entries in batch:
                for col, count in entries:
                    merged.setdefault(pair, {}).setdefault(col, 0)
                    merged[pair][col] += count
            batch = [(pair, sorted(merged[pair].items())) for pair in sorted(merged)]
        pairs = np.array([pair for pair, _ in batch], dtype=np.int64)
        n = np.array([sum(count for _, count in entries) for _, entries in batch],
                     dtype=np.int64)
        lengths = [len(entries) for _, entries in batch]
        flat = [entry for _, entries in batch for entry in entries]
        cols = np.array([col for col, _ in flat], dtype=np.int64)
        counts = np.array([count for _, count in flat], dtype=np.int64)
        model.answer = (np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]), cols, counts)
        store.draw_pairs(model, pairs, n, None)
        if n.sum():
            rows = np.repeat(pairs, lengths)
            pending.append((rows, cols, counts))
            np.add.at(dense, (rows, cols), counts)
        if read:
            if pending:
                rows, cols, counts = (np.concatenate(part) for part in zip(*pending))
                seen = counts > 0
                expected = expected + sp.coo_array(
                    (counts[seen], (rows[seen], cols[seen])), shape=expected.shape).tocsr()
                pending = []
            got = store.counts_csr()
            for part in ("data", "indices", "indptr"):
                want = getattr(expected, part)
                assert getattr(got, part).dtype == want.dtype
                assert np.array_equal(getattr(got, part), want)
            assert got.has_canonical_format and got.has_sorted_indices
            assert np.array_equal(got.toarray(), dense)
            assert store.Gamma_hat == int((dense > 0).sum(axis=1).max())
