"""The width adaptive sampling weighs: its visits times widths bound the gaps it aims at."""

import importlib

import numpy as np
import pytest
import scipy.sparse as sp

from reference.box_kinds import box_kind
from reference.certified_sampling import _policy_widths
from reference.envs import exit_grid
from reference.kernels import NUMPY_KERNELS, order_values
from reference.store_boxes import store_boxes
from reference.theta_bounds import round_bounds


def _kernels(backend):
    """The kernel set of ``backend``."""
    if backend.__name__ == "fast":
        return importlib.import_module("fast.kernels").COMPILED_KERNELS
    return NUMPY_KERNELS


@pytest.mark.parametrize("per_pair", [60, 400])
def test_visits_times_widths_bound_every_gap(backend, per_pair):
    # U - L <= (I - P-)^{-1} (P+ - P-) U state by state (docs/certificates.md), on the bounds of
    # one round of a slippery grid: the optimist's visits from each state (e_s, the kernel
    # poured_chain_visits) times the widths of _policy_widths are at least its gap.
    kernels = _kernels(backend)
    ssp = exit_grid(5, 7, spacing=4, success=0.6)
    S, A = ssp.n_states, ssp.n_actions
    rng = np.random.default_rng(per_pair)
    kernel = sp.csr_array(ssp.P).toarray() if sp.issparse(ssp.P) else ssp.P.reshape(S * A, S + 1)
    counts = np.array([rng.multinomial(per_pair, row / row.sum()) for row in kernel])
    boxes = store_boxes(kernels, sp.csr_array(counts), 0.1, box_kind("mixture", time_uniform=True))
    lower, policy, order_l, upper = round_bounds(kernels, boxes, ssp.costs, {})[0]
    assert np.isfinite(upper).all() and (upper - lower).max() > 0.1
    rows = np.arange(S) * A + policy
    kernel_l = kernels.pour_kernel(boxes, rows, order_values(order_l, False), False)
    width = _policy_widths(kernels, boxes, rows, upper, kernel_l)[0]
    bound = np.array([kernels.poured_chain_visits(kernel_l, np.eye(S)[s]) @ width
                      for s in range(S)])
    assert np.all(bound >= (upper - lower) - 1e-9 * upper.max())
