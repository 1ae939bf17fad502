"""The kernels ``adversary_iteration`` and ``optimist_iteration``: numpy against compiled.

The compiled kernels run the whole loop of :mod:`reference.robust_loops` in one call on
the compiled pours, solves and products; run on the same steps (the compiled kernels
``pour_kernel``, ``pour_values`` and ``poured_chain_values``), the numpy loop must give the
same floats, the same kernel pieces, evaluations and verdict, whatever path each evaluation
takes (every cost positive and every state reaching the goal, a cost of 0, infinite states,
a rejected or failed solve, the iteration limit). Against the numpy kernel set (its own
chain solver), the values agree to the chains' rounding.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fast.kernels as fast_kernels
import reference
from fast.kernels import COMPILED_KERNELS
from reference import robust_loops
from reference import robust as reference_robust
from reference.chains import poured as poured_chains
from reference.errors import ConvergenceError, ParameterError, ShapeError
from reference.kernels import NUMPY_KERNELS

EXAMPLES = 120
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.function_scoped_fixture])
PIECES = ("order", "rank", "indptr", "indices", "data", "width", "reach", "partial")


@st.composite
def problems(draw, max_states=14):
    """Boxes of random counts (zeros, unseen pairs, scarce samples), costs with zeros or not,
    a policy and a start."""
    S = draw(st.integers(1, max_states))
    A = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.1, 0.3, 1.0]))
    scale = draw(st.sampled_from([2, 30, 3000]))
    counts = rng.integers(0, scale + 1, size=(S, A, S + 1)) * (rng.random((S, A, S + 1))
                                                                < density)
    counts[rng.random((S, A)) < draw(st.sampled_from([0.0, 0.3]))] = 0
    costs = rng.random((S, A)) + draw(st.sampled_from([0.0, 0.1]))
    if draw(st.booleans()):
        costs[rng.random((S, A)) < 0.3] = 0.0
    kind = draw(st.sampled_from(["kl", "bernstein", "mixture"]))
    boxes, costs = reference_robust.checked_inputs(NUMPY_KERNELS, counts.astype(float), costs,
                                                   0.1, kind)
    policy = rng.integers(0, A, S)
    start = rng.random(S) * draw(st.sampled_from([0.0, 1.0, 50.0]))
    return boxes, costs, policy, start


def _steps_loop(name):
    """The numpy loop of :mod:`reference.robust_loops` on the compiled kernels' steps."""
    if name == "adversary":
        return lambda *args: robust_loops.adversary_loop(
            COMPILED_KERNELS.pour_kernel, fast_kernels.poured_chain_values, *args)
    return lambda *args: robust_loops.optimist_loop(
        COMPILED_KERNELS.pour_kernel, COMPILED_KERNELS.pour_values,
        fast_kernels.poured_chain_values, *args)


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if isinstance(b, reference.PouredKernel):
            assert a.descending == b.descending
            for piece in PIECES:
                np.testing.assert_array_equal(getattr(a, piece), getattr(b, piece))
        elif b is None:
            assert a is None
        elif isinstance(b, np.ndarray):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
        else:
            assert a == b


def _adversary_args(boxes, costs, policy, start):
    S = boxes.n_states
    costs_pi = costs[np.arange(S), policy]
    infinite = reference_robust._infinite_states(boxes, policy, costs_pi)
    rows = np.arange(S) * boxes.n_actions + policy
    return boxes, rows, costs_pi, infinite, start


def _check_both(problem):
    boxes, costs, policy, start = problem
    args = _adversary_args(boxes, costs, policy, start)
    _same(COMPILED_KERNELS.adversary_iteration(*args), _steps_loop("adversary")(*args))
    args = (boxes, costs, policy, start)
    _same(COMPILED_KERNELS.optimist_iteration(*args), _steps_loop("optimist")(*args))


def _garnet_problem():
    """Boxes of a sampled garnet on which both iterations switch: from the zero policy and
    values, the optimist's makes 5 evaluations and the adversary's 3."""
    ssp = reference.garnet(40, 3, 4, seed=5)
    store = reference.SampleStore(ssp.n_states, ssp.n_actions)
    store.top_up(reference.TabularGenerativeModel(ssp), 300, np.random.default_rng(1))
    boxes, costs = reference_robust.checked_inputs(NUMPY_KERNELS, store.counts_csr(),
                                                   ssp.costs, 0.1, "mixture")
    return boxes, costs, np.zeros(boxes.n_states, dtype=np.int64), np.zeros(boxes.n_states)


@pytest.mark.parametrize("repair_moves", [16, 0])
@settings(max_examples=EXAMPLES, **SETTINGS)
@given(problem=problems())
def test_compiled_iterations_are_the_loop_on_compiled_steps(problem, repair_moves,
                                                            monkeypatch):
    # With no repair move allowed, every order after the first is sorted afresh.
    monkeypatch.setattr(fast_kernels, "REPAIR_MOVES", repair_moves)
    _check_both(problem)


@pytest.mark.parametrize("limit", [1, 2])
def test_compiled_iterations_stop_at_the_limit_as_the_loop(limit, monkeypatch):
    monkeypatch.setattr(robust_loops, "ROBUST_MAX_ITER", limit)
    monkeypatch.setattr(fast_kernels, "ROBUST_MAX_ITER", limit)
    at_limit = []

    def check(problem):
        _check_both(problem)
        boxes, costs, policy, start = problem
        got = COMPILED_KERNELS.adversary_iteration(*_adversary_args(boxes, costs, policy,
                                                                    start))
        at_limit.append(got[2:] == (limit, False))
        got = COMPILED_KERNELS.optimist_iteration(boxes, costs, policy, start)
        at_limit.append(got[3:5] == (limit, False))

    check(_garnet_problem())
    assert at_limit == [True, True]
    settings(max_examples=EXAMPLES // 4, **SETTINGS)(given(problem=problems())(check))()


@settings(max_examples=EXAMPLES // 4, **SETTINGS)
@given(problem=problems())
def test_compiled_iterations_on_rejected_solves(problem, monkeypatch):
    # No compiled candidate is accepted: every evaluation goes to the exact fallback.
    monkeypatch.setattr(poured_chains, "POURED_ACCEPT", -1.0)
    _check_both(problem)


@settings(max_examples=EXAMPLES // 4, **SETTINGS)
@given(problem=problems())
def test_compiled_iterations_on_failed_solves(problem, monkeypatch):
    def fails(kernel, costs, start):
        raise ConvergenceError("no acceptable candidate")

    monkeypatch.setattr(poured_chains, "POURED_ACCEPT", -1.0)
    monkeypatch.setattr(fast_kernels, "poured_chain_values", fails)
    monkeypatch.setattr(poured_chains, "poured_values", fails)
    boxes, costs, policy, start = problem
    got = COMPILED_KERNELS.adversary_iteration(*_adversary_args(boxes, costs, policy, start))
    assert np.isinf(got[0]).all() and got[2:] == (1, False)
    got = COMPILED_KERNELS.optimist_iteration(boxes, costs, policy, start)
    assert np.isinf(got[0]).all() and got[3:] == (1, False, None)
    np.testing.assert_array_equal(got[1], policy)
    _check_both(problem)


@pytest.mark.parametrize("fail_at", [2, 3])
def test_compiled_iterations_on_a_solve_failing_after_switches(fail_at):
    # Every compiled candidate is rejected, so each evaluation calls poured_values once;
    # its fail_at-th call fails, after fail_at - 1 evaluations (and their switches).
    real, calls, failed = poured_chains.poured_values, [0], []

    def fails_late(kernel, costs, start):
        calls[0] += 1
        if calls[0] == fail_at:
            raise ConvergenceError("no acceptable candidate")
        return real(kernel, costs, start)

    def check(problem):
        boxes, costs, policy, start = problem
        runs = (("adversary", COMPILED_KERNELS.adversary_iteration,
                 _adversary_args(boxes, costs, policy, start)),
                ("optimist", COMPILED_KERNELS.optimist_iteration, (boxes, costs, policy, start)))
        for name, compiled, args in runs:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(poured_chains, "POURED_ACCEPT", -1.0)
                patch.setattr(poured_chains, "poured_values", fails_late)
                calls[0] = 0
                got = compiled(*args)
                compiled_calls, calls[0] = calls[0], 0
                want = _steps_loop(name)(*args)
            assert calls[0] == compiled_calls
            _same(got, want)
            if compiled_calls == fail_at:
                assert (got[2] if name == "adversary" else got[3]) == fail_at
                assert np.isinf(got[0]).all()
                failed.append(name)

    check(_garnet_problem())
    assert failed == ["adversary", "optimist"]
    settings(max_examples=EXAMPLES // 4, **SETTINGS)(given(problem=problems())(check))()


def test_iterations_agree_with_the_numpy_kernel_set():
    boxes, costs, policy, start = _garnet_problem()
    lower = COMPILED_KERNELS.optimist_iteration(boxes, costs, policy, start)
    want = NUMPY_KERNELS.optimist_iteration(boxes, costs, policy, start)
    assert lower[4] and want[4]
    np.testing.assert_allclose(lower[0], want[0], rtol=1e-9)
    np.testing.assert_allclose(lower[5], want[5], rtol=1e-9)
    args = _adversary_args(boxes, costs, lower[1], lower[0])
    upper = COMPILED_KERNELS.adversary_iteration(*args)
    want = NUMPY_KERNELS.adversary_iteration(*args)
    assert upper[3] and want[3]
    np.testing.assert_allclose(upper[0], want[0], rtol=1e-9)
    assert np.all(upper[0] >= lower[0] * (1 - 1e-9))


def test_compiled_iterations_refuse_bad_shapes_and_rows():
    # The compiled loops index these arrays without bounds checks: their wrappers check.
    boxes, costs = reference_robust.checked_inputs(
        NUMPY_KERNELS, np.ones((3, 2, 4)), np.full((3, 2), 0.5), 0.1, "kl")
    policy, start = np.zeros(3, dtype=np.int64), np.zeros(3)
    adversary = _adversary_args(boxes, costs, policy, start)
    for i, bad in ((1, np.arange(2)), (2, np.ones(4)), (3, np.zeros(2, dtype=bool)),
                   (4, np.zeros((3, 1)))):
        with pytest.raises(ShapeError, match="must have shape"):
            COMPILED_KERNELS.adversary_iteration(*adversary[:i], bad, *adversary[i + 1:])
    with pytest.raises(ParameterError, match="`rows`"):
        COMPILED_KERNELS.adversary_iteration(boxes, np.array([0, 2, 6]), *adversary[2:])
    for i, bad in ((1, costs[:, :1]), (2, np.zeros(4, dtype=np.int64)), (3, np.zeros(2))):
        args = [boxes, costs, policy, start]
        args[i] = bad
        with pytest.raises(ShapeError, match="must have shape"):
            COMPILED_KERNELS.optimist_iteration(*args)
    with pytest.raises(ParameterError, match="`policy`"):
        COMPILED_KERNELS.optimist_iteration(boxes, costs, np.array([0, -1, 1]), start)


def _lower_ends_reach_goal(boxes, rows, order, rank):
    """The goal search of ``fast._poured.reaches_goal`` on the edges of positive lower end
    (stored entries with ``hi >= lo``) of the boxes' ``rows``."""
    from fast import _poured

    starts, stops = boxes.indptr[rows], boxes.indptr[rows + 1]
    ptr = np.concatenate([[0], np.cumsum(stops - starts)]).astype(np.int64)
    take = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)]).astype(np.int64)
    lower = np.where(boxes.hi[take] >= boxes.lo[take], boxes.lo[take], 0.0)
    S = rows.size
    return _poured.reaches_goal(order, rank, ptr, boxes.indices[take].astype(np.int64), lower,
                                np.zeros(S), np.zeros(S, dtype=np.int64), np.zeros(S))


def _lower_ends_check(problem, seed):
    from fast import _poured, _robust
    from reference.kernels import pour_order

    boxes, _, policy, _ = problem
    S, A = boxes.n_states, boxes.n_actions
    rows = (np.arange(S) * A + policy).astype(np.int64)
    rng = np.random.default_rng(seed)
    proven = []
    for descending in (True, False):
        v_ext = np.append(rng.random(S) * 10.0, 0.0)
        order = pour_order(v_ext, descending).astype(np.int64)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        pieces = _robust.pour_pieces(boxes.indptr, boxes.indices, boxes.lo, boxes.hi,
                                     boxes.hi_unseen, rows, rank, 1)
        proven.append(_lower_ends_reach_goal(boxes, rows, order, rank))
        if proven[-1]:
            assert _poured.reaches_goal(order, rank, *pieces)
    return proven


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(problem=problems(), seed=st.integers(0, 2**32 - 1))
def test_lower_ends_that_reach_the_goal_prove_every_pour_proper(problem, seed):
    # The compiled adversary's iteration searches the goal once, on the edges of positive
    # lower end of its rows, and when every state reaches it there skips the search on each
    # kernel it pours: every pour of the rows, whatever its order, must then reach the goal.
    _lower_ends_check(problem, seed)


def test_lower_ends_reach_the_goal_on_a_sampled_garnet():
    # The case the shortcut is for: 300 samples a pair give every seen next state a positive
    # lower end, and the seen edges reach the goal.
    assert _lower_ends_check(_garnet_problem(), 0) == [True, True]


def _undeclared(problem):
    """The adversary's arguments of ``problem`` with no state declared infinite: its
    evaluations find the traps themselves (values ``+inf``), as the numpy kernel's."""
    args = list(_adversary_args(*problem))
    args[3] = np.zeros(problem[0].n_states, dtype=bool)
    return args


@settings(max_examples=EXAMPLES // 2, **SETTINGS)
@given(problem=problems())
def test_compiled_adversary_searches_the_goal_unless_its_lower_ends_reach_it(problem):
    # The compiled adversary's iteration skips the goal search on the kernels it pours only
    # when the edges of positive lower end of its rows reach the goal. With no state declared
    # infinite, boxes whose lower ends do not (the goal reached only through an unseen run
    # or a partial, or not at all) must still be evaluated as the loop on compiled steps
    # evaluates them: finite where every pour reaches the goal, +inf where one traps.
    args = _undeclared(problem)
    _same(COMPILED_KERNELS.adversary_iteration(*args), _steps_loop("adversary")(*args))


def test_compiled_adversary_finds_a_trap_behind_lower_ends_that_exit():
    # State 0 exits (2 of 5 samples to the goal), state 1 moved once to state 2, never
    # sampled: its box lets every pour keep all its mass away from the goal, so the adversary
    # traps 1 and 2 there, and 0 too (its self-loop and unseen run reach 1 and 2). The lower
    # ends (0 -> 0, 0 -> goal, 1 -> 2) leave 1 and 2 without a path to the goal: the kernels
    # must be searched, and every value is +inf, as the graph test and the numpy kernel say.
    counts = np.zeros((3, 1, 4))
    counts[0, 0, [0, 3]] = [3, 2]
    counts[1, 0, 2] = 1
    boxes, costs = reference_robust.checked_inputs(NUMPY_KERNELS, counts, np.ones((3, 1)),
                                                   0.1, "kl")
    problem = (boxes, costs, np.zeros(3, dtype=np.int64), np.array([0.5, 0.5, 0.5]))
    assert _adversary_args(*problem)[3].all()
    args = _undeclared(problem)
    assert not _lower_ends_reach_goal(boxes, args[1], np.arange(4), np.arange(4))
    got = COMPILED_KERNELS.adversary_iteration(*args)
    _same(got, _steps_loop("adversary")(*args))
    assert np.isinf(got[0]).all()
    assert np.isinf(NUMPY_KERNELS.adversary_iteration(*args)[0]).all()
