"""The gate of the tracked benchmarks (``benchmarks/track.py``), on synthetic measurements.

No test here times anything: the measurements a check compares are replaced by
given ratios, so each verdict below is decided by the gate's arithmetic alone.
"""

import json
import runpy
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def track():
    """The namespace of ``benchmarks/track.py`` (run as a module, not as a script)."""
    return runpy.run_path(str(BENCHMARKS / "track.py"))


RECORDED = {"cpu": 2.0, "wall": 2.0, "tolerance": {"cpu": 1.25, "wall": 1.3},
            "peak_bytes": 10 * 2**20, "yardstick": "P @ v"}


def test_a_ratio_within_its_tolerance_passes(track):
    assert track["verdict"](RECORDED, {"cpu": 2.49, "wall": 2.59}, 10 * 2**20) == []


def test_a_ratio_beyond_its_tolerance_is_named_on_its_clock(track):
    over = track["verdict"](RECORDED, {"cpu": 3.0, "wall": 2.0}, 10 * 2**20)
    assert [(what, value) for what, value, _ in over] == [("cpu ratio", 3.0)]
    over = track["verdict"](RECORDED, {"cpu": 2.0, "wall": 2.61}, 10 * 2**20)
    assert [(what, limit) for what, _, limit in over] == [("wall ratio", 2.0 * 1.3)]


def test_memory_beyond_its_tolerance_is_named(track):
    limit = 10 * 2**20 * track["MEMORY_TOLERANCE"] + track["MEMORY_SLACK"]
    assert track["verdict"](RECORDED, {"cpu": 2.0, "wall": 2.0}, limit) == []
    over = track["verdict"](RECORDED, {"cpu": 2.0, "wall": 2.0}, limit + 1)
    assert [what for what, _, _ in over] == ["peak bytes"]


def test_the_tolerance_follows_the_noise_and_always_catches_one_and_a_half(track):
    assert track["tolerance"]([1.0, 1.0, 1.0]) == track["MIN_TOLERANCE"]
    assert track["tolerance"]([1.0, 1.2]) == pytest.approx(1.2 * track["NOISE_MARGIN"])
    assert track["tolerance"]([1.0, 3.0]) == track["MAX_TOLERANCE"] < 1.5


def test_calls_are_compared_exactly_and_named(track):
    recorded = {"a": {"certified": 100, "alg1": 1000}, "b": {"certified": 5, "alg1": 7}}
    assert track["compare_calls"](recorded, json.loads(json.dumps(recorded))) == []
    lines = track["compare_calls"](recorded, {"a": {"certified": 101, "alg1": 1000},
                                              "b": {"certified": 5, "alg1": 6}})
    assert lines == ["calls a: certified 101 against 100 recorded (1.0100x, more)",
                     "calls b: alg1 6 against 7 recorded (0.8571x, fewer)"]
    assert track["compare_calls"](recorded, {"a": recorded["a"]}) == ["calls b: not measured"]


class FakeRow:
    def __init__(self, name):
        self.name, self.yardstick, self.min_rounds = name, "yardstick", 7


def _check(track, tmp_path, monkeypatch, attempts, calls):
    """Run ``check`` on one row recorded at ratio 2.0 whose successive measurements give the
    ratios ``attempts``, and on one call case measured at ``calls``."""
    path = tmp_path / "tracked.json"
    track["save_record"]({"settings": {}, "rows": {"row": RECORDED},
                          "calls": {"case": {"certified": 10, "alg1": 20}}}, path)
    queue = list(attempts)

    def measure_row(row):
        ratio = queue.pop(0)
        return {"ratios": [{"cpu": ratio, "wall": ratio}], "peak_bytes": 10 * 2**20}

    check = track["check"]
    monkeypatch.setitem(check.__globals__, "measure_row", measure_row)
    status, measured = check((FakeRow("row"),), {"case": lambda: calls}, path)
    return status, measured, queue


def test_a_row_passing_at_once_is_measured_once(track, tmp_path, monkeypatch):
    status, measured, left = _check(track, tmp_path, monkeypatch, [2.1, 9.0, 9.0], (10, 20))
    assert status == 0 and left == [9.0, 9.0]
    assert measured["rows"]["row"] == {"cpu": 2.1, "wall": 2.1}


def test_a_row_over_once_is_measured_again_and_passes(track, tmp_path, monkeypatch):
    status, measured, left = _check(track, tmp_path, monkeypatch, [3.0, 2.2, 9.0], (10, 20))
    assert status == 0 and left == [9.0]
    assert measured["rows"]["row"] == {"cpu": 2.2, "wall": 2.2}


def test_a_row_over_at_every_attempt_fails(track, tmp_path, monkeypatch, capsys):
    status, measured, left = _check(track, tmp_path, monkeypatch, [3.0, 3.2, 3.1], (10, 20))
    assert status == 1 and left == []
    assert measured["rows"]["row"] == {"cpu": 3.0, "wall": 3.0}
    out = capsys.readouterr().out
    assert "FAILED row: cpu ratio 3 above its limit 2.5" in out
    assert "tracked benchmarks: FAILED" in out


def test_a_change_of_calls_fails_and_says_how_to_re_record(track, tmp_path, monkeypatch, capsys):
    status, _, _ = _check(track, tmp_path, monkeypatch, [2.0], (11, 20))
    assert status == 1
    out = capsys.readouterr().out
    assert "FAILED calls case: certified 11 against 10 recorded (1.1000x, more)" in out
    assert "`python benchmarks/track.py record-calls`" in out


def test_record_calls_rewrites_only_the_calls(track, tmp_path, capsys):
    path = tmp_path / "tracked.json"
    track["save_record"]({"settings": {"host": "h"}, "rows": {"row": RECORDED},
                          "calls": {"case": {"certified": 10, "alg1": 20}}}, path)
    track["record_calls"]({"case": lambda: (8, 20)}, path)
    saved = json.loads(path.read_text())
    assert saved["calls"] == {"case": {"certified": 8, "alg1": 20}}
    assert saved["rows"] == {"row": RECORDED} and saved["settings"] == {"host": "h"}
    assert "calls case: certified 8 against 10 recorded (0.8000x, fewer)" in capsys.readouterr().out


def test_history_keeps_one_line_per_commit(track, tmp_path):
    path = tmp_path / "history.jsonl"
    settings = {"commit": "a", "date": "d", "host": "h", "threads": 1}
    measured = {"rows": {"row": {"cpu": 1.0, "wall": 1.0}}, "peak_bytes": {"row": 1},
                "calls": {"case": {"certified": 1, "alg1": 2}}}
    track["append_history"](track["history_line"](measured, settings), path)
    track["append_history"](track["history_line"](measured, dict(settings, commit="b")), path)
    again = dict(measured, rows={"row": {"cpu": 2.0, "wall": 2.0}})
    track["append_history"](track["history_line"](again, settings), path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["commit"] for line in lines] == ["b", "a"]
    assert lines[1]["ratios"] == {"row": {"cpu": 2.0, "wall": 2.0}}
    assert set(lines[1]) == {"commit", "date", "host", "threads", "ratios", "peak_bytes", "calls"}


def test_every_tracked_row_and_call_case_is_recorded():
    import ast

    source = (BENCHMARKS / "tracked_rows.py").read_text()
    names = {node.args[0].value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Row"}
    recorded = json.loads((BENCHMARKS / "tracked.json").read_text())
    assert names == set(recorded["rows"])
    assert len(recorded["calls"]) >= 1
    for entry in recorded["rows"].values():
        assert all(entry["tolerance"][clock] < 1.5 for clock in ("cpu", "wall"))


def _readme_test_command():
    """The line of the README's first code block that runs the test suite."""
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    return next(line for line in first_block.splitlines() if "pytest" in line)


def test_ci_runs_the_readme_test_command_and_the_quick_tracked_check():
    ci = " ".join((ROOT / ".ci" / "run").read_text().replace("\\\n", " ").split())
    assert " ".join(_readme_test_command().split()) in ci
    assert "benchmarks/track.py check --quick" in ci
