"""The compiled pours (``fast/_robust.pyx``) and the tools of the compiled policy iterations
(``fast/_iteration.pyx``) refuse what would make them read or write outside their arrays: a
row that is not one of the boxes', an output shorter than the rows, scratch space that cannot
be allocated, an object never initialised or re-initialised with bad arrays.

Ground truth: the same rows poured by the other entry of the compiled pour (a block of pairs
``first:first+n`` against the same rows listed), or a pour of the same boxes afresh.
"""

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from test_policy_iterations import _garnet_problem

import fast.kernels as fast_kernels
from fast import _iteration, _robust
from reference.errors import ShapeError, SparseFormatError, SSPValueError


def _pour(boxes, rows, v_ext, out, indptr=None):
    """``fast._robust.pour_values`` of ``rows`` against ``v_ext`` (decreasing order) into
    ``out``, on ``boxes`` or on their arrays with ``indptr`` in place of theirs."""
    order, rank, cum_v, cum_inf = fast_kernels._pour_walk(v_ext, True, False)
    return _robust.pour_values(boxes.indptr if indptr is None else indptr, boxes.indices,
                               boxes.lo, boxes.hi, boxes.hi_unseen, rows, v_ext, order, rank,
                               cum_v, cum_inf, out, 1)


def _problem():
    boxes = _garnet_problem()[0]
    S, A = boxes.n_states, boxes.n_actions
    v_ext = np.concatenate([np.random.default_rng(2).random(S) * 10, [0.0]])
    return boxes, S, A, v_ext


def test_a_pour_refuses_an_output_shorter_than_its_rows():
    boxes, S, A, v_ext = _problem()
    rows = np.arange(S * A, dtype=np.int64)
    with pytest.raises(ShapeError, match=rf"`out` must have at least.*\({S * A}\); got 1"):
        _pour(boxes, rows, v_ext, np.empty(1))
    longer = np.full(S * A + 3, -1.0)
    _pour(boxes, rows, v_ext, longer)
    assert np.array_equal(longer[:S * A], fast_kernels.pour_values(boxes, rows, v_ext, True))
    assert np.all(longer[S * A:] == -1.0)


@pytest.mark.parametrize("row", [-1, "pairs", 2 ** 40])
def test_the_pours_refuse_a_row_that_is_not_one_of_the_boxes(row):
    boxes, S, A, v_ext = _problem()
    rows = np.arange(S, dtype=np.int64) * A
    rows[S // 2] = S * A if row == "pairs" else row
    with pytest.raises(SSPValueError, match=f"`rows` must be rows of the boxes, from 0 to "
                                            f"{S * A - 1}"):
        _pour(boxes, rows, v_ext, np.empty(S))
    with pytest.raises(SSPValueError, match="`rows` must be rows of the boxes"):
        _robust.pour_pieces(boxes.indptr, boxes.indices, boxes.lo, boxes.hi, boxes.hi_unseen,
                            rows, fast_kernels._pour_walk(v_ext, True, False)[1], 1)
    pours = _iteration.Pours(fast_kernels._iteration_tools(boxes), True, 0)
    with pytest.raises(SSPValueError, match="`rows` must be rows of the boxes"):
        pours.rows(rows, v_ext)
    for r0, r1 in [(S * A - 1, S * A + 1), (-1, 3)]:
        with pytest.raises(SSPValueError, match="`rows` must be rows of the boxes"):
            pours.pairs(v_ext)(r0, r1)


def test_the_boxes_must_have_arrays_of_consistent_lengths():
    boxes, S, A, v_ext = _problem()
    with pytest.raises(SparseFormatError, match=f"indptr {S * A}, hi_unseen {S * A}"):
        _pour(boxes, np.zeros(1, dtype=np.int64), v_ext, np.empty(1), boxes.indptr[:-1].copy())


def _block_past_the_first():
    """Pour the block of pairs ``8:12`` of boxes whose rows 0..7 store nothing and rows 8..11
    2000 entries each, with a pour long enough (width 1e-5) to sort them; return whether it
    is, bit for bit, the pour of the same rows listed (the other path of the compiled pour)."""
    rng = np.random.default_rng(4)
    S, empty, wide, k = 2500, 8, 4, 2000
    cols = np.concatenate([np.sort(rng.choice(S + 1, k, replace=False)) for _ in range(wide)])
    lo = np.full(cols.size, 1e-4)
    boxes = types.SimpleNamespace(
        indptr=np.concatenate([np.zeros(empty, dtype=np.int64),
                               np.arange(wide + 1, dtype=np.int64) * k]),
        indices=cols.astype(np.int64), lo=lo, hi=lo + rng.random(cols.size) * 1e-4,
        hi_unseen=np.concatenate([np.full(empty, 0.5), np.full(wide, 1e-5)]),
        n_states=empty + wide, n_actions=1)
    v_ext = np.concatenate([rng.random(S) * 10, [0.0]])
    pours = _iteration.Pours(fast_kernels._iteration_tools(boxes), True, 0)
    block = pours.pairs(v_ext)(empty, empty + wide)
    listed = np.empty(wide)
    _pour(boxes, np.arange(empty, empty + wide, dtype=np.int64), v_ext, listed)
    return bool(np.array_equal(block.view(np.uint64), listed.view(np.uint64))
                and np.all(block > 0.0))


def test_a_block_of_pairs_past_the_first_is_poured_with_scratch_for_its_own_rows():
    # The block 8:12 needs scratch for 2000 sort keys, which it must size from its own rows,
    # not from rows 0..3 (which store nothing): scratch too small would be overrun, which a
    # fresh process notices (glibc aborts on the heap it corrupts) if the results do not.
    script = ("import sys; sys.path.insert(0, 'tests'); import test_compiled_pour_checks as t; "
              "import gc; same = t._block_past_the_first(); gc.collect(); print(same)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_scratch_space_that_cannot_be_allocated_raises_memory_error():
    # A row claiming 2**60 stored entries asks for scratch of 2**63 bytes, which no malloc
    # gives: the pour stops before it reads any entry (there is none to read), and so does
    # the pour of pieces (a second row of -2**60 entries keeps its output arrays empty).
    boxes, S, A, v_ext = _problem()
    none = types.SimpleNamespace(indices=np.empty(0, dtype=np.int64), lo=np.empty(0),
                                 hi=np.empty(0), hi_unseen=np.full(2, 0.5))
    with pytest.raises(MemoryError):
        _pour(none, np.zeros(1, dtype=np.int64), v_ext, np.empty(1),
              np.array([0, 2 ** 60, 2 ** 60], dtype=np.int64))
    with pytest.raises(MemoryError):
        _robust.pour_pieces(np.array([0, 2 ** 60, 0], dtype=np.int64), none.indices, none.lo,
                            none.hi, none.hi_unseen, np.array([0, 1], dtype=np.int64),
                            fast_kernels._pour_walk(v_ext, True, False)[1], 1)


def test_tools_never_initialised_refuse_every_use():
    boxes, S, A, v_ext = _problem()
    rows = np.arange(S, dtype=np.int64) * A
    walk = fast_kernels._pour_walk(v_ext, True, False)[:2]
    bare = _iteration.Tools.__new__(_iteration.Tools)
    message = "`tools` must be a Tools built by its __init__"
    for call in (lambda: bare.adversary_kernel(rows, walk),
                 lambda: _iteration.Pours(bare, True, 10),
                 lambda: _iteration.adversary_iteration(bare, rows, np.ones(S),
                                                        np.zeros(S, dtype=bool), np.zeros(S)),
                 lambda: _iteration.optimist_iteration(bare, np.ones((S, A)),
                                                       np.zeros(S, dtype=np.int64),
                                                       np.zeros(S)),
                 lambda: _iteration.Pours.__new__(_iteration.Pours).rows(rows, v_ext),
                 lambda: _iteration.Pours.__new__(_iteration.Pours).pairs(v_ext),
                 lambda: _iteration._PairBlocks.__new__(_iteration._PairBlocks)(0, 10)):
        with pytest.raises(SSPValueError, match=message):
            call()


def test_tools_whose_second_init_fails_keep_their_first_arrays():
    # The Tools hold the only references to their arrays: a second __init__ that fails
    # (a list is no int64 buffer) leaves the first arrays and their pointers in place.
    boxes, S, A, v_ext = _problem()
    rows = np.arange(S, dtype=np.int64) * A + 1
    copied = types.SimpleNamespace(**{name: getattr(boxes, name).copy() for name in
                                      ("indptr", "indices", "lo", "hi", "hi_unseen")},
                                   n_states=S, n_actions=A)
    tools = fast_kernels._iteration_tools(copied)
    del copied
    with pytest.raises((TypeError, ValueError)):
        tools.__init__(list(range(S * A + 1)), boxes.indices, boxes.lo, boxes.hi,
                       boxes.hi_unseen, None, None, None, None, None, 1, 1, 1e-10, 1, 1,
                       1.0, 1, 1e-10, 16)
    for _ in range(3):
        np.empty(boxes.indptr.size, dtype=np.int64).fill(-7)
    got = _iteration.Pours(tools, True, 0).rows(rows, v_ext)
    want = np.empty(S)
    _pour(boxes, rows, v_ext, want)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
