"""The kernel ``closable`` (the first step of the adversary's infinity decision): both kernel
sets against every subset of the states on small boxes, and the compiled one against the
numpy one on larger boxes that often trap the chain."""

import dataclasses
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from fast.kernels import COMPILED_KERNELS
from reference.box_kinds import SIMPLEX_SLACK
from reference.errors import ParameterError, ShapeError
from reference.kernels import NUMPY_KERNELS

KERNEL_SETS = [NUMPY_KERNELS, COMPILED_KERNELS]


def _trapping_boxes(rng, S, A, kind):
    """Boxes of counts with few goal samples, some pairs unseen or seen once (sets that can
    keep the chain are common)."""
    counts = np.zeros((S * A, S + 1))
    for row in range(S * A):
        n = int(rng.choice([0, 1, 5, 30, 40, 2000, 10**5]))
        if n:
            support = rng.choice(S + 1, size=int(rng.integers(1, min(S + 1, 4) + 1)),
                                 replace=False)
            if rng.random() < 0.7:
                support = support[support < S] if (support < S).any() else support
            counts[row, support] = rng.multinomial(n, rng.dirichlet(np.ones(support.size)))
    return reference.confidence_boxes(sp.csr_array(counts), 0.1, kind)


def _stays(boxes, row, X):
    """Whether the row keeps the chain in the set ``X`` (a Python set of states), by the sums
    of the kernel's contract, written out entry by entry."""
    room, inside = 0.0, 0
    for e in range(boxes.indptr[row], boxes.indptr[row + 1]):
        c = int(boxes.indices[e])
        if c in X:
            room += float(boxes.hi[e])
            inside += 1
        elif boxes.lo[e] > 0:
            return False
    return room + float(len(X) - inside) * float(boxes.hi_unseen[row]) >= 1.0 - SIMPLEX_SLACK


def _largest_by_subsets(boxes, rows):
    """The union of every set of states whose rows all keep the chain in it."""
    S = boxes.n_states
    union = set()
    for size in range(1, S + 1):
        for X in itertools.combinations(range(S), size):
            X = set(X)
            if all(_stays(boxes, rows[s], X) for s in X):
                union |= X
    return np.isin(np.arange(S), sorted(union))


@pytest.mark.parametrize("seed", range(40))
def test_closable_is_the_union_of_every_set_that_can_keep_the_chain(seed):
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(1, 6)), 2
    boxes = _trapping_boxes(rng, S, A, ["kl", "bernstein", "mixture"][seed % 3])
    found = 0
    for policy in itertools.product(range(A), repeat=S):
        rows = np.arange(S, dtype=np.int64) * A + np.array(policy, dtype=np.int64)
        want = _largest_by_subsets(boxes, rows)
        found += want.any()
        for kernels in KERNEL_SETS:
            got = kernels.closable(boxes, rows)
            assert got.dtype == bool and got.shape == (S,)
            np.testing.assert_array_equal(got, want, err_msg=kernels.name)
    if seed == 0:
        assert found


@pytest.mark.parametrize("kind", ["kl", "mixture"])
@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_a_positive_lower_end_on_the_goal_keeps_a_state_out(kind, kernels):
    # 30 samples a row, 13 on each state and 4 on the goal: the upper ends inside sum past 1,
    # but the goal's lower end is positive, so neither state can keep the chain.
    counts = np.zeros((2, 1, 3))
    counts[:, 0] = [13, 13, 4]
    boxes = reference.confidence_boxes(counts, 0.1, kind)
    assert boxes.lo[2] > 0 and boxes.hi[0] + boxes.hi[1] >= 1
    np.testing.assert_array_equal(kernels.closable(boxes, np.array([0, 1])), [False, False])
    counts[:, 0, 2] = 0
    boxes = reference.confidence_boxes(counts, 0.1, kind)
    np.testing.assert_array_equal(kernels.closable(boxes, np.array([0, 1])), [True, True])


def _arbitrary_boxes(rng, S):
    """Boxes of one action with arbitrary ends ``0 <= lo <= hi <= 1`` on a random pattern
    (often a positive lower end and no room: the ends of counts rarely are so)."""
    counts = np.zeros((S, S + 1))
    for row in range(S):
        counts[row, rng.choice(S + 1, size=int(rng.integers(1, S + 2)), replace=False)] = 1
    boxes = reference.confidence_boxes(sp.csr_array(counts), 0.1, "kl")
    hi = rng.choice([0.0, 0.2, 0.3, 0.5, 1.0], boxes.hi.size)
    lo = np.where(rng.random(hi.size) < 0.5, 0.0, hi * rng.choice([0.5, 1.0], hi.size))
    return dataclasses.replace(boxes, lo=lo, hi=hi,
                               hi_unseen=rng.choice([0.0, 0.3, 1.0], boxes.hi_unseen.size))


@pytest.mark.parametrize("kernels", KERNEL_SETS, ids=lambda k: k.name)
def test_a_positive_lower_end_outside_the_set_removes_a_state(kernels):
    # Row 0: state 0 in [0, 1], state 1 in [0.2, 0.3]; row 1: state 1 in [0, 0.5], the goal
    # in [0, 1]; no unseen room. No positive lower end leads to the goal, so the removal
    # starts from {0, 1}. State 1's room is 0.5 < 1: it goes. In {0}, state 0's room is 1,
    # but its lower end 0.2 on state 1 now lies outside: it goes too. Nothing can stay.
    counts = np.zeros((2, 1, 3))
    counts[0, 0] = [1, 1, 0]
    counts[1, 0] = [0, 1, 1]
    boxes = reference.confidence_boxes(counts, 0.1, "kl")
    np.testing.assert_array_equal(boxes.indices, [0, 1, 1, 2])
    boxes = dataclasses.replace(boxes, lo=np.array([0.0, 0.2, 0.0, 0.0]),
                                hi=np.array([1.0, 0.3, 0.5, 1.0]), hi_unseen=np.zeros(2))
    np.testing.assert_array_equal(kernels.closable(boxes, np.array([0, 1])), [False, False])


@pytest.mark.parametrize("seed", range(10))
def test_closable_on_arbitrary_ends_is_the_union_of_every_set(seed):
    rng = np.random.default_rng(300 + seed)
    found = 0
    for _ in range(20):
        S = int(rng.integers(1, 6))
        boxes = _arbitrary_boxes(rng, S)
        rows = np.arange(S, dtype=np.int64)
        want = _largest_by_subsets(boxes, rows)
        found += want.any()
        for kernels in KERNEL_SETS:
            np.testing.assert_array_equal(kernels.closable(boxes, rows), want,
                                          err_msg=kernels.name)
    assert found


@pytest.mark.parametrize("seed", range(12))
def test_the_compiled_closable_matches_the_numpy_one(seed):
    rng = np.random.default_rng(100 + seed)
    S, A = int(rng.integers(20, 200)), int(rng.integers(1, 4))
    boxes = _trapping_boxes(rng, S, A, ["kl", "bernstein", "paper"][seed % 3])
    sizes = set()
    for _ in range(5):
        rows = np.arange(S, dtype=np.int64) * A + rng.integers(0, A, S)
        want = NUMPY_KERNELS.closable(boxes, rows)
        np.testing.assert_array_equal(COMPILED_KERNELS.closable(boxes, rows), want)
        sizes.add(int(want.sum()))
    assert len(sizes) > 1 or sizes != {0}


def test_the_compiled_closable_refuses_rows_out_of_form():
    boxes = _trapping_boxes(np.random.default_rng(0), 4, 2, "kl")
    with pytest.raises(ShapeError, match="rows"):
        COMPILED_KERNELS.closable(boxes, np.zeros(3, dtype=np.int64))
    with pytest.raises(ParameterError, match="rows"):
        COMPILED_KERNELS.closable(boxes, np.array([0, 2, 4, 8]))
