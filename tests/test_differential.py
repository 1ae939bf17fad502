"""Differential tests: ``fast`` against ``reference`` on random inputs (hypothesis).

The reference backend is the truth. Each property draws the structure of a
random problem (sizes, sparsity, pairs without samples, cost levels that
create ties in ``v``, duplicated actions that create exact Q-ties) and a seed
for its numbers, then runs both backends:

- EVI on count tables, dense and CSR (``EVI_EXAMPLES`` = 500 examples each):
  same number of sweeps, values within 1e-9 relative, policies equal up to
  Q-ties within 1e-9, optimistic kernels in the boxes with the same inner
  value;
- the same on larger tables, S = 25 to 80 (``LARGE_EXAMPLES`` = 40 each),
  where a pour reaches more stored next states of a pair than an insertion
  sort handles (the compiled kernels heap-sort them) and dense counts with
  few nonzero entries are read into the CSR layout;
- the Bernstein radius (``RADIUS_EXAMPLES`` = 200): equal within 1e-12 relative;
- each EVI kernel of the protocol (``docs/backends.md``) on its own, the numpy
  kernel set against the compiled one (``KERNEL_EXAMPLES`` = 200 each, dense
  and CSR): the boxes' upper masses, one sweep at a random ``v`` (with the
  residual it returns) and the optimistic kernel of its policy, whose
  pieces (``reference.PouredKernel``) are bit-identical at the same policy;
- the one pass over dense counts (``SCAN_EXAMPLES`` = 300), with NaN, infinite,
  negative, ``-0.0``, subnormal and huge counts: the same largest count (NaN
  when one is not finite or has its sign bit set), and the compiled scan's
  nonzero entries equal to scipy's CSR form, or none beyond its limit;
- plain value iteration on random SSPs, dense and sparse (``VI_EXAMPLES`` =
  150 each): same sweeps, values within 1e-9 relative, policies up to Q-ties;
- ``solve`` (Alg. 1 and Alg. 3, ``eps = 0.1``) on the same random SSPs with
  costs >= 0.2 and the same seed (``SOLVE_EXAMPLES`` = 40 each): the same
  number of calls to the generative model, the same calls per pair, the same
  samples (each run's final counts, read back from its checkpoint), the same
  number of rounds, values within 1e-9 relative and the same policy up to the
  Q-ties of the final EVI, whose Q-values are recomputed from those counts (or
  a ``ConvergenceError`` from both, within ``SOLVE_MAX_ITER`` sweeps);
- the greedy pour over the named confidence boxes, both orders (``POUR_EXAMPLES`` =
  300): values within 1e-12, ``+inf`` values included, and the same
  ``PouredKernel`` pieces, whose rows are the explicit pours within 1e-13;
- ``certify`` and ``robust_optimal_values`` on random count tables with costs
  >= 0.1 (``ROBUST_EXAMPLES`` = 100): the same infinite states and bounds within
  1e-9 relative, where the bounds stay below ``ILL_CONDITIONED``.

About 3,200 examples in all, a few seconds of work each for the largest.
"""

import os
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import fast
import reference
from fast import _boxes
from fast import kernels as fast_kernels
from fast.kernels import COMPILED_KERNELS
from reference.box_kinds import box_kind
from reference.counts import Counts
from reference.kernels import NUMPY_KERNELS, explicit_pour
from reference.store_boxes import KeptEnds, store_boxes

EVI_EXAMPLES = 500
RADIUS_EXAMPLES = 200
KERNEL_EXAMPLES = 200
SCAN_EXAMPLES = 300
VI_EXAMPLES = 150
SOLVE_EXAMPLES = 40
POUR_EXAMPLES = 300
ROBUST_EXAMPLES = 100
ILL_CONDITIONED = 1e6
LARGE_EXAMPLES = 40
LARGE_STATES = (25, 80)
SOLVE_MAX_ITER = 5_000
SOLVE_EPS = 0.1
SOLVE_DELTA = 0.1
RTOL = 1e-9

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def count_tables(draw, min_states=1, max_states=12):
    """Random counts ``(S, A, S+1)`` with zeros, unseen pairs and tie-prone costs."""
    S = draw(st.integers(min_states, max_states))
    A = draw(st.integers(1, 4))
    density = draw(st.sampled_from([0.05, 0.2, 0.5, 1.0]))
    unseen = draw(st.sampled_from([0.0, 0.2, 0.6]))
    scale = draw(st.sampled_from([1, 5, 50, 1000, 100_000]))
    tie_costs = draw(st.booleans())
    duplicate_action = draw(st.booleans()) and A > 1
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    counts = rng.integers(0, scale + 1, size=(S, A, S + 1)) * (rng.random((S, A, S + 1)) < density)
    counts[rng.random((S, A)) < unseen] = 0
    if tie_costs:
        costs = rng.choice([0.0, 0.5, 1.0], size=(S, A))
    else:
        costs = rng.random((S, A))
    if duplicate_action:
        counts[:, -1] = counts[:, 0]
        costs[:, -1] = costs[:, 0]
    delta = draw(st.sampled_from([1e-3, 0.1, 0.5]))
    mu = draw(st.sampled_from([1e-7, 3.7e-5, 1.3e-3, 0.07]))
    return counts.astype(np.int64), costs, delta, mu


def _close(x, y):
    return np.allclose(x, y, rtol=RTOL, atol=RTOL)


def _assert_same_policy_up_to_ties(q, policy, policy_ref):
    """Both policies are greedy for ``q`` and equal wherever ``q`` has no tie.

    ``q`` (shape ``(S, A)``) are the Q-values of the backup both policies were
    chosen by, computed by the reference's own routines. An action is
    near-greedy in state ``s`` when ``q[s, a] <= min_a q[s] + tol`` with
    ``tol = RTOL * max(1, |min_a q[s]|)``, the tolerance at which the backends'
    values are held equal; a state is tied when two actions are near-greedy.
    Only in tied states may rounding pick different actions in numpy and in C.
    """
    best = q.min(axis=1)
    near = q <= (best + RTOL * np.maximum(1.0, np.abs(best)))[:, None]
    states = np.arange(q.shape[0])
    for name, chosen in (("policy", policy), ("reference policy", policy_ref)):
        assert np.all(near[states, chosen]), (
            f"{name} is not greedy in states {np.flatnonzero(~near[states, chosen])}"
        )
    tied = near.sum(axis=1) > 1
    differ = np.flatnonzero(policy != policy_ref)
    assert np.all(tied[differ]), f"the policies differ in untied states {differ[~tied[differ]]}"


def _evi_q(counts, costs, delta, values):
    """Q-values of the EVI backup at ``values``, computed by the reference's own routines."""
    lo, hi = reference.confidence_box(counts, delta)
    v_ext = np.append(values, 0.0)
    return costs + reference.optimistic_inner(lo, hi, v_ext) @ v_ext, lo, hi, v_ext


@pytest.mark.parametrize("as_csr", [False, True], ids=["dense", "csr"])
@settings(max_examples=EVI_EXAMPLES, **SETTINGS)
@given(problem=count_tables())
def test_evi_matches_reference(problem, as_csr):
    _check_evi_matches_reference(problem, as_csr)


@pytest.mark.parametrize("as_csr", [False, True], ids=["dense", "csr"])
@settings(max_examples=LARGE_EXAMPLES, **SETTINGS)
@given(problem=count_tables(*LARGE_STATES))
def test_evi_matches_reference_on_larger_tables(problem, as_csr):
    _check_evi_matches_reference(problem, as_csr)


def _check_evi_matches_reference(problem, as_csr):
    counts, costs, delta, mu = problem
    S, A = costs.shape
    given_counts = sp.csr_array(counts.reshape(S * A, S + 1)) if as_csr else counts
    ref = reference.extended_value_iteration(given_counts, costs, delta, mu)
    got = fast.extended_value_iteration(given_counts, costs, delta, mu)
    assert got.n_iter == ref.n_iter
    assert got.converged == ref.converged
    assert _close(got.v_tilde, ref.v_tilde)
    assert got.residual == pytest.approx(ref.residual, rel=1e-6, abs=1e-12)
    assert got.policy.dtype == ref.policy.dtype == np.int64
    q, lo, hi, v_ext = _evi_q(counts, costs, delta, ref.v_tilde)
    _assert_same_policy_up_to_ties(q, got.policy, ref.policy)
    assert type(got.p_tilde) is type(ref.p_tilde) is reference.PouredKernel
    kernel = got.p_tilde.toarray()
    states = np.arange(S)
    assert np.allclose(kernel.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(kernel >= lo[states, got.policy] - 1e-12)
    assert np.all(kernel <= hi[states, got.policy] + 1e-12)
    assert _close(kernel @ v_ext, q[states, got.policy] - costs[states, got.policy])


@settings(max_examples=RADIUS_EXAMPLES, **SETTINGS)
@given(problem=count_tables(), as_csr=st.booleans())
def test_bernstein_radius_matches_reference(problem, as_csr):
    counts, costs, delta, _ = problem
    S, A = costs.shape
    given_counts = sp.csr_array(counts.reshape(S * A, S + 1)) if as_csr else counts
    got = fast.bernstein_radius(given_counts, delta)
    ref = reference.bernstein_radius(given_counts, delta)
    assert got.shape == ref.shape
    assert np.allclose(got, ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("as_csr", [False, True], ids=["dense", "csr"])
@settings(max_examples=KERNEL_EXAMPLES, **SETTINGS)
@given(problem=count_tables(), seed=st.integers(0, 2**32 - 1))
def test_evi_kernels_match_one_by_one(problem, seed, as_csr):
    _check_evi_kernels_match(problem, seed, as_csr)


SPECIAL_COUNTS = [np.nan, -np.nan, np.inf, -np.inf, -1.0, -5e-324, -0.0, 5e-324, 0.5,
                  2.0**51 + 0.5, 2.0**62, np.finfo(np.float64).max]
"""Counts the scan must tell apart: invalid ones (fractional ones, the smallest subnormal
included), ``-0.0`` (valid, stored as a zero) and huge counts (valid, whose pair totals the
caller checks)."""


@settings(max_examples=SCAN_EXAMPLES, **SETTINGS)
@given(S=st.integers(1, 40), A=st.integers(1, 4), density=st.sampled_from([0.0, 0.01, 0.1, 0.5]),
       special=st.lists(st.sampled_from(SPECIAL_COUNTS), max_size=3),
       seed=st.integers(0, 2**32 - 1), cut=st.floats(0.0, 1.0))
def test_count_scans_agree(S, A, density, special, seed, cut):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 100, (S, A, S + 1)) * (rng.random((S, A, S + 1)) < density)
    counts = counts.astype(np.float64)
    for value in special:
        counts[tuple(rng.integers(0, n) for n in counts.shape)] = value
    largest = NUMPY_KERNELS.scan_counts(counts).largest
    scan = COMPILED_KERNELS.scan_counts(counts)
    assert np.array_equal(scan.largest, largest, equal_nan=True)
    rows = counts.reshape(S * A, S + 1)
    nnz = np.count_nonzero(rows)
    if nnz > _boxes.DENSE_MAX_FILL * counts.size:
        assert scan.indptr is None
    else:
        expected = sp.csr_array(rows)
        assert scan.indptr.tolist() == expected.indptr.tolist()
        assert scan.cols.tolist() == expected.indices.tolist()
        assert scan.data.view(np.uint64).tolist() == expected.data.view(np.uint64).tolist()
    if nnz:
        cut_scan = _boxes.scan_dense(counts, min(int(cut * nnz), nnz - 1))
        assert cut_scan.indptr is None
        assert np.array_equal(cut_scan.largest, largest, equal_nan=True)


@pytest.mark.parametrize("special", SPECIAL_COUNTS)
def test_count_scan_of_rows_longer_than_a_run(special):
    """Rows of more than 64 blocks of 16 entries are tested a run of blocks at a time: an
    entry in the second run, or in the row's tail after the last whole block, is found
    and checked like one in the first."""
    S, A = 1100, 2
    rng = np.random.default_rng(7)
    counts = np.zeros((S, A, S + 1))
    counts[0, 0, [3, 64 * 16 - 1, 64 * 16, S]] = [5.0, 6.0, 7.0, 8.0]
    counts[S - 1, 1, rng.integers(0, S + 1, size=20)] = rng.integers(1, 9, size=20)
    for where in ((1, 0, 64 * 16 + 5), (2, 1, S), (3, 0, 17)):
        flagged = counts.copy()
        flagged[where] = special
        largest = NUMPY_KERNELS.scan_counts(flagged).largest
        scan = COMPILED_KERNELS.scan_counts(flagged)
        assert np.array_equal(scan.largest, largest, equal_nan=True)
        expected = sp.csr_array(flagged.reshape(S * A, S + 1))
        assert scan.indptr.tolist() == expected.indptr.tolist()
        assert scan.cols.tolist() == expected.indices.tolist()
        assert scan.data.view(np.uint64).tolist() == expected.data.view(np.uint64).tolist()


@pytest.mark.parametrize("as_csr", [False, True], ids=["dense", "csr"])
@settings(max_examples=LARGE_EXAMPLES, **SETTINGS)
@given(problem=count_tables(*LARGE_STATES), seed=st.integers(0, 2**32 - 1))
def test_evi_kernels_match_one_by_one_on_larger_tables(problem, seed, as_csr):
    _check_evi_kernels_match(problem, seed, as_csr)


def _check_evi_kernels_match(problem, seed, as_csr):
    counts, costs, delta, _ = problem
    S, A = costs.shape
    table = Counts(sp.csr_array(counts.reshape(S * A, S + 1)) if as_csr else counts).table
    rng = np.random.default_rng(seed)
    v_ext = np.append(rng.choice([0.0, 0.5, 1.0, 3.0], size=S) + rng.random(S) * 1e-3 * (S > 3),
                      0.0)
    outs = []
    for kernels in (NUMPY_KERNELS, COMPILED_KERNELS):
        boxes = kernels.boxes(table if as_csr else kernels.scan_counts(table), delta)
        v_out, policy = np.full(S, np.nan), np.full(S, -1, dtype=np.intp)
        residual = kernels.evi_sweep(boxes, costs, v_ext, v_out, policy)
        assert residual == np.max(np.abs(v_out - v_ext[:S]))
        p = kernels.optimistic_kernel(boxes, v_ext, policy)
        assert isinstance(p, reference.PouredKernel) and p.shape == (S, S + 1)
        outs.append((boxes.upper_mass, v_out, policy.copy(), p.toarray(), boxes))
    (mass_ref, v_ref, policy_ref, p_ref, boxes_ref), (mass, v, policy, p, boxes) = outs
    # At the same values and policy, the two kernel sets build the same pieces: the same
    # order and sparsity, and the same probabilities up to the last bits in which each set's
    # own box ends may differ (the tolerance of the masses below).
    pieces_ref = NUMPY_KERNELS.optimistic_kernel(boxes_ref, v_ext, policy_ref)
    pieces = COMPILED_KERNELS.optimistic_kernel(boxes, v_ext, policy_ref)
    for name in ("order", "indptr", "indices", "reach"):
        assert np.array_equal(getattr(pieces, name), getattr(pieces_ref, name)), name
    for name in ("data", "width", "partial"):
        assert np.allclose(getattr(pieces, name), getattr(pieces_ref, name), rtol=1e-12,
                           atol=1e-12), name
    assert mass.shape == (S, A) and np.allclose(mass, mass_ref, rtol=1e-12, atol=1e-12)
    assert _close(v, v_ref)
    q, lo, hi, _ = _evi_q(counts, costs, delta, v_ext[:S])
    _assert_same_policy_up_to_ties(q, policy, policy_ref)
    states = np.arange(S)
    assert np.allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(p >= lo[states, policy] - 1e-12) and np.all(p <= hi[states, policy] + 1e-12)
    assert _close(p @ v_ext, q[states, policy] - costs[states, policy])


@st.composite
def ssps(draw):
    """Random SSPs (Assumption 1 by a direct goal edge from every state), dense or sparse."""
    S = draw(st.integers(1, 15))
    A = draw(st.integers(1, 4))
    branching = draw(st.integers(1, S + 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    P = np.zeros((S, A, S + 1))
    for s in range(S):
        for a in range(A):
            support = rng.choice(S + 1, size=branching, replace=False)
            P[s, a, support] = rng.dirichlet(np.ones(branching))
    P[:, 0, S] += 0.05
    P /= P.sum(axis=2, keepdims=True)
    costs = rng.choice([0.25, 0.5, 1.0], size=(S, A)) if draw(st.booleans()) else rng.random((S, A))
    return P, costs


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@settings(max_examples=VI_EXAMPLES, **SETTINGS)
@given(problem=ssps())
def test_value_iteration_matches_reference(problem, sparse):
    P, costs = problem
    S, A = costs.shape
    kernel = sp.csr_array(P.reshape(S * A, S + 1)) if sparse else P
    ssp = reference.SSP(kernel, costs)
    ref = reference.value_iteration(ssp, tol=1e-10)
    got = fast.value_iteration(ssp, tol=1e-10)
    assert got.n_iter == ref.n_iter
    assert got.converged == ref.converged
    assert _close(got.values, ref.values)
    q = costs + P @ np.append(ref.values, 0.0)
    _assert_same_policy_up_to_ties(q, got.policy, ref.policy)


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
@pytest.mark.parametrize("theta", [None, 2.0], ids=["alg1", "alg3"])
@settings(max_examples=SOLVE_EXAMPLES, **SETTINGS)
@given(problem=ssps(), seed=st.integers(0, 2**31 - 1))
def test_solve_uses_the_same_calls_and_policy(problem, seed, theta):
    P, costs = problem
    ssp = reference.SSP(P, np.maximum(costs, 0.2))
    runs = []
    with tempfile.TemporaryDirectory() as directory:
        for backend in (reference, fast):
            checkpoint = os.path.join(directory, f"{backend.__name__}.npz")
            try:
                model = backend.TabularGenerativeModel(ssp)
                result = backend.solve(model, ssp.costs, SOLVE_EPS, SOLVE_DELTA, theta=theta,
                                       seed=seed, max_iter=SOLVE_MAX_ITER, checkpoint=checkpoint)
            except reference.ConvergenceError as exc:
                runs.append(str(exc))
            else:
                runs.append((result, reference.SampleStore.load(checkpoint)[0].counts_csr()))
    if isinstance(runs[0], str):
        assert isinstance(runs[1], str)
        return
    (ref, counts_ref), (got, counts) = runs
    assert got.n_calls == ref.n_calls
    assert np.array_equal(got.calls, ref.calls)
    assert (counts != counts_ref).nnz == 0
    assert len(got.history) == len(ref.history)
    assert _close(got.v_tilde, ref.v_tilde)
    # The final EVI of SEARCH ran on the final counts, with the costs it searched on.
    search_costs = ssp.costs if theta is None else np.maximum(ssp.costs, ref.nu)
    q = _evi_q(counts_ref, search_costs, SOLVE_DELTA, ref.v_tilde)[0]
    _assert_same_policy_up_to_ties(q, got.policy, ref.policy)


POURED_PIECES = ("order", "rank", "indptr", "indices", "data", "width", "reach", "partial")


def _explicit_rows(boxes, rows, v_ext, descending):
    """The pours of ``rows`` as explicit CSR rows, entry by entry (the expanded positions of
    :func:`reference.kernels.explicit_pour`, which the numpy ``pour_values`` sums)."""
    row, col, p = explicit_pour(boxes, rows, v_ext, descending)
    positive = p > 0
    return sp.csr_array((p[positive], (row[positive], col[positive])),
                        shape=(rows.size, boxes.n_states + 1))


def _assert_pour_kernels_agree(boxes, rows, v_ext, descending):
    """Both kernel sets build the same pieces, whose rows are the explicit pours within 1e-13
    and whose products are the ``pour_values`` of both kernel sets."""
    ref = NUMPY_KERNELS.pour_kernel(boxes, rows, v_ext, descending)
    got = COMPILED_KERNELS.pour_kernel(boxes, rows, v_ext, descending)
    assert isinstance(got, reference.PouredKernel) and got.descending == ref.descending
    assert ref.descending == descending and got.shape == (rows.size, boxes.n_states + 1)
    for name in POURED_PIECES:
        assert np.array_equal(getattr(got, name), getattr(ref, name)), name
    explicit = _explicit_rows(boxes, rows, v_ext, descending)
    difference = abs(ref.tocsr() - explicit)
    assert difference.nnz == 0 or difference.max() <= 1e-13
    # Supports agree except at the end of a pour, where a rounding-level remainder
    # (below 1e-15) may land on one more next state in one of the two.
    big, big_explicit = ref.tocsr() > 1e-15, explicit > 1e-15
    assert (big != big_explicit).nnz == 0
    product = ref @ v_ext
    for values in (NUMPY_KERNELS.pour_values(boxes, rows, v_ext, descending),
                   COMPILED_KERNELS.pour_values(boxes, rows, v_ext, descending)):
        assert np.array_equal(np.isinf(product), np.isinf(values))
        finite = np.isfinite(values)
        assert np.allclose(product[finite], values[finite], rtol=1e-12, atol=1e-12)
    return ref


@settings(max_examples=POUR_EXAMPLES, **SETTINGS)
@given(problem=count_tables(), kind=st.sampled_from(["kl", "bernstein", "paper"]),
       infinite=st.booleans(), descending=st.booleans())
def test_pour_kernels_match_reference(problem, kind, infinite, descending):
    counts, costs, delta, _ = problem
    S, A = costs.shape
    boxes = reference.confidence_boxes(sp.csr_array(counts.reshape(S * A, S + 1)), delta, kind)
    v_ext = np.append(np.round(costs[:, 0] * 4) / 2, 0.0)
    if infinite:
        v_ext[int(np.argmax(costs[:, -1]))] = np.inf
    rows = np.arange(S * A)
    _assert_pour_kernels_agree(boxes, rows, v_ext, descending)
    # A subset of the rows, repeated and out of order.
    _assert_pour_kernels_agree(boxes, rows[::-2].repeat(2), v_ext, descending)


@pytest.mark.parametrize("descending", [False, True])
def test_pour_kernels_on_long_pours_ties_infinities_and_unseen_pairs(descending):
    # 700 next states. Action 0: four next states of 10^5-10^9 samples, whose tiny unseen
    # width makes the pour run over hundreds of positions; action 1: one sample; action 2:
    # hundreds of stored next states, or no sample at all (the unseen box [0, 1]). The
    # values tie in threes, and some are infinite.
    S, A = 700, 3
    rng = np.random.default_rng(3)
    counts = np.zeros((S, A, S + 1))
    for s in range(S):
        counts[s, 0, rng.choice(S + 1, size=4, replace=False)] = rng.integers(10**5, 10**9, 4)
        counts[s, 1, rng.integers(0, S + 1)] = 1
        if s % 3:
            counts[s, 2, rng.choice(S + 1, size=300, replace=False)] = rng.integers(1, 50, 300)
    boxes = reference.confidence_boxes(sp.csr_array(counts.reshape(S * A, S + 1)), 0.1, "kl")
    v_ext = np.append(rng.integers(0, 3, S).astype(float), 0.0)
    v_ext[rng.choice(S, size=5, replace=False)] = np.inf
    kernel = _assert_pour_kernels_agree(boxes, np.arange(S * A), v_ext, descending)
    assert kernel.reach[0::3].min() > 10 and kernel.reach[0::3].max() > 300
    assert np.all(boxes.hi_unseen[2::9] == 1.0)
    assert np.array_equal(kernel.indptr[3::9], kernel.indptr[2::9])
    assert np.diff(kernel.indptr).max() >= 300


@pytest.mark.parametrize("descending", [False, True])
def test_pour_kernels_on_every_row_width_around_the_short_sort(descending):
    # Row k stores k + 1 next states (1 .. 40), so the compiled kernels sort the entries of
    # some rows by insertion (at most 16) and of the others by qsort; values in random order.
    S = 40
    rng = np.random.default_rng(5)
    counts = np.zeros((S, 1, S + 1))
    for s in range(S):
        counts[s, 0, rng.choice(S + 1, size=s + 1, replace=False)] = rng.integers(1, 40, s + 1)
    boxes = reference.confidence_boxes(sp.csr_array(counts.reshape(S, S + 1)), 0.1, "kl")
    v_ext = np.append(rng.permutation(S).astype(float), 0.0)
    kernel = _assert_pour_kernels_agree(boxes, np.arange(S), v_ext, descending)
    assert np.array_equal(np.diff(kernel.indptr), np.arange(1, S + 1))


@pytest.mark.parametrize("descending", [False, True])
def test_a_reused_pour_order_never_serves_other_values(descending):
    # The compiled kernels keep the order of the last vector poured on the thread: pouring
    # again the same vector, a vector changed in place, the other direction, or a vector
    # that differs only by the sign of a zero must give the answers of a fresh order (and
    # the numpy kernels' pieces).
    S, A = 30, 2
    rng = np.random.default_rng(11)
    counts = rng.integers(0, 30, size=(S, A, S + 1)) * (rng.random((S, A, S + 1)) < 0.3)
    boxes = reference.confidence_boxes(sp.csr_array(counts.reshape(S * A, S + 1).astype(float)),
                                       0.1, "kl")
    rows, policy_rows = np.arange(S * A), np.arange(S) * A
    v_ext = np.append(rng.integers(0, 4, S).astype(float), 0.0)
    zero_signed = v_ext.copy()
    zero_signed[v_ext == 0.0] = -0.0

    def agree(v, direction):
        got = COMPILED_KERNELS.pour_values(boxes, rows, v, direction)
        fast_kernels._LAST_POUR.__dict__.clear()
        assert np.array_equal(got, COMPILED_KERNELS.pour_values(boxes, rows, v, direction))
        assert np.allclose(got, NUMPY_KERNELS.pour_values(boxes, rows, v, direction),
                           rtol=1e-12, atol=1e-12)
        _assert_pour_kernels_agree(boxes, policy_rows, v, direction)

    agree(v_ext, descending)
    agree(v_ext, descending)
    v_ext[:S] = v_ext[:S][::-1] + rng.random(S)
    agree(v_ext, descending)
    agree(v_ext, not descending)
    agree(zero_signed, descending)
    agree(np.abs(zero_signed), descending)


def _read_only_boxes(seed, S, A):
    """Confidence boxes of random counts whose arrays are read-only, as store_boxes makes
    them (so the compiled kernels may keep a pour of every pair on them)."""
    counts = np.random.default_rng(seed).integers(0, 30, size=(S * A, S + 1))
    boxes = reference.confidence_boxes(sp.csr_array(counts.astype(float)), 0.1, "kl")
    for name in ("indptr", "indices", "lo", "hi", "hi_unseen"):
        getattr(boxes, name).flags.writeable = False
    return boxes


def test_a_kept_pour_of_every_pair_serves_only_its_boxes_and_vector(monkeypatch):
    # The lower check's pour of every pair (by _pour_blocks, increasing value) on boxes whose
    # arrays are read-only is copied by the next pour_values of all the pairs on the same
    # boxes and vector; a vector changed in place, other boxes of the same shape, a subset of
    # the rows or the other direction pour afresh, and every answer is that of a fresh pour
    # (the numpy kernels' too).
    S, A = 30, 2
    rng = np.random.default_rng(12)
    boxes, other = _read_only_boxes(1, S, A), _read_only_boxes(2, S, A)
    rows = np.arange(S * A)
    v_ext = np.append(rng.random(S) * 5.0, 0.0)
    poured = []
    compiled_pour = fast_kernels._robust.pour_values
    monkeypatch.setattr(fast_kernels._robust, "pour_values",
                        lambda *args: poured.append(1) or compiled_pour(*args))

    def fresh(b, r, v, direction):
        fast_kernels._POURED_PAIRS.__dict__.clear()
        want = COMPILED_KERNELS.pour_values(b, r, v, direction)
        assert np.allclose(want, NUMPY_KERNELS.pour_values(b, r, v, direction),
                           rtol=1e-12, atol=1e-12)
        return want

    kept = fast_kernels._pour_blocks(boxes, v_ext, False)(0, S * A)
    assert not kept.flags.writeable
    poured.clear()
    got = COMPILED_KERNELS.pour_values(boxes, rows, v_ext, False)
    assert not poured and got.flags.writeable and got is not kept
    np.testing.assert_array_equal(got, fresh(boxes, rows, v_ext, False))
    got[:] = -1.0
    fast_kernels._pour_blocks(boxes, v_ext, False)(0, S * A)
    np.testing.assert_array_equal(COMPILED_KERNELS.pour_values(boxes, rows, v_ext, False), kept)
    for b, r, direction in ((other, rows, False), (boxes, rows[:-1], False),
                            (boxes, rows[::-1], False), (boxes, rows, True)):
        fast_kernels._pour_blocks(boxes, v_ext, False)(0, S * A)
        poured.clear()
        got = COMPILED_KERNELS.pour_values(b, r, v_ext, direction)
        assert poured
        np.testing.assert_array_equal(got, fresh(b, r, v_ext, direction))
    fast_kernels._pour_blocks(boxes, v_ext, False)(0, S * A)
    v_ext[:S] = v_ext[:S][::-1]
    got = COMPILED_KERNELS.pour_values(boxes, rows, v_ext, False)
    np.testing.assert_array_equal(got, fresh(boxes, rows, v_ext, False))
    assert not np.array_equal(got, kept)


@pytest.mark.parametrize("change", ["writable", "unfrozen", "replaced"])
def test_boxes_changed_after_the_lower_check_get_a_fresh_pour(change):
    # The lower check pours every pair (and the compiled set keeps that pour when the boxes'
    # arrays are read-only); boxes changed afterwards (in place, their arrays writable from
    # the start or made writable again; or an array swapped for another read-only one) must
    # get the pour of their new ends from pour_values, never the kept one.
    S, A = 20, 2
    rng = np.random.default_rng(0)
    boxes = _read_only_boxes(3, S, A)
    if change == "writable":
        boxes = reference.confidence_boxes(sp.csr_array(
            np.random.default_rng(3).integers(0, 30, size=(S * A, S + 1)).astype(float)),
            0.1, "kl")
    costs, values = rng.random((S, A)) + 0.1, rng.random(S) * 3.0
    lower = COMPILED_KERNELS.lower_check(boxes, costs, values, None)[0]
    v_ext, rows = np.append(lower, 0.0), np.arange(S * A)
    before = COMPILED_KERNELS.pour_values(boxes, rows, v_ext, False)
    if change == "replaced":
        for name, array in (("lo", boxes.lo * 0.5), ("hi_unseen", np.ones(S * A))):
            array.flags.writeable = False
            object.__setattr__(boxes, name, array)
    else:
        for name in ("lo", "hi_unseen"):
            getattr(boxes, name).flags.writeable = True
        boxes.lo[:] *= 0.5
        boxes.hi_unseen[:] = 1.0
    got = COMPILED_KERNELS.pour_values(boxes, rows, v_ext, False)
    want = NUMPY_KERNELS.pour_values(boxes, rows, v_ext, False)
    assert not np.allclose(before, want)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_store_boxes_are_frozen_for_a_kept_pour():
    # The solver's boxes (store_boxes) have every array a pour reads read-only, so the
    # compiled set keeps the lower check's pour on them; boxes of writable arrays have none.
    store = reference.SampleStore(6, 2)
    ssp = reference.garnet(6, 2, 3, seed=1)
    store.draw_pairs(reference.TabularGenerativeModel(ssp), np.arange(12), np.full(12, 5),
                     np.random.default_rng(0))
    boxes = store_boxes(NUMPY_KERNELS, store.counts_csr(), 0.1, box_kind("kl"), KeptEnds())
    assert fast_kernels._frozen_arrays(boxes) is not None
    assert fast_kernels._frozen_arrays(
        reference.confidence_boxes(store.counts_csr(), 0.1, "kl")) is None


@settings(max_examples=POUR_EXAMPLES, **SETTINGS)
@given(values=st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, np.inf]) | st.floats(0, 3),
                       min_size=1, max_size=40),
       seed=st.integers(0, 2**32 - 1), descending=st.booleans())
def test_a_repaired_pour_order_is_the_sorted_one(values, seed, descending):
    # From any permutation (the goal in its place), the insertion of fast._robust.repair_order
    # ends at reference.kernels.pour_order's permutation (ties, -0.0 and inf included); past
    # its budget of moves, or with a NaN, it says so.
    v_ext = np.append(values, 0.0)
    S = v_ext.size - 1
    want = reference.kernels.pour_order(v_ext, descending)
    states = np.random.default_rng(seed).permutation(S)
    start = np.append(states, S) if descending else np.append(S, states)
    order = start.copy()
    assert fast._robust.repair_order(v_ext, order, descending, S * S)
    assert np.array_equal(order, want)
    inversions = sum(int(want.tolist().index(a) > want.tolist().index(b))
                     for i, a in enumerate(start) for b in start[i + 1:])
    if inversions:
        assert not fast._robust.repair_order(v_ext, start.copy(), descending, inversions - 1)
    v_ext[0] = np.nan
    assert not fast._robust.repair_order(v_ext, start.copy(), descending, S * S)


@settings(max_examples=POUR_EXAMPLES, **SETTINGS)
@given(values=st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, np.inf, 5e-324])
                       | st.floats(0, 3) | st.floats(0, 1e300), min_size=0, max_size=300),
       descending=st.booleans())
def test_a_radix_sorted_pour_order_is_the_sorted_one(values, descending):
    # fast._robust.sort_order gives reference.kernels.pour_order's permutation (ties to the
    # lower index, -0.0 equal to +0.0, inf, subnormals, up to 300 states); a NaN is refused
    # and leaves the order untouched.
    v_ext = np.append(values, 0.0)
    order = np.full(v_ext.size, -1, dtype=np.int64)
    assert fast._robust.sort_order(v_ext, order, descending)
    assert np.array_equal(order, reference.kernels.pour_order(v_ext, descending))
    if values:
        v_ext[-2] = np.nan
        untouched = np.full(v_ext.size, -1, dtype=np.int64)
        assert not fast._robust.sort_order(v_ext, untouched, descending)
        assert (untouched == -1).all()


def test_a_pour_walk_of_the_same_vector_again_is_the_kept_one():
    # A vector poured again bit for bit (another array of equal values) is given the kept
    # walk whole, the same read-only arrays; a vector that differs, the other direction or
    # a pour not kept are walked afresh, into the order of a fresh sort.
    rng = np.random.default_rng(6)
    v_ext = np.append(rng.random(50), 0.0)
    first = fast_kernels._pour_walk(v_ext, False)
    again = fast_kernels._pour_walk(v_ext.copy(), False)
    assert all(a is b for a, b in zip(first, again)) and not first[0].flags.writeable
    moved = v_ext.copy()
    moved[[3, 7]] = moved[[7, 3]]
    for v, descending in ((moved, False), (moved, True)):
        fast_kernels._pour_walk(v_ext, False)
        walk = fast_kernels._pour_walk(v, descending)
        assert walk[0] is not first[0]
        np.testing.assert_array_equal(walk[0], reference.kernels.pour_order(v, descending))
    fast_kernels._pour_walk(v_ext, False, keep=False)
    assert fast_kernels._pour_walk(v_ext, False)[0] is not first[0]


def test_a_pour_walk_sums_as_numpy():
    # The compiled walk's prefix sums are numpy's cumsum bit for bit (a first value of -0.0
    # stays -0.0), its counts of infinite values and its ranks the order's positions.
    rng = np.random.default_rng(4)
    v_ext = np.append(rng.random(300) * 10.0 ** rng.integers(-8, 8, 300), 0.0)
    v_ext[rng.choice(300, size=7, replace=False)] = np.inf
    for first in (-0.0, 1e-300, np.inf):
        v_ext[17] = first
        order = np.append(17, [j for j in rng.permutation(301) if j != 17]).astype(np.int64)
        rank, cum_v = np.empty(301, dtype=np.int64), np.empty(302)
        cum_inf = np.empty(302, dtype=np.int64)
        fast._robust.pour_walk(v_ext, order, rank, cum_v, cum_inf)
        along = v_ext[order]
        want = np.concatenate([[0.0], np.cumsum(np.where(np.isinf(along), 0.0, along))])
        assert np.array_equal(cum_v.view(np.uint64), want.view(np.uint64))
        assert np.array_equal(cum_inf, np.concatenate([[0], np.cumsum(np.isinf(along))]))
        assert np.array_equal(rank[order], np.arange(301))


POUR_ROUNDING = 4 * np.finfo(np.float64).eps
"""Bound on how far the two backends' poured masses of one entry differ, per next state."""

ROUNDING_EXAMPLE = (
    np.array([[0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [1, 0, 1, 1], [1, 0, 0, 1],
              [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]).reshape(3, 3, 4),
    np.array([[0.38048347384657566, 0.1261817591027521, 0.22672432225506145],
              [0.24728800481560986, 0.07129591471473706, 0.920724349792935],
              [0.6842907783573775, 0.45169685775649127, 0.24782725011592666]]),
    0.001, 1e-07,
)
"""Values near 4.3e5 that the two backends' pours, one ulp apart, move by 1.2e-9 relative."""


def _evaluation_rtol(values, costs):
    """Relative tolerance of two exact evaluations of kernels poured in different orders.

    See :func:`test_certificates_match_reference`.
    """
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return RTOL
    S = costs.shape[0]
    return RTOL + POUR_ROUNDING * (S + 1) * float(finite.max()) / float(costs.min())


def _ill_conditioned(*values):
    """Whether a finite value of any of ``values`` exceeds ``ILL_CONDITIONED``."""
    return any((v[np.isfinite(v)] > ILL_CONDITIONED).any() for v in values)


@settings(max_examples=ROBUST_EXAMPLES, **SETTINGS)
@given(problem=count_tables())
@example(problem=ROUNDING_EXAMPLE)
def test_certificates_match_reference(problem):
    r"""Both backends' robust values and certificates agree, to a tolerance derived here.

    The boxes are the same floats in both backends, and so are the pour
    orders and the policy iterations' kernels (``pour_kernel``); the values
    of the pours (``pour_values``, which the optimist's switches and the
    Bellman checks read) are not, so a switch at the edge of its tolerance
    may go either way, after which the kernels are poured against values
    apart by that rounding. The values of the pours differ as their
    distributions do in the explicit form: both fill whole entries to
    ``lo + gap`` (the same float), but the one entry where the mass runs out
    gets the remaining mass, which the numpy pour computes as
    ``1 - sum lo - filled_before`` (sums first) and the compiled one by
    subtracting each lower end, then each gap or run ``length * width`` of
    equal gaps, in turn. Each is a sum of at most ``2 (S+1)`` terms in
    ``[0, 1]``, off by at most ``2 (S+1) eps``, so each explicit row
    moves by ``|dP| <= (S+1) POUR_ROUNDING`` with ``POUR_ROUNDING = 4 eps``,
    and the exact evaluation :math:`V = (I - P)^{-1} c` of a proper policy
    moves by (to first order)

    .. math::

        \frac{|dV|}{|V|} \le \|(I - P)^{-1}\|_\infty \|dP\|_\infty
        \le \frac{\max V}{\min c}\,(S + 1)\,\mathrm{POUR\_ROUNDING},

    since :math:`(I - P)^{-1} \mathbf 1` is the expected time to the goal,
    at most :math:`\max V / \min c`. That is :func:`_evaluation_rtol`
    (plus ``RTOL``); ``ROUNDING_EXAMPLE`` (values 4.3e5, costs >= 0.1,
    ``S = 3``) differs by 1.2e-9 relative, within its 1.5e-8.
    """
    counts, costs, delta, _ = problem
    costs = np.maximum(costs, 0.1)
    ref = reference.robust_optimal_values(counts, costs, delta)
    # Above ILL_CONDITIONED the adversary's kernel leaks to the goal only at the scale of
    # rounding (upper ends summing to 1 - 1e-10 on a closed set): both backends bound it,
    # with different roundings, and either may find the Bellman check failing (infinite).
    got = fast.robust_optimal_values(counts, costs, delta)
    assume(not _ill_conditioned(ref.values, got.values))
    assert np.array_equal(np.isinf(got.values), np.isinf(ref.values))
    finite = np.isfinite(ref.values)
    rtol = _evaluation_rtol(ref.values, costs)
    assert np.allclose(got.values[finite], ref.values[finite], rtol=rtol, atol=RTOL)
    ref_cert = reference.certify(counts, costs, ref.policy, delta)
    got_cert = fast.certify(counts, costs, ref.policy, delta)
    assume(not _ill_conditioned(ref_cert.upper, got_cert.upper))
    rtol = _evaluation_rtol(np.concatenate([ref_cert.lower, ref_cert.upper]), costs)
    assert np.allclose(got_cert.lower, ref_cert.lower, rtol=rtol, atol=RTOL)
    assert np.array_equal(np.isinf(got_cert.upper), np.isinf(ref_cert.upper))
    finite = np.isfinite(ref_cert.upper)
    assert np.allclose(got_cert.upper[finite], ref_cert.upper[finite], rtol=rtol, atol=RTOL)


@st.composite
def kl_inputs(draw):
    """Frequencies, sample sizes and levels for :func:`reference.confidence.kl_interval`.

    Sample sizes from 0 and 1 to ``1e300``, frequencies ``k / n`` with ``k = 0``
    and ``k = n`` among them, levels from ``1e-300`` to ``1e3``.
    """
    m = draw(st.integers(1, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = np.floor(10.0 ** rng.uniform(0, draw(st.sampled_from([1, 4, 18, 300])), m))
    n[rng.random(m) < 0.05] = 0.0
    k = np.floor(rng.random(m) * (n + 1))
    edge = rng.random(m)
    k[edge < 0.2] = 0.0
    k[edge > 0.8] = n[edge > 0.8]
    p_hat = np.where(n > 0, np.minimum(k / np.maximum(n, 1.0), 1.0), rng.random(m))
    level = np.where(rng.random(m) < 0.5, rng.uniform(0.1, 40.0, m),
                     10.0 ** rng.uniform(-300, 3, m))
    return p_hat, n, level


@settings(max_examples=KERNEL_EXAMPLES, **SETTINGS)
@given(inputs=kl_inputs())
@example(inputs=(np.array([0.0, 1.0, 0.5, 0.0, 1.0]), np.array([1.0, 1.0, 1e300, 0.0, 1e18]),
                 np.array([1e-300, 1e3, 5e-324, 2.0, 1e-300])))
def test_kl_intervals_bit_identical(inputs):
    """The compiled Chernoff intervals are the numpy kernel's floats, and contain p_hat."""
    lo, hi = COMPILED_KERNELS.kl_interval(*inputs)
    ref_lo, ref_hi = NUMPY_KERNELS.kl_interval(*inputs)
    assert np.array_equal(lo, ref_lo) and np.array_equal(hi, ref_hi)
    p_hat = inputs[0]
    assert np.all((0 <= lo) & (lo <= p_hat) & (p_hat <= hi) & (hi <= 1))


@settings(max_examples=SOLVE_EXAMPLES, **SETTINGS)
@given(problem=count_tables())
def test_kl_boxes_bit_identical(problem):
    """Both backends build the same KL boxes, dense counts or CSR."""
    counts, _, delta, _ = problem
    S, A = counts.shape[:2]
    for given_counts in (counts, sp.csr_array(counts.reshape(S * A, S + 1))):
        got = fast.confidence_boxes(given_counts, delta)
        ref = reference.confidence_boxes(given_counts, delta)
        for name in ("lo", "hi", "hi_unseen"):
            assert np.array_equal(getattr(got, name), getattr(ref, name))
