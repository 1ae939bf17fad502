"""The validation harness: statistics on hand-made rows, sweeps, resume, faults, Dask, CLI, plots.

Ground truth: closed forms of the Clopper-Pearson ends at 0 and n failures,
ordinary least squares written out, the allocation function of eq. 6 written
out, and re-running the same sweep. The fault tests (kills, concurrent
sweeps, failing configurations) run the harness in subprocesses where a
process has to die.
"""

import dataclasses
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from scipy import stats

from reference.errors import ParameterError
from sspgm.cli import main
from sspgm.validation import (
    COLUMNS,
    TIMING_COLUMNS,
    Row,
    RowLog,
    RunSpec,
    Sweep,
    check_runs,
    failure_interval,
    format_summary,
    loglog_slope,
    parse_instance,
    read_rows,
    run_one,
    run_sweep,
    summarize,
)
from sspgm.validation import runner

SMALL = Sweep(instances=("chain:n=3", "tradeoff"), eps=(0.4, 0.2), seeds=(0, 1))


def _untimed(rows):
    return [dataclasses.replace(row, **{name: 0.0 for name in TIMING_COLUMNS}) for row in rows]


def _row(instance="a", eps=0.1, seed=0, success=True, calls=100, bound=200.0, theta=None,
         delta=0.1, Delta_final=1.0):
    return Row(instance=instance, backend="reference", theta=theta, alpha=1.0, eps=eps,
               delta=delta, seed=seed, success=success, error=(0.5 if success else 2.0) * eps,
               calls=calls, bound=bound, calls_over_bound=calls / bound,
               Delta_final=Delta_final, uncertified=calls < 50)


# --- statistics on hand-made numbers -------------------------------------------------------

@pytest.mark.parametrize("n", [1, 7, 40])
def test_failure_interval_closed_forms_at_the_ends(n):
    rate, low, high = failure_interval(0, n, 0.95)
    assert (rate, low) == (0.0, 0.0)
    assert high == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-10)
    rate, low, high = failure_interval(n, n, 0.95)
    assert low == pytest.approx(0.025 ** (1 / n), rel=1e-10)
    assert (rate, high) == (1.0, 1.0)


@pytest.mark.parametrize("k, n", [(1, 4), (3, 10), (17, 40)])
def test_failure_interval_is_the_beta_quantiles(k, n):
    # The Clopper-Pearson ends as Beta quantiles, computed independently of binomtest.
    rate, low, high = failure_interval(k, n, 0.9)
    assert rate == k / n
    assert low == pytest.approx(stats.beta.ppf(0.05, k, n - k + 1), rel=1e-9)
    assert high == pytest.approx(stats.beta.ppf(0.95, k + 1, n - k), rel=1e-9)


def test_failure_interval_refuses_impossible_counts():
    with pytest.raises(ParameterError, match="failures"):
        failure_interval(5, 4)
    with pytest.raises(ParameterError, match="failures"):
        failure_interval(0, 0)


def test_slope_of_an_exact_power_law_is_exact():
    eps = [0.4, 0.2, 0.1, 0.05]
    slope, low, high = loglog_slope(eps, [7.0 * e**-2 for e in eps])
    assert slope == pytest.approx(2.0, abs=1e-12)
    assert high - low == pytest.approx(0.0, abs=1e-9)


def test_slope_interval_by_hand():
    eps = np.array([0.4, 0.2, 0.1, 0.4, 0.2, 0.1])
    calls = np.array([10.0, 45.0, 150.0, 12.0, 40.0, 170.0])
    x, y = -np.log(eps), np.log(calls)
    xc = x - x.mean()
    b = (xc * (y - y.mean())).sum() / (xc**2).sum()
    resid = y - y.mean() - b * xc
    se = math.sqrt((resid**2).sum() / (x.size - 2) / (xc**2).sum())
    half = stats.t.ppf(0.975, x.size - 2) * se
    slope, low, high = loglog_slope(eps, calls)
    assert slope == pytest.approx(b, rel=1e-12)
    assert (low, high) == pytest.approx((b - half, b + half), rel=1e-10)


def test_slope_needs_two_accuracies():
    assert all(math.isnan(v) for v in loglog_slope([0.1, 0.1, 0.1], [1.0, 2.0, 3.0]))
    assert all(math.isnan(v) for v in loglog_slope([0.1, 0.2], [1.0, 2.0]))


def test_summary_of_hand_made_rows():
    rows = [
        _row("a", 0.2, 0, True, 100, 200.0),
        _row("a", 0.2, 1, False, 110, 220.0),
        _row("a", 0.1, 0, True, 400, 500.0),
        _row("a", 0.1, 1, True, 440, 500.0),
        _row("b", 0.2, 0, True, 10, 100.0, theta=2.0),
        _row("b", 0.1, 0, True, 80, 100.0, theta=2.0),
        _row("b", 0.05, 0, True, 640, 1000.0, theta=2.0),
    ]
    a, b = summarize(rows)
    assert (a.instance, a.runs, a.errors, a.failures, a.uncertified) == ("a", 4, 0, 1, 0)
    assert a.failure.value == 0.25
    assert (a.failure.low, a.failure.high) == pytest.approx(
        (stats.beta.ppf(0.025, 1, 4), stats.beta.ppf(0.975, 2, 3))
    )
    assert a.consistent is True
    assert a.calls_over_bound_mean == pytest.approx((0.5 + 0.5 + 0.8 + 0.88) / 4)
    assert a.calls_over_bound_max == pytest.approx(0.88)
    assert a.above_bound == 0
    assert a.slope_limit == 2.0 and a.n_eps == 2
    # b: calls multiply by 8 per halving of eps, so the slope is exactly 3.
    assert b.theta == 2.0 and b.slope_limit == 3.0
    assert b.slope.value == pytest.approx(3.0, abs=1e-12)
    assert b.failures == 0 and b.failure.low == 0.0
    assert b.uncertified == 1
    assert a.error_over_eps_max == pytest.approx(2.0)
    assert b.error_over_eps_max == pytest.approx(0.5)


def test_settled_slope_keeps_the_runs_at_the_largest_delta():
    rows = [
        _row("c", 0.2, 0, calls=10, Delta_final=1.0),
        _row("c", 0.1, 0, calls=100, Delta_final=2.0),
        _row("c", 0.05, 0, calls=400, Delta_final=2.0),
        _row("c", 0.05, 1, calls=400, Delta_final=2.0),
    ]
    (line,) = summarize(rows)
    assert line.Delta_max == 2.0
    # calls x4 per halving of eps among the runs at Delta = 2.
    assert line.settled_slope.value == pytest.approx(2.0, abs=1e-12)
    assert line.slope.value > 2.5


def test_summary_flags_a_failure_rate_above_delta():
    rows = [_row("a", 0.1, s, s % 2 == 0, 10, 20.0, delta=0.05) for s in range(40)]
    (line,) = summarize(rows)
    assert line.failure.value == 0.5
    assert line.consistent is False


def test_summary_flags_every_run_above_its_explicit_total():
    rows = [_row("a", 0.2, 0, calls=100, bound=200.0), _row("a", 0.1, 0, calls=301, bound=300.0),
            _row("a", 0.1, 1, calls=300, bound=300.0), _row("b", 0.1, 0, calls=900, bound=450.0)]
    a, b = summarize(rows)
    assert (a.above_bound, b.above_bound) == (1, 1)
    assert a.calls_over_bound_max == pytest.approx(301 / 300)
    report = format_summary([a, b], rows)
    assert "2 run(s) above their explicit total" in report
    assert "a reference alpha=1 eps=0.1 delta=0.1 seed=0: calls/bound = 1.003" in report
    assert "b reference alpha=1 eps=0.1 delta=0.1 seed=0: calls/bound = 2" in report
    assert "seed=1" not in report
    within = format_summary(summarize(rows[:1]), rows[:1])
    assert "No run used more calls than its explicit total." in within


def test_runs_that_raised_are_counted_apart_and_listed():
    rows = [_row("a", 0.2, 0), _row("a", 0.1, 0, success=False),
            Row("a", "reference", None, 1.0, 0.1, 0.1, 1, exception="MemoryError: too big")]
    (line,) = summarize(rows)
    assert (line.runs, line.errors, line.failures) == (2, 1, 1)
    assert line.failure.value == 0.5
    assert "MemoryError: too big" in format_summary([line], rows)
    (empty,) = summarize(rows[2:])
    assert (empty.runs, empty.errors, empty.consistent) == (0, 1, None)
    assert math.isnan(empty.failure.value)


# --- rows -----------------------------------------------------------------------------------

def test_row_fields_are_the_csv_columns_with_their_types(tmp_path):
    assert COLUMNS == tuple(f.name for f in dataclasses.fields(Row))
    row = Row("x", "fast", np.float64(3.0), 1, 0.1, 0.1, np.int64(4), success=np.bool_(True),
              calls=np.int64(7), error=np.float32(0.5), seconds=1)
    assert type(row.theta) is float and type(row.seed) is int and type(row.alpha) is float
    assert row.success is True and type(row.calls) is int and row.bound is None
    path = tmp_path / "rows.csv"
    with RowLog(path) as log:
        log.append(row)
    assert read_rows(path) == [row]
    with pytest.raises(ParameterError, match="one line"):
        Row("x", "fast", None, 1.0, 0.1, 0.1, 0, exception="two\nlines")
    with pytest.raises(ParameterError, match="seed"):
        Row("x", "fast", None, 1.0, 0.1, 0.1, None)


def test_a_damaged_complete_line_is_an_error_naming_it(tmp_path):
    path = tmp_path / "rows.csv"
    with RowLog(path) as log:
        log.append(_row())
    with open(path, "a") as handle:
        handle.write("a,reference,,1.0,notanumber" + "," * (len(COLUMNS) - 5) + "\n")
    with pytest.raises(ParameterError, match="line 3"):
        read_rows(path)


@pytest.mark.parametrize("text", [
    "name,score\nalice,3\nbob,4",
    "a file of notes with no newline",
    "instance,backend,theta,alpha\n",
])
def test_a_file_that_is_not_a_sweep_csv_is_refused_untouched(tmp_path, text):
    path = tmp_path / "notes.csv"
    path.write_text(text)
    with pytest.raises(ParameterError, match="not a sweep CSV"):
        with RowLog(path):
            pass
    assert path.read_text() == text


def test_a_header_cut_by_a_kill_is_completed(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(",".join(COLUMNS)[:7])
    with RowLog(path) as log:
        log.append(_row())
    assert read_rows(path) == [_row()]


# --- specs ----------------------------------------------------------------------------------

def test_parse_instance_gives_builder_tokens():
    assert parse_instance("garnet:n_states=6, n_actions=2") == (
        "garnet", ["--n_states", "6", "--n_actions", "2"]
    )
    assert parse_instance("tradeoff") == ("tradeoff", [])
    with pytest.raises(ParameterError, match="key=value"):
        parse_instance("chain:n")


def test_sweep_is_the_full_grid():
    runs = Sweep(("x", "y"), (0.2, 0.1), (0, 1, 2), deltas=(0.1, 0.2), thetas=(None, 2.0)).runs()
    assert len(runs) == 2 * 2 * 3 * 2 * 2
    assert len(set(runs)) == len(runs)


def test_check_runs_lists_every_invalid_configuration():
    bad = [
        RunSpec("tradeoff", 0.1, 0.1, 0),
        RunSpec("nosuch", 0.1, 0.1, 0),
        RunSpec("chain:n=zero", 0.1, 0.1, 0),
        RunSpec("tradeoff", 1.5, 0.1, 0),
        RunSpec("tradeoff", 0.1, 1.0, 0),
        RunSpec("tradeoff", 0.1, 0.1, -1),
        RunSpec("tradeoff", 0.1, 0.1, 0, backend="other"),
        RunSpec("tradeoff", 0.1, 0.1, 0, theta=0.5),
        RunSpec("tradeoff", 0.1, 0.1, 0, alpha=0.0),
        RunSpec("theta_example", 0.1, 0.1, 0),
    ]
    with pytest.raises(ParameterError) as info:
        check_runs(bad)
    message = str(info.value)
    assert "9 invalid configuration(s)" in message
    for part in ("'nosuch'", "'chain:n=zero'", "`eps`", "`delta`", "`seed`", "`backend`",
                 "`theta`", "`alpha`", "'theta_example' has c_min = 0"):
        assert part in message
    assert check_runs([bad[0], bad[0], SMALL]) == [bad[0]] + SMALL.runs()


def test_no_run_starts_before_every_configuration_is_checked(tmp_path, monkeypatch):
    executed = []
    monkeypatch.setattr(runner, "run_one", lambda spec, progress=False: executed.append(spec))
    runs = SMALL.runs() + [RunSpec("garnet:n_states=0", 0.1, 0.1, 0)]
    with pytest.raises(ParameterError, match="garnet"):
        run_sweep(runs, csv_path=tmp_path / "rows.csv", n_jobs=1, progress=False)
    assert executed == []
    assert not (tmp_path / "rows.csv").exists()


# --- runs on real instances -----------------------------------------------------------------

def _allocation_total(S, A, G, X, y, eps, delta, alpha=1.0):
    l1 = math.log(X * S * A / (y * eps * delta))
    l2 = math.log(X * S * A / (y * delta))
    phi = alpha * (X**3 * G / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                   + X**2 * G / y**2 * l2**2)
    return S * A * phi


def test_run_one_chain(backend):
    row = run_one(RunSpec("chain:n=3", 0.2, 0.1, 0, backend.__name__))
    # chain(n=3): deterministic, unit costs, V*(s) = 3 - s, D = B* = 3, Gamma = 1.
    assert (row.n_states, row.n_actions, row.branching) == (3, 2, 1)
    assert row.D == pytest.approx(3.0) and row.B_star == pytest.approx(3.0)
    assert row.success is (row.error <= 0.2)
    expected = _allocation_total(3, 2, 1, row.Delta_final, 1.0, 0.2, 0.1)
    # The explicit total with the rounding up of the S A = 6 pairs' counts.
    assert row.bound == pytest.approx(expected + 6, rel=1e-9)
    # Every pair is topped up to ceil(phi): calls lie in [S A phi, S A phi + S A).
    assert expected <= row.calls < expected + 6
    assert row.calls_over_bound == row.calls / row.bound <= 1
    assert row.theta is None and row.D_hat is None and row.calls_diameter == 0
    assert row.exception is None
    # `uncertified` agrees with solve's own result on the same seed.
    ssp = backend.chain(n=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = backend.solve(backend.TabularGenerativeModel(ssp), ssp.costs, 0.2, 0.1, seed=0)
    assert row.calls == result.n_calls
    assert row.uncertified is bool(runner._read(result).uncertified)


def test_run_one_hides_only_the_warning_its_row_records(backend, monkeypatch):
    from reference.errors import NotCertifiedWarning

    real = backend.solve

    def solve(*args, **kwargs):
        warnings.warn("an unrelated numerical warning", RuntimeWarning)
        return real(*args, **kwargs)

    monkeypatch.setattr(backend, "solve", solve)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = run_one(RunSpec("chain:n=4", 0.2, 0.2, 0, backend.__name__))
    assert row.uncertified is True
    assert not any(issubclass(w.category, NotCertifiedWarning) for w in caught)
    assert [str(w.message) for w in caught] == ["an unrelated numerical warning"]


def test_run_one_theta_example_is_one_sided(backend):
    row = run_one(RunSpec("theta_example", 0.2, 0.1, 0, backend.__name__, theta=5.0))
    # V*_5 = 0.5 (only the exit is in Pi_5); the returned policy is the exit (value 0.5)
    # or the free action (value 0): the one-sided error is 0 or -0.5, both successes.
    assert row.error in (pytest.approx(0.0, abs=1e-12), pytest.approx(-0.5, abs=1e-12))
    assert row.success is True
    # Lemma 9 with D = 1 at accuracy eps = 0.2.
    assert 1.0 <= row.D_hat <= (1 + 2 * 0.2 * 1.2) * 1.2 + 1e-12
    assert row.eps_diameter == 0.2
    assert 0 < row.calls_diameter <= row.calls <= row.bound


def test_gymnasium_instance_end_to_end(backend):
    pytest.importorskip("gymnasium")
    row = run_one(RunSpec("cliffwalking", 0.2, 0.1, 0, backend.__name__))
    assert (row.n_states, row.n_actions) == (37, 4)
    assert row.c_min == pytest.approx(0.01)
    assert row.success is (row.error <= 0.2)
    assert row.bound - 37 * 4 <= row.calls <= row.bound


# --- sweeps: CSV, resume, Dask ----------------------------------------------------------------

def test_csv_round_trip(tmp_path):
    path = tmp_path / "rows.csv"
    rows = run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)
    assert len(rows) == len(SMALL.runs())
    assert read_rows(path) == rows


def test_resumed_sweep_equals_uninterrupted(tmp_path, monkeypatch):
    full_path = tmp_path / "full.csv"
    full = run_sweep(SMALL, csv_path=full_path, n_jobs=1, progress=False)
    lines = full_path.read_text().splitlines(keepends=True)
    kept = 3
    partial = tmp_path / "partial.csv"
    # The header, three complete rows, and half of the fourth (an interrupted write).
    partial.write_text("".join(lines[: 1 + kept]) + lines[1 + kept][:25])
    executed = []

    def counting(spec, progress=False):
        executed.append(spec)
        return run_one(spec, progress)

    monkeypatch.setattr(runner, "run_one", counting)
    resumed = run_sweep(SMALL, csv_path=partial, n_jobs=1, progress=False)
    assert len(executed) == len(full) - kept
    assert _untimed(resumed) == _untimed(full)
    # The recorded rows were not run again: even their timings are the old ones.
    assert resumed[:kept] == full[:kept]
    assert read_rows(partial) == resumed
    # The complete lines are untouched, the torn one is gone.
    assert partial.read_text().startswith("".join(lines[: 1 + kept]))
    assert partial.read_text().count("\n") == len(full) + 1


def test_csv_of_another_layout_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ParameterError, match="columns"):
        run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)
    assert path.read_text() == "a,b\n1,2\n"


def test_the_rows_file_is_never_opened_for_rewriting(tmp_path, monkeypatch):
    path = tmp_path / "rows.csv"
    run_sweep(SMALL.runs()[:2], csv_path=path, n_jobs=1, progress=False)
    flags = []
    real_open = os.open

    def spying_open(file, flag, *args, **kwargs):
        if os.fspath(file) == os.fspath(path):
            flags.append(flag)
        return real_open(file, flag, *args, **kwargs)

    monkeypatch.setattr(os, "open", spying_open)
    run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)
    assert flags and all(not flag & os.O_TRUNC for flag in flags)
    assert all(flag & os.O_ACCMODE == os.O_RDONLY or flag & os.O_APPEND for flag in flags)


def test_a_second_sweep_on_the_same_file_is_refused(tmp_path):
    path = tmp_path / "rows.csv"
    with RowLog(path) as log:
        with pytest.raises(ParameterError, match="another sweep"):
            run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)
        log.append(_row())
    assert read_rows(path) == [_row()]
    # The lock goes with the log: a sweep can use the file afterwards.
    assert len(run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)) == len(SMALL.runs())


def test_a_failing_configuration_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    path = tmp_path / "rows.csv"
    broken = SMALL.runs()[2]

    def failing(spec, progress=False):
        if spec == broken:
            raise MemoryError("Unable to allocate 298 GiB\nfor an array")
        return run_one(spec, progress)

    monkeypatch.setattr(runner, "run_one", failing)
    rows = run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)
    assert [row.exception for row in rows].count(None) == len(rows) - 1
    assert rows[2].exception == "MemoryError: Unable to allocate 298 GiB for an array"
    assert rows[2].key == (broken.instance, "reference", None, 1.0, broken.eps, 0.1, broken.seed)
    assert rows[2].calls is None and rows[2].success is None
    assert read_rows(path) == rows
    # A restart does not run it again: the row with its error is the record.
    monkeypatch.setattr(runner, "run_one", lambda spec, progress=False: pytest.fail("ran"))
    assert run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False) == rows


def test_local_processes_equal_in_process():
    sweep = Sweep(instances=("tradeoff",), eps=(0.4, 0.2), seeds=(0, 1))
    assert _untimed(run_sweep(sweep, n_jobs=2, progress=False)) == _untimed(
        run_sweep(sweep, n_jobs=1, progress=False)
    )


def test_dask_sweep_equals_local_sweep():
    distributed = pytest.importorskip("dask.distributed")
    local = run_sweep(SMALL, n_jobs=1, progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        remote = run_sweep(SMALL, scheduler=cluster.scheduler_address, progress=False)
    assert _untimed(remote) == _untimed(local)


# --- kills, in subprocesses -------------------------------------------------------------------

LONG = Sweep(instances=("gridworld", "tradeoff"), eps=(0.2, 0.1), seeds=tuple(range(40)))
"""Enough runs (160, a few seconds) that a sweep can be killed half-way."""

_SWEEP_SCRIPT = textwrap.dedent("""
    import sys
    from sspgm.validation import Sweep, run_sweep
    sweep = Sweep(instances=("gridworld", "tradeoff"), eps=(0.2, 0.1), seeds=tuple(range(40)))
    run_sweep(sweep, csv_path=sys.argv[1], n_jobs=int(sys.argv[2]), progress=False)
""")


def _start_sweep(path, n_jobs):
    return subprocess.Popen([sys.executable, "-c", _SWEEP_SCRIPT, str(path), str(n_jobs)],
                            stderr=subprocess.DEVNULL)


def _wait_for_rows(path, count, process, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") > count:
            return
        assert process.poll() is None, "the sweep ended before it could be killed"
        time.sleep(0.05)
    pytest.fail(f"the sweep did not write {count} rows in {timeout} s")


def _children(pid):
    """Live processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_die_with_a_killed_sweep(tmp_path, sig):
    path = tmp_path / "rows.csv"
    process = _start_sweep(path, 2)
    _wait_for_rows(path, 3, process)
    workers = _children(process.pid)
    assert workers
    process.send_signal(sig)
    process.wait(timeout=30)
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_sweep_killed_and_restarted_loses_and_repeats_nothing(tmp_path, n_jobs):
    path = tmp_path / "rows.csv"
    process = _start_sweep(path, n_jobs)
    _wait_for_rows(path, 20, process)
    process.kill()
    process.wait(timeout=30)
    before = path.read_bytes()
    recorded = read_rows(path)
    assert 20 <= len(recorded) < len(LONG.runs())
    rows = run_sweep(LONG, csv_path=path, n_jobs=1, progress=False)
    # Every complete line survived as it was; one row per run, none twice.
    assert path.read_bytes().startswith(before[: before.rfind(b"\n") + 1])
    assert path.read_bytes().count(b"\n") == len(LONG.runs()) + 1
    by_key = {row.key: row for row in rows}
    assert {row.key: row for row in read_rows(path)} == by_key
    assert all(by_key[row.key] == row for row in recorded)
    subset = [RunSpec(r.instance, r.eps, r.delta, r.seed) for r in recorded[:3]]
    assert _untimed(run_sweep(subset, n_jobs=1, progress=False)) == _untimed(recorded[:3])


def _dies_on_seed_1(spec):
    """A worker task that kills its own process on seed 1 (as a segfault would)."""
    if spec.seed == 1:
        os._exit(70)
    return runner._error_row(spec, f"Fine: seed {spec.seed}")


def test_a_run_that_kills_its_worker_is_recorded_and_the_others_complete():
    specs = [RunSpec("tradeoff", 0.2, 0.1, seed) for seed in range(4)]
    rows = {row.seed: row for row in runner._local_rows(specs, 2, task=_dies_on_seed_1)}
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[1].exception.startswith("WorkerDied: ")
    assert [rows[s].exception for s in (0, 2, 3)] == [f"Fine: seed {s}" for s in (0, 2, 3)]


# --- command line and plots -------------------------------------------------------------------

def test_cli_validate_writes_rows_summary_and_plots(tmp_path, capsys):
    pytest.importorskip("gymnasium")
    out = tmp_path / "out"
    status = main([
        "validate", "--instances", "tradeoff", "cliffwalking", "--eps", "0.4", "0.2",
        "--delta", "0.1", "0.2", "--seeds", "2", "--jobs", "1", "--out", str(out),
        "--no-progress", "--backend", "reference",
    ])
    printed = capsys.readouterr().out
    assert status == 0
    rows = read_rows(out / "validation.csv")
    assert len(rows) == 2 * 2 * 2 * 2
    assert {r.instance for r in rows} == {"tradeoff", "cliffwalking"}
    assert {r.backend for r in rows} == {"reference"}
    summary = (out / "summary.txt").read_text()
    assert "cliffwalking" in summary and "slope" in summary and summary.split("\n")[0] in printed
    for name in ("calls.png", "calls_over_bound.png", "failures.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "diameter.png").exists()


def test_cli_validate_defaults_to_a_new_directory_and_the_fast_backend(tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.chdir(tmp_path)
    args = ["validate", "--instances", "tradeoff", "--eps", "0.4", "--delta", "0.1", "--seeds",
            "1", "--jobs", "1", "--no-progress", "--no-plot"]
    assert main(args) == 0
    assert main(args) == 0
    made = sorted(os.listdir(tmp_path))
    assert len(made) == 2 and all(name.startswith("sspgm-validation-") for name in made)
    for name in made:
        (row,) = read_rows(tmp_path / name / "validation.csv")
        assert row.backend == "fast"
        assert (tmp_path / name / "summary.txt").exists()
    capsys.readouterr()


def test_cli_validate_help_shows_the_standard_sweeps(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "accuracies (default 0.2 0.1 0.05 0.025)" in text
    assert "confidence levels (default 0.05 0.1 0.2)" in text
    assert "(default 20)" in text
    assert "theta 3" in text and "taxi" in text and "theta_example" in text
    assert "default fast when its compiled extension is built" in text
    assert "new directory" in text


def test_cli_validate_names_the_missing_extra(tmp_path, monkeypatch, capsys):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)
    status = main(["validate", "--instances", "tradeoff", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2
    assert "matplotlib" in err and "pip install 'sspgm[validate]'" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_diameter_plot_for_alg3_rows(tmp_path):
    from sspgm.plots import plot_all

    rows = run_sweep(
        Sweep(("theta_example",), (0.4, 0.2), (0,), thetas=(5.0,)), n_jobs=1, progress=False
    )
    written = plot_all(rows, tmp_path)
    assert sorted(p.rsplit("/", 1)[-1] for p in written) == [
        "calls.png", "calls_over_bound.png", "diameter.png", "failures.png"
    ]
    assert (tmp_path / "diameter.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_unknown_instance_is_an_error_before_any_run(tmp_path, capsys):
    status = main(["validate", "--instances", "tradeoff", "nosuch", "--seeds", "1", "--jobs", "1",
                   "--out", str(tmp_path / "o"), "--no-progress"])
    assert status == 2
    assert "nosuch" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
