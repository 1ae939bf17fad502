"""The compiled chain solve ``fast._poured.poured_solve``: its arguments checked (those of
every compiled chain function, the kernel's pieces, too), and its backward error that of the
candidate it returns on chains whose values have both signs.

Ground truth: the kernel expanded to a dense matrix, its backward error formed in numpy.
"""

import numpy as np
import pytest
from test_policy_iterations import _garnet_problem
from test_poured_chains import _random_kernel

from fast import _poured
from fast.kernels import COMPILED_KERNELS, _chain_arrays
from reference.errors import ShapeError, SparseFormatError
from reference.kernels import NUMPY_KERNELS


def _system(S, seed):
    """A random square kernel, its active rows (int8, a few inactive) and a right-hand side
    of both signs, 0 on the inactive rows."""
    kernel = _random_kernel(S, seed)
    rng = np.random.default_rng(seed + 1)
    active = np.ones(S, dtype=np.int8)
    active[rng.integers(0, S, 10)] = 0
    rhs = rng.uniform(0.1, 1.0, S) * rng.choice([-1.0, 1.0], S)
    rhs[active == 0] = 0.0
    return kernel, active, rhs


def test_the_solve_refuses_vectors_of_another_size_than_the_states():
    kernel, active, rhs = _system(30, 5)
    arrays = _chain_arrays(kernel)
    x = np.zeros(30)
    for name, given in [("active", (active[:-1], rhs, x)), ("rhs", (active, rhs[:-1], x)),
                        ("x", (active, rhs, np.zeros(31)))]:
        with pytest.raises(ShapeError, match=f"`{name}`.*30.*got {29 if name != 'x' else 31}"):
            _poured.poured_solve(*arrays, *given, 1e-14, 2, 10)


@pytest.mark.parametrize("piece, change, message", [
    (0, lambda a: a.astype(np.int32), "int64 `order`.*got a ndarray int32"),
    (2, lambda a: np.repeat(a, 2)[::2], "int64 `indptr`.*C-contiguous"),
    (4, lambda a: a.astype(np.float32), "float64 `data`.*got a ndarray float32"),
    (6, lambda a: a.reshape(-1, 1), r"int64 `reach`.*one-dimensional.*\(30, 1\)"),
    (5, lambda a: a[:-1], "lengths.*width 29, reach 30"),
    (1, lambda a: a[:-1], "lengths.*order 31, rank 30"),
    (3, list, "int64 `indices`.*got a list"),
])
def test_the_chain_functions_refuse_pieces_of_another_dtype_layout_or_length(piece, change,
                                                                          message):
    kernel, active, rhs = _system(30, 5)
    arrays = list(_chain_arrays(kernel))
    arrays[piece] = change(np.array(arrays[piece]))
    x = np.zeros(30)
    for call in (lambda: _poured.poured_solve(*arrays, active, rhs, x, 1e-14, 2, 10),
                 lambda: _poured.poured_apply(*arrays, np.zeros(31), np.zeros(32), x),
                 lambda: _poured.reaches_goal(*arrays)):
        with pytest.raises(SparseFormatError, match=message):
            call()


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("maxiter", [2, 3, 200])
def test_the_backward_error_is_that_of_the_candidate_with_values_of_both_signs(maxiter,
                                                                               transposed):
    # omega = max |b - M x| / (|b| + d |x| + Q |x|) over the active rows (|x| Q for the
    # transposed system), 0/0 = 0: with values of both signs Q |x| is not |Q x|. From a start
    # of both signs, few BiCGSTAB steps leave a backward error well above the rounding.
    S = 300
    kernel, active, rhs = _system(S, 41)
    if transposed:
        active[:] = 1
        rhs = np.random.default_rng(43).uniform(0.1, 1.0, S) * np.where(np.arange(S) % 2, 1, -1)
    rows = active == 1
    dense = kernel.toarray()[:, :S] * rows
    off = dense * (1.0 - np.eye(S))
    diagonal = np.where(rows, 1.0 - np.diag(dense), 1.0)
    if transposed:
        off = off.T
    for rounds in range(3):
        x = np.where(rows, 2.0 * np.sign(rhs), 0.0)
        omega, _ = _poured.poured_solve(*_chain_arrays(kernel), active, rhs, x, 1e-14,
                                        rounds, maxiter, transposed)
        assert (x[rows] < 0).any() and (x[rows] > 0).any()
        gap = np.abs(rhs - diagonal * x + off @ x)[rows]
        scale = (np.abs(rhs) + diagonal * np.abs(x) + off @ np.abs(x))[rows]
        expected = np.max(np.where(gap == 0.0, 0.0, gap / np.where(gap == 0.0, 1.0, scale)))
        assert abs(omega - expected) <= 1e-6 * expected + 1e-15


def _row_short(kernel):
    """The pieces of ``kernel`` without its last row, every piece consistently one row
    shorter: a kernel of ``S - 1`` rows over ``S + 1`` next states."""
    order, rank, indptr, indices, data, width, reach, partial = _chain_arrays(kernel)
    end = indptr[-2]
    return (order, rank, indptr[:-1].copy(), indices[:end].copy(), data[:end].copy(),
            width[:-1].copy(), reach[:-1].copy(), partial[:-1].copy())


def test_the_square_chain_functions_refuse_a_kernel_of_fewer_rows_than_states():
    # A kernel one row short is well-formed (poured_apply takes any rows), but the chain
    # solve and the goal search read one row per state: refused, not read past the rows.
    kernel, active, rhs = _system(30, 5)
    arrays = _row_short(kernel)
    for call in (lambda: _poured.poured_solve(*arrays, active, rhs, np.zeros(30), 1e-14, 2, 10),
                 lambda: _poured.poured_solve(*arrays, active, rhs, np.zeros(30), 1e-14, 2, 10,
                                              True),
                 lambda: _poured.reaches_goal(*arrays)):
        with pytest.raises(ShapeError, match=r"shape \(S, S\+1\) = \(30, 31\).*got \(29, 31\)"):
            call()
    x = np.random.default_rng(6).random(31)
    out = np.empty(29)
    _poured.poured_apply(*arrays, x, np.empty(32), out)
    np.testing.assert_allclose(out, kernel.finite_product(x)[:29], rtol=1e-12)


@pytest.mark.parametrize("x, along, out, message", [
    (30, 32, 29, "31, 32, 29 entries; got 30, 32, 29"),
    (31, 31, 29, "31, 32, 29 entries; got 31, 31, 29"),
    (31, 32, 30, "31, 32, 29 entries; got 31, 32, 30"),
    (31, 32, 1, "31, 32, 29 entries; got 31, 32, 1"),
])
def test_the_product_refuses_vectors_of_another_size_than_its_kernel(x, along, out, message):
    arrays = _row_short(_system(30, 5)[0])
    with pytest.raises(ShapeError, match=f"poured_apply: `x`, `along`, `out` must have {message}"):
        _poured.poured_apply(*arrays, np.zeros(x), np.zeros(along), np.zeros(out))


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS], ids=["numpy", "compiled"])
def test_the_chain_kernels_refuse_a_poured_kernel_of_fewer_rows_than_states(kernels):
    # The pour of S - 1 rows is a kernel of shape (S - 1, S + 1): not a chain.
    boxes = _garnet_problem()[0]
    S, A = boxes.n_states, boxes.n_actions
    rows = np.arange(S - 1, dtype=np.int64) * A
    v = np.concatenate([np.random.default_rng(7).random(S) * 10, [0.0]])
    kernel = kernels.pour_kernel(boxes, rows, v, True)
    shape = rf"\({S - 1}, {S + 1}\)"
    with pytest.raises(ShapeError, match=shape):
        kernels.poured_chain_visits(kernel, np.ones(S - 1))
    with pytest.raises(ShapeError, match=shape):
        kernels.poured_chain_values(kernel, np.ones(S - 1), np.zeros(S - 1))
