"""The files of a checkpoint against a hostile directory: links planted at the names sspgm
writes, paths that are not regular files, two runs on one checkpoint, edited ledgers and
counts out of canonical form. Cases that used to block run in a subprocess with a timeout.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_python(code, timeout=120, **kwargs):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, **kwargs)


def _stop_after(k):
    seen = []

    def callback(round_):
        seen.append(round_)
        if len(seen) == k:
            raise KeyboardInterrupt

    return callback


def _interrupted_run(backend, path, k=2):
    ssp = backend.gridworld()
    with pytest.raises(KeyboardInterrupt):
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path, callback=_stop_after(k))
    return ssp


# --- links planted at the names a run writes -----------------------------------------------


@pytest.mark.parametrize("planted", [".calls", ".tmp", ".lock"])
def test_a_link_planted_next_to_the_checkpoint_never_reaches_its_target(backend, tmp_path,
                                                                         planted):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "run.ckpt"
    os.symlink(victim, f"{path}{planted}")
    ssp = backend.gridworld()
    try:
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)
    except backend.CheckpointError as exc:
        assert planted != ".tmp"
        assert re.search(rf"{re.escape(str(path) + planted)}' is a symbolic link", str(exc))
    else:
        assert planted == ".tmp"
    assert victim.read_text() == "precious"


def test_a_hard_link_planted_as_the_ledger_is_refused(backend, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "run.ckpt"
    os.link(victim, f"{path}.calls")
    ssp = backend.gridworld()
    with pytest.raises(backend.CheckpointError, match="has 2 names"):
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)
    assert victim.read_text() == "precious"


def test_each_save_writes_a_new_temporary_of_an_unpredictable_name(backend, tmp_path,
                                                                   monkeypatch):
    names = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (names.append(os.path.basename(a)),
                                                     real_replace(a, b))[1])
    _interrupted_run(backend, tmp_path / "run.ckpt", k=3)
    assert len(names) == 4 and len(set(names)) == 4
    assert all(re.fullmatch(r"run\.ckpt\.\w{8}\.tmp", name) for name in names)
    assert oct((tmp_path / "run.ckpt").stat().st_mode & 0o777) == "0o600"


# --- paths that are not regular files -------------------------------------------------------


def test_a_fifo_as_the_checkpoint_is_refused_at_once(backend, tmp_path):
    fifo = tmp_path / "run.ckpt"
    os.mkfifo(fifo)
    out = _run_python(f"""
        import {backend.__name__} as b
        ssp = b.gridworld()
        for call in (lambda: b.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint={str(fifo)!r}),
                     lambda: b.SampleStore.load({str(fifo)!r})):
            try:
                call()
            except b.CheckpointError as exc:
                print(exc)
    """, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("is a FIFO, not a regular file") == 2


@pytest.mark.parametrize("target, kind", [("dir", "a directory"),
                                          ("/dev/null", "a character device")])
def test_a_directory_or_device_as_the_checkpoint_is_refused(backend, tmp_path, target, kind):
    path = tmp_path if target == "dir" else target
    ssp = backend.gridworld()
    with pytest.raises(backend.CheckpointError, match=f"is {kind}, not a regular file"):
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)
    with pytest.raises(backend.CheckpointError, match=f"is {kind}, not a regular file"):
        backend.SampleStore.load(path)


def test_a_link_to_a_regular_checkpoint_is_followed_and_replaced_not_written_through(
        backend, tmp_path):
    real = tmp_path / "real.ckpt"
    _interrupted_run(backend, real)
    before = real.read_bytes()
    link = tmp_path / "link.ckpt"
    os.symlink(real, link)
    ssp = backend.gridworld()
    resumed = backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=link)
    assert resumed.n_calls == backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0).n_calls
    assert real.read_bytes() == before and not link.is_symlink()


# --- two runs on one checkpoint -------------------------------------------------------------


def test_a_second_process_on_a_checkpoint_is_refused_at_once(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    ready, release = tmp_path / "ready", tmp_path / "release"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, time
        import {backend.__name__} as b

        def wait(round_):
            open({str(ready)!r}, "w").close()
            while not os.path.exists({str(release)!r}):
                time.sleep(0.05)

        ssp = b.gridworld()
        b.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint={str(path)!r}, callback=wait)
    """)], cwd=REPO)
    try:
        for _ in range(1200):
            if ready.exists() or holder.poll() is not None:
                break
            threading.Event().wait(0.05)
        assert ready.exists()
        ssp = backend.gridworld()
        with pytest.raises(backend.CheckpointError,
                           match=rf"is in use by another run \(process {holder.pid} holds"):
            backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)
        release.touch()
        assert holder.wait(timeout=300) == 0
    finally:
        release.touch()
        holder.kill()
        holder.wait()
    resumed = backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)
    assert resumed.n_calls == backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0).n_calls


def test_a_second_thread_on_a_running_checkpoint_is_refused(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    entered, release = threading.Event(), threading.Event()
    errors = []

    def wait(round_):
        entered.set()
        release.wait(60)

    ssp = backend.gridworld()

    def first():
        try:
            backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path, callback=wait)
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert entered.wait(120)
        with pytest.raises(backend.CheckpointError, match="in use by another run of this process"):
            backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)
    finally:
        release.set()
        thread.join()
    assert not errors


# --- the ledger and the counts, as edited ---------------------------------------------------


def _ledger(path, records, torn=b""):
    with open(f"{path}.calls", "wb") as fh:
        fh.write(b"".join(int(r).to_bytes(8, "little", signed=True) for r in records) + torn)


def test_ledger_records_must_increase_and_only_later_ones_count(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    _interrupted_run(backend, path)
    made = backend.SampleStore.load(path)[0].calls_made
    _ledger(path, [made - 5, made, made + 7], torn=b"\x01\x02")
    store = backend.SampleStore.load(path)[0]
    assert (store.calls_made, store.calls_redrawn) == (made + 7, 7)
    _ledger(path, [made - 5])
    assert backend.SampleStore.load(path)[0].calls_made == made
    for records in ([made + 9, made + 7], [made + 7, made + 7], [0, made + 7], [-1]):
        _ledger(path, records)
        with pytest.raises(backend.CheckpointError, match="ledger .* must be positive and "
                                                          "increase"):
            backend.SampleStore.load(path)


def _rewrite_counts(path, change):
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    change(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _swap_in_a_row(arrays):
    indptr, indices = arrays["indptr"], arrays["indices"]
    row = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    k = int(indptr[row])
    indices[k], indices[k + 1] = indices[k + 1], indices[k]


def _zero_entry(arrays):
    arrays["data"][0] = 0
    first_row = int(np.flatnonzero(np.diff(arrays["indptr"]) > 0)[0])
    arrays["n_pair"][first_row] = arrays["data"][arrays["indptr"][first_row]:
                                                arrays["indptr"][first_row + 1]].sum()


@pytest.mark.parametrize("change", [
    _swap_in_a_row,
    _zero_entry,
    lambda arrays: arrays.update(indices=np.r_[arrays["indices"], 0],
                                 data=np.r_[arrays["data"], 1]),
], ids=["permuted row", "zero count", "trailing entry"])
def test_counts_out_of_canonical_form_are_refused(backend, tmp_path, change):
    path = tmp_path / "run.ckpt"
    ssp = _interrupted_run(backend, path)
    _rewrite_counts(path, change)
    with pytest.raises(backend.CheckpointError, match="canonical"):
        backend.SampleStore.load(path)
    with pytest.raises(backend.CheckpointError, match="canonical"):
        backend.solve(ssp, ssp.costs, 0.1, 0.1, seed=0, checkpoint=path)


def test_a_header_with_fewer_calls_than_samples_is_refused(backend, tmp_path):
    path = tmp_path / "run.ckpt"
    _interrupted_run(backend, path)

    def fewer(arrays):
        header = json.loads(str(arrays["header"]))
        header["calls_made"] = int(arrays["n_pair"].sum()) - 1
        arrays["header"] = np.array(json.dumps(header))

    _rewrite_counts(path, fewer)
    with pytest.raises(backend.CheckpointError, match="calls made"):
        backend.SampleStore.load(path)


# --- sizes ----------------------------------------------------------------------------------


def test_a_simulator_or_store_of_too_many_pairs_is_refused_by_size(backend):
    with pytest.raises(backend.TooLargeError, match=r"S\*A = 1000000\*1000000 = 1000000000000 "
                                                     r"pairs .* 7450\.58 GiB"):
        backend.SimulatorGenerativeModel(lambda s, a, rng: 0, 10**6, 10**6)
    with pytest.raises(backend.TooLargeError, match=r"S\*A = 1000000\*1000000"):
        backend.SampleStore(10**6, 10**6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend.SampleStore(10**4, 10**3).n_pair.shape == (10**4, 10**3)
