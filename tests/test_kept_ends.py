"""Boxes rebuilt round after round with the last round's ends kept for the unchanged rows."""

import copy
import dataclasses
import importlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from reference import confidence
from reference import store_boxes as store_boxes_module
from reference.box_kinds import KINDS, box_kind
from reference.errors import NotCertifiedWarning
from reference.generative import SampleStore
from reference.kernels import NUMPY_KERNELS
from reference.store_boxes import KeptEnds, store_boxes

from kernel_sets import kernel_set


def _rounds(backend, kind, n_rounds=5, seed=0):
    """A store of a sparse garnet drawn in rounds: each round samples about a quarter of the
    pairs, a few of them for the first time (pairs without samples until then), and after
    each round the boxes of :func:`store_boxes` with one :class:`KeptEnds`, the boxes of
    :func:`confidence_boxes` on the same counts, and the pairs that round drew."""
    ssp = backend.garnet(25, 3, 4, seed=2, sparse=True)
    n_pairs = ssp.n_states * ssp.n_actions
    rng = np.random.default_rng(seed)
    store = SampleStore(ssp.n_states, ssp.n_actions)
    model = backend.TabularGenerativeModel(ssp)
    fresh = rng.permutation(n_pairs)
    per_pair = rng.integers(1, 30, size=n_pairs)
    per_pair[fresh[:n_pairs // 3]] = 0
    kept = KeptEnds()
    kernels = kernel_set(backend)
    drawn = np.flatnonzero(per_pair)
    for k in range(n_rounds):
        store.draw_pairs(model, np.arange(n_pairs), per_pair, rng)
        csr = store.counts_csr()
        boxes = store_boxes(kernels, csr, 0.1, box_kind(kind), kept)
        yield boxes, backend.confidence_boxes(csr, 0.1, kind=kind), drawn, kept
        per_pair = np.where(rng.random(n_pairs) < 0.25, rng.integers(1, 20, size=n_pairs), 0)
        per_pair[fresh[n_pairs // 3 - k - 1]] = 3
        drawn = np.flatnonzero(per_pair)


def _assert_same(boxes, expected):
    for name in ("indptr", "indices", "lo", "hi", "hi_unseen", "p_hat", "n"):
        np.testing.assert_array_equal(getattr(boxes, name), getattr(expected, name),
                                      err_msg=name)
    # Every array of the boxes is read-only, the store's included (a kept pour relies on it).
    for name in ("indptr", "indices", "counts", "lo", "hi", "hi_unseen"):
        assert not getattr(boxes, name).flags.writeable, name


@pytest.mark.parametrize("kind", ["kl", "mixture", "bernstein"])
def test_kept_ends_give_the_boxes_built_anew_bit_for_bit(backend, kind, monkeypatch):
    taken = []
    real_take = KeptEnds.take

    def take(self, csr, delta, record):
        rows, ends = real_take(self, csr, delta, record)
        taken.append(rows)
        return rows, ends

    monkeypatch.setattr(KeptEnds, "take", take)
    for k, (boxes, expected, drawn, kept) in enumerate(_rounds(backend, kind)):
        _assert_same(boxes, expected)
        assert kept.ends is not None
        # The first round computes every row; later ones exactly the rows drawn since.
        assert taken[k] is None if k == 0 else np.array_equal(taken[k], drawn)
    assert len(taken) == 5


def test_kept_ends_in_several_blocks(backend, monkeypatch):
    monkeypatch.setattr(confidence, "BLOCK_ENTRIES", 13)
    for boxes, expected, _, _ in _rounds(backend, "kl", n_rounds=3, seed=4):
        _assert_same(boxes, expected)


def test_boxes_too_large_are_not_kept(backend, monkeypatch):
    monkeypatch.setattr(store_boxes_module, "KEPT_ENTRIES", 100)
    for boxes, expected, _, kept in _rounds(backend, "kl", n_rounds=2):
        assert boxes.lo.size + boxes.hi_unseen.size > 100
        assert kept.ends is None
        _assert_same(boxes, expected)


def test_kept_ends_of_another_level_or_kind_are_not_read(backend):
    ssp = backend.garnet(10, 2, 3, seed=1)
    store = SampleStore(ssp.n_states, ssp.n_actions)
    store.draw_pairs(backend.TabularGenerativeModel(ssp), np.arange(20), np.full(20, 7),
                     np.random.default_rng(0))
    csr, kept, kernels = store.counts_csr(), KeptEnds(), kernel_set(backend)
    for delta, kind in ((0.1, "kl"), (0.01, "kl"), (0.01, "mixture"), (0.01, "kl")):
        boxes = store_boxes(kernels, csr, delta, box_kind(kind), kept)
        _assert_same(boxes, backend.confidence_boxes(csr, delta, kind=kind))
        assert kept.ends[8:] == (delta, box_kind(kind))


def _kept_and_rebuilt(backend, monkeypatch, ssp, **options):
    """``solve_certified`` run with the ends kept and with every row rebuilt, and the rows the
    kept run computed each round (``None``: all)."""
    taken, real_take = [], KeptEnds.take

    def take(self, csr, delta, record):
        rows, ends = real_take(self, csr, delta, record)
        taken.append(rows)
        return rows, ends

    monkeypatch.setattr(KeptEnds, "take", take)
    runs = []
    for limit in (store_boxes_module.KEPT_ENTRIES, -1):
        monkeypatch.setattr(store_boxes_module, "KEPT_ENTRIES", limit)
        runs.append(backend.solve_certified(ssp, ssp.costs, **options))
    kept, anew = runs
    assert kept.n_calls == anew.n_calls and np.array_equal(kept.calls, anew.calls)
    for name in ("lower", "upper", "policy"):
        assert np.array_equal(getattr(kept.certificate, name), getattr(anew.certificate, name))
    assert np.array_equal(kept.policy, anew.policy)
    assert [r.gap for r in kept.history] == [r.gap for r in anew.history]
    return kept, taken[:len(taken) - len(anew.history)]


def _some_rows_kept(taken, n_pairs):
    """Whether some round of the kept run took some rows' ends from the last round."""
    return any(rows is not None and rows.size < n_pairs for rows in taken)


def test_a_kept_run_makes_the_same_calls_and_bounds(backend, monkeypatch):
    ssp = backend.garnet(20, 2, 3, seed=1)
    kept, taken = _kept_and_rebuilt(backend, monkeypatch, ssp, eps=0.5, delta=0.1,
                                    relative=True, seed=0)
    assert len(kept.history) > 2
    assert taken[0] is None and len(taken) == len(kept.history)
    assert _some_rows_kept(taken, 40)


@pytest.mark.slow
@pytest.mark.parametrize("options", [
    dict(eps=0.5, delta=0.1, theta=2.0, seed=1),
    dict(eps=0.5, delta=0.1, relative=True, target="policy", seed=2),
    dict(eps=0.05, delta=0.1, budget=20000, seed=3),
    dict(eps=0.5, delta=0.1, relative=True, sampling="uniform", seed=4),
], ids=["theta", "policy", "budget", "uniform"])
def test_kept_runs_are_the_rebuilt_runs(backend, monkeypatch, options):
    ssp = backend.garnet(15, 2, 3, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        kept, taken = _kept_and_rebuilt(backend, monkeypatch, ssp, **options)
    assert len(kept.history) > 1 and all(rows is not None for rows in taken[1:])
    # Uniform sampling draws every pair every round: nothing to keep, the rows all recomputed.
    assert _some_rows_kept(taken, 30) == (options.get("sampling") != "uniform")


def test_box_ends_of_some_rows_leave_the_others_and_match_all_rows():
    rng = np.random.default_rng(3)
    dense = rng.integers(0, 4, size=(12, 5)) * (rng.random((12, 5)) < 0.6)
    dense[[2, 9]] = 0
    csr = sp.csr_array(dense.astype(np.int64))
    for record in KINDS.values():
        if record.name == "paper":
            continue
        n, lo, hi, hi_unseen = confidence.box_ends(NUMPY_KERNELS, csr, 0.1, record)
        rows = np.array([0, 2, 5, 11])
        ends = (n, np.full_like(lo, -1.0), np.full_like(hi, -1.0), np.full_like(hi_unseen, -1.0))
        confidence.box_ends(NUMPY_KERNELS, csr, 0.1, record, rows, ends)
        entries = np.repeat(np.isin(np.arange(12), rows), np.diff(csr.indptr))
        for got, want, where in ((ends[1], lo, entries), (ends[2], hi, entries),
                                 (ends[3], hi_unseen, np.isin(np.arange(12), rows))):
            np.testing.assert_array_equal(got[where], want[where])
            assert (got[~where] == -1.0).all()


def test_a_missed_simplex_names_the_pair_of_its_row_number():
    with pytest.raises(confidence.ParameterError, match=r"\(s, a\) = \(3, 0\)"):
        confidence.refuse_missed_simplex(np.array([1.0, 0.5]), np.array([4.0, 2.0]), 2, 0.9,
                                         np.array([3, 6]))
    with pytest.raises(confidence.ParameterError, match=r"\(s, a\) = \(0, 1\)"):
        confidence.refuse_missed_simplex(np.array([1.0, 0.5]), np.array([4.0, 2.0]), 2, 0.9)


def test_sample_sizes_are_those_of_scipy():
    # Of every row, of some rows (empty ones among them), and of none.
    rng = np.random.default_rng(8)
    dense = rng.integers(0, 2**40, size=(30, 7)) * (rng.random((30, 7)) < 0.3)
    dense[[0, 29]] = 0
    for data in (dense, dense.astype(np.float64) / 3.0):
        csr = sp.csr_array(data)
        want = np.asarray(csr.sum(axis=1), dtype=np.float64).ravel()
        for rows in (np.arange(30), np.array([0, 4, 5, 17, 29]), np.array([3]),
                     np.array([], dtype=np.int64)):
            assert np.array_equal(store_boxes_module._sample_sizes(csr, rows), want[rows])


def _csr(dense):
    return sp.csr_array(np.asarray(dense, dtype=np.int64))


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, None], ids=["numpy", "compiled"])
def test_rows_of_equal_float_totals_but_other_counts_are_rebuilt(kernels):
    # (2^53 - 1, 1) then (2^53 - 1, 2): the totals 2^53 and 2^53 + 1 are the same float64.
    if kernels is None:
        kernels = importlib.import_module("fast.kernels").COMPILED_KERNELS
    store = SampleStore(2, 1)
    store.add(0, 0, [0, 1], [2**53 - 1, 1])
    store.add(1, 0, [2], [5])
    kept, kl = KeptEnds(), box_kind("kl")
    store_boxes(kernels, store.counts_csr(), 0.1, kl, kept)
    store.add(0, 0, [1], [1])
    csr = store.counts_csr()
    rows, _ = copy.copy(kept).take(csr, 0.1, kl)
    assert np.array_equal(rows, [0])
    got, want = store_boxes(kernels, csr, 0.1, kl, kept), store_boxes(kernels, csr, 0.1, kl)
    assert np.array_equal(got.lo, want.lo) and np.array_equal(got.hi, want.hi)
    assert np.array_equal(got.hi_unseen, want.hi_unseen)


def test_rows_are_matched_on_their_entries_not_on_their_totals_or_lengths():
    kept, kl = KeptEnds(), box_kind("kl")
    first = _csr([[3, 1, 0], [0, 2, 2], [4, 0, 0], [0, 0, 0]])
    store_boxes(NUMPY_KERNELS, first, 0.1, kl, kept)
    # Row 0: the same total and length, other counts; row 1: other columns; row 2 unchanged;
    # row 3 gains entries. Counts a store would never make from the first: the rule needs
    # nothing of the store.
    later = _csr([[2, 2, 0], [2, 0, 2], [4, 0, 0], [1, 0, 0]])
    boxes = store_boxes(NUMPY_KERNELS, later, 0.1, kl, kept)
    _assert_same(boxes, confidence.confidence_boxes(later.toarray().reshape(2, 2, 3), 0.1,
                                                    kind="kl"))
    rows, _ = kept.take(_csr([[2, 2, 0], [2, 0, 2], [5, 0, 0], [1, 0, 0]]), 0.1, kl)
    assert np.array_equal(rows, [2])


def test_ends_of_another_shape_or_kind_record_are_not_read():
    kl = box_kind("kl")
    counts = [[3, 1, 0], [0, 2, 2], [4, 0, 0], [0, 1, 0]]
    kept = KeptEnds()
    store_boxes(NUMPY_KERNELS, _csr(counts), 0.1, kl, kept)
    # As many rows, with the same entries, of 4 states and 1 action: S and A differ.
    wide = _csr([row + [0, 0] for row in counts])
    assert kept.take(wide, 0.1, kl) == (None, None)
    store_boxes(NUMPY_KERNELS, _csr(counts), 0.1, kl, kept)
    other = dataclasses.replace(kl, level=lambda n, S, A, delta: 2 * kl.level(n, S, A, delta))
    assert kept.take(_csr(counts), 0.1, other) == (None, None)
    store_boxes(NUMPY_KERNELS, _csr(counts), 0.1, kl, kept)
    rows, _ = kept.take(_csr(counts), 0.1, kl)
    assert rows.size == 0
