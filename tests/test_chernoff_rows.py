"""The kernel ``chernoff_rows``: the compiled kernel against the numpy one, bit for bit, and both
against ``kl_interval`` entry by entry."""

import numpy as np
import pytest
import scipy.sparse as sp

from fast.kernels import COMPILED_KERNELS
from reference import box_kinds
from reference.errors import ParameterError, ShapeError, SparseFormatError
from reference.kernels import NUMPY_KERNELS


def _counts(seed, S=9, A=2, dtype=np.int64):
    """CSR counts ``(S*A, S+1)`` with rows of every kind: without samples, with one next state,
    with the goal column alone, with every next state, and with large and small counts."""
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 6, size=(S * A, S + 1)) * (rng.random((S * A, S + 1)) < 0.4)
    dense[0] = 0
    dense[1] = 0
    dense[1, 3] = 17
    dense[2] = 0
    dense[2, S] = 5
    dense[3] = rng.integers(1, 10**6, size=S + 1)
    dense[4, [0, S]] = [1, 10**9]
    csr = sp.csr_array(dense.astype(dtype))
    return csr, np.asarray(csr.sum(axis=1), dtype=np.float64).ravel()


def _ends(kernels, csr, n, level, rows):
    """``(lo, hi, hi_unseen, hi_sum)`` of ``kernels.chernoff_rows``, from ends filled with -1."""
    lo, hi, hi_unseen = (np.full(size, -1.0) for size in (csr.nnz, csr.nnz, n.size))
    hi_sum = kernels.chernoff_rows(csr.indptr.astype(np.int64), csr.data, n, level, rows,
                                   csr.shape[1], lo, hi, hi_unseen)
    return lo, hi, hi_unseen, hi_sum


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
@pytest.mark.parametrize("seed", range(4))
def test_compiled_rows_are_the_numpy_rows_bit_for_bit(seed, dtype):
    csr, n = _counts(seed, dtype=dtype)
    rng = np.random.default_rng(100 + seed)
    for rows in (np.arange(n.size), np.sort(rng.choice(n.size, size=7, replace=False)),
                 np.array([0, 1, 2, 4]), np.array([], dtype=np.int64)):
        level = 10.0 ** rng.uniform(-3, 2, size=rows.size)
        got = _ends(COMPILED_KERNELS, csr, n, level, rows)
        want = _ends(NUMPY_KERNELS, csr, n, level, rows)
        for name, a, b in zip(("lo", "hi", "hi_unseen", "hi_sum"), got, want):
            assert a.dtype == b.dtype == np.float64, name
            assert np.array_equal(a, b), name


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS],
                         ids=["numpy", "compiled"])
def test_rows_are_kl_interval_entry_by_entry_and_leave_the_others(kernels):
    csr, n = _counts(7)
    rows = np.array([0, 1, 2, 3, 4, 10, 17])
    level = np.linspace(0.5, 30.0, rows.size)
    lo, hi, hi_unseen, hi_sum = _ends(kernels, csr, n, level, rows)
    listed = np.zeros(n.size, dtype=bool)
    listed[rows] = True
    stored = np.diff(csr.indptr)
    entry = np.repeat(listed, stored)
    assert (lo[~entry] == -1).all() and (hi[~entry] == -1).all()
    assert (hi_unseen[~listed] == -1).all()
    for i, r in enumerate(rows):
        e0, e1 = csr.indptr[r], csr.indptr[r + 1]
        p = csr.data[e0:e1] / n[r] if e1 > e0 else np.zeros(0)
        want_lo, want_hi = NUMPY_KERNELS.kl_interval(p, np.full(p.size, n[r]),
                                                     np.full(p.size, level[i]))
        assert np.array_equal(lo[e0:e1], want_lo) and np.array_equal(hi[e0:e1], want_hi)
        unseen = NUMPY_KERNELS.kl_interval(np.zeros(1), n[r:r + 1], level[i:i + 1])[1][0]
        assert hi_unseen[r] == unseen
        # The sum over the row's columns, by hand: the unseen ones, then the stored ones.
        total = 0.0
        for value in hi[e0:e1]:
            total += value
        assert hi_sum[i] == float(csr.shape[1] - (e1 - e0)) * unseen + total
    assert hi_unseen[0] == 1.0 and hi_sum[0] == csr.shape[1]  # no samples: [0, 1] everywhere
    assert 0 < hi_unseen[3] < 1e-4 and hi_sum[3] >= 1.0  # about 10^7 samples


def test_box_kinds_of_the_chernoff_interval_are_marked():
    assert {name for name, kind in box_kinds.KINDS.items() if kind.chernoff} == {"kl", "mixture"}


def test_rows_over_several_lists_and_a_row_longer_than_a_list():
    # The compiled kernel lays out at most 4096 values at a time, or one longer row.
    rng = np.random.default_rng(11)
    n_rows, width = 1500, 6001
    stored = rng.integers(0, 6, size=n_rows)
    stored[700] = 5000
    indices = np.concatenate([np.sort(rng.choice(width, size=k, replace=False)) for k in stored])
    indptr = np.concatenate([[0], np.cumsum(stored)])
    csr = sp.csr_array((rng.integers(1, 50, size=indices.size), indices, indptr),
                       shape=(n_rows, width))
    n = np.asarray(csr.sum(axis=1), dtype=np.float64).ravel()
    for rows in (np.arange(n_rows), np.arange(650, 760), np.array([700])):
        level = rng.uniform(1.0, 20.0, size=rows.size)
        got = _ends(COMPILED_KERNELS, csr, n, level, rows)
        want = _ends(NUMPY_KERNELS, csr, n, level, rows)
        for name, a, b in zip(("lo", "hi", "hi_unseen", "hi_sum"), got, want):
            assert np.array_equal(a, b), name


def _valid(dtype=np.int64):
    """The arguments of a valid call on two rows: ``(indptr, counts, n, level, rows, width,
    lo, hi, hi_unseen)``."""
    counts = np.array([3, 1, 4], dtype=dtype)
    return [np.array([0, 2, 3], dtype=np.int64), counts, np.array([4.0, 4.0]),
            np.array([1.0, 2.0]), np.array([0, 1], dtype=np.int64), 3,
            np.zeros(3), np.zeros(3), np.zeros(2)]


BAD_ARGUMENTS = [
    ("rows", np.array([-1, 0]), ParameterError, r"`rows` must hold row numbers in \[0, 2\).*-1"),
    ("rows", np.array([0, 7]), ParameterError, r"`rows` must hold row numbers in \[0, 2\).*7"),
    ("rows", np.array([0.0, 1.0]), ParameterError, r"`rows` must hold int64.*float64"),
    ("level", np.array([1.0]), ShapeError, r"`level` must have shape \(2,\).*got \(1,\)"),
    ("counts", np.array([3, 1]), SparseFormatError, r"`counts` must have indptr\[-1\] = 3"),
    ("lo", np.zeros(2), SparseFormatError, r"`lo` must have indptr\[-1\] = 3"),
    ("hi", np.zeros(4), SparseFormatError, r"`hi` must have indptr\[-1\] = 3"),
    ("indptr", np.array([0, 2, 5]), SparseFormatError, r"`counts` must have indptr\[-1\] = 5"),
    ("n", np.array([4.0]), ShapeError, r"`n` must have shape \(2,\)"),
    ("hi_unseen", np.zeros(3), ShapeError, r"`hi_unseen` must have shape \(2,\)"),
    ("counts", np.array([3, 1, 4], dtype=np.uint64), SparseFormatError, r"`counts`.*uint64"),
    ("counts", np.array([True, False, True]), SparseFormatError, r"`counts`.*bool"),
    ("lo", np.zeros(3, dtype=np.float32), ParameterError, r"`lo` must be a float64 array"),
    ("indptr", np.array([0.0, 2.0, 3.0]), SparseFormatError, r"`indptr` must hold int64"),
    ("rows", np.array([[0, 1]]), ShapeError, r"`rows` must be one-dimensional"),
]
NAMES = ("indptr", "counts", "n", "level", "rows", "width", "lo", "hi", "hi_unseen")


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS],
                         ids=["numpy", "compiled"])
@pytest.mark.parametrize("name, value, error, message", BAD_ARGUMENTS,
                         ids=[f"{case[0]}-{i}" for i, case in enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_are_refused_naming_them(kernels, name, value, error, message):
    args = _valid()
    args[NAMES.index(name)] = value
    with pytest.raises(error, match=message):
        kernels.chernoff_rows(*args)
    assert all((end == 0).all() for end in args[6:])  # nothing written


@pytest.mark.parametrize("dtype", [np.int32, np.uint16, np.float32])
def test_other_count_dtypes_give_the_ends_of_their_int64_or_float64_values(dtype):
    want = _valid(np.float64 if np.dtype(dtype).kind == "f" else np.int64)
    got = _valid(dtype)
    for kernels in (NUMPY_KERNELS, COMPILED_KERNELS):
        for args in (got, want):
            args[6:] = [np.zeros(3), np.zeros(3), np.zeros(2)]
            args.append(kernels.chernoff_rows(*args))
        for a, b in zip(got[6:], want[6:]):
            assert np.array_equal(a, b) and (a[:2] > 0).all()
        del got[-1], want[-1]


def test_no_rows_write_nothing_on_both_kernels():
    for kernels in (NUMPY_KERNELS, COMPILED_KERNELS):
        args = _valid()
        args[3], args[4] = np.zeros(0), np.zeros(0, dtype=np.int64)
        assert kernels.chernoff_rows(*args).shape == (0,)
        assert all((end == 0).all() for end in args[6:])
