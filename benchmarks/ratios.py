"""Ratios between the rows of each benchmark group, and the targets of the ``fast`` backend.

Usage: ``python benchmarks/ratios.py RUN.json [--baseline BASE.json]`` on a
file written by ``pytest --benchmark-json`` (or saved with
``--benchmark-save``). Prints, for every group, ``reference / fast``
(speed-up), ``fast / yardstick`` (the group's yardstick, see
``bench_kernels.py``) and ``fast / sweep`` (box construction against one
sweep), computed on the minimum time of each row (the least disturbed by
other processes on a shared machine), and the memory of the compiled boxes
over the CSR counts where recorded; then the status of each target:

- ``met``;
- ``REGRESSED``: not met in this run, met in the baseline (by default the
  committed one, ``benchmarks/baseline``);
- ``NOT met``: not met in this run nor in the baseline (or the baseline does
  not measure it).

Exit status: 0 when every target the run measures is met, 1 when one
regressed, 3 when some are not met and none regressed (2: bad arguments).
The targets are kept current: each is met by the committed baseline, so a
healthy tree exits 0. Where a target is looser than the aim that first set
it, ``benchmarks/README.md`` says which aim is still open.
"""

import argparse
import json
import re
import sys
from pathlib import Path

STAT = "min"

TARGETS = (
    ("evi-full few-500", "reference / fast", ">=", 50.0),
    ("evi-full few-2000", "reference / fast", ">=", 50.0),
    ("evi-full few-500", "fast / yardstick", "<=", 3.0),
    ("evi-full few-2000", "fast / yardstick", "<=", 3.0),
    ("evi-full sparse-10000", "fast / yardstick", "<=", 2.0),
    ("evi-full sparse-100000", "fast / yardstick", "<=", 2.0),
    ("evi-sweep sparse-1000000", "fast / yardstick", "<=", 2.5),
    ("evi-sweep sparse-1000000", "memory / counts", "<=", 2.0),
    ("evi-boxes sparse-1000000", "fast / sweep", "<=", 5.0),
    ("vi-full densestored-2000", "reference / fast", ">=", 1.0),
    ("vi-full sparse-10000", "reference / fast", ">=", 1.0),
    ("solve dense-500", "reference / fast", ">=", 250.0),
    ("evi-sweep dense-500", "reference / fast", ">=", 50.0),
    ("evi-sweep dense-100", "fast / yardstick", "<=", 5.0),
    ("evi-sweep dense-500", "fast / yardstick", "<=", 4.0),
    ("evi-sweep dense-2000", "fast / yardstick", "<=", 2.5),
    ("vi-sweep dense-100", "fast / yardstick", "<=", 2.0),
    ("vi-sweep dense-500", "fast / yardstick", "<=", 1.75),
    ("vi-sweep dense-2000", "fast / yardstick", "<=", 2.0),
    ("evi-sweep sparse-100000", "fast / yardstick", "<=", 3.0),
)
"""``(group, ratio, sense, bound)``: every target, met by the committed baseline."""

BASELINE = next((Path(__file__).resolve().parent / "baseline").glob("*/0001_*.json"), None)
STATUS = {"met": 0, "REGRESSED": 1, "NOT met": 3}


def group_times(path):
    """``{group: {row: seconds}}`` from a pytest-benchmark JSON file; rows named by impl."""
    with open(path) as handle:
        run = json.load(handle)
    groups = {}
    for bench in run["benchmarks"]:
        row = re.match(r"[^\[]*\[([a-z]+)", bench["name"]).group(1)
        groups.setdefault(bench["group"], {})[row] = bench["stats"][STAT]
        if "memory_ratio" in bench.get("extra_info", {}):
            groups[bench["group"]]["memory / counts"] = bench["extra_info"]["memory_ratio"]
    return groups


def ratios(groups):
    """``{(group, name): value}`` for the two ratios of every group that has their rows."""
    out = {}
    for group, rows in groups.items():
        if "fast" in rows and "reference" in rows:
            out[group, "reference / fast"] = rows["reference"] / rows["fast"]
        if "fast" in rows and "yardstick" in rows:
            out[group, "fast / yardstick"] = rows["fast"] / rows["yardstick"]
        if "fast" in rows and "sweep" in rows:
            out[group, "fast / sweep"] = rows["fast"] / rows["sweep"]
        if "memory / counts" in rows:
            out[group, "memory / counts"] = rows["memory / counts"]
    return out


def _met(value, sense, bound):
    return value >= bound if sense == ">=" else value <= bound


def statuses(table, baseline=None):
    """``[(group, name, sense, bound, value, status)]`` of every target measured in ``table``
    (``status``: ``met``, ``REGRESSED`` or ``NOT met``; see the module docstring)."""
    out = []
    for group, name, sense, bound in TARGETS:
        value = table.get((group, name))
        if value is None:
            continue
        status = "met"
        if not _met(value, sense, bound):
            before = (baseline or {}).get((group, name))
            status = "REGRESSED" if before is not None and _met(before, sense, bound) else "NOT met"
        out.append((group, name, sense, bound, value, status))
    return out


def main(argv=None):
    """Print the ratios and the targets of a run; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="pytest-benchmark JSON of the run")
    parser.add_argument("--baseline", default=BASELINE,
                        help="pytest-benchmark JSON the statuses compare with "
                             "(default: the committed baseline)")
    args = parser.parse_args(argv)
    table = ratios(group_times(args.run))
    baseline = ratios(group_times(args.baseline)) if args.baseline else {}
    print(f"{'group':28s} {'ratio':18s} {'value':>8s}  ({STAT} times)")
    for (group, name), value in sorted(table.items()):
        print(f"{group:28s} {name:18s} {value:8.2f}")
    print()
    measured = statuses(table, baseline)
    for group, name, sense, bound, value, status in measured:
        print(f"target {group}: {name} = {value:.2f} {sense} {bound:g}: {status}")
    for group, name, sense, bound in TARGETS:
        if (group, name) not in table:
            print(f"target {group}: {name} {sense} {bound:g}: not measured in this run")
    worst = max((STATUS[status] for *_, status in measured), default=0)
    counts = {s: sum(m[-1] == s for m in measured) for s in STATUS}
    print(f"\n{counts['met']} met, {counts['NOT met']} not met, {counts['REGRESSED']} regressed")
    return worst


if __name__ == "__main__":
    sys.exit(main())
