"""The width adaptive sampling weighs: its visits times widths bound the gaps it aims at."""


import numpy as np
import pytest
import scipy.sparse as sp

from reference import certified_sampling
from reference.box_kinds import box_kind
from reference.certified_sampling import _policy_widths
from reference.confidence import ConfidenceBoxes
from reference.envs import exit_grid
from reference.kernels import NUMPY_KERNELS, order_values
from reference.robust import CHECK_MAX_SLACK, SWITCH_RTOL
from reference.store_boxes import store_boxes
from reference.theta_bounds import round_bounds

from kernel_sets import kernel_set


@pytest.mark.parametrize("per_pair", [60, 400])
def test_visits_times_widths_bound_every_gap(backend, per_pair):
    # U - L <= (I - P-)^{-1} (P+ - P-) U state by state (docs/certificates.md), on the bounds of
    # one round of a slippery grid: the optimist's visits from each state (e_s, the kernel
    # poured_chain_visits) times the widths of _policy_widths are at least its gap.
    kernels = kernel_set(backend)
    ssp = exit_grid(5, 7, spacing=4, success=0.6)
    S, A = ssp.n_states, ssp.n_actions
    rng = np.random.default_rng(per_pair)
    kernel = sp.csr_array(ssp.P).toarray() if sp.issparse(ssp.P) else ssp.P.reshape(S * A, S + 1)
    counts = np.array([rng.multinomial(per_pair, row / row.sum()) for row in kernel])
    boxes = store_boxes(kernels, sp.csr_array(counts), 0.1, box_kind("mixture", time_uniform=True))
    lower, policy, order_l, upper = round_bounds(kernels, boxes, ssp.costs, {})[0]
    assert np.isfinite(upper).all() and (upper - lower).max() > 0.1
    rows = np.arange(S) * A + policy
    kernel_l = kernels.pour_kernel(boxes, rows, order_values(order_l, False), False)
    width, worst = _policy_widths(kernels, boxes, rows, upper, kernel_l)
    visits = np.array([kernels.poured_chain_visits(kernel_l, np.eye(S)[s]) for s in range(S)])
    bound, gap = visits @ width, upper - lower
    # Up to the checks' scaling of U and L (each at most CHECK_MAX_SLACK, relative) and the
    # switch tolerance of the two policy iterations at every visited step.
    tol = (2.0 * CHECK_MAX_SLACK * upper.max()
           + 2.0 * SWITCH_RTOL * max(1.0, upper.max()) * visits.sum(axis=1))
    assert np.all(bound >= gap - tol)
    # The other side: bound - gap is the sum over the visits of c + p+ . U - U, how much worse
    # the optimist's action is than U under the adversary (0 where it is U's own action).
    excess = np.maximum(ssp.costs[np.arange(S), policy] + worst - upper, 0.0)
    assert np.all(bound <= gap + visits @ excess + tol)
    assert np.any(bound > gap * (1.0 + 1e-3))  # the excess is not empty here


def test_a_pair_whose_optimist_row_reaches_an_infinite_value_has_an_infinite_width(backend):
    # State 0 goes to the goal in every kernel of its box (p+ . U = 0), state 1 loops on itself
    # (U = inf). The optimist's row given for state 0 puts 2^-60 on state 1: (p+ - p-) . U is
    # -inf, and the pair can reach an infinite U: its width is inf, not clipped to 0.
    kernels = kernel_set(backend)
    boxes = ConfidenceBoxes(
        n_states=2, n_actions=1, indptr=np.array([0, 1, 2]), indices=np.array([2, 1]),
        lo=np.ones(2), hi=np.ones(2), hi_unseen=np.zeros(2), p_hat=np.ones(2), n=np.ones(2),
        kind="kl", delta=0.1)
    kernel_l = np.array([[0.0, 2.0**-60, 1.0], [0.0, 1.0, 0.0]])
    width, worst = _policy_widths(kernels, boxes, np.arange(2), np.array([5.0, np.inf]), kernel_l)
    assert worst.tolist() == [0.0, np.inf]
    assert width.tolist() == [np.inf, np.inf]


def test_the_adaptive_rounds_read_the_counts_of_their_boxes(backend, monkeypatch):
    # Every adaptive round splits its calls by the samples of each pair, boxes.n: the counts
    # of the round's boxes summed row by row (here by scipy, apart from the solver; KeptEnds
    # keeps the sizes of the rows that did not change), and aims at GROWTH times their total.
    # After the first round the pairs hold different counts, so a misplaced count would show.
    rounds, real = [], certified_sampling._adaptive_draws

    def adaptive(kernels, boxes, costs, target_total, *state):
        counts = sp.csr_array((boxes.counts, boxes.indices, boxes.indptr),
                              shape=(boxes.indptr.size - 1, boxes.n_states + 1))
        summed = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
        rounds.append(np.unique(summed).size)
        np.testing.assert_array_equal(boxes.n, summed)
        assert target_total == certified_sampling.GROWTH * int(counts.sum())
        return real(kernels, boxes, costs, target_total, *state)

    monkeypatch.setattr(certified_sampling, "_adaptive_draws", adaptive)
    ssp = exit_grid(3, 4, spacing=2, success=0.7)
    assert backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=0).certified
    assert len(rounds) >= 3 and max(rounds) > 1


def test_the_adaptive_draws_follow_their_formula_with_each_pairs_own_count(backend):
    # One round's draws on counts that differ from pair to pair, against the split written
    # out from its pieces: the optimist's visits from the states whose gap exceeds the
    # target, its pairs' widths, each pair's own count n (score (visits w sqrt(n))^(2/3) of
    # the optimist's pairs), the floor for every pair whose optimistic Q-value is within U,
    # less the count already drawn.
    kernels = kernel_set(backend)
    ssp = exit_grid(4, 5, spacing=3, success=0.7)
    S, A = ssp.n_states, ssp.n_actions
    rng = np.random.default_rng(3)
    kernel = sp.csr_array(ssp.P).toarray() if sp.issparse(ssp.P) else ssp.P.reshape(S * A, S + 1)
    counts = np.array([rng.multinomial(int(rng.integers(5, 300)), row / row.sum())
                       for row in kernel])
    boxes = store_boxes(kernels, sp.csr_array(counts), 0.1, box_kind("kl"))
    state = round_bounds(kernels, boxes, ssp.costs, {})[0]
    lower, policy, order_l, upper = state
    goal_gap, total = 0.05, 1.05 * counts.sum()
    got = certified_sampling._adaptive_draws(kernels, boxes, ssp.costs, total, *state, goal_gap,
                                             False)
    n = counts.sum(axis=1).astype(float)
    rows = np.arange(S) * A + policy
    kernel_l = kernels.pour_kernel(boxes, rows, order_values(order_l, False), False)
    gaps = np.where(np.isinf(upper), np.inf, upper - lower)
    visits = kernels.poured_chain_visits(kernel_l, (gaps > goal_gap).astype(float))
    width = _policy_widths(kernels, boxes, rows, upper, kernel_l)[0]
    width = np.where(np.isfinite(width), width, max(1.0, width[np.isfinite(width)].max()))
    q_low = ssp.costs.ravel() + NUMPY_KERNELS.pour_values(boxes, np.arange(S * A),
                                                         np.append(lower, 0.0), False)
    score = np.zeros(S * A)
    score[rows] = (visits * width * np.sqrt(np.maximum(n[rows], 1.0))) ** (2.0 / 3.0)
    assert score.sum() > 0 and len(np.unique(n[rows])) > 1
    want = score * ((1.0 - 4 * certified_sampling.FLOOR_SHARE) * total / score.sum())
    alive = q_low <= np.repeat(upper, A) * (1 + 1e-12)
    want = np.where(alive, np.maximum(want, certified_sampling.FLOOR_SHARE * total / (S * A)),
                    want)
    np.testing.assert_allclose(got, np.maximum(want - n, 0.0), rtol=1e-9, atol=1e-9)
