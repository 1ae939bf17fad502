"""The ``fast`` backend runs its compiled kernels, and never falls back silently."""

import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import fast
import reference
from fast import _boxes, _evi, _graphs, _pieces, _poured, _robust, _vi

COMPILED_NAMES = ["extended_value_iteration", "bernstein_radius", "value_iteration",
                  "search", "estimate_diameter", "solve", "plug_in"]


def _counting(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper counting its calls; return the counter."""
    calls = []
    original = getattr(module, name)

    def wrapper(*args):
        calls.append(name)
        return original(*args)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def _counts(rng, S, A, n=50):
    P = rng.dirichlet(np.ones(S + 1), size=(S, A))
    return np.stack([[rng.multinomial(n, P[s, a]) for a in range(A)] for s in range(S)])


def test_extensions_are_compiled_modules():
    for module in (_boxes, _evi, _graphs, _pieces, _poured, _robust, _vi):
        assert module.__file__.endswith((".so", ".pyd"))


def test_hot_names_are_not_the_reference_functions():
    for name in COMPILED_NAMES:
        assert getattr(fast, name) is not getattr(reference, name)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_evi_calls_one_compiled_sweep_per_iteration(monkeypatch, sparse):
    rng = np.random.default_rng(0)
    counts = _counts(rng, 6, 2)
    if sparse:
        counts = sp.csr_array(counts.reshape(12, 7))
    calls = _counting(monkeypatch, _evi, "sweep_csr" if sparse else "sweep_dense")
    out = fast.extended_value_iteration(counts, rng.random((6, 2)), 0.1, 1e-6)
    assert out.converged
    assert len(calls) == out.n_iter


@pytest.mark.parametrize(("sparse", "branching", "swept"),
                         [(False, 9, "sweep_dense"), (False, 2, "sweep_csr"),
                          (True, 3, "sweep_csr")],
                         ids=["dense", "sparse-stored-dense", "csr"])
def test_value_iteration_calls_one_compiled_sweep_per_iteration(monkeypatch, sparse, branching,
                                                                swept):
    """A kernel with few nonzero entries is swept in CSR form, whatever its storage."""
    ssp = reference.garnet(8, 3, branching, seed=2, sparse=sparse)
    calls = _counting(monkeypatch, _vi, swept)
    out = fast.value_iteration(ssp)
    assert out.converged
    assert len(calls) == out.n_iter


def _bellman_update(q, v_ext):
    """Values, greedy actions (lowest on ties, NaN actions never chosen, 0 and ``inf``
    when all are NaN) and NaN-propagating residual of ``q (S, A)``, by numpy."""
    S = q.shape[0]
    finite = ~np.isnan(q)
    masked = np.where(finite, q, np.inf)
    values = masked.min(axis=1)
    policy = masked.argmin(axis=1)
    residual = np.abs(values - v_ext[:S])
    return values, policy, (np.nan if np.isnan(residual).any() else residual.max())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("S", [1, 7, 300, 2**18 + 5],
                         ids=["S=1", "S=7", "S=300", "prefetching"])
def test_vi_sweeps_equal_the_numpy_bellman_update(S, threads):
    """Both compiled VI sweeps, on one thread and on two, give the numpy Bellman update bit
    for bit: CSR rows summed in stored order (scipy's order; some rows empty), dense rows
    of dyadic entries (exact in any order), ties between actions, and a NaN value. The
    largest size crosses ``PREFETCH_MIN_STATES`` of ``fast/_linalg.pxd``."""
    rng = np.random.default_rng(S)
    A = 3
    rows = S * A
    nnz = rng.integers(0, 4, size=rows)
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    cols = rng.integers(0, S + 1, size=indptr[-1]).astype(np.int32)
    data = rng.random(indptr[-1])
    csr = sp.csr_array((data, cols, indptr), shape=(rows, S + 1))
    costs = rng.random((S, A))
    costs[:, 1] = costs[:, 0]
    with_nan = np.append(rng.random(S) * 10, 0.0)
    with_nan[rng.integers(0, S)] = np.nan
    for v_ext in (np.append(rng.random(S) * 10, 0.0), with_nan):
        expected = _bellman_update(costs + (csr @ v_ext).reshape(S, A), v_ext)
        v_out, policy = np.full(S, -1.0), np.full(S, -1, dtype=np.intp)
        got = _vi.sweep_csr(indptr, cols, data, costs, v_ext, v_out, policy, threads)
        np.testing.assert_array_equal(v_out, expected[0])
        np.testing.assert_array_equal(policy, expected[1])
        np.testing.assert_array_equal(got, expected[2])
    if S > 300:
        return
    P = rng.integers(0, 9, size=(S, A, S + 1)) / 8.0
    P[:, 1] = P[:, 0]
    costs = rng.integers(0, 4, size=(S, A)).astype(np.float64)
    costs[:, 1] = costs[:, 0]
    exact = np.append(rng.integers(-20, 20, size=S).astype(np.float64), 0.0)
    with_nan = exact.copy()
    with_nan[rng.integers(0, S)] = np.nan
    for v_ext in (exact, with_nan):
        expected = _bellman_update(costs + P.reshape(rows, S + 1).dot(v_ext).reshape(S, A),
                                   v_ext)
        v_out, policy = np.full(S, -1.0), np.full(S, -1, dtype=np.intp)
        got = _vi.sweep_dense(P, costs, v_ext, v_out, policy, threads)
        np.testing.assert_array_equal(v_out, expected[0])
        np.testing.assert_array_equal(policy, expected[1])
        np.testing.assert_array_equal(got, expected[2])


def test_bernstein_radius_is_compiled(monkeypatch):
    calls = _counting(monkeypatch, _boxes, "radius_dense")
    fast.bernstein_radius(_counts(np.random.default_rng(1), 3, 2), 0.05)
    assert calls == ["radius_dense"]


def test_solve_runs_the_compiled_evi(monkeypatch):
    ssp = reference.garnet(4, 2, 2, c_min=0.5, seed=3)
    calls = _counting(monkeypatch, _evi, "sweep_csr")
    out = fast.solve(fast.TabularGenerativeModel(ssp), ssp.costs, 0.1, 0.1, seed=0)
    assert len(calls) >= len(out.history) > 0


def test_import_without_extension_fails_with_build_instructions():
    code = "import sys; sys.modules['fast._evi'] = None; import fast"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "build_ext --inplace" in proc.stderr and "pip install -e ." in proc.stderr
    assert "--force-reinstall --no-deps --no-cache-dir sspgm" in proc.stderr
    assert "repository root" not in proc.stderr


@pytest.mark.parametrize("samples", [30, 3000, 300000])
def test_csr_sweep_from_the_previous_order_equals_a_fresh_sort(samples):
    """A CSR sweep starts from the pour prefix the previous one left on the boxes.

    Along values that drift (repaired), jump (sorted afresh), tie and go
    negative, every sweep equals, bit for bit, the sweep of boxes that never
    swept (on one thread and on two), and leaves the prefix of the stable sort
    of ``v`` (goal first) with its ranks, ``S+1`` elsewhere.
    """
    rng = np.random.default_rng(samples)
    S, A = 80, 3
    counts = np.zeros((S * A, S + 1))
    for row in counts:
        support = rng.choice(S + 1, size=5, replace=False)
        row[support] = rng.multinomial(samples, rng.dirichlet(np.ones(5)))
    table = sp.csr_array(counts)
    costs = 0.2 + rng.random((S, A))
    kernels = fast.kernels.COMPILED_KERNELS
    boxes = kernels.boxes(table, 0.1)
    n = min(boxes.compiled.prefix, S + 1)
    v = rng.random(S) * 4.0
    values = []
    for step in range(40):
        if step % 10 == 9:
            v = rng.random(S) * 4.0
        elif step % 10 == 5:
            v = np.round(v, 1)
        elif step % 10 == 7:
            v = v - 1.0
        else:
            v = v + rng.normal(scale=0.02, size=S)
        values.append(np.append(v, 0.0))
    for v_ext in values:
        out = []
        for target, threads in ((boxes, 1), (kernels.boxes(table, 0.1), 1),
                                (kernels.boxes(table, 0.1), 2)):
            v_out, policy = np.empty(S), np.empty(S, dtype=np.intp)
            residual = _evi.sweep_csr(target.compiled, costs, v_ext, v_out, policy, threads)
            out.append((residual, v_out.view(np.uint64), policy))
        for other in out[1:]:
            assert out[0][0] == other[0]
            assert np.array_equal(out[0][1], other[1]) and np.array_equal(out[0][2], other[2])
        order = reference.kernels.goal_first_order(v_ext)[:n]
        assert np.array_equal(boxes.compiled.order_idx[:n], order)
        rank = np.full(S + 1, S + 1)
        rank[order] = np.arange(n)
        assert np.array_equal(boxes.compiled.rank, rank)


@pytest.mark.parametrize("samples", [20, 400000])
def test_csr_sweep_sorts_every_number_of_stored_entries_in_the_prefix(samples):
    """The stored entries of a pair inside the pour prefix are sorted by rank whatever their
    number: none or one, up to four (the sorting network), up to 24 (insertion) and more
    (heap sort). Each sweep matches the numpy kernels' dense pour, state by state, and is
    the same bit for bit on two threads (whose keys no longer fit on the stack)."""
    rng = np.random.default_rng(samples)
    S, A = 150, 2
    counts = np.zeros((S * A, S + 1))
    for i, row in enumerate(counts):
        size = (1, 2, 3, 4, 5, 8, 24, 25, 60, S + 1)[i % 10]
        support = rng.choice(S + 1, size=size, replace=False)
        row[support] = rng.multinomial(samples, rng.dirichlet(np.ones(size)))
    table = sp.csr_array(counts)
    costs = 0.2 + rng.random((S, A))
    numpy_kernels = reference.kernels.NUMPY_KERNELS
    expected_boxes = numpy_kernels.boxes(numpy_kernels.scan_counts(counts.reshape(S, A, S + 1)),
                                         0.1)
    for step in range(6):
        v_ext = np.append(rng.random(S) * 4.0, 0.0)
        expected, expected_policy = np.empty(S), np.empty(S, dtype=np.intp)
        numpy_kernels.evi_sweep(expected_boxes, costs, v_ext, expected, expected_policy)
        outs = []
        for threads in (1, 2):
            boxes = fast.kernels.COMPILED_KERNELS.boxes(table, 0.1)
            v_out, policy = np.empty(S), np.empty(S, dtype=np.intp)
            _evi.sweep_csr(boxes.compiled, costs, v_ext, v_out, policy, threads)
            assert np.allclose(v_out, expected, rtol=1e-12, atol=1e-12)
            assert np.array_equal(policy, expected_policy)
            outs.append((v_out.view(np.uint64), policy))
        assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


def _action_values(sweep, boxes, costs, v_ext):
    """``c(s, a) + inner(s, a, v)`` of every pair, each from a compiled sweep whose other
    actions cost ``1e300`` (so the sweep's minimum is that pair's value, the same floats)."""
    S, A = costs.shape
    q = np.empty((S, A))
    for a in range(A):
        forced = np.full_like(costs, 1e300)
        forced[:, a] = costs[:, a]
        v_out, policy = np.empty(S), np.empty(S, dtype=np.intp)
        sweep(boxes.compiled, forced, v_ext, v_out, policy, 1)
        assert np.all(policy == a)
        q[:, a] = v_out
    return q


@pytest.mark.parametrize("storage", ["csr", "dense"])
@pytest.mark.parametrize("samples", [25, 5000, 500000])
def test_evi_sweep_skips_only_actions_that_cannot_win(samples, storage):
    """A compiled EVI sweep pours for an action only when ``c(s, a) + lo . v`` can still beat
    the best value of its state; the skipped ones cannot. Whatever it skipped, each state's
    value is, bit for bit, the minimum of every action's own value, and the policy the
    lowest action reaching it: on CSR and dense boxes, with repeated actions (ties), values
    of both signs (no skipping below zero), all zero (every bound exact), on one thread
    and two."""
    rng = np.random.default_rng(samples)
    S, A = 60, 6
    counts = np.zeros((S, A, S + 1))
    for s in range(S):
        for a in range(A):
            size = S + 1 if storage == "dense" else int(rng.integers(1, 8))
            support = rng.choice(S + 1, size=size, replace=False)
            counts[s, a, support] = rng.multinomial(samples, rng.dirichlet(np.ones(size)))
    counts[:, 4] = counts[:, 1]
    costs = rng.choice([0.2, 0.5, 1.0], size=(S, A))
    costs[:, 4] = costs[:, 1]
    kernels = fast.kernels.COMPILED_KERNELS
    if storage == "csr":
        table, sweep = sp.csr_array(counts.reshape(S * A, S + 1)), _evi.sweep_csr
    else:
        table, sweep = counts, _evi.sweep_dense

    def boxes():
        made = kernels.boxes(table if storage == "csr" else kernels.scan_counts(table), 0.1)
        assert made.sparse == (storage == "csr")
        return made

    shapes = [rng.random(S) * 5.0, np.round(rng.random(S) * 3.0, 1), rng.normal(size=S),
              np.zeros(S), rng.random(S) * 1e-3 + 2.0]
    for v in shapes:
        v_ext = np.append(v, 0.0)
        q = _action_values(sweep, boxes(), costs, v_ext)
        for threads in (1, 2):
            v_out, policy = np.empty(S), np.empty(S, dtype=np.intp)
            sweep(boxes().compiled, costs, v_ext, v_out, policy, threads)
            assert np.array_equal(v_out.view(np.uint64), q.min(axis=1).view(np.uint64))
            assert np.array_equal(policy, q.argmin(axis=1))
        assert not np.any(policy == 4)


@pytest.mark.parametrize("S, samples", [(7, 40), (200, 40), (200, 100000)])
def test_csr_pour_order_sorted_afresh_keeps_the_stable_order(S, samples):
    """Boxes that never swept sort the pour prefix afresh (by the radix sort when the prefix
    is at least an eighth of the states, else by the heap): zeros of both signs tie with the
    goal and with each other, negative and repeated values, all in the order of the stable
    sort of ``v`` with the goal first, and the ranks ``S+1`` outside the prefix."""
    rng = np.random.default_rng(S + samples)
    A = 2
    counts = np.zeros((S * A, S + 1))
    for row in counts:
        support = rng.choice(S + 1, size=min(4, S + 1), replace=False)
        row[support] = rng.multinomial(samples, rng.dirichlet(np.ones(support.size)))
    table = sp.csr_array(counts)
    costs = 0.2 + rng.random((S, A))
    kernels = fast.kernels.COMPILED_KERNELS
    shapes = [rng.choice([0.0, -0.0, 1.5, -2.0, 1e-300, -1e-300, np.inf], size=S),
              np.round(rng.normal(size=S), 1), rng.random(S) * 1e6 - 5e5,
              -rng.random(S), np.zeros(S), -np.zeros(S)]
    for v in shapes:
        v_ext = np.append(v, 0.0)
        boxes = kernels.boxes(table, 0.1)
        n = min(boxes.compiled.prefix, S + 1)
        v_out, policy = np.empty(S), np.empty(S, dtype=np.intp)
        with np.errstate(invalid="ignore"):
            _evi.sweep_csr(boxes.compiled, costs, v_ext, v_out, policy, 1)
        order = reference.kernels.goal_first_order(v_ext)[:n]
        assert np.array_equal(boxes.compiled.order_idx[:n], order)
        assert np.array_equal(boxes.compiled.order_val[:n].view(np.uint64),
                              v_ext[order].view(np.uint64))
        rank = np.full(S + 1, S + 1)
        rank[order] = np.arange(n)
        assert np.array_equal(boxes.compiled.rank, rank)


SCAN_SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, -1.0, -5e-324, -0.0, 5e-324, 2.0**62,
                 np.finfo(np.float64).max, 0.5, 2.0**51 + 0.5]
"""Entries the dense scan must tell apart (``tests/test_differential.py``'s ``SPECIAL_COUNTS``)."""


def _scan_truth(rows):
    """What ``_boxes.scan_dense`` returns for the rows of ``rows``, by numpy on their bits: the
    entries other than ``±0.0`` as CSR, and the largest entry, NaN unless every one is a finite
    integer with its sign bit clear."""
    nonzero = (rows.view(np.uint64) << np.uint64(1)) != 0
    indptr = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))])
    valid = bool(np.all(np.isfinite(rows) & ~np.signbit(rows) & (rows == np.trunc(rows))))
    return indptr, np.nonzero(nonzero)[1], rows[nonzero], rows.max() if valid else np.nan


@pytest.mark.parametrize("row_len", [1, 5, 15, 16, 17, 31, 32, 33, 47, 501, 1024, 1025, 1041,
                                     2100])
def test_dense_scan_equals_numpy_on_every_row_length(row_len):
    """The scan reads rows by blocks of 16 entries, a row's tail as its last 16 entries
    (overlapping its last whole block), rows shorter than a block one entry at a time, rows
    of more than 64 blocks a run of 64 at a time: on rows of every such length, with special
    entries in the first entry, the tail, the overlap and anywhere, and with ``max_nnz`` at,
    above and below the number of nonzero entries, its CSR rows, bit for bit, and its
    largest entry are numpy's (NaN when one is not finite or has its sign bit set)."""
    rng = np.random.default_rng(row_len)
    tail = row_len % 16
    spots = [0, row_len - 1, row_len - 1 - tail, max(row_len - 16, 0), row_len // 2]
    for trial in range(40):
        n_rows = int(rng.integers(1, 7))
        density = [0.0, 0.01, 0.1, 0.6, 1.0][trial % 5]
        rows = rng.integers(1, 100, (n_rows, row_len)) * (rng.random((n_rows, row_len)) < density)
        rows = rows.astype(np.float64)
        for _ in range(trial % 4):
            col = spots[rng.integers(len(spots))] if rng.random() < 0.6 else rng.integers(row_len)
            rows[rng.integers(n_rows), col] = SCAN_SPECIALS[rng.integers(len(SCAN_SPECIALS))]
        indptr, cols, data, largest = _scan_truth(rows)
        nnz = int(indptr[-1])
        for max_nnz in {nnz + 3, nnz, max(nnz - 1, 0), int(indptr[n_rows // 2]), 0}:
            scan = _boxes.scan_dense(rows.reshape(n_rows, 1, row_len), max_nnz)
            assert np.array_equal(np.array(scan.largest).view(np.uint64),
                                  np.array(largest).view(np.uint64)) or (
                np.isnan(scan.largest) and np.isnan(largest))
            if nnz > max_nnz:
                assert scan.indptr is None and scan.cols is None and scan.data is None
                continue
            assert scan.indptr.tolist() == indptr.tolist()
            assert scan.cols.tolist() == cols.tolist()
            assert scan.data.view(np.uint64).tolist() == data.view(np.uint64).tolist()


FRACTIONS = [0.5, 2.5, 1e-300, 5e-324, 2.0**-1074 * 3, 0.75, 1.0 - 2.0**-53, 1.0 + 2.0**-52,
             2.0**51 + 0.5, 2.0**52 - 0.5, 123.0625]
"""Fractional counts: below 1 (subnormals included), just above 1 and 2^51, and the last
fractional ones below 2^52 (one bit below 2^0)."""

WHOLE = [1.0, 2.0**51 + 1.0, 2.0**52, 2.0**52 + 2.0, 2.0**53, 1e300, np.finfo(np.float64).max]
"""Integer counts whose exponent sits at each edge of the scan's fraction test."""


@pytest.mark.parametrize("row_len", [5, 16, 17, 33, 1041])
def test_dense_scan_refuses_a_fractional_entry_at_every_position(row_len):
    """A fractional entry anywhere in a row (each block's first and last entry, the tail,
    the overlap of the tail and the last whole block, every entry of a short row), among
    zeros or among integer counts, stored or not (``max_nnz`` 0 reads the blocks again by
    vectors), makes the scan's largest entry NaN, as numpy's test ``x != trunc(x)`` says;
    the same rows of integers (whatever their exponent) give the largest one."""
    tail = row_len % 16
    positions = sorted({p for b in range(0, row_len, 16) for p in (b, b + 1, b + 15)
                        if p < row_len} | {row_len - 1, row_len - 1 - tail,
                                           max(row_len - 16, 0)} | set(range(min(row_len, 40))))
    rng = np.random.default_rng(row_len)
    filled = rng.integers(0, 9, (3, row_len)).astype(np.float64)
    for base in (np.zeros((3, row_len)), filled):
        for position in positions:
            for value in FRACTIONS + WHOLE:
                rows = base.copy()
                rows[1, position] = value
                assert (value == np.trunc(value)) == (value in WHOLE)
                expected = rows.max() if value in WHOLE else np.nan
                for max_nnz in (3 * row_len, 0):
                    largest = _boxes.scan_dense(rows.reshape(3, 1, row_len), max_nnz).largest
                    assert np.array_equal(largest, expected, equal_nan=True), (
                        position, value, max_nnz)


def _scalar_boxes(indptr, data, S, A, delta):
    """The CSR boxes of Lemma 5 entry by entry in Python floats (the compiled operations in
    their order): ``lo`` and ``gap`` of every stored entry, the unseen width, the upper mass
    and the longest pour bound."""
    lo, gap, unseen, upper, longest = [], [], [], [], 0
    for i in range(len(indptr) - 1):
        row = [float(x) for x in data[indptr[i]:indptr[i + 1]]]
        total = 0.0
        for x in row:
            total += x
        n_plus = max(total, 1.0)
        log_l = math.log(S * A * n_plus / delta)
        lo_sum = hi_sum = 0.0
        for x in row:
            p = x / n_plus
            beta = 4.0 * math.sqrt(p * log_l / n_plus) + 28.0 * log_l / n_plus
            low, high = max(p - beta, 0.0), min(p + beta, 1.0)
            lo.append(low)
            gap.append(high - low)
            lo_sum += low
            hi_sum += low + (high - low)
        width = min(28.0 * log_l / n_plus, 1.0)
        unseen.append(width)
        upper.append(hi_sum + (S + 1 - len(row)) * width)
        mass = 1.0 - lo_sum
        steps = len(row) + 2.0 + (math.ceil(mass / width) if mass > 0 else 0.0)
        longest = max(longest, min(int(steps), S + 1))
    return lo, gap, unseen, upper, longest


def test_csr_boxes_of_repeated_counts_equal_the_scalar_formula():
    """The boxes of counts met again (read from the memo of their ``N+``) are the floats of
    the formula, bit for bit: pairs whose ``N+`` alternates (so a count's box changes with
    it), integer counts below and above ``MEMO_COUNTS`` and off the multinomial's, a stored
    zero, a pair without samples; and the pour bound skipped for pairs that cannot raise it."""
    rng = np.random.default_rng(7)
    S, A, delta = 40, 3, 0.1
    rows = []
    for i in range(S * A):
        k = int(rng.integers(0, 6))
        cols = np.sort(rng.choice(S + 1, size=k, replace=False))
        n = [7, 200, 3000, 200][i % 4]
        vals = rng.multinomial(n, np.full(k, 1.0 / k)).astype(float) if k else np.zeros(0)
        if i % 9 == 5 and k:
            vals[0] += 1.0
        if i % 11 == 3 and k:
            vals[-1] = 0.0
        if i % 13 == 0 and k:
            vals[:] = _boxes.MEMO_COUNTS + np.arange(k)
        rows.append((cols, vals))
    indptr = np.cumsum([0] + [c.size for c, _ in rows]).astype(np.int64)
    cols = np.concatenate([c for c, _ in rows]).astype(np.int32)
    data = np.concatenate([v for _, v in rows])
    boxes = _boxes.boxes_from_csr(indptr, cols, data, S, A, delta)
    lo, gap, unseen, upper, longest = _scalar_boxes(indptr, data, S, A, delta)
    for got, want in ((boxes.lo, lo), (boxes.gap, gap), (boxes.gap_unseen, unseen),
                      (boxes.upper_mass.ravel(), upper)):
        assert np.array_equal(got.view(np.uint64), np.array(want).view(np.uint64))
    assert boxes.prefix == longest


@pytest.mark.parametrize("S", [1, 2, 30, 501])
def test_goal_first_ranks_is_the_stable_goal_first_order(S):
    """The radix-sorted pour order of the optimistic kernel is the permutation of
    ``reference.kernels.goal_first_order`` (zeros of both signs tie with the goal, repeated
    and negative values, subnormals), its ranks the inverse permutation; NaN, an empty
    vector or a goal value other than 0 give None (the caller then sorts with numpy)."""
    rng = np.random.default_rng(S)
    shapes = [rng.choice([0.0, -0.0, 1.5, -2.0, 5e-324, -1e-300, 1e300], size=S),
              np.round(rng.normal(size=S), 1), rng.random(S) * 1e6, np.zeros(S)]
    for v in shapes:
        v_ext = np.append(v, 0.0)
        order, rank = _pieces.goal_first_ranks(v_ext)
        assert order.dtype == rank.dtype == np.int64
        assert np.array_equal(order, reference.kernels.goal_first_order(v_ext))
        assert np.array_equal(rank[order], np.arange(S + 1))
    assert _pieces.goal_first_ranks(np.append(np.full(S, np.nan), 0.0)) is None
    assert _pieces.goal_first_ranks(np.append(np.zeros(S), np.nan)) is None
    assert _pieces.goal_first_ranks(np.append(np.zeros(S), 1.0)) is None
    assert _pieces.goal_first_ranks(np.zeros(0)) is None
