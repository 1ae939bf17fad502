"""Tracked benchmarks: each ratio measured in the same run as the gate that checks it.

Usage, from the repository root after building the extensions::

    python benchmarks/track.py check --quick     # the quick subset, as .ci/run runs it
    python benchmarks/track.py check --history   # the full set, and its line in history.jsonl
    python benchmarks/track.py record            # measure afresh and write tracked.json
    python benchmarks/track.py record-calls      # re-record the calls only (exact, seconds)
    python benchmarks/track.py plot              # docs/benchmarks/history.png from the history

Every row of ``tracked_rows.py`` is a subject timed next to its yardstick in
this process, interleaved: blocks of about :data:`BLOCK_SECONDS` of calls of
one, then of the other, alternating which goes first, for as many rounds as
span the row's time. The row's ratio is the subject's least time per call
over the yardstick's least time per call, on two clocks: CPU time
(``time.process_time``, all threads of the process) and wall time
(``time.perf_counter``), which also sees sleeps, locks and idle workers. The
wall time is taken less the time the timing thread waited, ready to run, for
a core another process held (Linux's ``/proc/thread-self/schedstat``): on a
shared host a call of 80 ms is preempted in every round, and its raw wall
time measures the other processes; a ``time.sleep`` or a wait for a lock or
a pool is no such wait, so it still counts. (The scheduler accounts a wait
when the thread gets its core back, so the difference is kept at least the
CPU time over the threads: a block's wall time is never below its work.) A
host that is faster, slower or busier moves both sides, so the ratio is
compared with its recorded value in ``tracked.json``.

A row regresses when either ratio exceeds its recorded value times the
row's tolerance: the spread of :data:`RECORD_REPEATS` measurements at record
time, times :data:`NOISE_MARGIN`, kept between :data:`MIN_TOLERANCE` and
:data:`MAX_TOLERANCE` (below 1.5, so a subject 1.5x slower is caught). A row
over its tolerance is measured again, up to :data:`RETRIES` times, and
regresses only when every attempt is over (the least ratio of the attempts
is kept): a burst of another process's load does not last, a slower subject
does. The peak memory of one subject call (``tracemalloc``: the allocations
of Python and numpy) regresses above :data:`MEMORY_TOLERANCE` times its
recorded value plus :data:`MEMORY_SLACK` bytes. The calls of
``solve_certified`` and of Alg. 1 on each instance of
``tracked_rows.CALL_CASES`` are deterministic and compared exactly: any
change fails the check, which then prints the command that re-records them.

Threads are pinned to one (BLAS and OpenMP) unless the environment sets them,
before numpy loads, as in the recorded run; ``--threads N`` then sets the
``fast`` backend's threads (``fast.set_num_threads``).

Exit status of ``check``: 0 when no row regressed and the calls are the
recorded ones, 1 otherwise; ``record``, ``record-calls`` and ``plot`` exit 0.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import fast  # noqa: E402

RECORD = HERE / "tracked.json"
HISTORY = HERE / "history.jsonl"
PLOT = ROOT / "docs" / "benchmarks" / "history.png"
CLOCKS = ("cpu", "wall")

BLOCK_SECONDS = 0.002
"""CPU time of one block of calls of one side: short enough that many blocks fall
between two preemptions of a loaded host, long enough for the clocks to resolve."""
ROW_SECONDS = 1.5
"""CPU time a row's rounds span (both sides; at least its ``min_rounds`` rounds)."""
MAX_ROUNDS = 2000
WALL_LIMIT = 10.0
"""Factor over :data:`ROW_SECONDS` of wall time after which a row stops adding rounds
(past its ``min_rounds``), when the host leaves it little CPU."""
RECORD_REPEATS = 5
NOISE_MARGIN = 1.1
MIN_TOLERANCE = 1.25
MAX_TOLERANCE = 1.35
RETRIES = 2
MEMORY_TOLERANCE = 1.2
MEMORY_SLACK = 256 * 1024
RECORD_COMMAND = "python benchmarks/track.py record"
CALLS_COMMAND = "python benchmarks/track.py record-calls"


def _calls_per_block(function):
    start = time.process_time()
    function()
    return max(1, round(BLOCK_SECONDS / max(time.process_time() - start, 1e-7)))


def _open_schedstat():
    try:
        return os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None


_SCHEDSTAT = _open_schedstat()


def queue_seconds():
    """Seconds this thread has waited, ready to run, for a core (0.0 where Linux's
    ``/proc/thread-self/schedstat`` is missing: wall time is then taken whole)."""
    if _SCHEDSTAT is None:
        return 0.0
    return int(os.pread(_SCHEDSTAT, 128, 0).split()[1]) * 1e-9


def _time_block(function, n):
    cpu, wall, queued = time.process_time(), time.perf_counter(), queue_seconds()
    for _ in range(n):
        function()
    wall = time.perf_counter() - wall - (queue_seconds() - queued)
    cpu = time.process_time() - cpu
    return cpu / n, max(wall, cpu / max(fast.get_num_threads(), 1)) / n


def measure(subject, yardstick, seconds=ROW_SECONDS, min_rounds=7):
    """Time ``subject`` and ``yardstick`` interleaved; returns ``{clock: ratio}`` and the
    least seconds per call of each side, ``{"subject": {clock: s}, "yardstick": {...}}``."""
    subject(), yardstick()
    sides = {"subject": subject, "yardstick": yardstick}
    blocks = {name: _calls_per_block(function) for name, function in sides.items()}
    best = {name: {"cpu": float("inf"), "wall": float("inf")} for name in sides}
    start = time.perf_counter()
    spent = 0.0
    for round_ in range(MAX_ROUNDS):
        order = ("subject", "yardstick") if round_ % 2 == 0 else ("yardstick", "subject")
        for name in order:
            cpu, wall = _time_block(sides[name], blocks[name])
            spent += cpu * blocks[name]
            best[name]["cpu"] = min(best[name]["cpu"], cpu)
            best[name]["wall"] = min(best[name]["wall"], wall)
        if round_ + 1 >= min_rounds and (
                spent >= seconds or time.perf_counter() - start > WALL_LIMIT * seconds):
            break
    ratio = {clock: best["subject"][clock] / max(best["yardstick"][clock], 1e-12)
             for clock in CLOCKS}
    return ratio, best


def peak_bytes(function):
    """Peak bytes allocated and live at once during one call (``tracemalloc``)."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_row(row, repeats=1, seconds=ROW_SECONDS):
    """``{"ratios": [{clock: ratio}, ...], "seconds": best of the last, "peak_bytes": n}``."""
    subject, yardstick = row.build()
    runs = [measure(subject, yardstick, seconds, row.min_rounds) for _ in range(repeats)]
    return {"ratios": [ratio for ratio, _ in runs], "seconds": runs[-1][1],
            "peak_bytes": peak_bytes(subject)}


def tolerance(ratios):
    """The gate's factor for one clock from repeated ratios (see the module docstring)."""
    spread = max(ratios) / min(ratios)
    return min(MAX_TOLERANCE, max(MIN_TOLERANCE, spread * NOISE_MARGIN))


def count_calls(cases):
    """``{case: {"certified": n, "alg1": n}}``: the calls of each tracked instance."""
    out = {}
    for name, run in cases.items():
        certified, alg1 = run()
        out[name] = {"certified": certified, "alg1": alg1}
    return out


def compare_calls(recorded, measured):
    """Lines naming every case whose calls differ from the recorded ones (empty: all equal)."""
    lines = []
    for name in sorted(set(recorded) | set(measured)):
        old, new = recorded.get(name), measured.get(name)
        if old == new:
            continue
        if old is None or new is None:
            lines.append(f"calls {name}: {'not recorded' if old is None else 'not measured'}")
            continue
        for key in ("certified", "alg1"):
            if old[key] != new[key]:
                sense = "more" if new[key] > old[key] else "fewer"
                lines.append(f"calls {name}: {key} {new[key]:,} against {old[key]:,} recorded "
                             f"({new[key] / old[key]:.4f}x, {sense})")
    return lines


def verdict(recorded, ratio, peak):
    """The clocks and memory over the row's recorded values: a list of ``(what, value, limit)``
    for every one beyond its limit (empty when the row passes)."""
    over = []
    for clock in CLOCKS:
        limit = recorded[clock] * recorded["tolerance"][clock]
        if ratio[clock] > limit:
            over.append((f"{clock} ratio", ratio[clock], limit))
    limit = recorded["peak_bytes"] * MEMORY_TOLERANCE + MEMORY_SLACK
    if peak > limit:
        over.append(("peak bytes", peak, limit))
    return over


def _git(*args):
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def commit():
    """The checkout's commit (short hash, ``-dirty`` with local changes), or ``unknown``."""
    head = _git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return "unknown"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("-dirty" if dirty else "")


def host():
    """The host's name and CPU model."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()} ({model}, {os.cpu_count()} CPUs)"


def _settings():
    return {"commit": commit(), "host": host(), "threads": fast.get_num_threads(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "python": platform.python_version()}


def load_record(path=RECORD):
    if not Path(path).exists():
        return {"settings": {}, "rows": {}, "calls": {}}
    return json.loads(Path(path).read_text())


def save_record(record, path=RECORD):
    Path(path).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def record(rows, cases, path=RECORD, repeats=RECORD_REPEATS):
    """Measure ``rows`` ``repeats`` times each and the calls, and write them to ``path``
    (rows not measured keep their recorded values)."""
    saved = load_record(path)
    saved["settings"] = _settings()
    for row in rows:
        out = measure_row(row, repeats)
        entry = {"yardstick": row.yardstick, "peak_bytes": out["peak_bytes"], "tolerance": {}}
        for clock in CLOCKS:
            values = [ratio[clock] for ratio in out["ratios"]]
            entry[clock] = statistics.median(values)
            entry["tolerance"][clock] = tolerance(values)
        saved["rows"][row.name] = entry
        print(f"{row.name:32s} cpu {entry['cpu']:9.3f} x{entry['tolerance']['cpu']:.2f}  "
              f"wall {entry['wall']:9.3f} x{entry['tolerance']['wall']:.2f}  "
              f"peak {entry['peak_bytes'] / 2**20:8.2f} MiB", flush=True)
    saved["calls"] = count_calls(cases)
    save_record(saved, path)
    print(f"recorded {len(rows)} rows and {len(saved['calls'])} call cases in {path}")


def record_calls(cases, path=RECORD):
    """Re-record only the calls (after a deliberate change of ``solve_certified``'s calls)."""
    saved = load_record(path)
    before = saved.get("calls", {})
    saved["calls"] = count_calls(cases)
    for line in compare_calls(before, saved["calls"]) or ["calls unchanged"]:
        print(line)
    save_record(saved, path)
    print(f"recorded the calls of {len(saved['calls'])} cases in {path}")


def check(rows, cases, path=RECORD):
    """Measure ``rows`` and the calls against ``path``; returns ``(status, measured)``."""
    saved = load_record(path)
    failures, measured = [], {"rows": {}, "peak_bytes": {}}
    print(f"{'row':32s} {'yardstick':22s} {'cpu ratio':>19s} {'wall ratio':>19s} {'peak MiB':>9s}")
    for row in rows:
        recorded = saved["rows"].get(row.name)
        if recorded is None:
            failures.append(f"{row.name}: not recorded (run `{RECORD_COMMAND}`)")
            continue
        out = measure_row(row)
        ratio, peak, attempts = dict(out["ratios"][0]), out["peak_bytes"], 1
        while verdict(recorded, ratio, peak) and attempts <= RETRIES:
            again = measure_row(row)
            ratio = {clock: min(ratio[clock], again["ratios"][0][clock]) for clock in CLOCKS}
            peak, attempts = min(peak, again["peak_bytes"]), attempts + 1
        over = verdict(recorded, ratio, peak)
        measured["rows"][row.name], measured["peak_bytes"][row.name] = ratio, peak
        cells = " ".join(f"{ratio[c]:8.3f} ({recorded[c]:8.3f})" for c in CLOCKS)
        status = "REGRESSED" if over else "ok"
        print(f"{row.name:32s} {row.yardstick:22s} {cells} {peak / 2**20:9.2f}  {status}"
              + (f" after {attempts} attempts" if attempts > 1 else ""), flush=True)
        failures += [f"{row.name}: {what} {value:.4g} above its limit {limit:.4g}"
                     for what, value, limit in over]
    measured["calls"] = count_calls(cases)
    for name, calls in sorted(measured["calls"].items()):
        print(f"calls {name:24s} certified {calls['certified']:>13,}  alg1 {calls['alg1']:>13,}"
              f"  ratio {calls['certified'] / calls['alg1']:.4f}")
    changed = compare_calls(saved.get("calls", {}), measured["calls"])
    if changed:
        failures += changed + [f"(a deliberate change of the calls: re-record them with "
                               f"`{CALLS_COMMAND}`)"]
    print()
    for line in failures:
        print("FAILED " + line)
    print(f"tracked benchmarks: {'FAILED' if failures else 'passed'} ({len(rows)} rows, "
          f"{len(measured['calls'])} call cases, threads {fast.get_num_threads()})")
    return (1 if failures else 0), measured


def history_line(measured, settings):
    """One line of ``history.jsonl``: commit, host, threads, ratios, peak bytes and calls."""
    return {"commit": settings["commit"], "date": settings["date"], "host": settings["host"],
            "threads": settings["threads"], "ratios": measured["rows"],
            "peak_bytes": measured["peak_bytes"], "calls": measured["calls"]}


def append_history(line, path=HISTORY):
    """Add ``line`` to the history, replacing the line of the same commit if there is one."""
    path = Path(path)
    lines = [json.loads(text) for text in path.read_text().splitlines()] if path.exists() else []
    lines = [old for old in lines if old["commit"] != line["commit"]] + [line]
    path.write_text("".join(json.dumps(old, sort_keys=True) + "\n" for old in lines))


def plot(history=HISTORY, path=PLOT, recorded=RECORD):
    """Plot every row's CPU and wall ratio over its recorded value, one point per history line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    lines = [json.loads(text) for text in Path(history).read_text().splitlines()]
    rows = load_record(recorded)["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    styles = [(marker, line) for line in ("-", "--") for marker in ("o", "s", "^", "v", "D")]
    for ax, clock in zip(axes, CLOCKS):
        for k, name in enumerate(rows):
            points = [(i, line["ratios"][name][clock] / rows[name][clock])
                      for i, line in enumerate(lines) if name in line["ratios"]]
            if points:
                marker, style = styles[k % len(styles)]
                ax.plot(*zip(*points), marker=marker, linestyle=style, label=name)
        ax.axhline(1.5, color="red", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_yticks([0.67, 0.8, 1.0, 1.25, 1.5])
        ax.set_title(f"{clock} ratio / recorded ratio")
        ax.set_xticks(range(len(lines)), [line["commit"][:8] for line in lines], rotation=60,
                      fontsize=7)
    axes[1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"wrote {path} ({len(lines)} history lines)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("check", "record", "record-calls", "plot"))
    parser.add_argument("--quick", action="store_true", help="only the quick subset of rows")
    parser.add_argument("--rows", help="only the rows whose name contains this text")
    parser.add_argument("--threads", type=int, help="fast.set_num_threads(THREADS) first")
    parser.add_argument("--history", action="store_true",
                        help="check: append the run to history.jsonl and redraw the plot")
    args = parser.parse_args(argv)
    from tracked_rows import CALL_CASES, QUICK, ROWS

    if args.threads is not None:
        fast.set_num_threads(args.threads)
    rows = QUICK if args.quick else ROWS
    if args.rows:
        rows = tuple(row for row in rows if args.rows in row.name)
    if args.command == "record":
        record(rows, CALL_CASES)
    elif args.command == "record-calls":
        record_calls(CALL_CASES)
    elif args.command == "plot":
        plot()
    else:
        status, measured = check(rows, CALL_CASES)
        if args.history:
            append_history(history_line(measured, _settings()))
            plot()
        return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
