"""Hostile input, second pass: the certified solver's delta, calls and resume, overflow-free
allocation, the validation command's options, and the proper-policy search of the LP polish.

A case that used to hang runs in a subprocess with a timeout.
"""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import simulators
import sympy

from sspgm.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_python(code, timeout):
    """Run ``code`` in a fresh interpreter at the repository root; return the process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
        text=True, timeout=timeout,
    )


# --- solve_certified: a delta whose log term overflows -------------------------------------


def test_solve_certified_refuses_a_delta_whose_log_term_would_overflow(backend):
    ssp = backend.tradeoff()
    with pytest.raises(backend.NumericRangeError,
                       match=r"N = 1e\+06 \(`budget`.*`delta` must be at least 4\.4\d*e-296"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 1e-300, kind="kl", seed=0, budget=10**6)
    with pytest.raises(backend.NumericRangeError, match="'bernstein' boxes"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 1e-300, kind="bernstein", seed=0,
                                budget=10**6)
    # 2 S A (S+1) N (N+1) / delta at N = 10^6 and delta = 1e-290 is about 8e302: finite.
    res = backend.solve_certified(ssp, ssp.costs, 0.1, 1e-290, kind="kl", seed=0, budget=10**6)
    assert res.certified and res.n_calls <= 10**6
    with pytest.raises(backend.NumericRangeError, match="'mixture' boxes"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 5e-324, kind="mixture", seed=0)


def test_solve_certified_without_budget_refuses_a_tiny_delta_at_once(backend):
    out = _run_python(f"""
        import {backend.__name__} as b
        ssp = b.tradeoff()
        try:
            b.solve_certified(ssp, ssp.costs, 0.1, 1e-290, kind="kl", seed=0)
        except b.NumericRangeError as exc:
            print(exc)
    """, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # N = 2^63 - 1: 2 * 1 * 2 * 2 * N * (N + 1) / max_float is about 3.79e-270.
    assert "N = 9.22e+18" in out.stdout and "at least 3.78" in out.stdout


def test_confidence_boxes_refuse_an_overflowing_log_term(backend):
    counts = np.zeros((1, 2, 2))
    counts[0, :, 0] = 1e15
    for kind in ("kl", "bernstein", "paper"):
        with pytest.raises(backend.NumericRangeError, match=f"'{kind}' boxes overflows"):
            backend.confidence_boxes(counts, 1e-300, kind)
    with pytest.raises(backend.NumericRangeError):
        backend.certify(counts, np.ones((1, 2)), [0], 1e-300, kind="kl")
    boxes = backend.confidence_boxes(counts, 1e-250, kind="kl")
    assert boxes.lo.min() > 0.99


# --- solve_certified: calls, not samples; the budget holds through a kill ------------------


def test_solve_certified_counts_the_calls_of_a_round_lost_to_a_kill(backend, tmp_path):
    ssp = backend.gridworld()
    full = backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=0)
    path = tmp_path / "run.ckpt"
    killed = simulators.KilledAfter(backend, ssp, 4)
    with pytest.raises(KeyboardInterrupt):
        backend.solve_certified(killed, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path)
    kept = backend.SampleStore.load(path)[0].n_samples
    assert killed.drawn > kept
    model = backend.TabularGenerativeModel(ssp)
    resumed = backend.solve_certified(model, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path)
    assert resumed.n_calls == killed.drawn + model.n_calls
    assert resumed.n_calls == full.n_calls + (killed.drawn - kept)
    assert resumed.history[-1].n_calls == resumed.n_calls
    assert int(resumed.calls.sum()) == full.n_calls
    assert np.array_equal(resumed.policy, full.policy)
    assert resumed.certificate.gap == full.certificate.gap


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
def test_a_budget_is_never_exceeded_by_a_run_that_lost_calls(backend, tmp_path):
    ssp = backend.gridworld()
    budget = 40_000
    path = tmp_path / "run.ckpt"
    killed = simulators.KilledAfter(backend, ssp, 6)
    with pytest.raises(KeyboardInterrupt):
        backend.solve_certified(killed, ssp.costs, 0.01, 0.1, seed=0, checkpoint=path,
                                budget=budget)
    model = backend.TabularGenerativeModel(ssp)
    res = backend.solve_certified(model, ssp.costs, 0.01, 0.1, seed=0, checkpoint=path,
                                  budget=budget)
    assert not res.certified
    assert killed.drawn + model.n_calls == res.n_calls <= budget
    assert all(r.n_calls <= budget for r in res.history)


def test_a_budget_spent_before_the_first_round_is_refused(backend, tmp_path):
    ssp = backend.gridworld()
    first = ssp.n_states * ssp.n_actions * backend.INITIAL_PER_PAIR
    path = tmp_path / "run.ckpt"
    killed = simulators.KilledAfter(backend, ssp, 1)
    with pytest.raises(KeyboardInterrupt):
        backend.solve_certified(killed, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path,
                                budget=first + 10)
    with pytest.raises(backend.ParameterError, match=rf"cannot pay for the first round "
                                                      rf"\({first} calls\): {first} were"):
        backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path,
                                budget=first + 10)


# --- solve_certified: a resume is bit for bit ----------------------------------------------


def _stop_after(k):
    seen = []

    def callback(round_):
        seen.append(round_)
        if len(seen) == k:
            raise KeyboardInterrupt

    return callback


def _same_result(a, b):
    assert np.array_equal(a.policy, b.policy)
    assert a.certificate.gap == b.certificate.gap
    assert np.array_equal(a.certificate.lower, b.certificate.lower)
    assert np.array_equal(a.certificate.upper, b.certificate.upper)
    assert a.n_calls == b.n_calls and np.array_equal(a.calls, b.calls)
    assert a.history == b.history


@pytest.mark.parametrize("options", [{}, {"kind": "bernstein"}, {"theta": 2.0}],
                         ids=["kl", "bernstein", "theta"])
def test_solve_certified_resumes_bit_for_bit(backend, tmp_path, options):
    ssp = backend.garnet(12, 3, 3, seed=1)
    args = (ssp, ssp.costs, 0.2, 0.1)
    full = backend.solve_certified(*args, seed=0, **options)
    assert len(full.history) > 4
    path = tmp_path / "run.ckpt"
    with pytest.raises(KeyboardInterrupt):
        backend.solve_certified(*args, seed=0, checkpoint=path, callback=_stop_after(3),
                                **options)
    _same_result(backend.solve_certified(*args, seed=0, checkpoint=path, **options), full)
    _same_result(backend.solve_certified(*args, seed=0, checkpoint=path, **options), full)


def test_a_malformed_start_policy_in_a_checkpoint_is_refused(backend, tmp_path):
    import json

    ssp = backend.gridworld()
    path = tmp_path / "run.ckpt"
    with pytest.raises(KeyboardInterrupt):
        backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path,
                                callback=_stop_after(2))
    with np.load(path) as archive:
        arrays = {key: archive[key] for key in archive.files}
    header = json.loads(str(arrays["header"]))
    assert len(header["meta"]["warm"]["lower"]) == ssp.n_states
    for bad, pattern in (([7] * ssp.n_states, "action"), ([0, 1], "shape"), ("x", "shape")):
        header["meta"]["warm"]["lower"] = bad
        arrays["header"] = np.array(json.dumps(header))
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        with pytest.raises(backend.CheckpointError, match=f"start policy 'lower'.*{pattern}"):
            backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=0, checkpoint=path)


# --- the allocation function: no division by zero, no raw overflow -------------------------


def _phi_exact(X, y, eps, delta, S, A, G, alpha):
    """phi at 60 digits with sympy, from the exact values of the floats."""
    X, y, eps, delta, alpha = (sympy.Float(v, 60) for v in (X, y, eps, delta, alpha))
    l1 = sympy.log(X * S * A / (y * eps * delta))
    l2 = sympy.log(X * S * A / (y * delta))
    return float((alpha * (X**3 * G / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                           + X**2 * G / y**2 * l2**2)).evalf(60))


@pytest.mark.parametrize("args", [
    (2.0, 0.5, 0.1, 5e-324, 1, 2, 2, 1.0),
    (1.0, 5e-324, 0.5, 0.5, 1, 2, 0, 1e-300),
    (8.0, 0.25, 1e-160, 0.1, 3, 2, 0, 1e-290),
    (1e100, 1.0, 0.1, 0.1, 1, 1, 0, 1e-250),
    (2.0, 1e308, 0.5, 0.1, 2, 2, 2, 1.0),
])
def test_the_allocation_function_of_tiny_or_huge_arguments_is_finite_and_right(backend, args):
    got = backend.allocation_function(*args)
    want = _phi_exact(*args)
    assert np.isfinite(got) and got == pytest.approx(want, rel=1e-14)


def test_the_allocation_function_of_ordinary_arguments_is_the_plain_float_formula(backend):
    rng = np.random.default_rng(3)
    for _ in range(200):
        X, y, eps, delta, alpha = rng.uniform(0.01, 1.0, 5) * [100, 1, 1, 1, 10]
        S, A = (int(v) for v in rng.integers(1, 50, 2))
        G = int(rng.integers(0, S + 2))
        l1 = np.log(X * S * A / (y * eps * delta))
        l2 = np.log(X * S * A / (y * delta))
        plain = alpha * (X**3 * G / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                         + X**2 * G / y**2 * l2**2)
        assert backend.allocation_function(X, y, eps, delta, S, A, G, alpha) == plain


@pytest.mark.parametrize("kwargs, pattern", [
    ({"eps": 1e-300}, "above 2\\^63 - 1"),
    ({"eps": 5e-324}, "phi\\(X, y\\) overflows float64"),
    ({"alpha": 1e308}, "phi\\(X, y\\) overflows float64.*`alpha` = 1e\\+308"),
])
def test_solve_refuses_an_allocation_beyond_any_count(backend, kwargs, pattern):
    ssp = backend.tradeoff()
    args = {"eps": 0.1, "delta": 0.1, **kwargs}
    with pytest.raises(backend.TooLargeError, match=pattern):
        backend.solve(ssp, ssp.costs, seed=0, **args)


def test_solve_refuses_a_subnormal_cost_by_the_allocation(backend):
    ssp = backend.tradeoff()
    costs = np.where(ssp.costs == ssp.costs.min(), 5e-324, ssp.costs)
    with pytest.raises(backend.TooLargeError, match="y = 4.94e-324"):
        backend.solve(ssp, costs, 0.1, 0.1, seed=0)


@pytest.mark.parametrize("option", ["--eps", "--delta"])
def test_sspgm_solve_with_a_subnormal_eps_or_delta_is_a_one_line_error(backend, capsys, option):
    status = main(["solve", "tradeoff", option, "5e-324", "--backend", backend.__name__])
    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


# --- sspgm validate: --jobs and --seeds ----------------------------------------------------


@pytest.mark.parametrize("options, pattern", [
    (["--jobs", "0"], "argument --jobs: must be -1 .* or >= 1; got 0"),
    (["--jobs", "-3"], "argument --jobs: must be -1"),
    (["--seeds", "0"], "argument --seeds: must be an integer >= 1; got 0"),
])
def test_validate_refuses_jobs_and_seeds_out_of_range(tmp_path, capsys, options, pattern):
    import re

    with pytest.raises(SystemExit) as info:
        main(["validate", "--instances", "tradeoff", "--no-plot", "--no-progress", "--out",
              str(tmp_path / "out"), *options])
    assert info.value.code == 2
    assert re.search(pattern, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_run_sweep_refuses_no_worker_and_no_run():
    from reference.errors import ParameterError
    from sspgm.validation import run_sweep
    from sspgm.validation.spec import Sweep

    sweep = Sweep(instances=("tradeoff",), eps=(0.5,), seeds=(0,))
    with pytest.raises(ParameterError, match="`n_jobs` must be -1 .* got 0"):
        run_sweep(sweep, n_jobs=0, progress=False)
    with pytest.raises(ParameterError, match="holds no run"):
        run_sweep(Sweep(instances=("tradeoff",), eps=(0.5,), seeds=()), progress=False)


# --- the proper-policy search of the LP polish ---------------------------------------------


def _bfs_by_rounds(kernel, S, A, allowed):
    """The search as its docstring states it: every round, every pair's mass into the settled
    states (the goal first), the states with a positive one settled on their best pair."""
    kernel = sp.csr_array(kernel)
    policy = np.full(S, -1)
    settled = np.zeros(S + 1, dtype=bool)
    settled[S] = True
    while True:
        mass = np.zeros((S, A))
        for s in np.flatnonzero(~settled[:S]):
            for a in range(A):
                row = s * A + a
                if allowed[row]:
                    lo, hi = kernel.indptr[row], kernel.indptr[row + 1]
                    mass[s, a] = sum(p for p, j in zip(kernel.data[lo:hi], kernel.indices[lo:hi])
                                     if settled[j])
        new = (mass > 0).any(axis=1)
        if not new.any():
            return policy
        policy[new] = mass[new].argmax(axis=1)
        settled[:S][new] = True


class _CountingKernel(np.ndarray):
    """A dense kernel that counts the rows its products read."""

    rows_read = 0

    def __matmul__(self, other):
        _CountingKernel.rows_read += self.shape[0]
        return np.asarray(self) @ other


def test_the_proper_policy_search_matches_its_statement_and_reads_the_kernel_once(backend):
    from reference.optimal import bfs_policy

    rng = np.random.default_rng(0)
    for trial in range(30):
        S, A = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        dense = rng.random((S * A, S + 1)) * (rng.random((S * A, S + 1)) < 0.3)
        dense[rng.random(S * A) < 0.3] = 0.0
        dense[:, S] *= rng.random() < 0.8
        dense[dense.sum(axis=1) == 0, 0] = 1.0
        dense = np.round(dense / dense.sum(axis=1, keepdims=True), 1)
        allowed = rng.random(S * A) < 0.8
        want = _bfs_by_rounds(dense, S, A, allowed)
        assert np.array_equal(bfs_policy(dense, S, A, allowed), want), trial
        assert np.array_equal(bfs_policy(sp.csr_array(dense), S, A, allowed), want), trial
    ssp = backend.chain(400, 0.5)
    kernel = backend.evaluation.kernel_rows(ssp).view(_CountingKernel)
    _CountingKernel.rows_read = 0
    policy = bfs_policy(kernel, 400, 2, np.ones(800, dtype=bool))
    assert np.array_equal(policy, np.zeros(400))
    assert _CountingKernel.rows_read <= 800
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        best = backend.optimal_values(backend.chain(1500, 0.001))
    assert np.allclose(best.values, backend.chain(1500, 0.001).meta["V_star"], rtol=1e-9)


# --- rows files that are not sweep CSVs -----------------------------------------------------


def _not_a_sweep_csv(tmp_path, kind):
    from sspgm.validation.rows import COLUMNS

    path = tmp_path / "rows.csv"
    header = (",".join(COLUMNS) + "\n").encode()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00 not text\n")
    else:
        path.write_bytes(header + b'"' + b"x" * 200_000 + b'"\n')
    return path


@pytest.mark.parametrize("kind, pattern", [
    ("fifo", "is a FIFO, not a regular file"), ("directory", "is a directory"),
    ("binary", "is not a sweep CSV: 'utf-8' codec"), ("huge cell", "field larger than"),
])
def test_a_rows_file_that_is_not_a_sweep_csv_is_refused_untouched(tmp_path, kind, pattern):
    path = _not_a_sweep_csv(tmp_path, kind)
    before = None if path.is_dir() or kind == "fifo" else path.read_bytes()
    out = _run_python(f"""
        from sspgm.validation import RowLog, read_rows
        for call in (lambda: read_rows({str(path)!r}), lambda: RowLog({str(path)!r}).__enter__()):
            try:
                call()
            except ValueError as exc:
                print(type(exc).__name__, exc)
    """, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("ParameterError") for line in lines)
    assert pattern in lines[0]
    if before is not None:
        assert path.read_bytes() == before


def test_sspgm_solve_refuses_a_fifo_as_its_checkpoint_at_once(tmp_path):
    fifo = tmp_path / "run.ckpt"
    os.mkfifo(fifo)
    out = subprocess.run([sys.executable, "-m", "sspgm", "solve", "tradeoff", "--checkpoint",
                          str(fifo)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "is not a regular file" in out.stderr and "Traceback" not in out.stderr


def test_the_instance_lower_bound_of_extreme_eps_and_delta(backend):
    ssp = backend.chain(2, 0.8)
    assert backend.instance_lower_bound(ssp, 7e16, 0.1).bound == 0.0
    tiny = backend.instance_lower_bound(ssp, 0.5, 1e-300)
    # kl(d, 1 - d) = (1 - 2 d) log((1 - d) / d), which is 300 log(10) at d = 1e-300.
    assert tiny.kl_delta == pytest.approx(300 * np.log(10.0), rel=1e-15)
    assert np.isfinite(tiny.bound) and tiny.bound > 0
