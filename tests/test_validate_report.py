"""The summary of `sspgm validate` (verdict, width, JSON) and the data its plots draw.

Hand-made rows with known answers: a power law of known exponent, failure
counts whose Clopper-Pearson ends are closed forms, the theorems' totals from
`bounds` directly. The command line runs in a subprocess with gymnasium hidden.
"""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bounds
import sspgm
from sspgm.validation import (
    CHECKS,
    WIDTH,
    Row,
    format_summary,
    loglog_slope,
    runs_to_test,
    summarize,
    summary_json,
    diameter_total,
    fails_theorem,
    theorem_slope,
    theorem_total,
)

pytestmark = pytest.mark.shared

INSTANCE = dict(n_states=3, n_actions=2, branching=2, c_min=0.5, B_star=2.0, D=4.0)
"""Instance quantities of the hand-made rows (what the theorems read)."""


def _row(eps, seed, calls, delta=0.1, theta=None, success=True, bound=None, instance="x",
         Delta_final=2.0):
    bound = float(calls) if bound is None else bound
    return Row(instance=instance, backend="reference", theta=theta, alpha=1.0, eps=eps,
               delta=delta, seed=seed, success=success, error=(0.5 if success else 2.0) * eps,
               calls=int(calls), bound=bound, calls_over_bound=int(calls) / bound,
               uncertified=False, Delta_final=Delta_final, **INSTANCE)


def _power_law(exponent, seeds=5, delta=0.1, scale=1e3, noise=0.0, instance="x", theta=None):
    rng = np.random.default_rng(1)
    return [_row(e, s, scale * e**-exponent * math.exp(noise * rng.standard_normal()), delta,
                 theta, instance=instance)
            for e in (0.2, 0.1, 0.05, 0.025) for s in range(seeds)]


# --- the slope, its check and the theorem's total ---------------------------------------------

def test_slope_fit_recovers_a_known_exponent_under_noise():
    rows = _power_law(2.5, seeds=50, noise=0.1)
    slope, low, high = loglog_slope([r.eps for r in rows], [r.calls for r in rows])
    assert low < 2.5 < high
    assert high - low < 0.1


def test_theorem_total_is_bounds_at_the_instance():
    row = _row(0.1, 0, 10)
    by_hand = bounds.samp_comp(0.1, B=2.0, cmin=0.5, S=3, A=2, Gamma=2, delta=0.1, alpha=1.0,
                               bound="explicit1") + 3 * 2
    assert theorem_total(row, 0.1) == pytest.approx(by_hand, rel=1e-12)
    alg3 = _row(0.1, 0, 10, theta=3.0)
    assert theorem_total(alg3, 0.1) == pytest.approx(bounds.samp_comp_theta(
        0.1, theta=3.0, D=4.0, B=2.0, S=3, A=2, Gamma=2, delta=0.1, alpha=1.0, cmin=0.5,
        bound="explicit3"), rel=1e-12)
    assert math.isnan(theorem_total(Row("x", "reference", None, 1.0, 0.1, 0.1, 0,
                                        exception="E: e"), 0.1))


def test_diameter_total_is_lemma_9_at_the_instance():
    alg3 = _row(0.1, 0, 10, theta=3.0)
    assert diameter_total(alg3, 0.1) == pytest.approx(bounds.samp_comp_diameter(
        0.1, 4.0, S=3, A=2, Gamma=2, delta=0.1, bound="explicit4"), rel=1e-12)
    assert math.isnan(diameter_total(_row(0.1, 0, 10), 0.1))


def test_a_run_fails_its_theorem_by_its_policy_or_by_its_calls():
    total = theorem_total(_row(0.1, 0, 10), 0.1)
    assert not fails_theorem(_row(0.1, 0, math.floor(total)))
    assert fails_theorem(_row(0.1, 0, math.floor(total) + 1))
    assert fails_theorem(_row(0.1, 0, 10, success=False))


def test_theorem_slope_is_two_and_its_logarithms():
    slope = theorem_slope(_row(0.1, 0, 10), [0.2, 0.1, 0.05, 0.025])
    grid = np.array([0.2, 0.1, 0.05, 0.025])
    totals = [theorem_total(_row(0.1, 0, 10), e) for e in grid]
    # Least squares by hand over the four points.
    x, y = -np.log(grid), np.log(totals)
    by_hand = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    assert slope == pytest.approx(by_hand, rel=1e-10)
    assert 2.0 < slope < 2.3


def test_the_rule_flags_a_slope_of_4_89_against_2():
    # Below the theorem's total at every eps (as when early runs stop at small guesses).
    rows = _power_law(4.89, scale=0.04)
    assert all(r.calls < theorem_total(r, r.eps) for r in rows)
    (steep,) = summarize(rows)
    assert steep.slope.value == pytest.approx(4.89, abs=0.01)  # calls are integers
    assert steep.slope_limit == 2.0 and steep.theorem_slope < 2.3
    assert steep.failed == "s" and steep.verdict == "FAIL s"
    (flat,) = summarize(_power_law(2.0))
    assert flat.failed == "" and flat.verdict == "pass"


def test_the_rule_flags_a_failure_rate_above_delta_and_a_run_above_its_total():
    rows = [_row(e, s, 1e3 * e**-2, delta=0.05, success=s % 4 != 0)
            for e in (0.2, 0.1) for s in range(20)]
    (line,) = summarize(rows)
    assert line.failure.low > 0.05 and line.failed == "r"
    rows = _power_law(2.0)
    rows[0] = _row(0.2, 0, rows[0].calls, bound=rows[0].calls / 1.01)
    (line,) = summarize(rows)
    assert line.above_bound == 1 and line.failed == "t"


def test_runs_above_the_theorem_total_fail_the_theorem():
    from sspgm.plots import failure_bars

    rows = _power_law(2.0, scale=1.0)
    big = theorem_total(rows[0], 0.2) * 1.5
    rows[0] = _row(0.2, 0, big)
    rows[1] = _row(0.2, 1, rows[1].calls, success=False)
    (line,) = summarize(rows)
    assert line.above_theorem == 1
    # One run above the total with a good policy, one below it with a bad one.
    assert line.failures == 2 and line.failure.value == 2 / len(rows)
    (bar,) = failure_bars(rows)
    assert bar["failures"] == 2


@pytest.mark.parametrize("delta", [0.01, 0.05, 0.1, 0.2, 0.5])
def test_runs_to_test_is_the_first_clean_record_below_delta(delta):
    n = runs_to_test(delta)
    # Zero failures in n runs: the upper end solves (1 - p)^n = 0.025.
    assert 1 - 0.025 ** (1 / n) <= delta < 1 - 0.025 ** (1 / (n - 1))


def test_summary_does_not_depend_on_the_order_of_the_rows():
    rows = _power_law(2.3, seeds=50, noise=0.3)
    rng = np.random.default_rng(2)
    expected = summarize(rows)
    for _ in range(5):
        # Sums in another order differ in their last bits: the rows must be read in one order.
        assert summarize([rows[i] for i in rng.permutation(len(rows))]) == expected


# --- the text summary and its JSON ------------------------------------------------------------

def _sweep_rows():
    rows = _power_law(2.0, instance="garnet:n_states=10,n_actions=2,branching=3")
    rows += _power_law(4.89, delta=0.2, scale=0.04,
                       instance="garnet:n_states=10,n_actions=2,branching=3")
    rows += _power_law(2.5, theta=3.0, instance="theta_example")
    rows.append(Row("theta_example", "reference", 3.0, 1.0, 0.4, 0.1, 9,
                    exception="MemoryError: too big"))
    return rows


@pytest.mark.parametrize("theta", [None, 1.0], ids=["Thm. 1", "Thm. 2"])
def test_the_legend_states_the_rule_summarize_applies(theta):
    # The tolerance and limits as the legend prints them; the slope check must flag a slope
    # just above max(limit, thm) + tolerance and pass one just below it.
    from sspgm.validation import SUMMARY_LEGEND

    tolerance = float(re.search(r"lies above thm by more than ([0-9.]+)\)",
                                SUMMARY_LEGEND).group(1))
    limits = re.search(r"limit, ([0-9.]+) for Thm\. 1 and ([0-9.]+) for Thm\. 2",
                       SUMMARY_LEGEND).groups()
    limit = float(limits[theta is not None])
    (line,) = summarize(_power_law(2.0, theta=theta))
    assert line.slope_limit == limit
    border = max(limit, line.theorem_slope) + tolerance
    for exponent, fails in ((border + 0.03, True), (border - 0.03, False)):
        (line,) = summarize(_power_law(exponent, theta=theta))
        assert ("s" in line.failed) is fails, (exponent, line.slope)


def test_summary_fits_the_width_and_its_json_agrees():
    rows = _sweep_rows()
    summary = summarize(rows)
    text = format_summary(summary, rows)
    table = text.split("\n\n")[0].splitlines()
    assert max(len(line) for line in text.splitlines()) <= WIDTH == 100
    record = json.loads(summary_json(summary, rows))
    assert record["schema_version"] == 2 and record["command"] == "validate"
    assert record["checks"] == CHECKS
    assert record["runs"] == len(rows) and record["raised"] == 1
    assert record["verdict"] == "fail"
    configs = record["configurations"]
    assert [c["verdict"] for c in configs] == ["pass", "fail", "pass"]
    assert configs[1]["failed"] == ["s"]
    lines = [line for line in table[2:] if line.startswith(" ")]
    assert len(lines) == len(configs)
    for line, config in zip(lines, configs):
        delta, check, *rest = line.split()
        if check == "FAIL":
            check += " " + rest.pop(0)
        assert float(delta) == config["delta"]
        assert check == ("pass" if config["verdict"] == "pass"
                         else "FAIL " + "".join(config["failed"]))
        runs, raised, failures = map(int, rest[:3])
        assert (runs, raised, failures) == (config["runs"], config["raised"], config["failures"])
        slope = float(rest[-4])
        assert slope == pytest.approx(config["slope"]["value"], abs=0.005)
    assert configs[2]["raised"] == 1 and configs[2]["slope_limit"] == 3.0
    assert record["raised_runs"][0]["exception"] == "MemoryError: too big"
    # Twenty runs without failure are too few to test delta = 0.1 (36 needed).
    assert configs[0]["interval_tests_delta"] is False and configs[0]["runs_needed"] == 36
    assert f"[0.00,{1 - 0.025 ** (1 / 20):.2f}]*" in lines[0]


def test_json_summary_follows_the_convention_of_every_json_document():
    # One accuracy: the slope is undefined, and is written as solve --json writes a NaN.
    rows = [_row(0.1, seed, 100 + seed) for seed in range(3)]
    text = summary_json(summarize(rows), rows)

    def refuse(token):
        raise AssertionError(f"non-standard JSON token {token}")

    record = json.loads(text, parse_constant=refuse)
    assert list(record)[:3] == ["schema_version", "command", "sspgm_version"]
    assert record["sspgm_version"] == sspgm.__version__
    slope = record["configurations"][0]["slope"]
    assert slope == {"value": "nan", "low": "nan", "high": "nan"}
    assert record["configurations"][0]["calls_over_total"]["max"] == pytest.approx(1.0)


# --- the data the plots draw ------------------------------------------------------------------

def test_calls_panels_draw_the_theorem_total_and_slopes_two_and_three():
    from sspgm.plots import calls_panels

    rows = _power_law(2.7, seeds=3)
    (panel,) = calls_panels(rows)
    grid = panel["eps"]
    assert grid == [0.2, 0.1, 0.05, 0.025]
    assert panel["totals"][0.1] == [theorem_total(rows[0], e) for e in grid]
    at_end = [r.calls for r in rows if r.eps == 0.025]
    for k, line in panel["references"].items():
        assert line[-1] == pytest.approx(math.exp(np.mean(np.log(at_end))), rel=1e-12)
        assert np.polyfit(-np.log(grid), np.log(line), 1)[0] == pytest.approx(k, abs=1e-12)
    assert sorted(panel["references"]) == [2.0, 3.0]
    assert panel["diameter_totals"] == {}
    (alg3,) = calls_panels(_power_law(2.7, seeds=2, theta=3.0))
    assert alg3["diameter_totals"][0.1] == [
        bounds.samp_comp_diameter(e, 4.0, S=3, A=2, Gamma=2, delta=0.1, bound="explicit4")
        for e in grid]


def test_failure_bars_say_when_the_interval_is_too_wide_to_test_delta():
    from sspgm.plots import failure_bars

    nine = [_row(e, s, 10, delta=0.1) for e in (0.2, 0.1, 0.05) for s in range(3)]
    many = [_row(e, s, 10, delta=0.05, instance="y") for e in (0.2, 0.1) for s in range(40)]
    few, enough = failure_bars(nine + many)
    assert (few["runs"], few["failures"], few["rate"]) == (9, 0, 0.0)
    assert few["high"] == pytest.approx(1 - 0.025 ** (1 / 9), rel=1e-9)  # 0.336
    assert few["tests_delta"] is False and few["runs_needed"] == 36
    assert enough["runs"] == 80 and enough["tests_delta"] is True
    assert enough["high"] == pytest.approx(1 - 0.025 ** (1 / 80), rel=1e-9)


def test_plots_are_written_from_these_rows(tmp_path):
    pytest.importorskip("matplotlib")
    from sspgm.plots import plot_calls, plot_failures

    rows = _power_law(2.0, seeds=2) + [_row(e, s, 10, delta=0.05, instance="y")
                                       for e in (0.2, 0.1) for s in range(2)]
    rows += [dataclasses.replace(r, calls_diameter=r.calls // 2)
             for r in _power_law(2.5, seeds=2, theta=3.0)]
    for plot in (plot_calls, plot_failures):
        path = plot(rows, tmp_path / f"{plot.__name__}.png")
        assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


# --- the command line without gymnasium -------------------------------------------------------

_HIDDEN = ("import sys; sys.modules['gymnasium'] = None; from sspgm.cli import main; "
           "sys.exit(main(sys.argv[1:]))")


def _validate(*args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", _HIDDEN, "validate", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


def test_standard_sweep_without_gymnasium_skips_its_instances_with_a_notice(tmp_path):
    out = tmp_path / "out"
    done = _validate("--eps", "0.4", "--delta", "0.2", "--seeds", "1", "--jobs", "1",
                     "--no-progress", "--no-plot", "--json", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (notice,) = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert "cliffwalking, frozenlake, taxi" in notice and "sspgm[gym]" in notice
    record = json.loads((out / "summary.json").read_text())
    names = {c["instance"] for c in record["configurations"]}
    assert names == {"chain:n=4", "tradeoff", "gridworld",
                     "garnet:n_states=10,n_actions=2,branching=3", "theta_example", "chain:n=3"}
    assert record["runs"] == 7


def test_gymnasium_instances_asked_for_without_gymnasium_are_an_error(tmp_path):
    done = _validate("--instances", "tradeoff", "cliffwalking", "--seeds", "1", "--jobs", "1",
                     "--no-progress", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "cliffwalking" in done.stderr and "pip install 'sspgm[gym]'" in done.stderr
    assert not (tmp_path / "o").exists()


def test_standard_sweep_with_gymnasium_keeps_its_instances(monkeypatch):
    import argparse

    from sspgm.commands import validate

    monkeypatch.setattr(validate, "_gymnasium_missing", lambda: False)
    args = argparse.Namespace(eps=None, delta=None, seeds=None, theta=None, alpha=None,
                              instances=None)
    sweeps = validate._sweeps(args, ["fast"])
    assert set(validate.GYM_INSTANCES) == {"cliffwalking", "frozenlake", "taxi"}
    assert set(validate.GYM_INSTANCES) <= set(sweeps[0].instances)
    monkeypatch.setattr(validate, "_gymnasium_missing", lambda: True)
    kept = validate._sweeps(args, ["fast"])
    assert not set(validate.GYM_INSTANCES) & {i for s in kept for i in s.instances}
    assert [len(s.runs()) for s in kept] == [4 * 4 * 3 * 20, 3 * 4 * 3 * 20]


# --- the POSIX requirement --------------------------------------------------------------------

def test_without_fcntl_the_rows_file_names_the_posix_requirement(tmp_path, monkeypatch):
    from sspgm.validation import RowLog

    monkeypatch.setitem(sys.modules, "fcntl", None)
    with pytest.raises(ImportError, match="POSIX system"):
        with RowLog(tmp_path / "rows.csv"):
            pass
    assert not (tmp_path / "rows.csv").exists()


def test_without_fcntl_the_command_fails_in_one_line_before_any_run(tmp_path, monkeypatch,
                                                                    capsys):
    from sspgm.cli import main

    monkeypatch.setitem(sys.modules, "fcntl", None)
    status = main(["validate", "--instances", "tradeoff", "--seeds", "1", "--jobs", "1",
                   "--no-progress", "--no-plot", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "POSIX system" in err and "flock" in err
    assert not (tmp_path / "o").exists()


def test_the_committed_summary_is_what_the_writer_writes_at_the_current_version():
    from sspgm._json import SCHEMA_VERSIONS, dumps

    text = (Path(__file__).resolve().parent.parent / "docs" / "validation"
            / "summary.json").read_text()
    record = json.loads(text)
    assert record["schema_version"] == SCHEMA_VERSIONS["validate"] == 2
    assert list(record)[:3] == ["schema_version", "command", "sspgm_version"]
    assert text == dumps(record, indent=1) + "\n"


def test_only_the_documented_fields_of_a_configuration_hold_nan():
    # A configuration whose every run raised: each field that can be undefined is.
    rows = [_row(0.1, 0, 100)]
    rows = [dataclasses.replace(rows[0], exception="MemoryError: too big")]
    record = json.loads(summary_json(summarize(rows), rows))

    def nan_fields(value, path=""):
        if isinstance(value, dict):
            return {f for k, v in value.items() for f in nan_fields(v, f"{path}{k}.")}
        return {path[:-1]} if value == "nan" else set()

    documented = (Path(__file__).resolve().parent.parent / "docs" / "validate.md").read_text()
    typed_nan = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)? \|[^|]*\"nan\"", documented, re.M))
    allowed = {name for pair in typed_nan for name in pair if name}
    found = nan_fields(record["configurations"][0])
    assert found and {field.split(".")[0] for field in found} == allowed
