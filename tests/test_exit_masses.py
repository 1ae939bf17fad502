"""The exit masses of a transient block: how many terms each sums, and what that costs the proof.

Ground truth: exact sums over ``fractions.Fraction``, counts by a loop over the stored
entries, and closed forms derived here.
"""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from rational import solve_fractions
from reference.chains import CERTIFIED_RTOL, explicit, monotone


def test_sum_slack_bounds_every_summation_order():
    # Sums of k non-negative float64 numbers of spread-out magnitudes, in the orders the
    # solver uses (numpy's pairwise sum, bincount's running sum) and a random one: each
    # within sum_slack(k) of the exact sum, relatively; one term is exact.
    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 7, 40, 300):
        for _ in range(30):
            terms = rng.random(k) * 10.0 ** rng.integers(-12, 1, k)
            exact = sum(Fraction(t) for t in terms)
            running = 0.0
            for t in rng.permutation(terms):
                running += t
            sums = (np.sum(terms), np.bincount(np.zeros(k, int), weights=terms)[0], running)
            for total in sums:
                assert abs(Fraction(float(total)) - exact) <= Fraction(monotone.sum_slack(k)) * exact
    assert monotone.sum_slack(1) == 0.0 == monotone.sum_slack(0)


def _counted(P, states):
    """Stored entries of each row of ``P`` (dense: nonzero) outside ``states``, by a loop."""
    S = P.shape[0]
    outside = set(range(S + 1)) - set(int(s) for s in states)
    if sp.issparse(P):
        P = sp.csr_array(P)
        return [sum(int(j) in outside for j in P.indices[P.indptr[s]:P.indptr[s + 1]])
                for s in states]
    return [sum(1 for j in outside if P[s, j] != 0) for s in states]


@pytest.mark.parametrize("seed", range(4))
def test_exit_terms_count_the_entries_leaving_the_block(seed):
    rng = np.random.default_rng(seed)
    S = 12
    P = rng.random((S, S + 1)) * (rng.random((S, S + 1)) < 0.4)
    P[:, S] += 0.1
    P /= P.sum(axis=1, keepdims=True)
    for states in (np.arange(S), np.sort(rng.choice(S, 7, replace=False))):
        expected = _counted(P, states)
        assert explicit._restricted(P, states)[2].tolist() == expected
        assert explicit._restricted(sp.csr_array(P), states)[2].tolist() == expected
    # With every state in the block only the goal entry leaves: exact exit masses.
    assert explicit._restricted(P, np.arange(S))[2].max() == 1


def _slow_pairs(n_pairs, q):
    """Pairs ``(A, B)``: A leaves w.p. 1/2 (goal) or moves to B; B moves to A w.p. ``q``, else stays.

    With unit costs ``V(A) = 1 + V(B)/2`` and ``q V(B) = 1 + q V(A)`` (B's self-loop is
    not a way out), so ``V(A) = 2 + 1/q`` and ``V(B) = V(A) + 1/q``: hitting times near
    ``2/q``. Every row holds two stored entries. Returns the CSR chain and the exact values.
    """
    S = 2 * n_pairs
    a, b = np.arange(0, S, 2), np.arange(1, S, 2)
    rows = np.concatenate([a, a, b, b])
    cols = np.concatenate([np.full(n_pairs, S), b, a, b])
    data = np.concatenate([np.full(2 * n_pairs, 0.5), np.full(n_pairs, q),
                           np.full(n_pairs, 1.0 - q)])
    chain = sp.csr_array((data, (rows, cols)), shape=(S, S + 1))
    chain.sort_indices()
    stay = Fraction(q)
    value_a = 2 + 1 / stay
    return chain, [value_a if s % 2 == 0 else value_a + 1 / stay for s in range(S)]


def test_a_slow_chain_with_exact_exits_is_certified_without_elimination(backend, monkeypatch):
    # Hitting times 2e6 with an exit of 1/2 at the slow states: a slack for exit masses of
    # two terms (the longest row) would be 8 u tau ~ 2e-9 of the values, too wide for 1e-10,
    # but every exit here is a single stored entry, exact, and the monotone bounds certify.
    chain, exact = _slow_pairs(600, 1e-6)
    monkeypatch.setattr(explicit, "_gth", _refuse_elimination)
    ssp = backend.SSP(chain, np.ones((chain.shape[0], 1)))
    values = backend.policy_values(ssp, np.zeros(chain.shape[0], int))
    for v, e in zip(values, exact):
        assert abs(Fraction(v) - e) <= Fraction(CERTIFIED_RTOL) * e


def _refuse_elimination(*args, **kwargs):
    raise AssertionError("the elimination ran")


def _rounded_exit_chain():
    """States 0, 1 transient, 2 outside, goal 3: 0 leaves to the goal w.p. 0.1 and to 2 w.p.
    0.2, whose float64 sum 0.30000000000000004 is not the exact sum of the two stored
    numbers; 1 returns to 0 w.p. 1e-6, else stays."""
    chain = np.zeros((3, 4))
    chain[0, 3], chain[0, 2], chain[0, 1] = 0.1, 0.2, 0.5
    chain[1, 0], chain[1, 1] = 1e-6, 1.0 - 1e-6
    chain[2, 3] = 1.0
    Q, exits, terms = explicit._restricted(sp.csr_array(chain), np.arange(2))
    exact_exits = [Fraction(0.1) + Fraction(0.2), Fraction(0)]
    return (Q.toarray() if sp.issparse(Q) else Q), exits, terms, exact_exits


def test_residual_bound_holds_with_a_rounded_exit():
    # The exact c + Q W - (e + Q 1) W, with e the exact sum of the stored exits, lies in
    # [r - m, r + m]; with the exit taken as exact (one term) it does not: its rounding,
    # 2^-55, times W = 1e6 exceeds the margin of the working-precision residual.
    Q, exits, terms, exact_exits = _rounded_exit_chain()
    assert Fraction(float(exits[0])) != exact_exits[0] and terms.tolist() == [2, 0]
    W = np.full(2, 1e6, dtype=np.longdouble)
    exact_w = [Fraction(*w.as_integer_ratio()) for w in W]

    def contains(chain):
        r, m = chain.residual(W)
        held = []
        for i in range(2):
            d = exact_exits[i] + sum(Fraction(float(Q[i, j])) for j in range(2))
            true = 1 + sum(Fraction(float(Q[i, j])) * exact_w[j] for j in range(2)) \
                - d * exact_w[i]
            lo, hi = (Fraction(*x.as_integer_ratio()) for x in (r[i] - m[i], r[i] + m[i]))
            held.append(lo <= true <= hi)
        return held

    assert contains(monotone.Chain(Q, exits, np.ones(2), terms)) == [True, True]
    assert contains(monotone.Chain(Q, exits, np.ones(2), 1)) == [False, True]
    x, times = explicit._lu_values(Q.copy(), exits, np.ones(2))
    L, U = monotone.bracket(monotone.Chain(Q, exits, np.ones(2), terms), x, times)
    for lo, v, hi in zip(L, _solve_exactly(Q, exact_exits), U):
        assert Fraction(*lo.as_integer_ratio()) <= v <= Fraction(*hi.as_integer_ratio())


@pytest.mark.parametrize("k", [2, 5, 50])
def test_sum_slack_is_needed_when_every_rounding_goes_up(k):
    # 1 and k - 1 terms just above half an ulp of every partial sum (in [1, 2)): each
    # addition rounds up by almost u, so the error nears (k - 1) u, relatively; within
    # sum_slack(k) = 2 (k - 1) u, not within a tenth of it.
    t = 2.0**-53 * (1 + 2.0**-52)
    terms = np.array([1.0] + [t] * (k - 1))
    exact = sum(Fraction(x) for x in terms)
    running = 0.0
    for x in terms:
        running += x
    for total in (running, np.bincount(np.zeros(k, int), weights=terms)[0]):
        error = abs(Fraction(total) - exact)
        assert error <= Fraction(monotone.sum_slack(k)) * Fraction(total)
        assert error > Fraction(monotone.sum_slack(k)) / 10 * Fraction(total)


def _solve_exactly(Q, exits):
    """Unit-cost values of ``(diag(e + Q 1) - Q) V = 1`` over ``Fraction``, by elimination."""
    n = len(exits)
    M = [[-Fraction(float(Q[i, j])) if i != j else exits[i] + sum(
        Fraction(float(q)) for k, q in enumerate(Q[i]) if k != i) for j in range(n)]
        for i in range(n)]
    b = [Fraction(1)] * n
    return solve_fractions(M, b)


@pytest.mark.slow
@pytest.mark.parametrize("branching, seed, random_policy", [(3, 2, False), (10, 1, True)])
def test_sparse_garnets_once_refused_are_certified(backend, monkeypatch, branching, seed,
                                                   random_policy):
    # Two garnets with S = 10^5 whose values the longest-row exit slack refused (the
    # elimination was then refused too, above its entry limit): certified by the monotone
    # bounds, without elimination, and equal to an independent GMRES solve with refinement.
    S = 100_000
    ssp = backend.garnet(S, 4, branching, seed=seed, sparse=True)
    policy = (np.random.default_rng(seed + 10).integers(0, 4, S) if random_policy
              else np.zeros(S, int))
    monkeypatch.setattr(explicit, "_gth", _refuse_elimination)
    values = backend.policy_values(ssp, policy)
    chain = sp.csr_array(ssp.kernel_csr()[np.arange(S) * 4 + policy])
    Q = chain[:, :S].tolil()
    Q.setdiag(0)
    Q = sp.csr_array(Q)
    M = sp.diags_array(np.asarray(chain.sum(axis=1)).ravel() - chain.diagonal()) - Q
    costs = np.asarray(ssp.costs)[np.arange(S), policy]
    x = np.zeros(S)
    for _ in range(4):
        step, info = sla.gmres(M, costs - M @ x, rtol=1e-12, atol=0.0, restart=100, maxiter=50)
        x = x + step
    np.testing.assert_allclose(values, x, rtol=1e-8)
