"""The validation harness: statistics on hand-made rows, sweeps, resume, Dask, CLI and plots.

Ground truth: closed forms of the Clopper-Pearson ends at 0 and n failures,
scipy's exact binomial interval, ordinary least squares written out, the
allocation function of eq. 6 written out, and re-running the same sweep.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from reference.errors import ParameterError
from sspgm import validation
from sspgm.cli import main
from sspgm.validation import (
    COLUMNS,
    RunSpec,
    Sweep,
    clopper_pearson,
    loglog_slope,
    parse_instance,
    read_rows,
    run_one,
    run_sweep,
    summarize,
)

SMALL = Sweep(instances=("chain:n=3", "tradeoff"), eps=(0.4, 0.2), seeds=(0, 1))


def _untimed(rows):
    return [{k: v for k, v in row.items() if k not in validation.TIMING_COLUMNS} for row in rows]


def _row(instance="a", eps=0.1, seed=0, success=True, calls=100, bound=200.0, theta=None,
         delta=0.1, Delta_final=1.0):
    row = {name: None for name in COLUMNS}
    row.update(instance=instance, backend="reference", theta=theta, alpha=1.0, eps=eps,
               delta=delta, seed=seed, success=success, error=(0.5 if success else 2.0) * eps,
               calls=calls, bound=bound, calls_over_bound=calls / bound,
               Delta_final=Delta_final, uncertified=calls < 50)
    return row


# --- statistics on hand-made numbers -------------------------------------------------------

@pytest.mark.parametrize("n", [1, 7, 40])
def test_clopper_pearson_closed_forms_at_the_ends(n):
    low, high = clopper_pearson(0, n, 0.95)
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-10)
    low, high = clopper_pearson(n, n, 0.95)
    assert low == pytest.approx(0.025 ** (1 / n), rel=1e-10)
    assert high == 1.0


@pytest.mark.parametrize("k, n", [(1, 4), (3, 10), (17, 40)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    low, high = clopper_pearson(k, n, 0.9)
    assert low == pytest.approx(expected.low, rel=1e-9)
    assert high == pytest.approx(expected.high, rel=1e-9)


def test_clopper_pearson_refuses_impossible_counts():
    with pytest.raises(ParameterError, match="failures"):
        clopper_pearson(5, 4)


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
    assert (a["instance"], a["runs"], a["failures"], a["uncertified"]) == ("a", 4, 1, 0)
    assert a["failure_rate"] == 0.25
    exact = stats.binomtest(1, 4).proportion_ci(method="exact")
    assert (a["failure_low"], a["failure_high"]) == pytest.approx((exact.low, exact.high))
    assert a["consistent"] is True
    assert a["calls_over_bound_mean"] == pytest.approx((0.5 + 0.5 + 0.8 + 0.88) / 4)
    assert a["calls_over_bound_max"] == pytest.approx(0.88)
    assert a["slope_limit"] == 2.0 and a["n_eps"] == 2
    # b: calls multiply by 8 per halving of eps, so the slope is exactly 3.
    assert b["theta"] == 2.0 and b["slope_limit"] == 3.0
    assert b["slope"] == pytest.approx(3.0, abs=1e-12)
    assert b["failures"] == 0 and b["failure_low"] == 0.0
    assert b["uncertified"] == 1
    assert a["error_over_eps_max"] == pytest.approx(2.0)
    assert b["error_over_eps_max"] == pytest.approx(0.5)


def test_settled_slope_keeps_the_runs_at_the_largest_delta():
    rows = [
        _row("c", 0.2, 0, calls=10, Delta_final=1.0),
        _row("c", 0.1, 0, calls=100, Delta_final=2.0),
        _row("c", 0.05, 0, calls=400, Delta_final=2.0),
        _row("c", 0.05, 1, calls=400, Delta_final=2.0),
    ]
    (line,) = summarize(rows)
    assert line["Delta_max"] == 2.0
    # calls x4 per halving of eps among the runs at Delta = 2.
    assert line["settled_slope"] == pytest.approx(2.0, abs=1e-12)
    assert line["slope"] > 2.5


def test_summary_flags_a_failure_rate_above_delta():
    rows = [_row("a", 0.1, s, s % 2 == 0, 10, 20.0, delta=0.05) for s in range(40)]
    (line,) = summarize(rows)
    assert line["failure_rate"] == 0.5
    assert line["consistent"] is False


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
    assert len({r.key() for r in runs}) == len(runs)


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
    assert (row["n_states"], row["n_actions"], row["branching"]) == (3, 2, 1)
    assert row["D"] == pytest.approx(3.0) and row["B_star"] == pytest.approx(3.0)
    assert row["success"] is (row["error"] <= 0.2)
    expected = _allocation_total(3, 2, 1, row["Delta_final"], 1.0, 0.2, 0.1)
    assert row["bound"] == pytest.approx(expected, rel=1e-9)
    # Every pair is topped up to ceil(phi): calls lie in [bound, bound + S A).
    assert expected <= row["calls"] < expected + 6
    assert row["theta"] is None and row["D_hat"] is None and row["calls_diameter"] == 0
    # `uncertified` agrees with solve's own warning on the same seed.
    ssp = backend.chain(n=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.solve(backend.TabularGenerativeModel(ssp), ssp.costs, 0.2, 0.1, seed=0)
    assert row["uncertified"] is any(issubclass(w.category, backend.NotCertifiedWarning)
                                     for w in caught)


def test_run_one_theta_example_is_one_sided(backend):
    row = run_one(RunSpec("theta_example", 0.2, 0.1, 0, backend.__name__, theta=5.0))
    # V*_5 = 0.5 (only the exit is in Pi_5); the returned policy is the exit (value 0.5)
    # or the free action (value 0): the one-sided error is 0 or -0.5, both successes.
    assert row["error"] in (pytest.approx(0.0, abs=1e-12), pytest.approx(-0.5, abs=1e-12))
    assert row["success"] is True
    # Lemma 9 with D = 1 at accuracy eps = 0.2.
    assert 1.0 <= row["D_hat"] <= (1 + 2 * 0.2 * 1.2) * 1.2 + 1e-12
    assert row["eps_diameter"] == 0.2
    assert 0 < row["calls_diameter"] <= row["calls"]


def test_gymnasium_instance_end_to_end(backend):
    pytest.importorskip("gymnasium")
    row = run_one(RunSpec("cliffwalking", 0.2, 0.1, 0, backend.__name__))
    assert (row["n_states"], row["n_actions"]) == (37, 4)
    assert row["c_min"] == pytest.approx(0.01)
    assert row["success"] is (row["error"] <= 0.2)
    assert row["calls"] >= row["bound"]


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

    monkeypatch.setattr(validation, "run_one", counting)
    resumed = run_sweep(SMALL, csv_path=partial, n_jobs=1, progress=False)
    assert len(executed) == len(full) - kept
    assert _untimed(resumed) == _untimed(full)
    # The recorded rows were not run again: even their timings are the old ones.
    assert resumed[:kept] == full[:kept]
    assert read_rows(partial) == resumed


def test_csv_of_another_layout_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ParameterError, match="columns"):
        run_sweep(SMALL, csv_path=path, n_jobs=1, progress=False)


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


# --- command line and plots -------------------------------------------------------------------

def test_cli_validate_writes_rows_summary_and_plots(tmp_path, capsys):
    pytest.importorskip("gymnasium")
    csv_path, plot_dir = tmp_path / "rows.csv", tmp_path / "plots"
    status = main([
        "validate", "--instances", "tradeoff", "cliffwalking", "--eps", "0.4", "0.2",
        "--delta", "0.1", "0.2", "--seeds", "2", "--jobs", "1", "--csv", str(csv_path),
        "--plot", str(plot_dir), "--no-progress",
    ])
    out = capsys.readouterr().out
    assert status == 0
    rows = read_rows(csv_path)
    assert len(rows) == 2 * 2 * 2 * 2
    assert {r["instance"] for r in rows} == {"tradeoff", "cliffwalking"}
    assert "cliffwalking" in out and "slope" in out
    for name in ("calls.png", "failures.png"):
        assert (plot_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (plot_dir / "diameter.png").exists()


def test_diameter_plot_for_alg3_rows(tmp_path):
    from sspgm.plots import plot_all

    rows = run_sweep(
        Sweep(("theta_example",), (0.4, 0.2), (0,), thetas=(5.0,)), n_jobs=1, progress=False
    )
    written = plot_all(rows, tmp_path)
    assert sorted(p.rsplit("/", 1)[-1] for p in written) == [
        "calls.png", "diameter.png", "failures.png"
    ]
    assert (tmp_path / "diameter.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_unknown_instance_is_an_error(tmp_path, capsys):
    status = main(["validate", "--instances", "nosuch", "--seeds", "1", "--jobs", "1",
                   "--csv", str(tmp_path / "x.csv"), "--no-progress"])
    assert status == 2
    assert "nosuch" in capsys.readouterr().err
