"""The parallel generative model: its counter-based streams, executors, errors and checkpoints.

The draws are checked against the documented stream scheme written out with numpy's
Philox (``simulators.reference_draws``); the results of the algorithms against the same
model run in this process, with other chunk sizes and on another backend. Worker
processes are started once per module (a ``spawn`` pool of 2), and by the tests of a
model's own processes.
"""

import concurrent.futures as cf
import multiprocessing
import os
import threading
import warnings

import numpy as np
import pytest
import simulators

import reference
from reference.errors import (
    CheckpointError,
    GenerativeModelError,
    NotCertifiedWarning,
    ParameterError,
)
from reference.streams import STREAM_BLOCK_SIZE

@pytest.fixture(scope="module")
def pool():
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as executor:
        yield executor


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        yield


def _model(backend, executor=None, chunk=4096, **kwargs):
    simulator, ssp = simulators.chain_simulator()
    return backend.ParallelGenerativeModel(None, ssp.n_states, ssp.n_actions, executor=executor,
                                           chunk=chunk, step_batch=simulator, **kwargs)


def _counts(out, entry):
    indptr, states, counts = out
    return states[indptr[entry]:indptr[entry + 1]], counts[indptr[entry]:indptr[entry + 1]]


def test_draws_are_the_documented_blocks_of_philox_streams(backend):
    ssp = backend.gridworld()
    simulator = backend.KernelSimulator(ssp)
    A = ssp.n_actions
    model = backend.ParallelGenerativeModel(None, ssp.n_states, A, step_batch=simulator, chunk=1)
    pairs, n = np.array([5, 2, 5, 7]), np.array([2 * STREAM_BLOCK_SIZE + 452, 10, 1, 0])
    out = model.sample_pairs(pairs, n, np.random.default_rng(3))
    word = int(np.random.default_rng(3).integers(2**64, dtype=np.uint64))
    for entry, repeat in [(0, 0), (1, 0), (2, 1), (3, 0)]:
        s, a = divmod(int(pairs[entry]), A)
        draws = simulators.reference_draws(simulator, s, a, int(n[entry]), A, word,
                                           STREAM_BLOCK_SIZE, repeat)
        expected = np.unique(draws, return_counts=True)
        assert all(np.array_equal(x, y) for x, y in zip(_counts(out, entry), expected))
    assert model.calls[1, 1] == n[0] + n[2] and model.calls[0, 2] == 10 and model.n_calls == n.sum()


def test_kernel_simulator_frequencies_match_the_kernel(backend):
    ssp = backend.gridworld(success=0.7)
    simulator = backend.KernelSimulator(ssp)
    n = 200_000
    for s, a in [(0, 1), (4, 2), (9, 3)]:
        draws = simulator(s, a, n, np.random.default_rng(s))
        support, probs = ssp.row(s, a)
        assert draws.shape == (n,) and np.isin(draws, support).all()
        frequencies = np.array([(draws == state).mean() for state in support])
        assert np.all(np.abs(frequencies - probs) < 6 * np.sqrt(probs * (1 - probs) / n))


def test_step_draws_each_sample_from_its_block_generator(backend):
    step = simulators.WalkStep(0.7)
    model = backend.ParallelGenerativeModel(step, 5, 2, chunk=700)
    nxt, cnt = model.sample(3, 1, 3000, np.random.default_rng(8))
    word = int(np.random.default_rng(8).integers(2**64, dtype=np.uint64))

    def batch(s, a, n, rng):
        return [step(s, a, rng) for _ in range(n)]

    draws = simulators.reference_draws(batch, 3, 1, 3000, 2, word, STREAM_BLOCK_SIZE)
    expected = np.unique(draws, return_counts=True)
    assert np.array_equal(nxt, expected[0]) and np.array_equal(cnt, expected[1])


@pytest.mark.parametrize("chunk", [1, 700, STREAM_BLOCK_SIZE, 3 * STREAM_BLOCK_SIZE + 5, 10**9])
def test_draws_do_not_depend_on_the_chunks_or_the_other_pairs(backend, chunk):
    ssp = backend.gridworld()
    simulator = backend.KernelSimulator(ssp)
    model = backend.ParallelGenerativeModel(None, 10, 4, step_batch=simulator, chunk=chunk)
    n = (np.arange(40) * 211) % 5000
    whole = model.sample_pairs(np.arange(40), n, np.random.default_rng(1))
    one = backend.ParallelGenerativeModel(None, 10, 4, step_batch=simulator)
    for pair in (0, 17, 39):
        alone = one.sample_pairs([pair], n[pair], np.random.default_rng(1))
        assert all(np.array_equal(x, y) for x, y in zip(_counts(whole, pair), _counts(alone, 0)))


@pytest.mark.parametrize("algorithm", sorted(simulators.ALGORITHMS))
def test_algorithms_agree_serially_on_workers_and_on_both_backends(backend, pool, algorithm):
    run = simulators.ALGORITHMS[algorithm]
    ssp = simulators.chain_simulator()[1]
    serial = run(backend, _model(backend, chunk=10**9), ssp)
    on_pool = run(backend, _model(backend, executor=pool, chunk=20 * STREAM_BLOCK_SIZE + 1), ssp)
    simulators.same(on_pool, serial)
    on_reference = run(reference, _model(reference, chunk=10**9), ssp)
    assert np.array_equal(serial.calls, on_reference.calls)
    assert np.array_equal(serial.policy if "policy" in serial.keys() else serial.W,
                          on_reference.policy if "policy" in serial.keys() else on_reference.W)


@pytest.mark.parametrize("algorithm", ["solve", "solve_certified"])
def test_resume_on_workers_equals_the_uninterrupted_serial_run(backend, pool, tmp_path,
                                                               algorithm):
    run = simulators.ALGORITHMS[algorithm]
    ssp = simulators.chain_simulator()[1]
    full = run(backend, _model(backend, identity="chain"), ssp)
    path = tmp_path / "run.ckpt"
    with pytest.raises(simulators.Stop):
        run(backend, _model(backend, identity="chain"), ssp, checkpoint=path,
            callback=simulators.stop_after(2))
    resumed = run(backend, _model(backend, executor=pool, chunk=777, identity="chain"), ssp,
                  checkpoint=path)
    simulators.same(resumed, full)


def test_threads_of_one_process_draw_as_one_thread(backend):
    ssp = simulators.chain_simulator()[1]
    serial = backend.solve(_model(backend, chunk=10**9), ssp.costs, 0.2, 0.1, seed=0)
    with cf.ThreadPoolExecutor(4) as threads:
        on_threads = backend.solve(_model(backend, executor=threads, chunk=300), ssp.costs, 0.2,
                                   0.1, seed=0)
    simulators.same(on_threads, serial)


def test_checkpoint_records_the_identity_and_the_streams(backend, tmp_path):
    simulator, ssp = simulators.chain_simulator()
    path = tmp_path / "run.ckpt"
    backend.solve(_model(backend, identity="chain"), ssp.costs, 0.2, 0.1, seed=0,
                  checkpoint=path)
    saved = backend.SampleStore.load(path)[0].fingerprint
    assert saved["identity"] == "chain" and "philox" in saved["streams"]
    with pytest.raises(CheckpointError, match="identity differs"):
        backend.solve(_model(backend, identity="other"), ssp.costs, 0.2, 0.1, seed=0,
                      checkpoint=path)
    serial = backend.SimulatorGenerativeModel(simulators.WalkStep(), ssp.n_states,
                                              ssp.n_actions, identity="chain")
    with pytest.raises(CheckpointError, match="stream"):
        backend.solve(serial, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path)
    by_step = backend.ParallelGenerativeModel(simulators.WalkStep(), ssp.n_states,
                                              ssp.n_actions, identity="chain")
    with pytest.raises(CheckpointError, match="stream"):
        backend.solve(by_step, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path)


def test_an_unpicklable_simulator_is_refused_before_any_worker_runs(pool):
    lock = threading.Lock()

    def step(s, a, rng):
        with lock:
            return s

    with pytest.raises(ParameterError, match="`step` must be picklable.*_thread.lock"):
        reference.ParallelGenerativeModel(step, 3, 1, executor=pool)
    model = reference.ParallelGenerativeModel(step, 3, 1)
    assert model.sample(0, 0, 5, np.random.default_rng(0))[1].sum() == 5


@pytest.mark.parametrize("where", ["serial", "pool"])
def test_a_raising_simulator_names_the_pair_the_round_and_the_workers_traceback(pool, where):
    simulator, ssp = simulators.chain_simulator()
    raising = simulators.RaiseAt(simulator, 1, 0)
    model = reference.ParallelGenerativeModel(None, ssp.n_states, ssp.n_actions,
                                              step_batch=raising,
                                              executor=pool if where == "pool" else None)
    with pytest.raises(GenerativeModelError) as info:
        reference.solve(model, ssp.costs, 0.2, 0.1, seed=0)
    message = str(info.value)
    assert "`step_batch` raised ValueError: no dynamics at (1, 0)" in message
    assert "the pair (s, a) = (1, 0), sample 0 of its request" in message
    assert "SEARCH round 1" in message
    pid = int(message.split("on the worker ")[1].split()[0].split(":")[1])
    assert (pid == os.getpid()) == (where == "serial")
    cause = info.value.__cause__
    while cause is not None and not isinstance(cause, reference.parallel.WorkerTraceback):
        cause = cause.__cause__
    assert cause is not None
    assert "simulators.py" in str(cause) and "ValueError: no dynamics at (1, 0)" in str(cause)


def test_a_simulator_the_workers_cannot_load_is_named(pool):
    model = reference.ParallelGenerativeModel(None, 3, 1, executor=pool,
                                              step_batch=simulators.UnloadableOnWorkers())
    with pytest.raises(GenerativeModelError, match="cannot load `step_batch` "
                       r"\(ModuleNotFoundError: No module named 'private_simulator'\)"):
        model.sample(0, 0, 10, np.random.default_rng(0))


@pytest.mark.parametrize(
    "answer, expected",
    [
        (lambda s, a, n, rng: np.zeros(n - 1, dtype=np.int64), r"array of shape \(9,\)"),
        (lambda s, a, n, rng: np.zeros((n, 1), dtype=np.int64), r"shape \(10, 1\)"),
        (lambda s, a, n, rng: np.zeros(n), "dtype float64"),
        (lambda s, a, n, rng: np.full(n, 4), r"next states in 0\.\.3 .* returned 4"),
        (lambda s, a, n, rng: np.full(n, -1), "returned -1"),
    ],
)
def test_a_batch_of_the_wrong_shape_or_states_is_named(answer, expected):
    model = reference.ParallelGenerativeModel(None, 3, 2, step_batch=answer)
    with pytest.raises(GenerativeModelError, match=expected) as info:
        model.sample(1, 1, 10, np.random.default_rng(0))
    assert "the pair (s, a) = (1, 1)" in str(info.value)


@pytest.mark.parametrize("value", [3.0, True, 9, "1", None])
def test_a_step_answer_that_is_no_next_state_is_named(value):
    def step(s, a, rng):
        return value if rng.random() < 0.5 else s

    model = reference.ParallelGenerativeModel(step, 3, 2)
    with pytest.raises(GenerativeModelError, match=r"next states in 0\.\.3") as info:
        model.sample(2, 0, 50, np.random.default_rng(0))
    assert f"it returned {value!r}" in str(info.value) and "(s, a) = (2, 0)" in str(info.value)


def test_a_lost_worker_is_replaced_and_its_chunk_retried(backend, tmp_path):
    simulator, ssp = simulators.chain_simulator()
    serial = backend.solve(_model(backend), ssp.costs, 0.2, 0.1, seed=0)
    dying = simulators.DieOnce(simulator, tmp_path / "died")
    with backend.ParallelGenerativeModel(None, ssp.n_states, ssp.n_actions, executor=2,
                                         chunk=4096, step_batch=dying) as model:
        res = backend.solve(model, ssp.costs, 0.2, 0.1, seed=0)
        assert model.chunks_retried >= 1 and (tmp_path / "died").exists()
        assert np.array_equal(model.calls, serial.calls)
    simulators.same(res, serial)


def test_a_worker_lost_at_every_attempt_ends_with_a_clear_error(tmp_path):
    simulator, ssp = simulators.chain_simulator()
    dying = simulators.DieOnce(simulator, tmp_path / "died", always=True)
    with reference.ParallelGenerativeModel(None, ssp.n_states, ssp.n_actions, executor=1,
                                           step_batch=dying, retries=1) as model:
        with pytest.raises(GenerativeModelError, match=r"failed 2 time\(s\) on the executor"):
            model.sample(0, 0, 10, np.random.default_rng(0))


def test_a_broken_process_pool_that_was_given_is_named(tmp_path):
    simulator, ssp = simulators.chain_simulator()
    dying = simulators.DieOnce(simulator, tmp_path / "died")
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(1, mp_context=context) as executor:
        model = reference.ParallelGenerativeModel(None, ssp.n_states, ssp.n_actions,
                                                  executor=executor, step_batch=dying)
        with pytest.raises(GenerativeModelError, match="cannot replace a lost process"):
            model.sample(0, 0, 10, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(step=None), "must be callable"),
        (dict(executor="local"), "`executor` must be None, a number of local processes"),
        (dict(executor=0), "`executor` must be an integer >= 1"),
        (dict(chunk=0), "`chunk` must be an integer >= 1"),
        (dict(identity=3), "`identity` must be a string"),
    ],
)
def test_bad_arguments_are_named(kwargs, expected):
    arguments = dict(step=simulators.WalkStep(), n_states=3, n_actions=1) | kwargs
    with pytest.raises(ParameterError, match=expected):
        reference.ParallelGenerativeModel(**arguments)
