"""The kernel ``robust_iteration`` and the robust policy iteration around it.

The compiled kernel runs the rounds of :func:`reference.robust_rounds.robust_rounds` in one
call; run on the same steps (the compiled kernels ``closable``, ``adversary_iteration``,
``upper_check`` and ``pour_values``), the numpy loop must give the same floats, kernel,
counts and status, whichever way the rounds end (no switch, the round limit, a state that
may be infinite or a cost of 0, an infinite value after the check). The robust policy
iteration must give what it gives with every round run outside the kernel (the loop before
the kernel), on both kernel sets, through goal forcing, infinite states, failed solves and
the iteration limit.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from test_policy_iterations import EXAMPLES, SETTINGS, _garnet_problem, _same, problems

import fast.kernels as fast_kernels
import reference
from fast.kernels import COMPILED_KERNELS
from reference import robust_rounds
from reference.chains import poured as poured_chains
from reference.errors import ConvergenceError, ParameterError, ShapeError
from reference.kernels import NUMPY_KERNELS
from reference.robust import optimal

STATUSES = (robust_rounds.DONE, robust_rounds.INFINITE, robust_rounds.OPEN,
            robust_rounds.LIMIT)


def _steps_loop(boxes, costs, policy, start, rounds):
    """The numpy loop on the compiled kernels' steps."""
    k = COMPILED_KERNELS
    return robust_rounds.robust_rounds(k.closable, k.adversary_iteration, k.upper_check,
                                       k.pour_values, boxes, costs, policy, start, rounds)


def _check(problem, rounds=1000):
    boxes, costs, policy, start = problem
    got = COMPILED_KERNELS.robust_iteration(boxes, costs, policy, start, rounds)
    _same(got, _steps_loop(boxes, costs, policy, start, rounds))
    assert got[-1] in STATUSES
    assert got[-1] != robust_rounds.OPEN or got[2] is None
    return got


def _by_hand(kernels):
    """``kernels`` whose ``robust_iteration`` hands every round back: the robust policy
    iteration then runs each round itself, as it did before the kernel."""
    def open_every_round(boxes, costs, policy, start, rounds):
        return start, policy.copy(), None, 0, 0, False, 0, 0.0, robust_rounds.OPEN

    return dataclasses.replace(kernels, robust_iteration=open_every_round)


def _same_policy_iteration(kernels, boxes, costs, policy):
    got = optimal._robust_policy(kernels, boxes, costs, policy)
    want = optimal._robust_policy(_by_hand(kernels), boxes, costs, policy)
    _same(got, want)
    return got


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(problem=problems())
def test_the_compiled_rounds_are_the_loop_on_compiled_steps(problem):
    _check(problem)


def test_the_rounds_on_a_garnet_switch_and_end_as_the_loop():
    problem = _garnet_problem()
    done = _check(problem)
    assert done[-1] == robust_rounds.DONE and done[3] >= 2
    for rounds in range(1, done[3]):
        got = _check(problem, rounds)
        assert got[-1] == robust_rounds.LIMIT and got[3] == rounds
        assert not np.array_equal(got[1], done[1]) or rounds == done[3] - 1


@pytest.mark.parametrize("block", [1, 5, 7, 13])
def test_the_rounds_in_blocks_of_states_are_the_rounds_in_one(block, monkeypatch):
    # The garnet's 40 states in blocks of `block` (the last one shorter but for 1 and 5):
    # each pair's Q-value takes the cost of its own pair, in whichever block it is poured.
    problem = _garnet_problem()
    whole = _check(problem)
    A = problem[1].shape[1]
    monkeypatch.setattr(fast_kernels, "POUR_BLOCK_PAIRS", block * A)
    monkeypatch.setattr(robust_rounds, "IMPROVEMENT_BLOCK_PAIRS", block * A)
    assert robust_rounds.block_states(A, fast_kernels.POUR_BLOCK_PAIRS) == block
    assert len(robust_rounds._state_blocks(problem[1].shape[0], A)) > 1
    got = _check(problem)
    _same(got, whole)
    assert got[-1] == robust_rounds.DONE and got[3] >= 2


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS], ids=lambda k: k.name)
def test_the_rounds_take_a_read_only_policy_and_return_their_own(kernels):
    boxes, costs, policy, start = _garnet_problem()
    policy.setflags(write=False)
    done = kernels.robust_iteration(boxes, costs, policy, start, 1000)
    assert done[-1] == robust_rounds.DONE
    same = kernels.robust_iteration(boxes, costs, done[1], done[0], 1000)
    assert same[-1] == robust_rounds.DONE and same[3] == 1
    np.testing.assert_array_equal(same[1], done[1])
    assert not np.shares_memory(same[1], done[1])
    zero = costs.copy()
    zero[3] = 0.0
    opened = kernels.robust_iteration(boxes, zero, policy, start, 1000)
    assert opened[-1] == robust_rounds.OPEN and not np.shares_memory(opened[1], policy)


def test_the_rounds_hand_back_zero_costs_and_closable_sets():
    boxes, costs, policy, start = _garnet_problem()
    zero = costs.copy()
    zero[3] = 0.0
    got = _check((boxes, zero, policy, start))
    assert got[-1] == robust_rounds.OPEN and got[3] == 0 and got[2] is None
    np.testing.assert_array_equal(got[0], start)
    S, A = costs.shape
    counts = np.zeros((S, A, S + 1))
    counts[:, :, S] = 1000.0
    counts[5, :, :] = 0.0
    counts[5, :, 5] = 1000.0
    trap, trap_costs = reference.robust.checked_inputs(NUMPY_KERNELS, counts, costs, 0.1, "kl")
    got = _check((trap, trap_costs, policy, start))
    assert got[-1] == robust_rounds.OPEN and got[3] == 0


def test_the_rounds_stop_on_infinite_values_after_failed_solves(monkeypatch):
    def fails(kernel, costs, start):
        raise ConvergenceError("no acceptable candidate")

    monkeypatch.setattr(poured_chains, "POURED_ACCEPT", -1.0)
    monkeypatch.setattr(fast_kernels, "poured_chain_values", fails)
    monkeypatch.setattr(poured_chains, "poured_values", fails)
    statuses = []

    def check(problem):
        got = _check(problem)
        statuses.append(got[-1])
        assert got[-1] in (robust_rounds.OPEN, robust_rounds.INFINITE)
        if got[-1] == robust_rounds.INFINITE:
            assert np.isinf(got[0]).any() and got[3] == 1 and not got[5]

    # The garnet's first round ends on infinite values (its chain solves fail every time).
    check(_garnet_problem())
    assert statuses == [robust_rounds.INFINITE]
    settings(max_examples=EXAMPLES // 4, **SETTINGS)(given(problem=problems())(check))()


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS], ids=lambda k: k.name)
@settings(max_examples=EXAMPLES // 2, **SETTINGS)
@given(problem=problems())
def test_the_policy_iteration_is_the_one_without_the_kernel(kernels, problem):
    boxes, costs, policy, _ = problem
    _same_policy_iteration(kernels, boxes, costs, policy)


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS], ids=lambda k: k.name)
def test_the_policy_iteration_through_goal_forcing_is_the_one_without_the_kernel(kernels,
                                                                                 monkeypatch):
    # Every state's first action goes to a state (the policy of first actions closes cycles
    # of infinite value), its second to the goal: goal forcing switches the infinite states.
    real, forced = optimal._goal_forcing, []
    monkeypatch.setattr(optimal, "_goal_forcing", lambda boxes: forced.append(1) or real(boxes))
    rng = np.random.default_rng(7)
    rescued = 0
    for _ in range(20):
        S, A = 6, 2
        counts = np.zeros((S, A, S + 1))
        for s in range(S):
            counts[s, 0, rng.integers(0, S)] = 2000.0
            counts[s, 1, S] = 2000.0
            counts[s, 1, rng.integers(0, S)] = rng.choice([0.0, 30.0])
        costs = rng.uniform(0.5, 1.0, (S, A))
        boxes, costs = reference.robust.checked_inputs(kernels, counts, costs, 0.1, "kl")
        policy = np.zeros(S, dtype=np.int64)
        got = _same_policy_iteration(kernels, boxes, costs, policy)
        rescued += bool(np.isfinite(got[0]).all())
    assert rescued > 0 and forced


@pytest.mark.parametrize("kernels", [NUMPY_KERNELS, COMPILED_KERNELS], ids=lambda k: k.name)
@pytest.mark.parametrize("limit", [1, 2])
def test_the_policy_iteration_at_its_limit_is_the_one_without_the_kernel(kernels, limit,
                                                                        monkeypatch):
    monkeypatch.setattr(optimal, "ROBUST_MAX_ITER", limit)
    boxes, costs, policy, _ = _garnet_problem()
    got = _same_policy_iteration(kernels, boxes, costs, policy)
    assert not got[4]


def test_the_compiled_rounds_refuse_bad_shapes_and_policies():
    boxes, costs, policy, start = _garnet_problem()
    S, A = costs.shape
    with pytest.raises(ShapeError, match="costs"):
        COMPILED_KERNELS.robust_iteration(boxes, costs[:-1], policy, start, 5)
    with pytest.raises(ShapeError, match="start"):
        COMPILED_KERNELS.robust_iteration(boxes, costs, policy, start[:-1], 5)
    with pytest.raises(ParameterError, match="policy"):
        COMPILED_KERNELS.robust_iteration(boxes, costs, np.full(S, A), start, 5)


def _fresh_pour(boxes, rows, v_ext):
    """The kernel ``pour_values`` of ``rows`` against ``v_ext`` along a walk of its own."""
    fast_kernels._LAST_POUR.walk = None
    return fast_kernels.pour_values(boxes, rows, v_ext.copy(), True)


def _bits(values):
    return np.asarray(values).view(np.uint64)


@pytest.mark.parametrize("kept_states", [fast_kernels.KEPT_WALK_STATES, 0])
def test_the_rounds_pours_reuse_a_walk_only_for_the_same_vector_bit_for_bit(kept_states):
    # fast._iteration.Pours keeps the walk of its last vector (up to kept_states next
    # states; beyond, its order alone) and reuses it for a vector equal to it bit for bit:
    # against vectors equal but for one entry (late in the vector: a comparison of a prefix
    # would miss it, and that entry moves to the top of the order), 0.0 against -0.0, and a
    # buffer changed in place, every pour of the policy's rows or of all pairs is the
    # kernel's own pour of the same rows and vector, with the walk kept or not.
    from fast import _iteration

    boxes, _, _, _ = _garnet_problem()
    S, A = boxes.n_states, boxes.n_actions
    rng = np.random.default_rng(3)
    rows = np.arange(S, dtype=np.int64) * A + rng.integers(0, A, S)
    pairs = np.arange(S * A, dtype=np.int64)
    pours = _iteration.Pours(fast_kernels._iteration_tools(boxes), True, kept_states)
    v = np.concatenate([rng.random(S) * 10, [0.0]])
    vectors = []
    for k in [S - 1, S - 2, S // 2 + 1, 1]:
        w = v.copy()
        w[k] = 20.0 + k
        vectors += [v, w]
    zero = v.copy()
    zero[S - 3] = 0.0
    negative_zero = zero.copy()
    negative_zero[S - 3] = -0.0
    vectors += [zero, negative_zero, zero]
    for w in vectors:
        assert np.array_equal(_bits(pours.rows(rows, w)), _bits(_fresh_pour(boxes, rows, w)))
        assert np.array_equal(_bits(pours.pairs(w)(0, S * A)), _bits(_fresh_pour(boxes, pairs, w)))
    buffer = v.copy()
    pours.rows(rows, buffer)
    buffer[S - 1] = 50.0
    assert np.array_equal(_bits(pours.rows(rows, buffer)), _bits(_fresh_pour(boxes, rows, buffer)))


def test_a_reused_walk_reads_the_pours_own_copy_of_the_vector():
    # A pour keeps its vector's walk with a copy of the vector: after a pour of a buffer that
    # the caller then changes, a pour of the first vector (equal to the kept copy, not to the
    # buffer) reuses the walk and reads the copy's values, not the buffer's.
    from fast import _iteration

    boxes = _garnet_problem()[0]
    S, A = boxes.n_states, boxes.n_actions
    rng = np.random.default_rng(5)
    rows = np.arange(S, dtype=np.int64) * A + rng.integers(0, A, S)
    pours = _iteration.Pours(fast_kernels._iteration_tools(boxes), True,
                             fast_kernels.KEPT_WALK_STATES)
    v = np.concatenate([rng.random(S) * 10, [0.0]])
    for call in (lambda w: pours.rows(rows, w), lambda w: pours.pairs(w)(0, S * A)):
        buffer = v.copy()
        call(buffer)
        buffer[:S] = 1e3 * rng.random(S)
        got = pours.rows(rows, v.copy())
        assert np.array_equal(_bits(got), _bits(_fresh_pour(boxes, rows, v)))
