"""Ratios between the rows of each benchmark group, and the targets of the ``fast`` backend.

Usage: ``python benchmarks/ratios.py RUN.json`` on a file written by
``pytest --benchmark-json`` (or saved with ``--benchmark-save``). Prints, for
every group, ``reference / fast`` (speed-up) and ``fast / yardstick``
(numpy ``P @ v`` or scipy CSR matvec), computed on the minimum time of each
row (the least disturbed by other processes on a shared machine), then
whether each target is met.
"""

import json
import re
import sys

STAT = "min"

TARGETS = (
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
        row = re.match(r"[^\[]*\[([a-z]+)-", bench["name"]).group(1)
        groups.setdefault(bench["group"], {})[row] = bench["stats"][STAT]
    return groups


def ratios(groups):
    """``{(group, name): value}`` for the two ratios of every group that has their rows."""
    out = {}
    for group, rows in groups.items():
        if "fast" in rows and "reference" in rows:
            out[group, "reference / fast"] = rows["reference"] / rows["fast"]
        if "fast" in rows and "yardstick" in rows:
            out[group, "fast / yardstick"] = rows["fast"] / rows["yardstick"]
    return out


def main(path):
    table = ratios(group_times(path))
    print(f"{'group':28s} {'ratio':18s} {'value':>8s}  ({STAT} times)")
    for (group, name), value in sorted(table.items()):
        print(f"{group:28s} {name:18s} {value:8.2f}")
    print()
    for group, name, sense, bound in TARGETS:
        value = table.get((group, name))
        if value is None:
            print(f"target {group}: {name} {sense} {bound:g}: not measured in this run")
            continue
        met = value >= bound if sense == ">=" else value <= bound
        print(f"target {group}: {name} = {value:.2f} {sense} {bound:g}: "
              f"{'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main(sys.argv[1])
