"""
Exact evaluation, and why plug-in value iteration is not enough
===============================================================

On a known instance, sspgm computes exact values: :func:`~reference.policy_values`
returns ``inf`` exactly where a policy never reaches the goal at a positive
cost, :func:`~reference.optimal_values` solves the LP over proper policies,
and :func:`~reference.hitting_times` and :func:`~reference.diameter` give the
expected times to the goal. These are what the tests and the validation
sweeps check every answer against.

The instance :func:`~reference.trap` shows why the paper's algorithm runs
extended value iteration (EVI) on confidence sets instead of value iteration
on the empirical model. State 1 is a trap: action 0 stays there forever, and
action 1 leaves for the goal with probability 0.01 only. From 20 samples the
exit is usually unseen, both trap actions look like self-loops of cost 1,
and value iteration on the empirical model may pick the one that never
leaves, whose true cost is infinite: it does on most seeds below.
"""

import matplotlib.pyplot as plt
import numpy as np

import sspgm

ssp = sspgm.trap()
print("costs:\n", ssp.costs)
print("V* =", sspgm.optimal_values(ssp).values)
for policy in ([0, 0], [1, 1]):
    print(f"policy {policy}: proper {sspgm.is_proper(ssp, policy)}, "
          f"V^pi = {sspgm.policy_values(ssp, policy)}, "
          f"E[time to goal] = {sspgm.hitting_times(ssp, policy)}")
print("diameter D =", sspgm.diameter(ssp).D, "| B* =", sspgm.b_star(ssp))

# %%
# Plug-in against Alg. 1
# ----------------------
# :func:`~reference.plug_in` samples every pair 20 times and runs value
# iteration on the empirical model; we evaluate each returned policy exactly.

seeds = range(10)
plug_in = [sspgm.policy_values(ssp, sspgm.plug_in(ssp, ssp.costs, n_per_pair=20,
                                                  seed=seed).policy)[1]
           for seed in seeds]
print("plug-in, V^pi(1) per seed:", [float(v) for v in plug_in])

fig, ax = plt.subplots(figsize=(6.4, 3.4))
finite = np.isfinite(plug_in)
ax.bar(np.array(seeds)[finite], np.array(plug_in)[finite], color="C0",
       label="plug-in policy, finite cost")
ax.bar(np.array(seeds)[~finite], 150.0, color="C3", hatch="//",
       label="plug-in policy, infinite cost (never reaches the goal)")
ax.axhline(sspgm.optimal_values(ssp).values[1], color="k", ls="--", lw=1, label="V*(1) = 1/0.01")
ax.set_xlabel("seed")
ax.set_ylabel("exact V^pi(1), the trap")
ax.set_ylim(0, 240)
ax.set_xticks(list(seeds))
for seed in np.array(seeds)[~finite]:
    ax.text(seed, 152, "inf", ha="center", va="bottom", fontsize="small")
ax.legend(fontsize="small", loc="upper center", ncol=2)
fig.tight_layout()

# %%
# :func:`~reference.solve` on the same instance returns the optimal policy,
# and :func:`~reference.solve_certified` proves it from its samples.

res = sspgm.solve_certified(ssp, ssp.costs, eps=0.1, delta=0.1, seed=0)
print("solve_certified: policy", res.policy, "V^pi", sspgm.policy_values(ssp, res.policy),
      "certified:", res.certified, "calls:", res.n_calls)
