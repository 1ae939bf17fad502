"""The sampling kernels: the compiled ones give the numpy ones' arrays, bit for bit.

``merge_counts`` is also checked against scipy's sum of the two matrices (an
independent merge), on random layouts with empty rows, empty terms, increments
storing only entries the counts hold (the sum then keeps the counts' structure,
the very arrays) and increments adding entries before, between and after them,
looked up a chunk at a time or at once.
``split_calls`` is checked on weights with zeros, ties and every remainder
equal, against splits derived by hand.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference
from fast.kernels import COMPILED_KERNELS
from reference import sampling_kernels
from reference.generative import SampleStore
from reference.kernels import NUMPY_KERNELS

SETTINGS = dict(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
KERNEL_SETS = (NUMPY_KERNELS, COMPILED_KERNELS)


def _layout(rng, M, N, density):
    """The int64 arrays of a random canonical CSR ``(M, N)`` with positive counts."""
    dense = rng.integers(1, 9, size=(M, N)) * (rng.random((M, N)) < density)
    csr = sp.csr_array(dense)
    return (csr.indptr.astype(np.int64), csr.indices.astype(np.int64),
            csr.data.astype(np.int64))


def _subset(rng, indptr, indices, share):
    """An increment storing some of the entries of a layout, with new positive counts."""
    keep = rng.random(indices.size) < share
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))[keep]
    inc_indptr = np.zeros(indptr.size, dtype=np.int64)
    np.add.at(inc_indptr, rows + 1, 1)
    return np.cumsum(inc_indptr), indices[keep], rng.integers(1, 9, size=int(keep.sum()))


def _assert_sum(got, counts, increment, shape):
    want = (sp.csr_array(counts[::-1], shape=shape)
            + sp.csr_array(increment[::-1], shape=shape))
    for array, expected in zip(got, (want.indptr, want.indices, want.data)):
        assert array.dtype == np.int64
        np.testing.assert_array_equal(array, expected)


@settings(**SETTINGS)
@given(seed=st.integers(0, 2**32 - 1), M=st.integers(0, 30), N=st.integers(1, 40),
       density=st.sampled_from([0.0, 0.05, 0.3, 1.0]), kind=st.sampled_from(
           ["random", "subset", "same", "empty"]), chunk=st.sampled_from([1, 3, 7, 1 << 16]))
def test_merge_counts_kernels_agree_with_scipys_sum(seed, M, N, density, kind, chunk):
    rng = np.random.default_rng(seed)
    counts = _layout(rng, M, N, density)
    if kind == "random":
        increment = _layout(rng, M, N, float(rng.random()) ** 2)
    elif kind == "empty":
        increment = _layout(rng, M, N, 0.0)
    else:
        increment = _subset(rng, counts[0], counts[1], 1.0 if kind == "same" else 0.5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sampling_kernels, "MERGE_CHUNK", chunk)
        answers = [kernels.merge_counts(*counts, *increment) for kernels in KERNEL_SETS]
    for got in answers:
        _assert_sum(got, counts, increment, (M, N))
    kept = answers[0][1].size == counts[1].size
    for got in answers:
        assert (got[0] is counts[0] and got[1] is counts[1]) == kept
    assert np.array_equal(counts[2], _layout(np.random.default_rng(seed), M, N, density)[2])


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_merge_counts_on_hand_made_rows(kernels):
    # Row 0: a new entry before, between and after the stored ones, and one stored again;
    # row 1: empty in both; row 2: entries only in the increment; row 3: only in the counts.
    counts = (np.array([0, 2, 2, 2, 4]), np.array([3, 6, 0, 9]), np.array([5, 7, 1, 2]))
    increment = (np.array([0, 4, 4, 6, 6]), np.array([1, 4, 6, 8, 2, 5]),
                 np.array([1, 1, 1, 1, 3, 4]))
    indptr, indices, data = kernels.merge_counts(*counts, *increment)
    np.testing.assert_array_equal(indptr, [0, 5, 5, 7, 9])
    np.testing.assert_array_equal(indices, [1, 3, 4, 6, 8, 2, 5, 0, 9])
    np.testing.assert_array_equal(data, [1, 5, 1, 8, 1, 3, 4, 1, 2])
    np.testing.assert_array_equal(counts[2], [5, 7, 1, 2])


@pytest.mark.parametrize("sparse", [False, True])
def test_a_store_gives_the_same_counts_with_either_merge(sparse):
    ssp = reference.garnet(40, 3, 4, seed=5, sparse=sparse)
    stores = []
    for kernels in KERNEL_SETS:
        model, rng = reference.TabularGenerativeModel(ssp), np.random.default_rng(3)
        store = SampleStore(40, 3)
        store.merge = kernels.merge_counts
        draws = np.random.default_rng(4)
        for _ in range(12):
            pairs = np.flatnonzero(draws.random(120) < 0.3)
            store.draw_pairs(model, pairs, draws.integers(0, 6, pairs.size), rng)
            store.counts_csr()
        stores.append(store.counts_csr())
    for name in ("indptr", "indices", "data"):
        got, want = getattr(stores[1], name), getattr(stores[0], name)
        assert got.dtype == want.dtype == np.int64
        np.testing.assert_array_equal(got, want)


@settings(**SETTINGS)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 400),
       kind=st.sampled_from(["random", "zeros", "integers", "equal", "tiny"]),
       digits=st.integers(0, 12), grid=st.sampled_from([1.0, 2.0**8, 2.0**16, 2.0**30]))
def test_split_calls_kernels_agree(seed, m, kind, digits, grid):
    rng = np.random.default_rng(seed)
    more = rng.random(m) * 10.0 ** rng.uniform(-100 if kind == "tiny" else -3, 6)
    if kind == "zeros":
        more[rng.random(m) < 0.7] = 0.0
    elif kind == "integers":
        more = np.round(more * 10)
    elif kind == "equal":
        more[:] = 3.0
    more[0] = max(more[0], 1e-100)
    total = int(rng.integers(0, 10**digits + 1))
    kept = more.copy()
    draws = [kernels.split_calls(more, total, grid) for kernels in KERNEL_SETS]
    assert draws[0].dtype == draws[1].dtype == np.int64
    np.testing.assert_array_equal(draws[1], draws[0])
    np.testing.assert_array_equal(more, kept)
    if grid == 2.0**16:
        share = more * (total / more.sum())
        assert draws[0].sum() == total
        assert np.all(np.abs(draws[0] - share) < 1.0 + 1e-9 * np.maximum(share, 1.0))


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_split_calls_by_hand(kernels):
    grid = 2.0**16
    # Shares 2/3 each: nothing whole, the two calls left go to the first two (ties).
    np.testing.assert_array_equal(kernels.split_calls(np.ones(3), 2, grid), [1, 1, 0])
    # Shares 2.25 and 0.75: floors 2 and 0, the call left to the larger remainder.
    np.testing.assert_array_equal(kernels.split_calls(np.array([3.0, 1.0]), 3, grid), [2, 1])
    # Shares within 1/2^17 of each other are rounded onto one multiple of 1/2^16, so the
    # call goes to the first (unrounded, the second's share is the largest).
    more = np.array([1.0, 1.0 + 2.0**-20, 1.0 - 2.0**-20])
    np.testing.assert_array_equal(kernels.split_calls(more, 1, grid), [1, 0, 0])
    np.testing.assert_array_equal(kernels.split_calls(more, 1, 2.0**30), [0, 1, 0])
    # No calls, or weights on one pair.
    np.testing.assert_array_equal(kernels.split_calls(np.array([0.0, 5.0, 0.0]), 0, grid),
                                  [0, 0, 0])
    np.testing.assert_array_equal(kernels.split_calls(np.array([0.0, 5.0, 0.0]), 7, grid),
                                  [0, 7, 0])


def test_the_compiled_split_refuses_a_grid_it_cannot_key():
    for grid in (3.0, 0.5, 2.0**33):
        with pytest.raises(ValueError, match="power of two"):
            COMPILED_KERNELS.split_calls(np.ones(3), 2, grid)
