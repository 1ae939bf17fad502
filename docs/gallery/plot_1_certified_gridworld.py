"""
Certifying a policy on the grid world
=====================================

:func:`~reference.solve_certified` samples the generative model in rounds
and stops as soon as the certificate of its policy proves ``eps``-optimality:
in every state, ``lower <= V*`` and ``V^pi <= upper``, together with
probability at least ``1 - delta``, and ``max(upper - lower) <= eps``.

The certificate is computed from the samples alone. Here the instance is
known, so we can also check the answer against the exact values.
"""

import matplotlib.pyplot as plt
import numpy as np

import sspgm

from sspgm.instances import draw_grid_policy

ssp = sspgm.gridworld()  # 3 x 4 grid, one wall, moves succeed with probability 0.8
res = sspgm.solve_certified(ssp, ssp.costs, eps=0.1, delta=0.1, seed=0)
print(res.message)
print(f"certified: {res.certified}, gap {res.certificate.gap:.4f}, calls {res.n_calls:,}")
print(draw_grid_policy(ssp, res.policy))

# %%
# The gap along the run
# ---------------------
# Every round records the calls made so far and the gap of that round's
# certificate. The gap falls roughly as one over the square root of the
# calls; the run stops at the first round whose gap is at most ``eps``.

calls = np.array([r.n_calls for r in res.history])
gaps = np.array([r.gap for r in res.history])
finite = np.isfinite(gaps)
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.loglog(calls[finite], gaps[finite], ".-", label="gap of the round's certificate")
ax.axhline(0.1, color="k", ls="--", lw=1, label="eps = 0.1")
ax.set_xlabel("calls to the generative model")
ax.set_ylabel("max_s (upper - lower)")
ax.set_title(f"solve_certified on gridworld(): {len(res.history)} rounds")
ax.legend()
fig.tight_layout()

# %%
# The bounds against the exact values
# -----------------------------------
# ``lower`` must lie below ``V*`` and ``upper`` above the policy's own value
# ``V^pi``; both exact values come from :func:`~reference.optimal_values` and
# :func:`~reference.policy_values`. The values range from 1.4 to 6.2, so we
# draw everything relative to ``V*``: each bar is ``[lower, upper] - V*``.

v_star = sspgm.optimal_values(ssp).values
v_pi = sspgm.policy_values(ssp, res.policy)
cert = res.certificate
states = np.arange(ssp.n_states)
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.bar(states, cert.upper - cert.lower, bottom=cert.lower - v_star, width=0.5, color="C0",
       alpha=0.5, label="[lower, upper] - V*, from the samples")
ax.axhline(0, color="k", lw=1.5, label="V* (exact)")
ax.plot(states, v_pi - v_star, "C3o", ms=6, label="V^pi - V*, returned policy (exact)")
ax.set_xlabel("state")
ax.set_ylabel("difference with V*")
ax.set_xticks(states)
ax.set_ylim(-0.07, 0.12)
ax.legend(fontsize="small", loc="upper center", ncol=2)
fig.tight_layout()

print("lower <= V*:", bool(np.all(cert.lower <= v_star)),
      "| V^pi <= upper:", bool(np.all(v_pi <= cert.upper)),
      "| exact error:", float(np.max(v_pi - v_star)))

# %%
# ``target="policy"`` stops as soon as the policy itself is certified
# (``certificate.policy_gap <= eps``), without pinning the values: it needs
# fewer calls.

pol = sspgm.solve_certified(ssp, ssp.costs, eps=0.1, delta=0.1, seed=0, target="policy")
print(f"policy target: calls {pol.n_calls:,}, policy_gap {pol.certificate.policy_gap:.4f}, "
      f"gap {pol.certificate.gap:.4f}")
