"""Faults and hostile input: checkpoints bound to their model, strict file and sparse-index
checks, no silent overflow, model contract checks and the calls of lost rounds.

Crash cases (which used to kill the interpreter) run in a subprocess.
"""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import simulators
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_python(code, timeout=120):
    """Run ``code`` in a fresh interpreter at the repository root; return the process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
        text=True, timeout=timeout,
    )


def _run_here(function, *args, timeout=600):
    """Run ``function(*args)`` of this module in a fresh interpreter (a crash stays there)."""
    return _run_python(f"""
        import sys
        sys.path.insert(0, "tests")
        import test_faults
        test_faults.{function}(*{args!r})
    """, timeout=timeout)


def _raw_csr(shape, indptr, indices, data):
    """A CSR matrix holding exactly the given raw arrays (scipy's checks bypassed)."""
    matrix = sp.csr_array(shape, dtype=np.float64)
    matrix.indptr = np.asarray(indptr)
    matrix.indices = np.asarray(indices)
    matrix.data = np.asarray(data)
    return matrix


def _stop_after(k):
    seen = []

    def callback(round_):
        seen.append(round_)
        if len(seen) == k:
            raise KeyboardInterrupt

    return callback


# --- model fingerprints --------------------------------------------------------------------


@pytest.mark.shared
def test_fingerprint_is_the_kernel_whatever_its_storage(backend):
    ssp = backend.garnet(6, 2, 3, seed=1)
    twin = backend.garnet(6, 2, 3, seed=1, sparse=True)
    same = backend.model_fingerprint(backend.TabularGenerativeModel(ssp))
    assert same == backend.model_fingerprint(backend.TabularGenerativeModel(twin))
    slower = backend.model_fingerprint(backend.TabularGenerativeModel(backend.gridworld()))
    assert slower["kind"] == "kernel"
    other = backend.model_fingerprint(
        backend.TabularGenerativeModel(backend.gridworld(success=0.3))
    )
    assert other["support_sha256"] == slower["support_sha256"]
    assert other["probabilities_sha256"] != slower["probabilities_sha256"]
    moved = backend.model_fingerprint(
        backend.TabularGenerativeModel(backend.gridworld(goal=(2, 3)))
    )
    assert moved["support_sha256"] != slower["support_sha256"]


@pytest.mark.parametrize(
    "other, pattern",
    [
        ({"goal": (2, 3)}, "the kernel's support differs"),
        ({"success": 0.3}, "the kernel's transition probabilities differ"),
    ],
)
def test_resuming_with_another_kernel_is_refused(backend, tmp_path, other, pattern):
    ssp = backend.gridworld()
    path = tmp_path / "run.ckpt"
    with pytest.raises(KeyboardInterrupt):
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path,
                      callback=_stop_after(1))
    moved = backend.gridworld(**other)
    assert np.array_equal(moved.costs, ssp.costs)
    with pytest.raises(backend.CheckpointError, match=pattern):
        backend.solve(moved, moved.costs, 0.1, 0.1, seed=0, checkpoint=path)


def _chain_simulator(backend, identity, calls=None):
    ssp = backend.chain(3, 0.8)

    def step(s, a, rng):
        if calls is not None:
            calls.append((s, a))
        support, probs = ssp.row(s, a)
        return int(rng.choice(support, p=probs))

    return backend.SimulatorGenerativeModel(step, 3, 2, identity=identity), ssp.costs


@pytest.mark.slow_reference
def test_resuming_with_another_simulator_identity_is_refused(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    model, costs = _chain_simulator(backend, "chain-3 p=0.8")
    with pytest.raises(KeyboardInterrupt):
        backend.solve(model, costs, 0.5, 0.1, alpha=10.0, seed=0, checkpoint=path,
                      callback=_stop_after(1))
    other, _ = _chain_simulator(backend, "chain-3 p=0.9")
    with pytest.raises(backend.CheckpointError,
                       match="identity differs: 'chain-3 p=0.8' in the file, 'chain-3 p=0.9'"):
        backend.solve(other, costs, 0.5, 0.1, alpha=10.0, seed=0, checkpoint=path)
    anonymous, _ = _chain_simulator(backend, None)
    with pytest.raises(backend.CheckpointError, match="unfingerprinted"):
        backend.solve(anonymous, costs, 0.5, 0.1, alpha=10.0, seed=0, checkpoint=path)
    same, _ = _chain_simulator(backend, "chain-3 p=0.8")
    full, _ = _chain_simulator(backend, "chain-3 p=0.8")
    resumed = backend.solve(same, costs, 0.5, 0.1, alpha=10.0, seed=0, checkpoint=path)
    expected = backend.solve(full, costs, 0.5, 0.1, alpha=10.0, seed=0)
    assert np.array_equal(resumed.policy, expected.policy)
    assert np.array_equal(resumed.calls, expected.calls)


@pytest.mark.slow_reference
def test_resuming_an_unfingerprinted_simulator_warns(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    model, costs = _chain_simulator(backend, None)
    with pytest.raises(KeyboardInterrupt):
        backend.solve(model, costs, 0.5, 0.1, alpha=10.0, seed=0, checkpoint=path,
                      callback=_stop_after(1))
    with pytest.warns(backend.UnfingerprintedModelWarning, match="cannot be checked"):
        backend.solve(model, costs, 0.5, 0.1, alpha=10.0, seed=0, checkpoint=path)


@pytest.mark.shared
def test_simulator_identity_must_be_a_string(backend):
    with pytest.raises(backend.ParameterError, match="`identity` must be a string"):
        backend.SimulatorGenerativeModel(lambda s, a, rng: 0, 1, 1, identity=3)


# --- checkpoint files ----------------------------------------------------------------------


def _saved_store(backend, path):
    ssp = backend.garnet(4, 2, 3, seed=0)
    model = backend.TabularGenerativeModel(ssp)
    store = backend.SampleStore(4, 2, fingerprint=backend.model_fingerprint(model))
    rng = np.random.default_rng(5)
    store.top_up(model, 6, rng)
    store.save(path, rng, meta={"k": 1})
    return store


def _rewrite(path, **changes):
    """Rewrite the store file at ``path`` with some arrays (or the header dict) replaced."""
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    header = json.loads(str(arrays["header"]))
    header.update(changes.pop("header", {}))
    arrays["header"] = np.array(json.dumps(header))
    arrays.update(changes)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _mutate(path, key, change):
    """Rewrite the store file at ``path`` with ``change`` applied to its array ``key``."""
    with np.load(path) as archive:
        array = archive[key]
    _rewrite(path, **{key: change(array)})


@pytest.mark.shared
def test_save_load_round_trip_keeps_fingerprint_and_calls(backend, tmp_path):
    path = tmp_path / "store.npz"
    store = _saved_store(backend, path)
    loaded, _, meta = backend.SampleStore.load(path)
    assert meta == {"k": 1}
    assert loaded.fingerprint == store.fingerprint
    assert loaded.calls_made == store.calls_made == store.n_samples == 6 * 8
    assert loaded.calls_redrawn == 0
    assert (loaded.counts_csr() != store.counts_csr()).nnz == 0


@pytest.mark.shared
@pytest.mark.parametrize(
    "corrupt, pattern",
    [
        (lambda p: p.write_bytes(b"not a checkpoint"), "is not a sample-store file"),
        (lambda p: p.write_bytes(p.read_bytes()[:200]), "is not a sample-store file|corrupt"),
        (lambda p: np.save(p, np.arange(3)) or os.replace(f"{p}.npy", p),
         "is not a sample-store file"),
        (lambda p: _rewrite(p, header={"format": 1}), "in format 1, written by an earlier"),
        (lambda p: _rewrite(p, header={"n_states": "4"}), "`n_states` as an integer >= 1"),
        (lambda p: _rewrite(p, header={"n_actions": 0}), "`n_actions` as an integer >= 1"),
        (lambda p: _mutate(p, "indices", lambda a: np.full_like(a, 5)),
         r"`counts.indices` must hold column indices in 0\.\.4; got 5"),
        (lambda p: _mutate(p, "indices", lambda a: np.full_like(a, -5)),
         r"indices in 0\.\.4; got -5"),
        (lambda p: _mutate(p, "indptr", lambda a: a + 1), "indptr` must start at 0"),
        (lambda p: _mutate(p, "indptr", lambda a: np.r_[a[0], a[2], a[1], a[3:]]),
         r"must never decrease; got indptr\[2\] = \d+ < indptr\[1\]"),
        (lambda p: _mutate(p, "indptr", lambda a: a[:5]), r"`indptr` must have shape \(9,\)"),
        (lambda p: _mutate(p, "data", lambda a: a.astype(np.float64)),
         "`data` must be a 1-d integer array"),
        (lambda p: _mutate(p, "data", lambda a: -a), "counts >= 0; got -"),
        (lambda p: _mutate(p, "indices", lambda a: a[::-1]),
         r"columns of each row sorted and once \(canonical CSR\); row \d+, the pair"),
        (lambda p: _mutate(p, "data", lambda a: np.r_[0, a[1:]]), "no zero count"),
        (lambda p: _mutate(p, "n_pair", lambda a: a + 1),
         r"sum to 6, but the file records N\(s, a\) = 7"),
        (lambda p: _rewrite(p, header={"calls_made": 3}), "records 3 calls made"),
        (lambda p: _rewrite(p, header={"rng_state": {"bit_generator": "seed"}}),
         "naming one of"),
        (lambda p: _rewrite(p, header={"rng_state": {"bit_generator": "PCG64", "state": 1}}),
         "saved PCG64 state is malformed"),
        (lambda p: _rewrite(p, header={"meta": [1]}), "`meta` is not a dict"),
    ],
)
def test_malformed_checkpoint_files_are_refused(backend, tmp_path, corrupt, pattern):
    path = tmp_path / "store.npz"
    _saved_store(backend, path)
    corrupt(path)
    with pytest.raises(backend.CheckpointError, match=pattern):
        backend.SampleStore.load(path)


def test_a_checkpoint_with_an_out_of_range_index_does_not_crash_a_resume(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    out = _run_python(f"""
        import numpy as np, json
        import {backend.__name__} as b
        ssp = b.gridworld()
        try:
            b.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint={str(path)!r},
                    callback=lambda r: (_ for _ in ()).throw(KeyboardInterrupt))
        except KeyboardInterrupt:
            pass
        with np.load({str(path)!r}) as f:
            arrays = {{k: f[k] for k in f.files}}
        arrays["indices"] = arrays["indices"] + 10**6
        with open({str(path)!r}, "wb") as fh:
            np.savez(fh, **arrays)
        try:
            b.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint={str(path)!r})
        except ValueError as exc:
            print(type(exc).__name__)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "CheckpointError"


def test_save_syncs_a_fresh_temporary_before_renaming_and_a_run_removes_stale_ones(
        backend, tmp_path, monkeypatch):
    path = tmp_path / "store.npz"
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
        patch.setattr(os, "replace", lambda a, b: (events.append(("replace", os.path.basename(a))),
                                                   real_replace(a, b))[1])
        _saved_store(backend, path)
    assert events[0] == "fsync" and events[1][0] == "replace"
    assert re.fullmatch(r"store\.npz\.\w{8}\.tmp", events[1][1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.npz"]
    run = tmp_path / "run.ckpt"
    ssp = backend.gridworld()
    with pytest.raises(KeyboardInterrupt):
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=run, callback=_stop_after(1))
    stale = [tmp_path / "run.ckpt.tmp", tmp_path / "run.ckpt.a1b2c3d4.tmp"]
    kept = [tmp_path / "run.ckpt.notes.tmp", tmp_path / "other.a1b2c3d4.tmp"]
    for file in stale + kept:
        file.write_bytes(b"half a file")
    backend.SampleStore.load(run)
    assert all(file.exists() for file in stale)
    backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=run)
    assert not any(file.exists() for file in stale) and all(file.exists() for file in kept)


# --- sparse indices before any compiled code ----------------------------------------------


def _counts(seed=0, S=3, A=2, n=20):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S + 1), size=S * A)
    dense = np.stack([rng.multinomial(n, p) for p in P]).astype(np.float64)
    return dense, sp.csr_array(dense)


_GOOD = _counts()[1]
_BAD_STRUCTURE = {
    "column index beyond S": (_GOOD.indptr, np.where(_GOOD.indices == 0, 10**6, _GOOD.indices),
                              _GOOD.data, r"column indices in 0\.\.3; got 1000000"),
    "negative column index": (_GOOD.indptr, np.where(_GOOD.indices == 0, -5, _GOOD.indices),
                              _GOOD.data, r"column indices in 0\.\.3; got -5"),
    "indptr decreasing": (np.r_[0, _GOOD.indptr[2], _GOOD.indptr[1], _GOOD.indptr[3:]],
                          _GOOD.indices, _GOOD.data, "never decrease"),
    "indptr not from 0": (_GOOD.indptr + 1, _GOOD.indices, _GOOD.data, "must start at 0"),
    "indptr too long": (np.r_[_GOOD.indptr, _GOOD.indptr[-1]], _GOOD.indices, _GOOD.data,
                        "must have 7 entries"),
    "indptr beyond the indices": (np.r_[_GOOD.indptr[:-1], _GOOD.indptr[-1] + 4],
                                  _GOOD.indices, _GOOD.data, "as many indices as data"),
    "float indices": (_GOOD.indptr, _GOOD.indices.astype(np.float64), _GOOD.data,
                      "integer array; got .* dtype float64"),
}
_BAD_VALUES = {
    "complex counts": (_GOOD.data + 1j, "ParameterError", "dtype complex128"),
    "negative count": (-_GOOD.data, "ParameterError", "must be >= 0"),
    "NaN count": (np.r_[np.nan, _GOOD.data[1:]], "NotFiniteError", "finite counts"),
}
_ENTRY_POINTS = ("extended_value_iteration", "bernstein_radius", "bernstein_radius_sum")


def _call_entry_point(backend, entry, counts):
    if entry == "extended_value_iteration":
        return backend.extended_value_iteration(counts, np.full((3, 2), 0.5), 0.1, 0.01)
    return getattr(backend, entry)(counts, 0.1)


def report_malformed_structures(backend_name):
    """Print, per malformed structure and entry point, the error class and message (or
    "returned"); run in a subprocess, since such input once crashed the interpreter."""
    import importlib

    backend = importlib.import_module(backend_name)
    for case, (indptr, indices, data, _) in sorted(_BAD_STRUCTURE.items()):
        for entry in _ENTRY_POINTS:
            try:
                _call_entry_point(backend, entry, _raw_csr((6, 4), indptr, indices, data))
                outcome = ["returned", ""]
            except ValueError as exc:
                outcome = [type(exc).__name__, str(exc)]
            print(json.dumps([case, entry] + outcome), flush=True)


def test_malformed_sparse_structure_is_refused_without_a_crash(backend):
    out = _run_here("report_malformed_structures", backend.__name__)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-3000:]}"
    seen = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(seen) == len(_BAD_STRUCTURE) * len(_ENTRY_POINTS)
    for case, entry, error, message in seen:
        assert error == "SparseFormatError", (case, entry, error, message)
        assert re.search(_BAD_STRUCTURE[case][3], message), (case, entry, message)


@pytest.mark.parametrize("case", sorted(_BAD_VALUES))
@pytest.mark.parametrize("entry", _ENTRY_POINTS)
def test_malformed_sparse_counts_are_refused(backend, case, entry):
    data, error, pattern = _BAD_VALUES[case]
    counts = _raw_csr((6, 4), _GOOD.indptr, _GOOD.indices, data)
    with pytest.raises(getattr(backend, error), match=pattern):
        _call_entry_point(backend, entry, counts)


def test_duplicate_counts_are_refused_and_summed_by_the_fix_named(backend):
    dense, csr = _counts(seed=3)
    coo = csr.tocoo()
    half = np.floor(coo.data / 2)
    rows = np.r_[coo.row, coo.row]
    cols = np.r_[coo.col, coo.col]
    doubled = _raw_csr(csr.shape, *_unsummed(rows, cols, np.r_[half, coo.data - half], 6))
    assert doubled.nnz == 2 * csr.nnz
    costs = np.full((3, 2), 0.5)
    for call in (lambda c: backend.extended_value_iteration(c, costs, 0.1, 0.01),
                 lambda c: backend.bernstein_radius_sum(c, 0.1)):
        with pytest.raises(backend.SparseFormatError, match=r"twice\. .*`sum_duplicates\(\)`"):
            call(doubled)
    summed = sp.csr_array((doubled.data, doubled.indices, doubled.indptr), shape=doubled.shape)
    summed.sum_duplicates()
    want = backend.extended_value_iteration(csr, costs, 0.1, 0.01)
    got = backend.extended_value_iteration(summed, costs, 0.1, 0.01)
    assert np.array_equal(got.v_tilde, want.v_tilde) and np.array_equal(got.policy, want.policy)
    assert np.array_equal(backend.bernstein_radius_sum(summed, 0.1),
                          backend.bernstein_radius_sum(csr, 0.1))


def _unsummed(rows, cols, data, n_rows):
    """Raw CSR arrays keeping every (row, col) entry, duplicates included, rows in order."""
    order = np.argsort(rows, kind="stable")
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n_rows))]
    return indptr, cols[order], data[order]


@pytest.mark.shared
def test_duplicate_entries_of_a_sparse_kernel_do_not_inflate_branching(backend):
    rows = np.array([0, 0, 0, 1])
    cols = np.array([1, 1, 1, 1])
    data = np.array([0.25, 0.25, 0.5, 1.0])
    P = _raw_csr((2, 2), *_unsummed(rows, cols, data, 2))
    ssp = backend.SSP(P, [[1.0, 1.0]])
    assert ssp.branching == 1
    assert ssp.row(0, 0)[1].tolist() == [1.0]


@pytest.mark.shared
@pytest.mark.parametrize("fmt, part, pattern", [
    ("coo", "col", r"`P.col` must hold column indices in 0\.\.1; got 9"),
    ("coo", "row", r"`P.row` must hold row indices in 0\.\.1; got 9"),
    ("csc", "indices", r"`P.indices` must hold row indices in 0\.\.1; got 9"),
])
def test_malformed_indices_of_other_sparse_formats_are_refused(backend, fmt, part, pattern):
    P = getattr(sp, f"{fmt}_array")(np.array([[0.5, 0.5], [0.0, 1.0]]))
    getattr(P, part)[0] = 9
    with pytest.raises(backend.SparseFormatError, match=pattern):
        backend.SSP(P, [[1.0, 1.0]])


@pytest.mark.shared
def test_an_out_of_range_kernel_index_is_refused(backend):
    P = sp.csr_array(np.array([[0.5, 0.5], [0.0, 1.0]]))
    P.indices[0] = 7
    with pytest.raises(backend.SparseFormatError, match=r"column indices in 0\.\.1; got 7"):
        backend.SSP(P, [[1.0, 1.0]])


# --- no silent overflow ---------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{"c_min": 5e-8}, {"alpha": 2e11}])
def test_a_run_beyond_int64_calls_is_refused_before_sampling(backend, kwargs):
    ssp = backend.gridworld()
    costs = np.full(ssp.costs.shape, kwargs.get("c_min", 1.0))
    model = backend.TabularGenerativeModel(ssp)
    with pytest.raises(backend.TooLargeError, match=r"above 2\^63 - 1.*nothing was drawn"):
        backend.solve(model, costs, 0.1, 0.1, alpha=kwargs.get("alpha", 1.0), seed=0)
    assert 0 <= model.n_calls < 2**63
    assert model.n_calls == int(model.calls.astype(object).sum())


@pytest.mark.shared
def test_top_up_to_a_target_beyond_int64_is_refused(backend):
    model = backend.TabularGenerativeModel(backend.tradeoff())
    store = backend.SampleStore(1, 2)
    with pytest.raises(backend.TooLargeError, match="nothing was drawn"):
        store.top_up(model, 2**62, np.random.default_rng(0))
    assert store.n_samples == 0 and model.n_calls == 0


# --- finite or error ------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [1e-297, 1e-300, 5e-324])
def test_an_overflowing_confidence_log_is_an_error(backend, delta):
    dense, csr = _counts(n=10**12)
    costs = np.full((3, 2), 0.5)
    for counts in (dense.reshape(3, 2, 4), csr):
        with pytest.raises(backend.NumericRangeError, match="overflows float64"):
            backend.extended_value_iteration(counts, costs, delta, 0.01)
        with pytest.raises(backend.NumericRangeError, match="overflows float64"):
            backend.bernstein_radius(counts, delta)


def test_a_solve_with_an_overflowing_confidence_log_is_an_error(backend):
    ssp = backend.gridworld()
    with pytest.raises(backend.NumericRangeError, match="overflows float64"):
        backend.solve(ssp, ssp.costs, 0.1, 1e-300, seed=0)


def test_counts_near_the_float_limit_are_an_error(backend):
    dense = np.zeros((1, 1, 2))
    dense[0, 0] = [1e308, 1e308]
    for counts in (dense, sp.csr_array(dense.reshape(1, 2))):
        with pytest.raises(backend.NumericRangeError, match=r"above 2\^63 - 1"):
            backend.extended_value_iteration(counts, [[0.5]], 0.1, 0.01)


def _kernel_set(backend):
    if backend.__name__ == "fast":
        from fast.kernels import COMPILED_KERNELS
        return COMPILED_KERNELS
    from reference.kernels import NUMPY_KERNELS
    return NUMPY_KERNELS


def test_non_finite_evi_iterates_are_an_error(backend):
    kernels = _kernel_set(backend)

    def overflowing_sweep(boxes, costs, v_ext, v_out, policy_out):
        kernels.evi_sweep(boxes, costs, v_ext, v_out, policy_out)
        v_out[1] = np.nan
        return float(np.max(np.abs(v_out - v_ext[:-1])))

    broken = dataclasses.replace(kernels, evi_sweep=overflowing_sweep)
    evi = broken.bind(backend.extended_value_iteration)
    dense, csr = _counts()
    for counts in (dense.reshape(3, 2, 4), csr):
        with pytest.raises(backend.NumericRangeError, match="left the finite floats at sweep 1"):
            evi(counts, np.full((3, 2), 0.5), 0.1, 0.01)


def test_no_actions_is_refused(backend):
    with pytest.raises(backend.ShapeError, match=r"S, A >= 1"):
        backend.extended_value_iteration(np.zeros((2, 0, 3)), np.zeros((2, 0)), 0.1, 0.01)


# --- generative-model contract --------------------------------------------------------------


class _Looping(Exception):
    """Raised by a test model asked far more often than a correct run would."""


class _ShortModel:
    """Returns one sample fewer than asked for the pair (0, 1)."""

    n_states, n_actions = 2, 2

    def __init__(self, ssp):
        self.inner = ssp
        self.asked = 0

    def sample(self, s, a, n, rng):
        self.asked += 1
        if self.asked > 1000:
            raise _Looping
        support, probs = self.inner.row(s, a)
        draw = rng.multinomial(n, probs)
        if (s, a) == (0, 1):
            draw[np.argmax(draw)] -= 1
        keep = draw > 0
        return support[keep], draw[keep]


def _two_state_ssp(backend):
    P = np.array([[[0.2, 0.0, 0.8], [0.0, 0.5, 0.5]], [[0.1, 0.6, 0.3], [0.0, 0.0, 1.0]]])
    return backend.SSP(P, [[0.5, 1.0], [1.0, 0.2]])


def test_a_model_returning_fewer_samples_than_asked_raises(backend):
    ssp = _two_state_ssp(backend)
    with pytest.raises(backend.GenerativeModelError,
                       match=r"returned \d+ sample\(s\) where \d+ were asked, for the pair "
                             r"\(s, a\) = \(0, 1\) in SEARCH round 1"):
        backend.solve(_ShortModel(ssp), ssp.costs, 0.5, 0.1, seed=0)


@pytest.mark.shared
@pytest.mark.parametrize(
    "answer, pattern",
    [
        (lambda n: ([2.0], [n]), "integer `next_states`; got dtype float64"),
        (lambda n: ([3], [n]), r"next states outside 0\.\.2: \[3\]"),
        (lambda n: ([0, 2], [n]), "1-d arrays of one length"),
        (lambda n: ([2], [n + 1]), r"returned \d+ sample\(s\) where \d+ were asked"),
        (lambda n: 7, r"must return a pair \(next_states, counts\); got int"),
    ],
)
def test_a_model_answer_breaking_the_contract_raises(backend, answer, pattern):
    class Model:
        n_states, n_actions = 2, 2

        def sample(self, s, a, n, rng):
            return answer(n)

    store = backend.SampleStore(2, 2)
    with pytest.raises(backend.GenerativeModelError, match=pattern + r".*\(s, a\) = \(0, 0\)"):
        store.top_up(Model(), 3, np.random.default_rng(0))


def test_an_exception_inside_a_simulator_names_the_pair_and_the_round(backend):
    ssp = backend.chain(3, 0.8)

    def step(s, a, rng):
        if (s, a) == (1, 0):
            raise ZeroDivisionError("bad physics")
        support, probs = ssp.row(s, a)
        return int(rng.choice(support, p=probs))

    model = backend.SimulatorGenerativeModel(step, 3, 2)
    with pytest.raises(backend.GenerativeModelError,
                       match=r"raised ZeroDivisionError while sampling the pair \(s, a\) = "
                             r"\(1, 0\) in SEARCH round 1 \(Delta = 1\): bad physics") as info:
        backend.solve(model, ssp.costs, 0.5, 0.1, seed=0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert model.calls[1, 0] == 1


@pytest.mark.parametrize("parallel", [False, True])
def test_a_bad_step_answer_names_the_pair_once_and_the_round(backend, parallel):
    ssp = backend.chain(3, 0.8)

    def step(s, a, rng):
        if (s, a) == (1, 0):
            return 9
        support, probs = ssp.row(s, a)
        return int(rng.choice(support, p=probs))

    if parallel:
        model = backend.ParallelGenerativeModel(step, 3, 2)
    else:
        model = backend.SimulatorGenerativeModel(step, 3, 2)
    with pytest.raises(backend.GenerativeModelError) as info:
        backend.solve(model, ssp.costs, 0.5, 0.1, seed=0)
    message = str(info.value)
    assert message.count("(s, a) = (1, 0)") == 1 and message.count("(s, a)") == 1
    assert "returned 9" in message and message.endswith(", in SEARCH round 1 (Delta = 1).")
    assert info.value.pair == (1, 0)


# --- the calls of a round lost before its checkpoint ---------------------------------------


def test_n_calls_counts_the_calls_of_a_round_lost_before_its_checkpoint(backend, tmp_path):
    ssp = backend.trap(r=0.3)
    kwargs = dict(theta=2.0, alpha=10.0, seed=3)
    full = backend.solve(ssp, ssp.costs, 0.5, 0.1, **kwargs)
    path = tmp_path / "run.ckpt"
    killed = simulators.KilledAfter(backend, ssp, 3)
    with pytest.raises(KeyboardInterrupt):
        backend.solve(killed, ssp.costs, 0.5, 0.1, checkpoint=path, **kwargs)
    at_checkpoint = backend.SampleStore.load(path)[0].n_samples
    model = backend.TabularGenerativeModel(ssp)
    resumed = backend.solve(model, ssp.costs, 0.5, 0.1, checkpoint=path, **kwargs)
    assert killed.drawn > at_checkpoint
    assert resumed.n_calls == killed.drawn + model.n_calls
    assert resumed.n_redrawn == killed.drawn - at_checkpoint
    assert resumed.n_calls - resumed.n_redrawn == full.n_calls
    assert np.array_equal(resumed.policy, full.policy)


def test_n_calls_counts_the_calls_of_a_process_killed_before_its_checkpoint(backend,
                                                                            tmp_path):
    path = tmp_path / "run.ckpt"
    drawn = tmp_path / "drawn.txt"
    out = _run_python(f"""
        import os, signal
        import numpy as np
        import {backend.__name__} as b
        ssp = b.trap(r=0.3)
        inner = b.TabularGenerativeModel(ssp)
        batches = []

        class Model:
            n_states, n_actions = ssp.n_states, ssp.n_actions
            fingerprint = inner.fingerprint

            def sample_pairs(self, pairs, n, rng):
                out = inner.sample_pairs(pairs, n, rng)
                batches.append(int(np.sum(n)))
                if len(batches) == 4:
                    open({str(drawn)!r}, "w").write(str(sum(batches)))
                    os.kill(os.getpid(), signal.SIGKILL)
                return out

            def sample(self, s, a, n, rng):
                raise AssertionError("the store draws in batches")

        b.solve(Model(), ssp.costs, 0.5, 0.1, theta=2.0, alpha=10.0, seed=3,
                checkpoint={str(path)!r})
    """)
    assert out.returncode == -signal.SIGKILL
    model = backend.TabularGenerativeModel(backend.trap(r=0.3))
    ssp = backend.trap(r=0.3)
    resumed = backend.solve(model, ssp.costs, 0.5, 0.1, theta=2.0, alpha=10.0, seed=3,
                            checkpoint=path)
    assert resumed.n_calls == int(drawn.read_text()) + model.n_calls
    assert resumed.n_redrawn > 0


# --- model input ----------------------------------------------------------------------------


@pytest.mark.shared
def test_a_float32_kernel_is_accepted_and_converted(backend):
    ssp = backend.gridworld(success=0.7)
    single = backend.SSP(ssp.P.astype(np.float32), ssp.costs.astype(np.float32))
    assert single.P.dtype == np.float64
    assert np.abs(single.P.sum(axis=2) - 1.0).max() <= backend.ROW_SUM_TOL
    assert np.abs(single.P - ssp.P).max() < 1e-7
    sparse = backend.SSP(sp.csr_array(ssp.kernel_csr().astype(np.float32)), ssp.costs)
    assert np.abs(sparse.kernel_csr() - ssp.kernel_csr()).max() < 1e-7


@pytest.mark.parametrize("dtype", [np.complex128, object])
def test_complex_and_object_input_is_refused_by_name(backend, dtype):
    ssp = backend.tradeoff()
    P = ssp.P.astype(dtype)
    name = np.dtype(dtype).name
    with pytest.raises(backend.ParameterError, match=f"`P` must hold real numbers.*{name}"):
        backend.SSP(P, ssp.costs)
    with pytest.raises(backend.ParameterError, match=f"`c` must hold real numbers.*{name}"):
        backend.SSP(ssp.P, ssp.costs.astype(dtype))
    with pytest.raises(backend.ParameterError, match=f"`costs` must hold real numbers.*{name}"):
        backend.solve(ssp, ssp.costs.astype(dtype), 0.5, 0.1, seed=0)
    with pytest.raises(backend.ParameterError, match=f"`P` must hold real numbers.*{name}"):
        backend.SSP.from_discounted(np.ones((1, 1, 1), dtype=dtype), [[0.5]], 0.5)
    if dtype is np.complex128:
        with pytest.raises(backend.ParameterError, match="`P` must hold real numbers"):
            backend.SSP(sp.csr_array(ssp.kernel_csr().astype(dtype)), ssp.costs)


@pytest.mark.shared
def test_a_huge_dense_instance_is_refused_with_a_sparse_suggestion(backend):
    with pytest.raises(backend.TooLargeError, match=r"298\.03 GiB.*`sparse=True`"):
        backend.garnet(10**5, 4, 3)
    assert backend.garnet(10**5, 4, 3, sparse=True).n_states == 10**5


# --- fuzzing --------------------------------------------------------------------------------


def _put(array, k, value):
    """``array[k] = value`` wrapped around to ``array``'s dtype, as a C cast would."""
    array[k] = np.array(value, dtype=np.int64).astype(array.dtype)


@st.composite
def _malformed_csr(draw):
    S = draw(st.integers(1, 3))
    A = draw(st.integers(1, 2))
    rows = S * A
    dense = draw(st.lists(st.integers(0, 6), min_size=rows * (S + 1),
                          max_size=rows * (S + 1)))
    good = sp.csr_array(np.array(dense, dtype=np.float64).reshape(rows, S + 1))
    indptr, indices, data = good.indptr.copy(), good.indices.copy(), good.data.copy()
    for _ in range(draw(st.integers(0, 3))):
        what = draw(st.sampled_from(["indptr", "indices", "data", "dtype", "length"]))
        if what == "indptr" and indptr.size:
            k = draw(st.integers(0, indptr.size - 1))
            _put(indptr, k, draw(st.integers(-3, indices.size + 3)))
        elif what == "indices" and indices.size:
            k = draw(st.integers(0, indices.size - 1))
            _put(indices, k, draw(st.sampled_from([-(2**31), -5, -1, 0, 1, S, S + 1, S + 7,
                                                   2**31 - 1])))
        elif what == "data" and data.size:
            k = draw(st.integers(0, data.size - 1))
            data[k] = draw(st.sampled_from([0.0, -1.0, 2.5, np.nan, np.inf, 1e308]))
        elif what == "dtype":
            part = draw(st.sampled_from(["indices", "indptr"]))
            cast = draw(st.sampled_from([np.float64, np.int32, np.uint64, np.int8]))
            if part == "indices":
                indices = indices.astype(cast)
            else:
                indptr = indptr.astype(cast)
        elif what == "length":
            cut = draw(st.sampled_from(["indptr", "indices"]))
            if cut == "indptr":
                indptr = indptr[:-1] if draw(st.booleans()) else np.r_[indptr, indptr[-1:]]
            else:
                indices = indices[:-1]
    return (rows, S + 1), indptr, indices, data


def _canonical(shape, indptr, indices, data):
    """The dense counts a well-formed, canonical CSR structure means, else None (columns
    unsorted or repeated within a row included: counts must be canonical CSR)."""
    try:
        indptr = np.asarray(indptr)
        indices = np.asarray(indices)
        if (not np.issubdtype(indptr.dtype, np.integer)
                or not np.issubdtype(indices.dtype, np.integer)
                or indptr.size != shape[0] + 1 or indptr[0] != 0
                or (np.diff(indptr.astype(np.int64)) < 0).any()
                or indices.size < indptr[-1] or data.size != indices.size):
            return None
        dense = np.zeros(shape)
        for row in range(shape[0]):
            for k in range(int(indptr[row]), int(indptr[row + 1])):
                if not 0 <= int(indices[k]) < shape[1]:
                    return None
                if k > int(indptr[row]) and int(indices[k]) <= int(indices[k - 1]):
                    return None
                dense[row, int(indices[k])] += data[k]
        return dense
    except OverflowError:
        return None


def fuzz_malformed_sparse_counts(backend_name, max_examples):
    """Random malformed CSR counts into EVI and the radius: a ``SSPValueError`` or the result
    of the well-formed matrix the structure means; run in a subprocess (a crash stays there)."""
    import importlib

    backend = importlib.import_module(backend_name)

    @settings(max_examples=max_examples, deadline=None, database=None)
    @given(case=_malformed_csr())
    def check(case):
        shape, indptr, indices, data = case
        S, A = shape[1] - 1, shape[0] // (shape[1] - 1)
        costs = np.full((S, A), 0.5)
        meaning = _canonical(shape, indptr, indices, data)
        for call in (lambda c: backend.extended_value_iteration(c, costs, 0.1, 0.05),
                     lambda c: backend.bernstein_radius_sum(c, 0.1)):
            try:
                got = call(_raw_csr(shape, indptr, indices, data))
            except backend.SSPValueError:
                continue
            assert meaning is not None, "a malformed structure was accepted"
            want = call(sp.csr_array(meaning))
            if hasattr(want, "v_tilde"):
                assert np.array_equal(got.v_tilde, want.v_tilde)
                assert np.array_equal(got.policy, want.policy)
            else:
                assert np.array_equal(got, want)

    check()


def test_fuzz_malformed_sparse_counts(backend):
    out = _run_here("fuzz_malformed_sparse_counts", backend.__name__, 150)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-3000:]}"


@st.composite
def _file_damage(draw):
    kind = draw(st.sampled_from(["bytes", "array", "header"]))
    if kind == "bytes":
        return kind, draw(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                   min_size=1, max_size=4)), draw(st.booleans())
    if kind == "array":
        key = draw(st.sampled_from(["indptr", "indices", "data", "n_pair"]))
        return kind, key, draw(st.lists(st.integers(-3, 12), min_size=0, max_size=30))
    key = draw(st.sampled_from(["n_states", "n_actions", "calls_made", "calls_redrawn",
                                "fingerprint", "rng_state", "format", "meta"]))
    return kind, key, draw(st.one_of(st.none(), st.integers(-2, 2**64), st.text(max_size=3),
                                     st.lists(st.integers(), max_size=2)))


def fuzz_checkpoint_files(backend_name, max_examples):
    """Random damage to a checkpoint file, loaded and fed to EVI: a :class:`CheckpointError`,
    or a consistent store; run in a subprocess (a crash stays there)."""
    import importlib
    import pathlib
    import tempfile

    backend = importlib.import_module(backend_name)
    directory = tempfile.TemporaryDirectory()
    path = pathlib.Path(directory.name) / "fuzz.npz"

    @settings(max_examples=max_examples, deadline=None, database=None)
    @given(damage=_file_damage())
    def check(damage):
        store = _saved_store(backend, path)
        kind = damage[0]
        if kind == "bytes":
            raw = bytearray(path.read_bytes())
            for offset, value in damage[1]:
                raw[offset % len(raw)] = value
            if damage[2]:
                raw = raw[: len(raw) // 2]
            path.write_bytes(bytes(raw))
        elif kind == "array":
            _rewrite(path, **{damage[1]: np.array(damage[2], dtype=np.int64)})
        else:
            _rewrite(path, header={damage[1]: damage[2]})
        try:
            loaded, rng, _ = backend.SampleStore.load(path)
        except backend.CheckpointError:
            return
        counts = loaded.counts_csr()
        assert np.array_equal(np.asarray(counts.sum(axis=1)).ravel(), loaded.n_pair.ravel())
        assert loaded.calls_made >= loaded.n_samples
        assert counts.indices.min(initial=0) >= 0 and counts.indices.max(initial=0) <= 4
        if kind == "bytes":
            assert (counts != store.counts_csr()).nnz == 0
        out = backend.extended_value_iteration(counts, np.full((4, 2), 0.5), 0.1, 0.05)
        assert out.converged and np.isfinite(out.v_tilde).all()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rng.integers(10)

    try:
        check()
    finally:
        directory.cleanup()


def test_fuzz_checkpoint_files(backend):
    out = _run_here("fuzz_checkpoint_files", backend.__name__, 150)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-3000:]}"
