"""
Your own simulator, certified
=============================

A generative model is anything that returns a next state for a state and an
action. Here it is a plain Python function, ``step(s, a, rng)``, of a robot
on a corridor of six cells with the goal at the right end:

* action 0 (walk) moves right with probability 0.9, and costs 0.5;
* action 1 (run) moves right by two cells with probability 0.6, slips back
  one cell with probability 0.4, and costs 0.3.

States are ``0 .. S-1`` and the goal is ``S``.
:class:`~reference.SimulatorGenerativeModel` wraps the function and counts
its calls; :func:`~reference.solve_certified` never sees anything else.
"""

import matplotlib.pyplot as plt
import numpy as np

import sspgm

S, A = 6, 2


def step(s, a, rng):
    """One draw of the next state of the corridor (the goal is S)."""
    u = rng.random()
    if a == 0:
        return min(s + 1, S) if u < 0.9 else s
    return min(s + 2, S) if u < 0.6 else max(s - 1, 0)


costs = np.tile([0.5, 0.3], (S, 1))
model = sspgm.SimulatorGenerativeModel(step, S, A, identity="corridor-6 walk/run")
res = sspgm.solve_certified(model, costs, eps=0.2, delta=0.05, seed=1, target="policy")
print(res.message)
print("policy (0 walk, 1 run):", res.policy, "| calls:", model.n_calls)

# %%
# The certificate is the only check a simulator gets: with probability at
# least 0.95, ``V^pi <= upper`` and ``lower <= V*`` in every state. Because
# this corridor is simple, we can write its kernel down and compare.

P = np.zeros((S, A, S + 1))
for s in range(S):
    P[s, 0, min(s + 1, S)] += 0.9
    P[s, 0, s] += 0.1
    P[s, 1, min(s + 2, S)] += 0.6
    P[s, 1, max(s - 1, 0)] += 0.4
known = sspgm.SSP(P, costs)
v_star = sspgm.optimal_values(known).values
v_pi = sspgm.policy_values(known, res.policy)

cert = res.certificate
fig, ax = plt.subplots(figsize=(6.4, 3.6))
x = np.arange(S)
ax.bar(x, cert.upper - cert.lower, bottom=cert.lower, width=0.5, color="C0", alpha=0.4,
       label="[lower, upper] (certificate)")
ax.plot(x, v_star, "k_", ms=16, mew=2, label="V* (exact, from the written kernel)")
ax.plot(x, v_pi, "C3o", ms=5, label="V^pi of the returned policy")
ax.set_xlabel("cell")
ax.set_ylabel("expected cost to the goal")
ax.legend(loc="upper right")
fig.tight_layout()
print("exact error of the policy:", float(np.max(v_pi - v_star)),
      "<= policy_gap:", round(float(cert.policy_gap), 4))

# %%
# A simulator that is slow per call can sample in batches
# (``step_batch(s, a, n, rng)``) or on worker processes and a cluster with
# :class:`~reference.ParallelGenerativeModel`, with results that do not depend
# on the number of workers (see :doc:`/cluster`).
