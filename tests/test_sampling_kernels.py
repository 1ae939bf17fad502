"""The sampling kernels: the compiled ones give the numpy ones' arrays, bit for bit.

``merge_counts`` is also checked against scipy's sum of the two matrices (an
independent merge), on random layouts with empty rows, empty terms, increments
storing only entries the counts hold (the sum then keeps the counts' structure,
the very arrays) and increments adding entries before, between and after them,
looked up a chunk at a time or at once.
``split_calls`` is checked on weights with zeros, ties and every remainder
equal, against splits derived by hand, and on more pairs than twice its grid, where
shares rounded up to whole calls exceed the calls to split. Both kernels refuse
malformed arguments.
"""

import dataclasses
import types

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference
from fast.kernels import COMPILED_KERNELS
from reference import sampling_kernels
from reference.certified_sampling import SHARE_GRID, _next_draws
from reference.errors import ParameterError, ShapeError, SparseFormatError
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
    kept = [array.copy() for array in counts + increment]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sampling_kernels, "MERGE_CHUNK", chunk)
        answers = [kernels.merge_counts(*counts, *increment) for kernels in KERNEL_SETS]
    for got in answers:
        _assert_sum(got, counts, increment, (M, N))
    same = answers[0][1].size == counts[1].size
    for got in answers:
        assert (got[0] is counts[0] and got[1] is counts[1]) == same
    for array, copy in zip(counts + increment, kept):
        np.testing.assert_array_equal(array, copy)


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
    for array, kept in zip(counts, ([0, 2, 2, 2, 4], [3, 6, 0, 9], [5, 7, 1, 2])):
        np.testing.assert_array_equal(array, kept)


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
@pytest.mark.parametrize("broken, error, match", [
    (lambda c, i: ((c[0][:0],) + c[1:], i), ShapeError, "`indptr` and `inc_indptr`"),
    (lambda c, i: (c, (i[0][:-1],) + i[1:]), ShapeError, "`indptr` and `inc_indptr`"),
    (lambda c, i: (c[:2] + (c[2][:-1],), i), ShapeError, "`data`"),
    (lambda c, i: (c, i[:2] + (i[2][:-1],)), ShapeError, "`inc_data`"),
    (lambda c, i: ((c[0] + 1,) + c[1:], i), SparseFormatError, "`indptr` must start at 0"),
    (lambda c, i: ((c[0] - np.eye(1, 5, 4, dtype=np.int64)[0],) + c[1:], i),
     SparseFormatError, "`indptr` must start at 0 and end"),
    (lambda c, i: (c, (i[0] + np.eye(1, 5, 4, dtype=np.int64)[0],) + i[1:]),
     SparseFormatError, "`inc_indptr` must start at 0 and end"),
    (lambda c, i: ((np.array([0, 3, 1, 4, 4]),) + c[1:], i), SparseFormatError,
     r"`indptr` must never decrease; got indptr\[2\] < indptr\[1\]"),
    (lambda c, i: ((np.array([0, 9, 1, 4, 4]),) + c[1:], i), SparseFormatError,
     r"`indptr` must never decrease; got indptr\[2\] < indptr\[1\]"),
    (lambda c, i: (c, (np.array([0, 4, 6, 2, 6]),) + i[1:]), SparseFormatError,
     r"`inc_indptr` must never decrease; got inc_indptr\[3\] < inc_indptr\[2\]"),
])
def test_merge_counts_refuses_malformed_row_pointers(kernels, broken, error, match):
    # The layouts of test_merge_counts_on_hand_made_rows, one argument broken: the compiled
    # kernel would read outside the arrays.
    counts = (np.array([0, 2, 2, 2, 4]), np.array([3, 6, 0, 9]), np.array([5, 7, 1, 2]))
    increment = (np.array([0, 4, 4, 6, 6]), np.array([1, 4, 6, 8, 2, 5]),
                 np.array([1, 1, 1, 1, 3, 4]))
    counts, increment = broken(counts, increment)
    with pytest.raises(error, match=match):
        kernels.merge_counts(*counts, *increment)


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
@pytest.mark.parametrize("backend_name", ["reference", "fast"])
def test_solve_certified_merges_with_its_kernel_sets_merge(backend_name):
    # A kernel set whose merge_counts counts its calls: the samples of every round after the
    # first go through it (the store's own default merge is the numpy kernel, so either
    # backend would miss it).
    backend = reference if backend_name == "reference" else __import__("fast")
    kernels = NUMPY_KERNELS if backend_name == "reference" else COMPILED_KERNELS
    calls = []

    def merge(*arrays):
        calls.append(arrays[3].size)
        return kernels.merge_counts(*arrays)

    solve = dataclasses.replace(kernels, merge_counts=merge).bind(backend.solve_certified)
    ssp = reference.garnet(6, 2, 3, seed=1)
    result = solve(reference.TabularGenerativeModel(ssp), ssp.costs, 0.5, 0.1, budget=1200,
                   seed=2)
    assert len(result.history) >= 3 and len(calls) >= len(result.history) - 1


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
       digits=st.integers(0, 18), grid=st.sampled_from([1.0, 2.0**8, 2.0**16, 2.0**30]))
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
    assert draws[0].sum() == total and draws[0].min() >= 0
    if grid == 2.0**16 and digits <= 12:
        share = more * (total / more.sum())
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


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_split_calls_takes_back_whole_calls_beyond_the_total(kernels):
    # 150000 = 2 * 2^16 + 18928 equal weights and 599999 calls: each share 3.9999933 lies
    # within 1/2^17 of 4 and is rounded to 4, so the whole calls are 600000, one too many.
    # The remainders are all 0: the call comes back from the last pair (ties to the higher
    # index), and from the one before when the last draws nothing.
    m = 150000
    draws = kernels.split_calls(np.ones(m), 599999, SHARE_GRID)
    np.testing.assert_array_equal(draws, np.r_[np.full(m - 1, 4), 3])
    draws = kernels.split_calls(np.r_[np.ones(m), 1e-9], 599999, SHARE_GRID)
    np.testing.assert_array_equal(draws, np.r_[np.full(m - 1, 4), 3, 0])
    # Grid 1, shares 1.5 rounded to 2 (half to even): two calls back, from the last two.
    np.testing.assert_array_equal(kernels.split_calls(np.ones(4), 6, 1.0), [2, 2, 1, 1])


@settings(**dict(SETTINGS, max_examples=10))
@given(seed=st.integers(0, 2**32 - 1))
def test_split_calls_over_more_pairs_than_twice_the_grid_gives_the_total(seed):
    # Over 2^17 pairs of weight about 1 and k * (their number) - 1 calls: each of their
    # shares lies within 1/2^17 below k, is rounded up to k, and the whole calls exceed
    # the total (checked below, with the shares rounded here).
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2**17 + 2**15, 2**18))
    more = rng.choice([1.0, 1.0 + 2.0**-30, 0.0, 1e-12], size=m, p=[0.7, 0.15, 0.1, 0.05])
    total = int(rng.integers(1, 6)) * int(np.count_nonzero(more > 0.5)) - 1
    share = more * (total / more.sum())
    assert np.floor(np.round(share * SHARE_GRID) / SHARE_GRID).sum() > total
    draws = [kernels.split_calls(more, total, SHARE_GRID) for kernels in KERNEL_SETS]
    np.testing.assert_array_equal(draws[1], draws[0])
    assert draws[0].sum() == total and draws[0].min() >= 0
    assert np.all(np.abs(draws[0] - share) < 1.0 + 1e-9)


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_a_uniform_round_of_many_pairs_stays_within_its_cap(kernels):
    # S = 50000, A = 3, every pair sampled 64 times: the uniform round asks for 68 calls a
    # pair, 4 more each, 600000 in all, cut to the cap 599999.
    S, A = 50000, 3
    boxes = types.SimpleNamespace(n_states=S, n_actions=A, n=np.full(S * A, 64.0))
    draws = _next_draws(kernels, boxes, None, "uniform", 64 * S * A, None, 0.1, 599999)
    assert draws.sum() == 599999 and draws.min() >= 3 and draws.max() <= 4


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_a_uniform_round_fills_every_pair_up_from_its_own_count(kernels):
    # S = A = 2, the pairs sampled 0, 3, 10 and 7 times (20 calls): the round aims at
    # ceil(1.05 * 20 / 4) = 6 calls a pair, so 6 and 3 more for the first two pairs, none for
    # the others. Cut to 5 calls, the shares 6 * 5/9 = 3.33 and 3 * 5/9 = 1.67 give 3 and 1,
    # and the call left goes to the larger remainder (the second pair).
    boxes = types.SimpleNamespace(n_states=2, n_actions=2, n=np.array([0.0, 3.0, 10.0, 7.0]))
    for cap, want in ((100, [6, 3, 0, 0]), (5, [3, 2, 0, 0])):
        draws = _next_draws(kernels, boxes, None, "uniform", 20, None, 0.1, cap)
        assert draws.dtype == np.int64
        np.testing.assert_array_equal(draws, want)


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
@pytest.mark.parametrize("more, total, grid, match", [
    (np.array([1.0, np.nan]), 2, 2.0**16, "`more` must hold finite weights"),
    (np.array([1.0, np.inf]), 2, 2.0**16, "`more` must hold finite weights"),
    (np.array([1.0, -0.5]), 2, 2.0**16, "`more` must hold finite weights"),
    (np.zeros(3), 2, 2.0**16, "positive finite sum"),
    (np.zeros(0), 0, 2.0**16, "positive finite sum"),
    (np.array([1e308, 1e308]), 2, 2.0**16, "positive finite sum"),
    (np.ones(3), -1, 2.0**16, "`total` must be >= 0"),
    (np.ones(3), 2, 3.0, "`grid` must be a power of two"),
    (np.ones(3), 2, 0.5, "`grid` must be a power of two"),
    (np.ones(3), 2, 2.0**33, "`grid` must be a power of two"),
    (np.ones(3), 2, np.nan, "`grid` must be a power of two"),
])
def test_split_calls_refuses_arguments_out_of_range(kernels, more, total, grid, match):
    with pytest.raises(ParameterError, match=match):
        kernels.split_calls(more, total, grid)
