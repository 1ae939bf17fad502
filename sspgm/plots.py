"""Figures of a validation sweep (matplotlib, Agg canvas, PNG files).

* :func:`plot_calls` -- calls used against ``1/eps`` on log-log axes, with the
  explicit total of the allocation function at each run's final ``Delta``
  (for Alg. 3 plus the calls of its diameter phase, which the total leaves
  out) and the Thm. 1 / Thm. 2 curves of :mod:`bounds` (their :math:`\\tilde O`
  form: unit constants, no logarithms, so only their slope is meaningful).
* :func:`plot_failures` -- failure rate against ``delta`` with
  Clopper-Pearson intervals and the line ``rate = delta``.
* :func:`plot_diameter` -- ``D_hat / D`` of Alg. 3's diameter estimate
  against Lemma 9's band :math:`[1, (1 + 2\\epsilon(1+\\epsilon))(1+\\epsilon)]`.

Figures are drawn on :class:`matplotlib.figure.Figure` objects directly
(no pyplot state, no display needed).
"""

import math
import os

import numpy as np

import bounds

from .validation import clopper_pearson

__all__ = ["plot_calls", "plot_failures", "plot_diameter", "plot_all"]

_EPS_POINTS = 50


def _figure(n_panels, width=4.2, height=3.4):
    from matplotlib.figure import Figure

    cols = min(n_panels, 3)
    rows = math.ceil(n_panels / cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def _groups(rows, columns):
    out = {}
    for row in rows:
        out.setdefault(tuple(row[c] for c in columns), []).append(row)
    return out


def _label(ax, xlabel, ylabel, instance, theta):
    """Axis labels, the panel's title (instance, and ``theta`` for Alg. 3) and the legend."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(instance if theta is None else f"{instance} (Alg. 3, theta={theta:g})",
                 fontsize=9)
    ax.legend(fontsize=7)


def _save(fig, path):
    fig.savefig(path, dpi=110)
    return str(path)


def _theorem_curve(row, eps_grid):
    """Thm. 1 (``theta`` unset) or Thm. 2 at the instance's constants, or None if it vanishes."""
    common = dict(S=row["n_states"], A=row["n_actions"], Gamma=row["branching"])
    if row["theta"] is None:
        values = [
            bounds.samp_comp(e, B=row["B_star"], cmin=row["c_min"], **common) for e in eps_grid
        ]
        return "Thm. 1 (O~ form)", np.array(values)
    if row["B_star"] <= 0:
        return None
    values = [
        bounds.samp_comp_theta(e, theta=row["theta"], D=row["D"], B=row["B_star"], **common)
        for e in eps_grid
    ]
    return "Thm. 2 (O~ form)", np.array(values)


def plot_calls(rows, path):
    """Calls used against ``1/eps`` (log-log), one panel per instance and ``theta``.

    Parameters
    ----------
    rows : sequence of dict
        Sweep rows (:data:`sspgm.validation.COLUMNS`).
    path : str or os.PathLike
        PNG file to write.

    Returns
    -------
    str
        ``path``.
    """
    groups = _groups(rows, ("instance", "theta"))
    fig, axes = _figure(len(groups))
    for ax, ((instance, theta), members) in zip(axes, groups.items()):
        inv = np.array([1.0 / r["eps"] for r in members])
        ax.scatter(inv, [r["calls"] for r in members], s=14, label="calls used", zorder=3)
        by_eps = _groups(members, ("eps",))
        eps_sorted = sorted(e for (e,) in by_eps)
        explicit = [
            np.median([r["bound"] + r["calls_diameter"] for r in by_eps[(e,)]])
            for e in eps_sorted
        ]
        label = "explicit total (eq. 6)" + ("" if theta is None else " + diameter phase")
        ax.plot([1 / e for e in eps_sorted], explicit, "k--", label=label)
        grid = np.geomspace(min(eps_sorted), max(eps_sorted), _EPS_POINTS)
        curve = _theorem_curve(members[0], grid)
        if curve is not None:
            ax.plot(1 / grid, curve[1], ":", color="tab:red", label=curve[0])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([1 / e for e in eps_sorted], labels=[f"{1 / e:g}" for e in eps_sorted])
        ax.minorticks_off()
        _label(ax, "1 / eps", "calls to the generative model", instance, theta)
    return _save(fig, path)


def plot_failures(rows, path, level=0.95):
    """Failure rate against ``delta`` with Clopper-Pearson intervals, one panel per instance.

    Parameters
    ----------
    rows : sequence of dict
    path : str or os.PathLike
    level : float
        Coverage of the intervals.

    Returns
    -------
    str
    """
    groups = _groups(rows, ("instance", "theta"))
    fig, axes = _figure(len(groups))
    for ax, ((instance, theta), members) in zip(axes, groups.items()):
        by_delta = _groups(members, ("delta",))
        deltas = sorted(d for (d,) in by_delta)
        rates, lows, highs = [], [], []
        for d in deltas:
            runs = by_delta[(d,)]
            k = sum(not r["success"] for r in runs)
            low, high = clopper_pearson(k, len(runs), level)
            rates.append(k / len(runs))
            lows.append(k / len(runs) - low)
            highs.append(high - k / len(runs))
        ax.errorbar(deltas, rates, yerr=[lows, highs], fmt="o", capsize=3,
                    label=f"failure rate ({level:.0%} CP)")
        top = max(deltas) * 1.1
        ax.plot([0, top], [0, top], "k--", label="rate = delta")
        ax.set_xlim(0, top)
        ax.set_ylim(-0.01, 1.1 * max(top, max(r + h for r, h in zip(rates, highs))))
        _label(ax, "delta", "failure rate", instance, theta)
    return _save(fig, path)


def plot_diameter(rows, path):
    """``D_hat / D`` of Alg. 3 runs against Lemma 9's band, one panel per instance.

    The band at accuracy ``e`` of the diameter subroutine is

    .. math::

        1 \\le \\hat D / D \\le (1 + 2e(1+e))(1+e)

    (``bounds.D_HAT_UPPER``); the subroutine runs at the accuracy recorded
    in each row's ``eps_diameter``.

    Parameters
    ----------
    rows : sequence of dict
        Rows with ``theta`` set (others are ignored).
    path : str or os.PathLike

    Returns
    -------
    str or None
        ``path``, or None when no row has ``theta`` set.
    """
    theta_rows = [r for r in rows if r["theta"] is not None]
    if not theta_rows:
        return None
    groups = _groups(theta_rows, ("instance", "theta"))
    fig, axes = _figure(len(groups))
    upper = bounds.D_HAT_UPPER / bounds.D
    for ax, ((instance, theta), members) in zip(axes, groups.items()):
        acc = np.array([r["eps_diameter"] for r in members])
        ax.scatter(acc, [r["D_hat"] / r["D"] for r in members], s=14, zorder=3,
                   label="D_hat / D")
        grid = np.geomspace(acc.min(), acc.max(), _EPS_POINTS)
        top = [float(upper.subs(bounds.eps, e)) for e in grid]
        ax.fill_between(grid, np.ones_like(grid), top, alpha=0.2, color="tab:green",
                        label="Lemma 9 band")
        ax.plot(grid, top, color="tab:green")
        ax.axhline(1.0, color="tab:green")
        ax.set_xscale("log")
        _label(ax, "accuracy of the diameter subroutine", "D_hat / D", instance, theta)
    return _save(fig, path)


def plot_all(rows, directory):
    """Write ``calls.png``, ``failures.png`` and (with Alg. 3 rows) ``diameter.png``.

    Parameters
    ----------
    rows : sequence of dict
    directory : str or os.PathLike
        Created if missing.

    Returns
    -------
    list of str
        The files written.
    """
    os.makedirs(directory, exist_ok=True)
    written = [
        plot_calls(rows, os.path.join(directory, "calls.png")),
        plot_failures(rows, os.path.join(directory, "failures.png")),
        plot_diameter(rows, os.path.join(directory, "diameter.png")),
    ]
    return [p for p in written if p is not None]
