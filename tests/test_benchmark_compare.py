"""The benchmark comparison of ``benchmarks/README.md`` fails on a regression, and ``ratios.py``.

The options are read from the compare command that ``benchmarks/README.md``
prints (the one place they are written), and run on a one-line benchmark
against a saved baseline whose times are rewritten a factor ``10^4`` below or
above the measured ones: no timing enters the verdicts.
"""

import json
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
COMPARED = ("--benchmark-timer", "--benchmark-storage", "--benchmark-compare",
            "--benchmark-compare-fail")
"""The options that decide what a comparison measures and when it fails."""

QUICK = ("--benchmark-min-rounds=3", "--benchmark-max-time=0.01", "-p", "no:cacheprovider",
         "-p", "no:hypothesispytest")
"""Options that only shorten the runs of the one-line benchmark (and skip loading hypothesis)."""

MARGIN = 1e4

TINY_BENCHMARK = """
def test_sum(benchmark):
    benchmark(sum, range(1000))
"""


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """The pytest runs these tests start are sessions of their own: under pytest-xdist (as in
    CI), the worker's ``PYTEST_XDIST_*`` variables would reach them, and pytest-benchmark,
    which reads ``PYTEST_XDIST_WORKER``, would turn itself off."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def _commands(readme):
    """The shell commands in the shell (or unlabelled) fenced blocks of ``readme``, continuation
    lines joined."""
    blocks, language, lines = [], None, []
    for line in readme.read_text().splitlines():
        if not line.startswith("```"):
            lines.append(line)
        elif language is None:
            language, lines = line[3:].strip(), []
        else:
            if language in ("", "bash", "sh", "shell", "console"):
                blocks.append("\n".join(lines))
            language = None
    return [shlex.split(block.replace("\\\n", " ")) for block in blocks]


def _compare_options(readme):
    """``{option: value}`` of the ``COMPARED`` options in ``readme``'s compare command."""
    command = next(c for c in _commands(readme) if any("--benchmark-compare=" in t for t in c))
    pairs = dict(token.split("=", 1) for token in command if "=" in token)
    return {name: pairs[name] for name in COMPARED}


def test_both_readmes_give_the_same_compare_options():
    options = _compare_options(BENCHMARKS / "README.md")
    assert options == _compare_options(ROOT / "README.md")
    assert options["--benchmark-timer"] == "time.process_time"
    storage = ROOT / options["--benchmark-storage"]
    run = options["--benchmark-compare"]
    assert list(storage.glob(f"*/{run}_*.json")), f"no run {run} under {storage}"


def _rescale(path, factor):
    """Multiply every time statistic of the saved run ``path`` by ``factor``."""
    run = json.loads(path.read_text())
    for bench in run["benchmarks"]:
        stats = bench["stats"]
        for field in ("min", "max", "mean", "median", "stddev", "iqr", "q1", "q3",
                      "ld15iqr", "hd15iqr", "total"):
            stats[field] *= factor
        stats["ops"] /= factor
    path.write_text(json.dumps(run))


@pytest.fixture
def baseline(pytester):
    """Save one run of the one-line benchmark as run 0001; returns (storage, its JSON file)."""
    pytester.makepyfile(test_tiny=TINY_BENCHMARK)
    storage = pytester.path / "storage"
    options = _compare_options(BENCHMARKS / "README.md")
    saved = pytester.runpytest_subprocess(
        f"--benchmark-timer={options['--benchmark-timer']}", f"--benchmark-storage={storage}",
        "--benchmark-save=baseline", *QUICK,
    )
    assert saved.ret == 0, saved.stdout.str()
    (path,) = storage.glob("*/0001_baseline.json")
    return storage, path


def _compare(pytester, storage):
    options = _compare_options(BENCHMARKS / "README.md")
    options["--benchmark-storage"] = str(storage)
    return pytester.runpytest_subprocess(*(f"{name}={value}" for name, value in options.items()), *QUICK)


def test_compare_fails_against_a_much_faster_baseline(pytester, baseline):
    storage, path = baseline
    _rescale(path, 1.0 / MARGIN)
    result = _compare(pytester, storage)
    assert result.ret == 1
    result.stderr.fnmatch_lines(["*Performance has regressed:*",
                                 "*test_sum*Field 'min' has failed PercentageRegressionCheck*"])


def test_compare_passes_against_a_much_slower_baseline(pytester, baseline):
    storage, path = baseline
    _rescale(path, MARGIN)
    result = _compare(pytester, storage)
    assert result.ret == 0, result.stdout.str()
    result.stderr.no_fnmatch_line("*Performance has regressed*")


def _run(groups):
    """A pytest-benchmark JSON run with the given ``{group: {row: min seconds}}``."""
    return {"benchmarks": [
        {"name": f"test_x[{row}-size]", "group": group, "stats": {"min": seconds},
         "extra_info": {}}
        for group, rows in groups.items() for row, seconds in rows.items()
    ]}


def _ratios(tmp_path, groups, baseline=None):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run(groups)))
    extra = []
    if baseline is not None:
        extra = ["--baseline", str(tmp_path / "base.json")]
        (tmp_path / "base.json").write_text(json.dumps(_run(baseline)))
    return subprocess.run([sys.executable, str(BENCHMARKS / "ratios.py"), str(path), *extra],
                          capture_output=True, text=True)


MET = {
    "evi-full few-500": {"reference": 60.0, "fast": 1.0, "yardstick": 0.5},
    "evi-sweep dense-500": {"reference": 100.0, "fast": 1.0, "yardstick": 1.0},
}
MISSED = dict(MET, **{"evi-full few-500": {"reference": 40.0, "fast": 1.0, "yardstick": 0.5}})


def test_ratios_exit_zero_when_every_measured_target_is_met(tmp_path):
    proc = _ratios(tmp_path, MET)
    assert proc.returncode == 0, proc.stderr
    assert "target evi-full few-500: reference / fast = 60.00 >= 50: met" in proc.stdout
    assert "target evi-full few-500: fast / yardstick = 2.00 <= 3: met" in proc.stdout
    assert "target evi-full few-2000: reference / fast >= 50: not measured" in proc.stdout
    assert "NOT met" not in proc.stdout and "REGRESSED" not in proc.stdout


def test_the_committed_baseline_meets_every_target():
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "ratios.py"),
                           *map(str, BENCHMARKS.glob("baseline/*/0001_*.json"))],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert "0 not met, 0 regressed" in proc.stdout


def test_ratios_exit_one_on_a_target_the_committed_baseline_meets(tmp_path):
    proc = _ratios(tmp_path, MISSED)
    assert proc.returncode == 1
    assert "target evi-full few-500: reference / fast = 40.00 >= 50: REGRESSED" in proc.stdout
    assert "1 regressed" in proc.stdout


def test_ratios_exit_three_on_a_target_the_baseline_misses_too(tmp_path):
    proc = _ratios(tmp_path, MISSED, baseline=MISSED)
    assert proc.returncode == 3
    assert "target evi-full few-500: reference / fast = 40.00 >= 50: NOT met" in proc.stdout
    assert "1 not met, 0 regressed" in proc.stdout


def test_ratios_are_computed_on_the_minimum_times():
    ratios = runpy.run_path(str(BENCHMARKS / "ratios.py"))
    table = ratios["ratios"]({"g": {"reference": 6.0, "fast": 2.0, "yardstick": 4.0,
                                    "sweep": 0.5}})
    assert table == {("g", "reference / fast"): 3.0, ("g", "fast / yardstick"): 0.5,
                     ("g", "fast / sweep"): 4.0}
