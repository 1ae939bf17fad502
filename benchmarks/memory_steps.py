"""Peak memory of each step of ``fast.solve_certified``'s rounds, against the sample store.

Usage: ``python benchmarks/memory_steps.py [ROUNDS] [S] [SEED] [INSTANCE]`` (defaults: 3
rounds, S = 10^5, seed 0, ``garnet``; ``grid`` runs ``exit_grid(366, 366, spacing=2)``
instead, S = 100,467). Runs ``fast.solve_certified`` (relative ``eps = 0.5``,
``delta = 0.1``) with the steps of a round wrapped, and after every round prints, for each
step run in it (the last round's draw and merge included):

- ``entry``: the most memory held when the step started (``tracemalloc``), over the store;
- ``peak``: the most memory held while it ran, over the store;
- ``rise``: the largest ``peak - entry`` of its calls.

Nested steps count in the steps around them. The store is the CSR counts the run last read
(:meth:`reference.generative.SampleStore.counts_csr`).
"""

import collections
import sys
import tracemalloc

import fast
import reference
from reference import certified, certified_sampling, theta_bounds
from reference.generative import samples
from reference.robust import optimal, optimistic, pessimistic

STEPS = (
    (certified, ("store_boxes", "_certificate", "_next_draws", "_draw")),
    (theta_bounds, ("_optimistic", "_robust_policy")),
    (optimal, ("_goal_forcing", "_robust_values")),
    (pessimistic, ("_adversary_graph", "_infinite_states", "_check_upper")),
    (optimistic, ("_check_lower",)),
    (certified_sampling, ("_adaptive_draws", "_widths", "_means")),
    (samples.SampleStore, ("counts_csr",)),
)
"""The wrapped steps: where each is looked up when it is called. The policy iterations are
kernels of the frozen kernel sets (``adversary_iteration``, ``optimist_iteration``,
``robust_iteration``), so they count in the steps around them: ``_robust_values`` (the rounds
the robust policy iteration runs itself), ``_robust_policy`` and ``_optimistic``."""


class _Stop(Exception):
    """Raised by the callback once the rounds asked for are done."""


class Steps:
    """Wraps the steps and records, per call, the memory held at its start and its peak."""

    def __init__(self):
        self.open = []
        self.calls = collections.defaultdict(list)
        self.store = 1

    def wrap(self, owner, name):
        function = getattr(owner, name)

        def wrapped(*args, **kwargs):
            held, peak = tracemalloc.get_traced_memory()
            for frame in self.open:
                frame[1] = max(frame[1], peak)
            tracemalloc.reset_peak()
            frame = [held, held]
            self.open.append(frame)
            try:
                result = function(*args, **kwargs)
            finally:
                frame[1] = max(frame[1], tracemalloc.get_traced_memory()[1])
                self.open.pop()
                for outer in self.open:
                    outer[1] = max(outer[1], frame[1])
                tracemalloc.reset_peak()
                self.calls[name].append(tuple(frame))
            if name == "counts_csr":
                self.store = result.data.nbytes + result.indices.nbytes + result.indptr.nbytes
            return result

        setattr(owner, name, wrapped)
        return function

    def report(self, round_number):
        print(f"round {round_number} (store {self.store / 2**20:.1f} MiB)")
        print(f"  {'step':20} {'calls':>5} {'entry':>6} {'peak':>6} {'rise':>6}")
        for name, calls in self.calls.items():
            entry = max(c[0] for c in calls) / self.store
            peak = max(c[1] for c in calls) / self.store
            rise = max(c[1] - c[0] for c in calls) / self.store
            print(f"  {name:20} {len(calls):5d} {entry:6.2f} {peak:6.2f} {rise:6.2f}")
        self.calls.clear()


def main(rounds=3, n_states=100_000, seed=0, instance="garnet"):
    if instance == "grid":
        ssp = reference.exit_grid(366, 366, spacing=2)
    else:
        ssp = reference.garnet(n_states, 4, 5, seed=seed, sparse=True)
    model = fast.TabularGenerativeModel(ssp)
    steps = Steps()
    originals = [(owner, name, steps.wrap(owner, name)) for owner, names in STEPS
                 for name in names]
    done = []

    def callback(round_):
        done.append(round_)
        steps.report(len(done))
        if len(done) >= rounds:
            raise _Stop

    tracemalloc.start()
    try:
        fast.solve_certified(model, ssp.costs, 0.5, 0.1, relative=True, seed=seed,
                             callback=callback)
    except _Stop:
        pass
    finally:
        tracemalloc.stop()
        for owner, name, function in originals:
            setattr(owner, name, function)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(int(x) for x in args[:3]), *args[3:4])
