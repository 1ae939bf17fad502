"""A simulator to solve on a cluster: a robot in a corridor of 8 cells, the goal past the last.

``step(s, a, rng)`` is one call of the simulator: from cell ``s``, action 0 (walk) reaches
the next cell with probability 0.9 and stays otherwise; action 1 (run) jumps two cells with
probability 0.6 and falls back to the start otherwise. Cell 8 is the goal. ``step_batch`` draws
``n`` next states at once with the same dynamics (a vectorised simulator).

Run it as a script to solve it on two local worker processes and check that the answer is
the one of a run in this process, bit for bit::

    python corridor.py                          # 2 local worker processes
    python corridor.py tcp://scheduler:8786     # a Dask cluster

or from the command line, in this directory::

    sspgm solve --simulator corridor:step_batch --batched --states 8 --actions 2 --workers 2
"""

import sys

import numpy as np

try:
    import fast as sspgm
except ImportError:
    import reference as sspgm

N_CELLS = 8


def step(s, a, rng):
    """One next state of the cell ``s`` under the action ``a`` (0 walk, 1 run)."""
    if a == 0:
        return s + 1 if rng.random() < 0.9 else s
    return min(s + 2, N_CELLS) if rng.random() < 0.6 else 0


def step_batch(s, a, n, rng):
    """``n`` next states of the cell ``s`` under the action ``a``, as an int64 array."""
    u = rng.random(n)
    if a == 0:
        return np.where(u < 0.9, s + 1, s)
    return np.where(u < 0.6, min(s + 2, N_CELLS), 0)


def solve(executor):
    """``solve_certified`` at eps = 0.2 on the corridor, sampled on ``executor``."""
    costs = np.ones((N_CELLS, 2))
    with sspgm.ParallelGenerativeModel(None, N_CELLS, 2, executor=executor, chunk=50_000,
                                       step_batch=step_batch, identity="corridor-1") as model:
        return sspgm.solve_certified(model, costs, eps=0.2, delta=0.1, seed=0)


def main(argv):
    if argv:
        from dask.distributed import Client

        with Client(argv[0]) as client:
            result = solve(client.get_executor())
    else:
        result = solve(2)
    here = solve(None)
    same = np.array_equal(result.policy, here.policy) and result.history == here.history
    print(f"certified: {result.certified}, gap {result.certificate.gap:.4f}, "
          f"{result.n_calls} calls; policy {result.policy.tolist()}; "
          f"same as in this process: {same}")
    return 0 if result.certified and same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
