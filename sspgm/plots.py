"""Figures of a validation sweep (matplotlib, Agg canvas, PNG files).

* :func:`plot_calls` -- calls used against ``1/eps`` on log-log axes, one
  panel per instance, with the theorem's total at the instance's ``B*`` and
  ``D`` (Thm. 1 or Thm. 2, :mod:`sspgm.validation.theorem`) and reference
  lines of slope 2 and 3 (the exponents of Thm. 1 and Thm. 2, whose
  :math:`\\tilde O` forms drop constants and logarithms).
* :func:`plot_calls_over_bound` -- every run's calls over its explicit total,
  one strip per configuration, against the line 1.
* :func:`plot_failures` -- failure rates with Clopper-Pearson intervals
  against the guarantee ``rate <= delta``, intervals too wide to test
  ``delta`` marked with the runs they would need.
* :func:`plot_diameter` -- ``D_hat / D`` of Alg. 3's diameter estimate
  against Lemma 9's band :math:`[1, (1 + 2\\epsilon(1+\\epsilon))(1+\\epsilon)]`.

Overlapping runs are spread by a small deterministic horizontal offset and
drawn half-transparent; legends sit outside the axes. Figures are drawn on
:class:`matplotlib.figure.Figure` objects directly (no pyplot state, no
display needed). Rows of runs that raised are left out.
"""

import math
import os

import numpy as np

import bounds

from .validation.statistics import failure_interval

__all__ = ["REFERENCE_SLOPES", "calls_panels", "failure_bars", "plot_calls",
           "plot_calls_over_bound", "plot_failures", "plot_diameter", "plot_all"]

_POINTS = 50
_ALPHA = 0.55
_DPI = 130


def _figure(n_panels, width=4.0, height=3.1, cols=3):
    from matplotlib.figure import Figure

    cols = min(n_panels, cols)
    rows = math.ceil(n_panels / cols)
    fig = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def _groups(rows, columns):
    out = {}
    for row in rows:
        out.setdefault(tuple(getattr(row, c) for c in columns), []).append(row)
    return out


def _ran(rows):
    return [row for row in rows if row.exception is None]


def _title(instance, theta):
    return instance if theta is None else f"{instance}  (Alg. 3, θ = {theta:g})"


def _colors(n):
    """``n`` colours of an ordered scale (for ``delta``)."""
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(0.15 + 0.7 * i / max(n - 1, 1)) for i in range(n)]


def _instance_colors(rows):
    """One distinct colour per instance name (the same in every panel)."""
    from matplotlib import colormaps

    names = list(dict.fromkeys(row.instance for row in rows))
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def _spread(index, count, width):
    """The offset of item ``index`` of ``count`` spread evenly over ``[-width/2, width/2]``."""
    return 0.0 if count == 1 else width * (index / (count - 1) - 0.5)


def _log_ticks(axis, values):
    """Major ticks exactly at ``values``, labelled plainly; no minor ticks or labels."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    values = sorted(set(values))
    axis.set_major_locator(FixedLocator(values))
    axis.set_major_formatter(_plain_formatter())
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _plain_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}")


def _log_y(ax, low, high):
    """A log y axis from ``low`` to ``high`` with readable major ticks and no minor labels.

    Over at least two decades the ticks are the powers of ten; over less,
    1, 2 and 5 times them, so that a panel always has labelled ticks.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.set_ylim(low / 1.6, high * 1.6)
    subs = (1.0,) if high / low >= 100 else (1.0, 2.0, 5.0)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(_power_of_ten))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _power_of_ten(value, _):
    """``value`` as :math:`m \\times 10^k` in mathtext (``m`` omitted when 1)."""
    k = math.floor(math.log10(value) + 1e-9)
    m = round(value / 10.0**k, 6)
    return f"$10^{{{k}}}$" if m == 1 else f"${m:g}\\times10^{{{k}}}$"


def _save(fig, path):
    fig.savefig(path, dpi=_DPI)
    return str(path)


REFERENCE_SLOPES = (2.0, 3.0)
"""The exponents of ``1/eps`` drawn as reference lines in :func:`plot_calls`:
Thm. 1's :math:`\\tilde O(\\epsilon^{-2})` and Thm. 2's :math:`\\tilde O(\\epsilon^{-3})`."""


def calls_panels(rows):
    """What :func:`plot_calls` draws, one entry per instance and ``theta``.

    Parameters
    ----------
    rows : sequence of Row
        Sweep rows (rows of runs that raised are left out).

    Returns
    -------
    list of dict
        In the order first seen, each with ``instance``, ``theta``, ``eps``
        (the grid's accuracies, decreasing), ``runs`` (the rows), ``totals``
        (``delta`` -> the theorem's total at each accuracy of ``eps``,
        :func:`~sspgm.validation.theorem.theorem_total`), and ``references``
        (exponent -> the line ``c eps^-exponent`` at each accuracy, through
        the geometric mean of the calls at the smallest accuracy, where the
        theorems' asymptotics apply best). Alg. 3 panels also hold
        ``diameter_totals`` (``delta`` -> Lemma 9's total of Alg. 4 at each
        accuracy of ``eps``, :func:`~sspgm.validation.theorem.diameter_total`);
        Alg. 1 panels an empty mapping.

    Examples
    --------
    >>> from sspgm.validation import Sweep, run_sweep
    >>> rows = run_sweep(Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1)),
    ...                  n_jobs=1, progress=False)
    >>> [(panel["instance"], panel["eps"]) for panel in calls_panels(rows)]
    [('tradeoff', [0.2, 0.1])]
    """
    from .validation.theorem import diameter_total, theorem_total

    panels = []
    for (instance, theta), members in _groups(_ran(rows), ("instance", "theta")).items():
        grid = sorted({row.eps for row in members}, reverse=True)
        by_delta = _groups(members, ("delta",))
        totals = {delta: [theorem_total(runs[0], e) for e in grid]
                  for (delta,), runs in sorted(by_delta.items())}
        end = np.exp(np.mean([np.log(r.calls) for r in members if r.eps == grid[-1]]))
        references = {k: [end * (grid[-1] / e) ** k for e in grid] for k in REFERENCE_SLOPES}
        diameter = {} if theta is None else {
            delta: [diameter_total(runs[0], e) for e in grid]
            for (delta,), runs in sorted(by_delta.items())}
        panels.append(dict(instance=instance, theta=theta, eps=grid, runs=members,
                           totals=totals, references=references, diameter_totals=diameter))
    return panels


def plot_calls(rows, path):
    """Measured calls against ``1/eps`` (log-log) with the theorems' totals and reference slopes.

    One panel per instance and ``theta``. Each run is a dot, coloured by
    ``delta`` and spread slightly around its ``1/eps``. A solid line of the
    same colour is the theorem's total at that ``delta``
    (:func:`~sspgm.validation.theorem.theorem_total`: Thm. 1 or Thm. 2 at the
    instance's ``B*`` and ``D``), which the calls may exceed only outside the
    theorem's event. On Alg. 3 panels, crosses are the calls of its diameter
    phase (Alg. 4) and dash-dotted lines Lemma 9's total for them
    (:func:`~sspgm.validation.theorem.diameter_total`). Grey lines of slope 2
    and 3 (:data:`REFERENCE_SLOPES`)
    end at the calls of the smallest accuracy: calls below them at the larger
    accuracies grew faster than that power of ``1/eps``. The run's own explicit total
    (the ``bound`` of its row) is left to :func:`plot_calls_over_bound`: Alg.
    1's calls equal it by construction.

    Parameters
    ----------
    rows : sequence of Row
        Sweep rows.
    path : str or os.PathLike
        PNG file to write.

    Returns
    -------
    str
        ``path``.

    See Also
    --------
    plot_all : every figure of a sweep.

    Examples
    --------
    One run per accuracy, each a dot under its explicit total:

    >>> import os, tempfile
    >>> from sspgm.validation import RunSpec, run_one
    >>> rows = [run_one(RunSpec("tradeoff", eps, delta=0.1, seed=0)) for eps in (0.2, 0.1)]
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     written = plot_calls(rows, os.path.join(directory, "calls.png"))
    ...     os.path.basename(written), os.path.getsize(written) > 0
    ('calls.png', True)
    """
    from matplotlib.lines import Line2D

    panels = calls_panels(rows)
    deltas = sorted({row.delta for row in _ran(rows)})
    colors = dict(zip(deltas, _colors(len(deltas))))
    styles = {2.0: (0, (4, 2)), 3.0: (0, (1, 1.5))}
    fig, axes = _figure(len(panels))
    for ax, panel in zip(axes, panels):
        members, grid = panel["runs"], panel["eps"]
        seeds = sorted({row.seed for row in members})
        for row in members:
            shift = _spread(deltas.index(row.delta), len(deltas), 0.16)
            shift += _spread(seeds.index(row.seed), len(seeds), 0.04)
            ax.plot(np.exp(np.log(1 / row.eps) + shift), row.calls, "o",
                    color=colors[row.delta], markersize=3.2, alpha=_ALPHA, mew=0, zorder=3)
            if row.theta is not None and row.calls_diameter:
                ax.plot(np.exp(np.log(1 / row.eps) + shift), row.calls_diameter, "x",
                        color=colors[row.delta], markersize=3.5, alpha=_ALPHA, zorder=3)
        x = [1 / e for e in grid]
        for delta, totals in panel["totals"].items():
            ax.plot(x, totals, "-", color=colors[delta], lw=1.3, zorder=2)
        for delta, totals in panel["diameter_totals"].items():
            ax.plot(x, totals, "-.", color=colors[delta], lw=1.1, zorder=2)
        for k, line in panel["references"].items():
            ax.plot(x, line, color="0.45", ls=styles[k], lw=1, zorder=1)
        ax.set_xscale("log")
        _log_ticks(ax.xaxis, x)
        values = [row.calls for row in members] + [v for t in panel["totals"].values() for v in t]
        values += [row.calls_diameter for row in members
                   if row.theta is not None and row.calls_diameter]
        values += [v for t in panel["diameter_totals"].values() for v in t]
        values += [v for line in panel["references"].values() for v in line]
        _log_y(ax, min(values), max(values))
        ax.set_xlabel("1 / ε")
        ax.set_ylabel("calls to the generative model")
        theorem = "Thm. 1" if panel["theta"] is None else "Thm. 2"
        ax.set_title(f"{_title(panel['instance'], panel['theta'])}: {theorem}", fontsize=9)
        ax.grid(True, which="major", alpha=0.25)
    handles = [Line2D([], [], ls="", marker="o", color=colors[d], label=f"calls, δ = {d:g}")
               for d in deltas]
    handles += [Line2D([], [], ls="-", color="0.2", label="the theorem's total (colour of δ)")]
    if any(panel["diameter_totals"] for panel in panels):
        handles += [Line2D([], [], ls="-.", marker="x", color="0.2",
                           label="Alg. 3: calls of Alg. 4 (x), Lemma 9's total (-.)")]
    handles += [Line2D([], [], ls=styles[k], color="0.45", label=f"slope {k:g}: ε$^{{-{k:g}}}$")
                for k in REFERENCE_SLOPES]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    return _save(fig, path)


def plot_calls_over_bound(rows, path):
    """Every run's calls over its explicit total, one strip per configuration.

    Parameters
    ----------
    rows : sequence of Row
    path : str or os.PathLike

    Returns
    -------
    str

    See Also
    --------
    plot_all : every figure of a sweep.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from sspgm.validation import Sweep, run_sweep
    >>> rows = run_sweep(Sweep(instances=("chain:n=3",), eps=(0.2,), seeds=(0, 1, 2)),
    ...                  n_jobs=1, progress=False)
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     png = pathlib.Path(plot_calls_over_bound(rows, pathlib.Path(directory) / "a.png"))
    ...     png.read_bytes().startswith(b"\\x89PNG")
    True
    """
    rows = _ran(rows)
    configs = _groups(rows, ("instance", "theta"))
    deltas = sorted({row.delta for row in rows})
    colors = dict(zip(deltas, _colors(len(deltas))))
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(max(6.0, 0.75 * len(configs) + 2.5), 4.2), layout="constrained")
    ax = fig.subplots()
    rng = np.random.default_rng(0)
    for position, members in enumerate(configs.values()):
        for row in members:
            x = (position + _spread(deltas.index(row.delta), len(deltas), 0.5)
                 + rng.uniform(-0.05, 0.05))
            ax.plot(x, row.calls_over_bound, "o", color=colors[row.delta], markersize=3.2,
                    alpha=_ALPHA, mew=0)
    ax.axhline(1.0, color="0.2", ls="--", lw=1)
    ax.set_xticks(range(len(configs)),
                  labels=[_title(i, t).replace("  ", "\n") for i, t in configs],
                  rotation=35, ha="right", fontsize=8)
    ratios = [row.calls_over_bound for row in rows]
    _log_y(ax, min(ratios + [1.0]), max(ratios + [1.0]))
    ax.set_ylabel("calls / explicit total")
    ax.grid(True, axis="y", which="major", alpha=0.25)
    handles = [Line2D([], [], ls="", marker="o", color=colors[d], label=f"δ = {d:g}")
               for d in deltas]
    handles.append(Line2D([], [], ls="--", color="0.2", label="explicit total"))
    fig.legend(handles=handles, loc="outside right center", fontsize=8, frameon=False)
    return _save(fig, path)


def failure_bars(rows, level=0.95):
    """What :func:`plot_failures` draws: one interval per instance, ``theta`` and ``delta``.

    Parameters
    ----------
    rows : sequence of Row
    level : float
        Coverage of the intervals.

    Returns
    -------
    list of dict
        Each with ``instance``, ``theta``, ``delta``, ``runs``, ``failures``
        (:func:`~sspgm.validation.theorem.fails_theorem`),
        ``rate``, ``low``, ``high``
        (:func:`~sspgm.validation.statistics.failure_interval`),
        ``tests_delta`` (``high <= delta``: a clean record shows ``rate <=
        delta``) and ``runs_needed``
        (:func:`~sspgm.validation.statistics.runs_to_test`).

    Examples
    --------
    >>> from sspgm.validation import Sweep, run_sweep
    >>> rows = run_sweep(Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1)),
    ...                  n_jobs=1, progress=False)
    >>> [(bar["runs"], bar["failures"]) for bar in failure_bars(rows)]
    [(4, 0)]
    """
    from .validation.statistics import runs_to_test
    from .validation.theorem import fails_theorem

    bars = []
    groups = _groups(_ran(rows), ("instance", "theta", "delta"))
    for (instance, theta, delta), runs in groups.items():
        failures = sum(fails_theorem(r) for r in runs)
        rate, low, high = failure_interval(failures, len(runs), level)
        bars.append(dict(instance=instance, theta=theta, delta=delta, runs=len(runs),
                         failures=failures, rate=rate, low=low, high=high,
                         tests_delta=high <= delta, runs_needed=runs_to_test(delta, level)))
    return bars


def plot_failures(rows, path, level=0.95):
    """Failure rates with Clopper-Pearson intervals, one panel per algorithm.

    Within a panel, each ``delta`` is a group of configurations side by side,
    with the guarantee ``rate <= delta`` drawn as a dashed line over the group.
    An interval that reaches above ``delta`` cannot show ``rate <= delta``: it
    is drawn dotted with an open marker, and above each group the number of
    such intervals, their runs and the runs needed (:func:`failure_bars`) are
    written.

    Parameters
    ----------
    rows : sequence of Row
    path : str or os.PathLike
    level : float
        Coverage of the intervals.

    Returns
    -------
    str

    See Also
    --------
    plot_all : every figure of a sweep.

    Examples
    --------
    Four runs of one configuration, none failing: one bar at 0 with its interval.

    >>> import os, tempfile
    >>> from sspgm.validation import Sweep, run_sweep, summarize
    >>> rows = run_sweep(Sweep(instances=("tradeoff",), eps=(0.2,), seeds=(0, 1, 2, 3)),
    ...                  n_jobs=1, progress=False)
    >>> [summary.failures for summary in summarize(rows)]
    [0]
    >>> out = tempfile.mkstemp(suffix=".png")[1]
    >>> plot_failures(rows, out) == out
    True
    >>> os.remove(out)
    """
    from matplotlib.lines import Line2D

    bars = failure_bars(rows, level)
    configs = list(dict.fromkeys((b["instance"], b["theta"]) for b in bars))
    colors = _instance_colors(_ran(rows))
    thetas = list(dict.fromkeys(b["theta"] for b in bars))
    fig, axes = _figure(len(thetas), width=5.2, height=3.6, cols=2)
    wide_seen = False
    for ax, theta in zip(axes, thetas):
        mine = [c for c in configs if c[1] == theta]
        deltas = sorted({b["delta"] for b in bars if b["theta"] == theta})
        sizes = sorted({b["runs"] for b in bars if b["theta"] == theta})
        for bar in (b for b in bars if b["theta"] == theta):
            x = deltas.index(bar["delta"]) + _spread(mine.index((bar["instance"], theta)),
                                                     len(mine), 0.6)
            color = colors[bar["instance"]]
            line = ax.errorbar(x, bar["rate"], yerr=[[bar["rate"] - bar["low"]],
                                                     [bar["high"] - bar["rate"]]],
                               fmt="o", capsize=2.5, color=color, markersize=4,
                               mfc=color if bar["tests_delta"] else "white")
            if not bar["tests_delta"]:
                line[2][0].set_linestyle(":")
        for position, delta in enumerate(deltas):
            wide = [b for b in bars if b["theta"] == theta and b["delta"] == delta
                    and not b["tests_delta"]]
            if wide:
                wide_seen = True
                runs = "/".join(str(n) for n in sorted({b["runs"] for b in wide}))
                ax.annotate(f"{len(wide)} too wide:\n{runs} runs < {wide[0]['runs_needed']}",
                            (position, max(b["high"] for b in wide)), xytext=(0, 4),
                            textcoords="offset points", ha="center", fontsize=7)
        for position, delta in enumerate(deltas):
            ax.plot([position - 0.4, position + 0.4], [delta, delta], "k--", lw=1)
        ax.set_xticks(range(len(deltas)), labels=[f"{d:g}" for d in deltas])
        ax.set_xlim(-0.6, len(deltas) - 0.4)
        top = max(deltas + [b["high"] for b in bars if b["theta"] == theta])
        ax.set_ylim(-0.02, 1.2 * top + 0.02)
        ax.set_xlabel("δ")
        ax.set_ylabel(f"failure rate, {level:.0%} Clopper-Pearson")
        name = "Alg. 1 (Thm. 1)" if theta is None else f"Alg. 3, θ = {theta:g} (Thm. 2)"
        runs = "/".join(str(n) for n in sizes)
        ax.set_title(f"{name}: {runs} runs per interval", fontsize=9)
        ax.grid(True, axis="y", alpha=0.25)
    handles = [Line2D([], [], ls="", marker="o", color=color, label=name)
               for name, color in colors.items()]
    handles.append(Line2D([], [], ls="--", color="k", label="guarantee: rate ≤ δ"))
    if wide_seen:
        handles.append(Line2D([], [], ls=":", marker="o", mfc="white", color="0.3",
                              label="too wide to test δ\n(runs < runs needed)"))
    fig.legend(handles=handles, loc="outside right center", fontsize=8, frameon=False)
    return _save(fig, path)


def plot_diameter(rows, path):
    """``D_hat / D`` of Alg. 3 runs against Lemma 9's band, in one panel.

    The band at accuracy ``e`` of the diameter subroutine is

    .. math::

        1 \\le \\hat D / D \\le (1 + 2e(1+e))(1+e)

    (``bounds.D_HAT_UPPER``); the subroutine runs at the accuracy recorded
    in each row's ``eps_diameter``.

    Parameters
    ----------
    rows : sequence of Row
        Rows with ``theta`` set (others are ignored).
    path : str or os.PathLike

    Returns
    -------
    str or None
        ``path``, or None when no row has ``theta`` set.

    See Also
    --------
    plot_all : every figure of a sweep.

    Examples
    --------
    Only Alg. 3 runs estimate the diameter:

    >>> from sspgm.validation import Sweep, run_sweep
    >>> sweep = Sweep(instances=("theta_example",), eps=(0.2,), seeds=(0,), thetas=(3.0,))
    >>> rows = run_sweep(sweep, n_jobs=1, progress=False)
    >>> import os, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "diameter.png")
    >>> plot_diameter(rows, path) == path, os.path.getsize(path) > 0
    (True, True)
    >>> tmp.cleanup()
    """
    from matplotlib.figure import Figure

    theta_rows = [r for r in _ran(rows) if r.theta is not None]
    if not theta_rows:
        return None
    groups = _groups(theta_rows, ("instance", "theta"))
    colors = _instance_colors(theta_rows)
    fig = Figure(figsize=(7.0, 3.8), layout="constrained")
    ax = fig.subplots()
    acc = np.array([r.eps_diameter for r in theta_rows])
    grid = np.geomspace(acc.min() / 1.15, acc.max() * 1.15, _POINTS)
    upper = bounds.D_HAT_UPPER / bounds.D
    top = np.array([float(upper.subs(bounds.eps, e)) for e in grid])
    ax.fill_between(grid, np.ones_like(grid), top, alpha=0.15, color="tab:green", lw=0,
                    label="Lemma 9 band")
    ax.plot(grid, top, color="tab:green", lw=1)
    ax.axhline(1.0, color="tab:green", lw=1)
    for index, (config, members) in enumerate(groups.items()):
        shift = _spread(index, len(groups), 0.12)
        ax.plot([r.eps_diameter * np.exp(shift) for r in members],
                [r.D_hat / r.D for r in members], "o", color=colors[config[0]], alpha=_ALPHA,
                markersize=4, mew=0, label=_title(*config))
    ax.set_xscale("log")
    _log_ticks(ax.xaxis, acc)
    ax.set_xlabel("accuracy ε of the diameter subroutine")
    ax.set_ylabel("D̂ / D")
    ax.grid(True, alpha=0.25)
    fig.legend(loc="outside right center", fontsize=8, frameon=False)
    return _save(fig, path)


def plot_all(rows, directory):
    """Write ``calls.png``, ``calls_over_bound.png``, ``failures.png`` and ``diameter.png``.

    Parameters
    ----------
    rows : sequence of Row
    directory : str or os.PathLike
        Created if missing.

    Returns
    -------
    list of str
        The files written (``diameter.png`` only with Alg. 3 rows; nothing
        when no run returned a policy).

    See Also
    --------
    sspgm.validation.run_sweep : the rows.

    Examples
    --------
    >>> from sspgm.validation import Sweep, run_sweep
    >>> sweep = Sweep(instances=("tradeoff",), eps=(0.2, 0.1), seeds=(0, 1))
    >>> rows = run_sweep(sweep, n_jobs=1, progress=False)
    >>> import os, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> sorted(os.path.basename(path) for path in plot_all(rows, tmp.name))
    ['calls.png', 'calls_over_bound.png', 'failures.png']
    >>> tmp.cleanup()
    """
    if not _ran(rows):
        return []
    os.makedirs(directory, exist_ok=True)
    written = [
        plot_calls(rows, os.path.join(directory, "calls.png")),
        plot_calls_over_bound(rows, os.path.join(directory, "calls_over_bound.png")),
        plot_failures(rows, os.path.join(directory, "failures.png")),
        plot_diameter(rows, os.path.join(directory, "diameter.png")),
    ]
    return [p for p in written if p is not None]
