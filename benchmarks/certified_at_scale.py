"""A certified run at S >= 10^5: ``fast.solve_certified`` on a large slippery exit grid.

Usage: ``python benchmarks/certified_at_scale.py [SIDE] [SPACING] [EPS] [BUDGET]``
(defaults: 330, 8, 0.5, 4e9). Runs ``fast.solve_certified`` on
``reference.exit_grid(SIDE, SIDE, spacing=SPACING)`` (success 0.8, unit costs;
107,136 states by default) with a relative ``EPS``, ``delta = 0.1``, seed 0 and
the budget, printing the calls, the memory (against the sample store) and the
seconds of every round (:func:`memory_certified.measured_run`), then the end:
whether it is certified, the calls, the relative gap and the wall time.
"""

import sys
import time

import fast
import reference
from memory_certified import measured_run


def main(side=330, spacing=8, eps=0.5, budget=4e9):
    ssp = reference.exit_grid(int(side), int(side), spacing=int(spacing))
    begin = time.perf_counter()
    result = measured_run(fast, ssp, float(eps), budget=int(budget))
    print(f"S = {ssp.n_states}: certified {result.certified} after {len(result.history)} rounds, "
          f"{result.n_calls} calls ({result.n_calls / (ssp.n_states * ssp.n_actions):.0f} a "
          f"pair), relative gap {result.certificate.relative_gap:.4g}, "
          f"max upper {result.certificate.upper.max():.4g}, "
          f"{time.perf_counter() - begin:.0f} s", flush=True)
    print(result.message)


if __name__ == "__main__":
    main(*(float(x) for x in sys.argv[1:5]))
