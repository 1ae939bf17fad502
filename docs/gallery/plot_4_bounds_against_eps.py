"""
The bounds calculator against measured calls
============================================

:mod:`bounds` holds every bound of the paper as a sympy expression and
evaluates it at given parameters. Here we take the grid world's constants
(``S``, ``A``, the branching factor ``Gamma``, ``c_min`` and ``B*``, all
computed exactly), evaluate the bounds over a range of ``eps``, and put next
to them the calls that two solvers actually used:

* Alg. 1 (:func:`~reference.solve`), whose calls follow its explicit total
  :math:`S A\\,\\phi(\\Delta, c_{\\min})` (eq. 6), by construction;
* the certified solver (:func:`~reference.solve_certified`), which stops as
  soon as its certificate proves the accuracy.

Thm. 1 is an :math:`\\tilde O` bound: its constants and logarithms are
dropped, so its value is a shape (a slope of 2 in ``1/eps``), not a count.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

import bounds

import sspgm

ssp = sspgm.gridworld()
params = dict(B=float(sspgm.b_star(ssp)), cmin=float(ssp.costs.min()), S=ssp.n_states,
              A=ssp.n_actions, Gamma=ssp.branching)
print(params)
print(bounds.THM1.title, "=", bounds.THM1.total)
print("leading power of 1/eps: Thm. 1", bounds.leading_exponent(bounds.THM1),
      "| Thm. 2", bounds.leading_exponent(bounds.THM2))

# %%
# Bounds and measurements
# -----------------------
# The explicit total of Alg. 1 needs SEARCH's final guess ``Delta``, which we
# read from each finished run. :func:`bounds.samp_comp_lower` is the lower
# bound of Sec. 5 (for costs in ``[0, 1]``, up to constants).

grid = np.geomspace(0.05, 0.5, 30)
thm1 = [bounds.samp_comp(e, **params) for e in grid]
lower = [bounds.samp_comp_lower(e, params["B"], S=params["S"], A=params["A"]) for e in grid]

measured = (0.4, 0.2, 0.1)
alg1, explicit, certified = [], [], []
for eps in measured:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sspgm.NotCertifiedWarning)
        run = sspgm.solve(ssp, ssp.costs, eps, 0.1, seed=0)
    alg1.append(run.n_calls)
    explicit.append(bounds.samp_comp(eps, None, params["cmin"], S=params["S"], A=params["A"],
                                     Gamma=params["Gamma"], delta=0.1, Delta=run.Delta_final,
                                     bound="explicit1"))
    certified.append(sspgm.solve_certified(ssp, ssp.costs, eps, 0.1, seed=0).n_calls)

fig, ax = plt.subplots(figsize=(6.4, 4.2))
ax.loglog(1 / grid, thm1, "C0-", label="Thm. 1 (O~, constants dropped)")
ax.loglog(1 / grid, lower, "C7--", label="lower bound of Sec. 5 (Omega)")
ax.loglog(1 / np.array(measured), explicit, "C1s", mfc="none", ms=10,
          label="explicit total of Alg. 1, at the run's Delta")
ax.loglog(1 / np.array(measured), alg1, "C1.", ms=8, label="Alg. 1, measured calls")
ax.loglog(1 / np.array(measured), certified, "C2o-", label="solve_certified, measured calls")
ax.set_xticks([2, 3, 5, 10, 20], labels=["2", "3", "5", "10", "20"])
ax.minorticks_off()
ax.set_xlabel("1 / eps")
ax.set_ylabel("calls to the generative model")
ax.set_title("gridworld(): S = 10, A = 4, Gamma = 3, c_min = 1, B* = 6.17")
ax.legend(fontsize="small")
fig.tight_layout()

slope = np.polyfit(np.log(1 / np.array(measured)), np.log(certified), 1)[0]
print(f"solve_certified: slope of log(calls) against log(1/eps) = {slope:.2f}")

# %%
# The other way round
# -------------------
# :func:`bounds.accuracy_for_budget` inverts a bound: the smallest ``eps``
# whose total fits a budget of calls.

for budget in (1e6, 1e8, 1e10):
    eps = bounds.accuracy_for_budget(budget, **params)
    print(f"{budget:.0e} calls: Thm. 1 reaches eps = {eps:.4f}")
