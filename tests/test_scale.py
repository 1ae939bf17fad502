"""The certified solver at scale: boxes on the store's own arrays, the exit grid, a budget."""

import importlib

import numpy as np
import pytest

from reference import confidence
from reference import store_boxes as store_boxes_module
from reference.box_kinds import KINDS, box_kind
from reference.generative import SampleStore
from reference.kernels import NUMPY_KERNELS


def _store(backend, ssp, per_pair, seed):
    """A sample store of ``ssp`` with ``per_pair[i]`` samples of pair ``i``."""
    store = SampleStore(ssp.n_states, ssp.n_actions)
    store.draw_pairs(backend.TabularGenerativeModel(ssp), np.arange(per_pair.size), per_pair,
                     np.random.default_rng(seed))
    return store


@pytest.mark.parametrize("kind", list(KINDS))
def test_store_boxes_are_the_confidence_boxes_bit_for_bit(backend, kind, monkeypatch):
    ssp = backend.garnet(30, 3, 4, seed=2, sparse=True)
    per_pair = np.random.default_rng(1).integers(0, 40, size=ssp.n_states * ssp.n_actions)
    per_pair[::7] = 0
    if kind == "paper":
        per_pair = np.maximum(per_pair, 1)
    csr = _store(backend, ssp, per_pair, seed=3).counts_csr()
    expected = backend.confidence_boxes(csr, 0.1, kind=kind)
    monkeypatch.setattr(confidence, "BLOCK_ENTRIES", 17)
    boxes = _built(backend, csr, kind)
    for name in ("indptr", "indices", "lo", "hi", "hi_unseen", "p_hat", "n"):
        np.testing.assert_array_equal(getattr(boxes, name), getattr(expected, name), err_msg=name)
        assert getattr(boxes, name).dtype == getattr(expected, name).dtype
    assert np.shares_memory(boxes.indices, csr.indices)
    assert np.shares_memory(boxes.counts, csr.data)


def _built(backend, csr, kind):
    """:func:`store_boxes` with the kernel set of ``backend``."""
    if backend.__name__ == "fast":
        kernels = importlib.import_module("fast.kernels").COMPILED_KERNELS
    else:
        kernels = NUMPY_KERNELS
    return store_boxes_module.store_boxes(kernels, csr, 0.1, box_kind(kind))


def test_exit_grid_by_hand(backend):
    # One row of two cells; the exit is (0, 0), the state is (0, 1). "left" reaches the exit
    # when attempted (s); "up" and "down" when they slip left ((1 - s) / 2); "right" never.
    for s in (0.8, 0.2):
        ssp = backend.exit_grid(1, 2, spacing=2, success=s, cost=0.5)
        expected = np.array([[(1 + s) / 2, (1 - s) / 2], [1.0, 0.0], [(1 + s) / 2, (1 - s) / 2],
                             [1 - s, s]])
        np.testing.assert_allclose(ssp.kernel_csr().toarray(), expected, rtol=0, atol=1e-15)
        np.testing.assert_allclose(backend.optimal_values(ssp).values,
                                   [0.5 / max(s, (1 - s) / 2)], rtol=1e-12)


def test_exit_grid_deterministic_values_are_distances(backend):
    # 3 x 5 with exits at (0, 0), (0, 2), (0, 4), (2, 0), (2, 2), (2, 4): the middle row is
    # 1 from the lattice in r, and 0 or 1 from it in c.
    ssp = backend.exit_grid(3, 5, spacing=2, success=1.0)
    assert ssp.n_states == 9
    np.testing.assert_array_equal(ssp.meta["V_star"], [1, 1, 1, 2, 1, 2, 1, 1, 1])
    larger = backend.exit_grid(11, 13, spacing=4, success=1.0, cost=0.25)
    np.testing.assert_allclose(backend.optimal_values(larger).values, larger.meta["V_star"],
                               rtol=1e-12)
    assert larger.meta["D"] == 4.0


def test_exit_grid_refuses_bad_arguments(backend):
    for kwargs, name in (({"rows": 0, "cols": 2}, "rows"), ({"rows": 2, "cols": 2, "spacing": 0},
                                                             "spacing"),
                         ({"rows": 2, "cols": 2, "success": 0.0}, "success"),
                         ({"rows": 2, "cols": 2, "cost": 0.0}, "cost")):
        with pytest.raises(backend.ParameterError, match=f"`{name}`"):
            backend.exit_grid(**kwargs)
    with pytest.raises(backend.ParameterError, match="not an exit"):
        backend.exit_grid(1, 1)


def test_a_run_out_of_budget_returns_finite_bounds_uncertified(backend):
    ssp = backend.exit_grid(9, 9, spacing=4)
    budget = ssp.n_states * ssp.n_actions * 2_000
    with pytest.warns(backend.NotCertifiedWarning):
        res = backend.solve_certified(ssp, ssp.costs, 0.01, 0.1, relative=True, budget=budget,
                                      seed=0)
    cert = res.certificate
    assert not res.certified and res.n_calls == budget and "not certified" in res.message
    assert np.isfinite(cert.upper).all() and np.isfinite(cert.relative_gap)
    assert cert.relative_gap > 0.01 and not cert.meets(0.01, relative=True)
    assert (cert.lower <= backend.optimal_values(ssp).values + 1e-12).all()
    assert (cert.upper >= backend.policy_values(ssp, res.policy) - 1e-12).all()


def test_row_sums_are_bincount_bit_for_bit():
    rng = np.random.default_rng(5)
    stored = rng.integers(0, 12, size=300)
    stored[[0, 7, 299]] = 0
    indptr = np.concatenate([[0], np.cumsum(stored)])
    weights = rng.random(indptr[-1]) * 10.0 ** rng.integers(-8, 8, size=indptr[-1])
    rows = np.repeat(np.arange(stored.size), stored)
    expected = np.bincount(rows, weights=weights, minlength=stored.size)
    for block in (1, 5, 64, 10_000):
        got = store_boxes_module.row_sums(indptr, lambda e0, e1: weights[e0:e1], block)
        assert np.array_equal(got, expected)
