"""Ratios between the rows of each benchmark group, and the targets of the ``fast`` backend.

Usage: ``python benchmarks/ratios.py RUN.json`` on a file written by
``pytest --benchmark-json`` (or saved with ``--benchmark-save``). Prints, for
every group, ``reference / fast`` (speed-up), ``fast / yardstick`` (the
group's yardstick, see ``bench_kernels.py``) and ``fast / sweep`` (box
construction against one sweep), computed on the minimum time of each row
(the least disturbed by other processes on a shared machine), and the memory
of the compiled boxes over the CSR counts where recorded; then whether each
target is met.
"""

import json
import re
import sys

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
    ("solve dense-500", "reference / fast", ">=", 300.0),
    ("evi-sweep dense-500", "reference / fast", ">=", 50.0),
    ("evi-sweep dense-100", "fast / yardstick", "<=", 1.5),
    ("evi-sweep dense-500", "fast / yardstick", "<=", 1.5),
    ("evi-sweep dense-2000", "fast / yardstick", "<=", 1.5),
    ("vi-sweep dense-100", "fast / yardstick", "<=", 1.25),
    ("vi-sweep dense-500", "fast / yardstick", "<=", 1.25),
    ("vi-sweep dense-2000", "fast / yardstick", "<=", 1.25),
    ("evi-sweep sparse-100000", "fast / yardstick", "<=", 3.0),
)


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


def main(path):
    """Print the ratios and the targets of the run in ``path``; returns the exit status."""
    table = ratios(group_times(path))
    print(f"{'group':28s} {'ratio':18s} {'value':>8s}  ({STAT} times)")
    for (group, name), value in sorted(table.items()):
        print(f"{group:28s} {name:18s} {value:8.2f}")
    print()
    missed = 0
    for group, name, sense, bound in TARGETS:
        value = table.get((group, name))
        if value is None:
            print(f"target {group}: {name} {sense} {bound:g}: not measured in this run")
            continue
        met = value >= bound if sense == ">=" else value <= bound
        missed += not met
        print(f"target {group}: {name} = {value:.2f} {sense} {bound:g}: "
              f"{'met' if met else 'NOT met'}")
    if missed:
        print(f"\n{missed} target{'s' if missed > 1 else ''} NOT met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
