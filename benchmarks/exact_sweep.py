"""Exact evaluation re-checked on instances it was not tuned on: accuracy, time, memory.

Run ``python benchmarks/exact_sweep.py [NAME-FILTER ...]``; each case runs in its own
subprocess (``nice``, one at a time) and prints one line: the outcome of
``reference.policy_values`` (or its error), which argument accepted the values (the
residual certificate, the monotone bounds, the elimination), CPU seconds, the
``tracemalloc`` peak and the growth of the peak RSS during the call, and the relative error
against an independent method:

- ``lu``: scipy's sparse LU in float64, refined with residuals in ``numpy.longdouble``
  (chains up to 2x10^4 states);
- ``proof``: a bound proved in exact integer arithmetic from the returned values ``v``
  themselves: with ``r = c - M v`` and ``h`` any vector with ``M h > 0`` (the returned
  hitting times), ``v - lam_L h <= V <= v + lam_U h`` for ``lam_U = max(r+ / M h)`` and
  ``lam_L = max(r- / M h)`` (``M^{-1} >= 0``), so ``max(lam_U, lam_L) h / v`` bounds the
  relative error; every product and sum is exact (Python integers), so this shares
  nothing with the library's rounding bounds. It needs every state transient.

The infinite and zero states are compared with a graph search of scipy's ``csgraph``.
"""

import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import reference
from reference.chains import explicit, monotone
from reference.evaluation import kernel_rows, policy_chain

GARNETS = [(S, b, seed, pol) for S in (10_000, 100_000) for b in (3, 5, 10)
           for seed in (1, 2) for pol in ("zeros", "random")]

CASES = {
    **{f"garnet({S},4,{b},seed={seed}) {pol}": (
        f"reference.garnet({S}, 4, {b}, seed={seed}, sparse=True)", pol)
       for S, b, seed, pol in GARNETS},
    "exit_grid(1000,10,spacing=1000,0.5) left": (
        "reference.exit_grid(1000, 10, spacing=1000, success=0.5)", "left"),
    "exit_grid(3000,4,spacing=3000,0.5) left": (
        "reference.exit_grid(3000, 4, spacing=3000, success=0.5)", "left"),
    "exit_grid(316,316,spacing=316,0.5) left": (
        "reference.exit_grid(316, 316, spacing=316, success=0.5)", "left"),
    "dense garnet(2000,2,2001)": ("reference.garnet(2000, 2, 2001, seed=1)", "zeros"),
    "dense garnet(5000,1,5001)": ("reference.garnet(5000, 1, 5001, seed=1)", "zeros"),
}


def _policy(ssp, name, seed=11):
    S = ssp.n_states
    if name == "random":
        return np.random.default_rng(seed).integers(0, ssp.n_actions, S)
    return np.full(S, 3 if name == "left" else 0, dtype=np.int64)


def _lu_error(chain, costs, values):
    """Largest relative error of ``values`` against sparse LU with extended-precision refinement."""
    T = np.flatnonzero(np.isfinite(values) & (values > 0))
    Q, e, _ = explicit._restricted(sp.csr_array(chain), T)
    Q = sp.csr_array(Q)
    lu = sla.splu((sp.diags_array(e + np.asarray(Q.sum(axis=1)).ravel()) - Q).tocsc())
    Qw = Q.astype(np.longdouble)
    d = np.asarray(e, np.longdouble) + np.asarray(Qw.sum(axis=1), np.longdouble).ravel()
    c = np.asarray(costs[T], np.longdouble)
    x = lu.solve(costs[T]).astype(np.longdouble)
    for _ in range(6):
        x = x + lu.solve((c + Qw @ x - d * x).astype(np.float64))
    return float(np.max(np.abs(values[T] - x) / x))


def _integers(x, shift):
    """Exact ``x * 2**shift`` as Python integers (object array); ``x`` float64."""
    mantissa, exponent = np.frexp(x)
    m = (mantissa * 2.0**53).astype(np.int64)
    e = exponent.astype(np.int64) - 53 + shift
    if e.min() < 0:
        raise ValueError("shift too small")
    return np.array([int(a) << int(b) for a, b in zip(m, e)], dtype=object)


def _proved_error(chain, costs, values, times):
    """The exact-arithmetic bound of the module docstring (every state transient)."""
    chain = sp.csr_array(chain)
    S = chain.shape[0]
    rows = np.repeat(np.arange(S), np.diff(chain.indptr))
    keep = (chain.indices != rows) & (chain.data > 0)
    rows, cols, p = rows[keep], chain.indices[keep], chain.data[keep]
    kp = int(53 - np.frexp(p)[1].min())
    kv = int(53 - min(np.frexp(values)[1].min(), np.frexp(times)[1].min()))
    P = _integers(p, kp)
    starts = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=S))[:-1]])

    def flux(w):
        W = np.concatenate([_integers(w, kv), np.array([0], dtype=object)])
        terms = P * (W[cols] - W[rows])
        return np.add.reduceat(terms, starts)

    r = _integers(costs, kp + kv) + flux(values)
    drift = -flux(times)
    if not all(m > 0 for m in drift):
        return None
    lam = max(abs(int(a)) / int(b) for a, b in zip(r, drift))
    return float(np.max(lam * times / values)) * (1 + 1e-12)


def _run(name):
    build, policy_name = CASES[name]
    ssp = eval(build)
    policy = _policy(ssp, policy_name)
    chain = policy_chain(kernel_rows(ssp), ssp.n_actions, policy)
    costs = np.asarray(ssp.costs)[np.arange(ssp.n_states), policy]
    path = []
    certified, refined, gth = explicit._certified, monotone.refined_values, explicit._gth
    explicit._certified = lambda *a: path.append("residual") or certified(*a)
    monotone.refined_values = lambda *a: path.append("monotone") or refined(*a)
    explicit._gth = lambda *a: path.append("elimination") or gth(*a)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    start = time.process_time()
    out = {"case": name, "S": ssp.n_states}
    try:
        values = reference.policy_values(ssp, policy)
    except reference.ConvergenceError as err:
        values, out["refused"] = None, str(err)
    out["cpu s"] = round(time.process_time() - start, 2)
    out["tracemalloc MiB"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    tracemalloc.stop()
    out["RSS growth MiB"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024, 1)
    out["path"] = "/".join(dict.fromkeys(path))
    explicit._certified, monotone.refined_values, explicit._gth = certified, refined, gth
    if values is None:
        return out
    times = reference.hitting_times(ssp, policy)
    out["largest hitting time"] = float(times[np.isfinite(times)].max(initial=0))
    out["infinite"], out["zero"] = int(np.isinf(values).sum()), int((values == 0).sum())
    if ssp.n_states <= 20_000:
        out["lu error"] = _lu_error(chain, costs, values)
    if np.all(np.isfinite(values) & (values > 0)):
        proved = _proved_error(chain, costs, values, times)
        out["proved error"] = proved
    return out


def main(filters):
    here = Path(__file__).resolve()
    for name in CASES:
        if filters and not any(f in name for f in filters):
            continue
        done = subprocess.run(["nice", "-n", "5", sys.executable, str(here), "--case", name],
                              capture_output=True, text=True)
        print(done.stdout.strip() or done.stderr.strip()[-800:], flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--case"]:
        print(json.dumps(_run(sys.argv[2])))
    else:
        main(sys.argv[1:])
