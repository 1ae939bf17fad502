"""The compact optimistic kernel ``PouredKernel`` (``p_tilde`` of EVI and SEARCH).

Ground truth: the exact inner problem :func:`reference.optimistic_inner` on
each pair's box (an independent computation: a dense cumulative pour), dense
products of the expanded matrix, and hand-built kernels.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fast
import reference
from fast.kernels import COMPILED_KERNELS, CompiledPouredKernel
from reference.counts import Counts
from reference.kernels import NUMPY_KERNELS

KERNEL_SETS = {"reference": NUMPY_KERNELS, "fast": COMPILED_KERNELS}
EXAMPLES = 150
SETTINGS = dict(deadline=None, max_examples=EXAMPLES,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])
PIECES = ("order", "indptr", "indices", "data", "width", "reach", "partial")


@st.composite
def count_tables(draw):
    """Counts ``(S, A, S+1)`` with zero counts, unseen pairs, the goal and tie-prone values."""
    S = draw(st.integers(1, 9))
    A = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.1, 0.4, 1.0]))
    scale = draw(st.sampled_from([1, 20, 10**4, 10**8]))
    counts = rng.integers(0, scale + 1, size=(S, A, S + 1)) * (rng.random((S, A, S + 1)) < density)
    counts[rng.random((S, A)) < draw(st.sampled_from([0.0, 0.3]))] = 0
    levels = draw(st.sampled_from([[0.0, 1.0], [0.0, 0.5, 2.0], [0.25]]))
    jitter = draw(st.sampled_from([0.0, 1e-3]))
    v_ext = np.append(rng.choice(levels, size=S) + rng.random(S) * jitter, 0.0)
    delta = draw(st.sampled_from([1e-3, 0.1, 0.5]))
    return counts.astype(np.float64), v_ext, delta, draw(st.booleans())


def _kernels_of_every_action(kernels, counts, v_ext, delta, as_csr):
    """The optimistic kernel of each action's pairs: ``A`` kernels of shape ``(S, S+1)``."""
    S, A = counts.shape[:2]
    table = Counts(sp.csr_array(counts.reshape(S * A, S + 1)) if as_csr else counts).table
    boxes = kernels.boxes(table if as_csr else kernels.scan_counts(table), delta)
    return [kernels.optimistic_kernel(boxes, v_ext, np.full(S, a, dtype=np.intp))
            for a in range(A)]


@pytest.mark.parametrize("name", KERNEL_SETS)
@settings(**SETTINGS)
@given(problem=count_tables())
def test_every_row_expands_to_the_exact_inner_problem(problem, name):
    """Also: the kernels' unchecked pieces pass the public checks, with the documented dtypes."""
    counts, v_ext, delta, as_csr = problem
    lo, hi = reference.confidence_box(counts, delta)
    for a, kernel in enumerate(_kernels_of_every_action(KERNEL_SETS[name], counts, v_ext,
                                                         delta, as_csr)):
        exact = reference.optimistic_inner(lo[:, a], hi[:, a], v_ext)
        checked = reference.PouredKernel(*(getattr(kernel, piece) for piece in PIECES))
        for piece in PIECES:
            assert getattr(kernel, piece).dtype == getattr(checked, piece).dtype, piece
            assert not getattr(kernel, piece).flags.writeable, piece
        assert np.array_equal(kernel.rank, checked.rank)
        dense = kernel.toarray()
        assert np.allclose(dense, exact, rtol=0, atol=1e-13)
        assert np.array_equal(kernel.tocsr().toarray(), dense)
        assert kernel.nnz == np.count_nonzero(dense)
        for s in range(kernel.shape[0]):
            assert np.array_equal(kernel[s], dense[s])


@settings(**SETTINGS)
@given(problem=count_tables())
def test_both_kernel_sets_build_identical_pieces(problem):
    counts, v_ext, delta, as_csr = problem
    ours = _kernels_of_every_action(NUMPY_KERNELS, counts, v_ext, delta, as_csr)
    theirs = _kernels_of_every_action(COMPILED_KERNELS, counts, v_ext, delta, as_csr)
    for a, b in zip(ours, theirs):
        for name in PIECES:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


@settings(**SETTINGS)
@given(problem=count_tables(), seed=st.integers(0, 2**32 - 1), infinite=st.booleans())
def test_matvec_equals_the_dense_product(problem, seed, infinite):
    counts, v_ext, delta, as_csr = problem
    rng = np.random.default_rng(seed)
    for kernel in _kernels_of_every_action(NUMPY_KERNELS, counts, v_ext, delta, as_csr):
        dense = kernel.toarray()
        x = rng.uniform(0.5, 2.0, size=kernel.shape[1]) * rng.choice([1.0, 1e3], kernel.shape[1])
        if infinite:
            x[rng.random(x.size) < 0.3] = np.inf
        got = kernel @ x
        finite = np.where(np.isinf(x), 0.0, x)
        expected = dense @ finite + np.where((dense > 0) @ np.isinf(x) > 0, np.inf, 0.0)
        assert np.array_equal(np.isinf(got), np.isinf(expected))
        assert np.allclose(got, expected, rtol=1e-13, atol=0)
        assert np.allclose(kernel @ np.stack([finite, 2 * finite], axis=1),
                           dense @ np.stack([finite, 2 * finite], axis=1), rtol=1e-13, atol=0)
        y = rng.uniform(0.5, 2.0, size=kernel.shape[0])
        assert np.allclose(y @ kernel, y @ dense, rtol=1e-13, atol=1e-300)


@settings(**SETTINGS)
@given(problem=count_tables(), seed=st.integers(0, 2**32 - 1))
def test_compiled_products_with_infinities_are_the_numpy_floats(problem, seed):
    """``kernel @ x`` of the compiled kernel class (:func:`fast._poured.poured_infinities` on
    the finite product) against the numpy one, bit for bit: ``+inf``, ``-inf``, NaN where both
    meet a row, and ``-0.0`` in ``x``; also with the width of some rows put to 0 before
    their reach (an unseen run of probability 0 meets no infinity)."""
    counts, v_ext, delta, as_csr = problem
    rng = np.random.default_rng(seed)
    for poured in _kernels_of_every_action(NUMPY_KERNELS, counts, v_ext, delta, as_csr):
        pieces = {piece: getattr(poured, piece) for piece in PIECES}
        pieces["width"] = np.where(rng.random(poured.shape[0]) < 0.5, 0.0, poured.width)
        pieces["partial"] = np.minimum(poured.partial, pieces["width"])
        for kernel in (poured, reference.PouredKernel(**pieces)):
            compiled = CompiledPouredKernel(*(getattr(kernel, piece) for piece in PIECES))
            for _ in range(3):
                x = rng.choice([0.0, -0.0, 0.7, -2.5, 1e3, np.inf, -np.inf],
                               size=kernel.shape[1], p=[0.15, 0.1, 0.2, 0.2, 0.15, 0.1, 0.1])
                want, got = kernel @ x, compiled @ x
                assert np.array_equal(got.view(np.int64), want.view(np.int64))


def _product_recomputing_the_layout(kernel, x):
    """``kernel @ x`` for finite ``x`` as :meth:`PouredKernel.finite_product` computed it before the
    layout was kept: every piece rebuilt from the stored arrays on each call."""
    n, n_next = kernel.shape
    rows = np.repeat(np.arange(n), np.diff(kernel.indptr))
    at = kernel.rank[kernel.indices]
    before = at < kernel.reach[rows]
    stored_there = np.bincount(rows[at == kernel.reach[rows]], minlength=n) > 0
    unseen_at_reach = (kernel.reach < n_next) & ~stored_there
    along = np.concatenate([[0.0], np.cumsum(x[kernel.order])])
    x_stored = x[kernel.indices]
    seen_before = np.bincount(rows[before], weights=x_stored[before], minlength=n)
    at_reach = np.where(unseen_at_reach, x[kernel.order[np.minimum(kernel.reach, n_next - 1)]],
                        0.0)
    stored = np.bincount(rows, weights=kernel.data * x_stored, minlength=n)
    return stored + kernel.width * (along[kernel.reach] - seen_before) + kernel.partial * at_reach


@pytest.mark.parametrize("name", KERNEL_SETS)
@settings(**SETTINGS)
@given(problem=count_tables(), seed=st.integers(0, 2**32 - 1))
def test_kept_layout_gives_the_products_bit_for_bit(problem, seed, name):
    """The layout a kernel keeps after its first product changes no later product by a bit."""
    counts, v_ext, delta, as_csr = problem
    rng = np.random.default_rng(seed)
    for kernel in _kernels_of_every_action(KERNEL_SETS[name], counts, v_ext, delta, as_csr):
        for _ in range(3):
            x = rng.uniform(0.0, 2.0, size=kernel.shape[1]) * rng.choice([1.0, 1e3],
                                                                          kernel.shape[1])
            assert np.array_equal(kernel @ x, _product_recomputing_the_layout(kernel, x))
        rows, before, at_reach = kernel._stored_before_reach()
        assert not (rows.flags.writeable or before.flags.writeable or at_reach.flags.writeable)
        assert not kernel._unseen_at_reach().flags.writeable


@pytest.mark.parametrize("name", KERNEL_SETS)
def test_memory_does_not_grow_with_the_samples_per_pair(name):
    """Same support, 10^3 and 10^9 samples per pair: equal bytes, though the explicit
    kernel grows from a few entries a row to hundreds."""
    ssp = reference.garnet(400, 2, 3, seed=4, sparse=True)
    P = ssp.kernel_csr()
    sizes = []
    for n in (10**3, 10**9):
        counts = P.copy()
        counts.data = np.maximum(1.0, np.round(P.data * n))
        out = getattr(reference if name == "reference" else fast, "extended_value_iteration")(
            counts, ssp.costs, 0.1, 1e-3)
        sizes.append((out.p_tilde.nbytes, out.p_tilde.nnz, out.p_tilde.indices.size))
    (small_bytes, small_nnz, small_stored), (large_bytes, large_nnz, large_stored) = sizes
    assert small_bytes == large_bytes and small_stored == large_stored == 400 * 3
    assert large_nnz > 20 * small_nnz


def test_a_hand_built_kernel():
    # Order: goal, 0, 1, 2. Row 0 stores state 1 and stops at it; row 1 stores the goal
    # (0.1) and pours 0.6 at width 0.25: states 0 and 1 full, 0.1 into state 2.
    kernel = reference.PouredKernel(order=[3, 0, 1, 2], indptr=[0, 1, 2], indices=[1, 3],
                                    data=[0.6, 0.1], width=[0.2, 0.25], reach=[2, 3],
                                    partial=[0.0, 0.1])
    expected = np.array([[0.2, 0.6, 0.0, 0.2], [0.25, 0.25, 0.1, 0.1]])
    assert kernel.shape == (2, 4) and len(kernel) == 2
    assert np.array_equal(kernel.toarray(), expected)
    assert np.array_equal(np.asarray(kernel), expected)
    assert np.asarray(kernel, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="copy=False"):
        np.array(kernel, copy=False)
    assert kernel.nnz == 7
    assert np.allclose(kernel @ np.array([1.0, 2.0, 4.0, 0.0]), expected @ [1, 2, 4, 0])
    assert np.array_equal(kernel @ np.array([np.inf, 0.0, 0.0, 0.0]), [np.inf, np.inf])
    assert np.array_equal(kernel @ np.array([0.0, 0.0, -np.inf, np.inf]), [np.inf, np.nan],
                          equal_nan=True)
    assert isinstance(kernel.tocsr(), sp.csr_array)
    assert np.array_equal(kernel[-1], expected[1])
    assert np.array_equal(kernel[[1, 0]].toarray(), expected[[1, 0]])
    assert np.array_equal(kernel[np.array([False, True])].toarray(), expected[1:])
    again = pickle.loads(pickle.dumps(kernel))
    assert all(np.array_equal(getattr(again, n), getattr(kernel, n)) for n in PIECES)
    assert "shape=(2, 4)" in repr(kernel) and "nnz=7" in repr(kernel)


def test_a_kernel_is_immutable():
    kernel = reference.PouredKernel([1, 0], [0, 0], [], [], [1.0], [1], [0.0])
    with pytest.raises(AttributeError):
        kernel.width = np.zeros(1)
    with pytest.raises(ValueError):
        kernel.data[...] = 0.0
    assert np.array_equal(kernel.toarray(), [[0.0, 1.0]])


@pytest.mark.parametrize("changes, error", [
    (dict(order=[0, 0, 1]), reference.ParameterError),
    (dict(order=[[0, 1, 2]]), reference.ShapeError),
    (dict(indptr=[1, 1]), reference.ParameterError),
    (dict(indices=[1, 1], data=[0.1, 0.1], indptr=[0, 2]), reference.ParameterError),
    (dict(indices=[3]), reference.ParameterError),
    (dict(data=[np.nan]), reference.NotFiniteError),
    (dict(data=[-0.1]), reference.ParameterError),
    (dict(width=[0.1, 0.2]), reference.ShapeError),
    (dict(partial=[0.6]), reference.ParameterError),
    (dict(reach=[4]), reference.ParameterError),
])
def test_bad_pieces_are_refused(changes, error):
    pieces = dict(order=[2, 0, 1], indptr=[0, 1], indices=[1], data=[0.5], width=[0.5],
                  reach=[1], partial=[0.0])
    with pytest.raises(error):
        reference.PouredKernel(**{**pieces, **changes})


def test_bad_products_and_keys_are_refused():
    kernel = reference.PouredKernel([1, 0], [0, 0], [], [], [1.0], [1], [0.0])
    with pytest.raises(reference.ShapeError):
        kernel @ np.ones(3)
    with pytest.raises(reference.NotFiniteError):
        kernel @ np.array([np.nan, 0.0])
    with pytest.raises(IndexError):
        kernel[1]
    with pytest.raises(reference.ShapeError):
        np.ones(2) @ kernel
    with pytest.raises(reference.NotFiniteError):
        np.array([np.inf]) @ kernel
