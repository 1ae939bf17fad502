"""Exact evaluation at scale: monotone bounds, their rounding margins, the counted fill-in.

Ground truth: closed forms derived here, Gaussian elimination over
``fractions.Fraction`` on small random chains, and scipy's sparse LU on the large ones.
"""

import re
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import lu_factor, lu_solve

from rational import solve_fractions
from reference import chains, garnet
from reference.chains import explicit, fill, monotone


def _ring(n, p):
    """States ``0 -> 1 -> ... -> n-1`` surely, then the goal w.p. ``p``, else back to 0.

    The chain as stored: state ``n-1`` leaves w.p. ``d = p + q`` with ``q = fl(1 - p)``, not
    exactly 1. With unit costs, ``d V(n-1) = 1 + q V(0)`` and ``V(0) = (n-1) + V(n-1)``, so
    ``V(n-1) = (1 + (n-1) q) / p`` and ``V(s) = (n-1-s) + V(n-1)``: about ``n / p``.
    Returns ``Q`` (dense, no diagonal), the exits and the exact values (``Fraction``).
    """
    Q, exits = np.zeros((n, n)), np.zeros(n)
    Q[np.arange(n - 1), np.arange(1, n)] = 1.0
    Q[n - 1, 0], exits[n - 1] = 1.0 - p, p
    stay = Fraction(1.0 - p)
    last = (1 + (n - 1) * stay) / Fraction(p)
    return Q, exits, [Fraction(n - 1 - s) + last for s in range(n)]


def _fraction(x):
    return Fraction(*np.longdouble(x).as_integer_ratio())


def _exact(Q, exits, costs):
    """Exact solution over ``Fraction`` of ``d V - Q V = c`` with ``d = exits + Q 1``."""
    n = costs.size
    M = [[-Fraction(float(Q[i, j])) if i != j else Fraction(0) for j in range(n)]
         for i in range(n)]
    for i in range(n):
        M[i][i] = Fraction(float(exits[i])) + sum(Fraction(float(q)) for q in Q[i])
    b = [Fraction(float(c)) for c in costs]
    return solve_fractions(M, b)


@st.composite
def _chains(draw):
    """Small transient chains: ``Q`` with 1-3 entries a row, exits somewhere, costs > 0."""
    n = draw(st.integers(2, 7))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = 10.0 ** draw(st.integers(-6, 0))
    Q, exits = np.zeros((n, n)), np.zeros(n)
    for s in range(n):
        targets = rng.choice([t for t in range(n) if t != s], size=min(n - 1, 3), replace=False)
        Q[s, targets] = rng.dirichlet(np.ones(targets.size))
    exits[n - 1] = scale
    Q[n - 1] *= 1.0 - scale
    Q[np.arange(n - 1), np.arange(1, n)] += 1e-3
    costs = rng.uniform(0.1, 1.0, n)
    return Q, exits, costs


def _candidates(Q, exits, costs):
    return explicit._lu_values(Q.copy(), exits, costs)


def test_bounds_bracket_the_slow_ring_and_refinement_certifies_it():
    # p(goal) = 1e-7: values near 2e7, hitting times near 2e7. The float64 LU answer is
    # bracketed but too widely; one correction from its extended-precision residual
    # certifies it, within 1e-10 of the closed form. The residual certificate proves nothing.
    Q, exits, exact = _ring(2, 1e-7)
    costs = np.ones(2)
    x, times = _candidates(Q, exits, costs)
    assert not explicit._certified(Q, exits, costs, x, times).any()
    chain = monotone.Chain(Q, exits, costs, 2)
    L, U = monotone.bracket(chain, x, times)
    for lo, v, hi in zip(L, exact, U):
        assert _fraction(lo) <= v <= _fraction(hi)
    assert monotone.certified_values(chain, x, times, chains.CERTIFIED_RTOL) is None
    factor = lu_factor(np.diag(exits + Q.sum(axis=1)) - Q)
    values = monotone.refined_values(chain, x, times, chains.CERTIFIED_RTOL,
                                     lambda r: lu_solve(factor, r), 2)
    assert values is not None
    for v, e in zip(values, exact):
        assert abs(Fraction(v) - e) <= Fraction(chains.CERTIFIED_RTOL) * e


@pytest.mark.parametrize("n, p", [(2, 1e-7), (50, 1e-7), (400, 1e-6)])
def test_policy_values_of_slow_rings_match_the_closed_form(backend, n, p):
    Q, exits, exact = _ring(n, p)
    P = np.zeros((n, 1, n + 1))
    P[:, 0, :n], P[:, 0, n] = Q, exits
    for ssp in (backend.SSP(P, np.ones((n, 1))),
                backend.SSP(sp.csr_array(P[:, 0]), np.ones((n, 1)))):
        values = backend.policy_values(ssp, np.zeros(n, int))
        for v, e in zip(values, exact):
            assert abs(Fraction(v) - e) <= Fraction(chains.CERTIFIED_RTOL) * e


@settings(max_examples=60, deadline=None)
@given(chain=_chains(), shift=st.floats(-1e-3, 1e-3), along=st.booleans())
def test_bounds_stay_sound_around_a_wrong_candidate(chain, shift, along):
    # A candidate shifted (uniformly, or along the hitting times) is either refused or
    # bracketed correctly: L <= V <= U in exact arithmetic, and nothing it certifies is
    # further than CERTIFIED_RTOL from the exact values.
    Q, exits, costs = chain
    exact = _exact(Q, exits, costs)
    x, times = _candidates(Q, exits, costs)
    wrong = x + shift * (times if along else x)
    model = monotone.Chain(Q, exits, costs, 1)
    bounds = monotone.bracket(model, wrong, times)
    if bounds is not None:
        for lo, v, hi in zip(bounds[0], exact, bounds[1]):
            assert _fraction(lo) <= v <= _fraction(hi)
    values = monotone.certified_values(model, wrong, times, chains.CERTIFIED_RTOL)
    if values is not None:
        for v, e in zip(values, exact):
            assert abs(Fraction(v) - e) <= Fraction(chains.CERTIFIED_RTOL) * e
        assert abs(shift) < 1e-10


@settings(max_examples=60, deadline=None)
@given(chain=_chains(), relative=st.sampled_from([1e-12, 1e-9, 1e-6]))
def test_the_checks_refuse_every_vector_on_the_wrong_side(chain, relative):
    # Just below the exact values the upper check must fail (c + Q W <= d W would prove
    # W >= V), just above them the lower one; far enough above, the upper check passes.
    Q, exits, costs = chain
    exact = _exact(Q, exits, costs)
    model = monotone.Chain(Q, exits, costs, 1)
    below = np.array([np.longdouble(float(v * (1 - Fraction(relative)))) for v in exact])
    above = np.array([np.longdouble(float(v * (1 + Fraction(relative)))) for v in exact])
    r, m = model.residual(below)
    assert not np.all(r + m <= 0)
    r, m = model.residual(above)
    assert not np.all(r - m >= 0)
    if relative == 1e-6:
        big = np.array([np.longdouble(float(v * (1 + Fraction(1, 100)))) for v in exact])
        r, m = model.residual(big)
        assert np.all(r + m <= 0)


def test_a_slow_garnet_is_certified_without_elimination(backend, monkeypatch):
    # garnet(3000, 4, 5, seed 0), all-0 policy: largest hitting time 1.7e5. The residual
    # certificate proves no state; the monotone bounds prove all from the BiCGSTAB answer,
    # which agrees with an independent dense LAPACK solve.
    S = 3000
    ssp = backend.garnet(S, 4, 5, seed=0, sparse=True)
    chain = ssp.kernel_csr()[np.arange(S) * 4].toarray()
    costs = np.asarray(ssp.costs)[:, 0]
    M = np.eye(S) - chain[:, :S]
    times = scipy.linalg.solve(M, np.ones(S))
    assert times.max() > 1e5
    seen = []
    certified = explicit._certified
    monkeypatch.setattr(explicit, "_certified",
                        lambda *a: seen.append(certified(*a).sum()) or certified(*a))
    monkeypatch.setattr(explicit, "_gth", _refuse_elimination)
    values = backend.policy_values(ssp, np.zeros(S, int))
    assert seen == [0]
    np.testing.assert_allclose(values, scipy.linalg.solve(M, costs), rtol=1e-9)


def _refuse_elimination(*args, **kwargs):
    raise AssertionError("the elimination ran")


def _with_trap(S, seed):
    """A garnet's all-0 chain (states ``0..S-1``), five feeders and a closed costly pair.

    Feeder ``S + i`` moves to garnet state ``i`` or to the trap (states ``S+5, S+6``, which
    swap surely), w.p. 1/2 each. Returns the CSR chain ``(S+7, S+8)`` and the costs.
    """
    base = garnet(S, 1, 5, seed=seed, sparse=True).kernel_csr().toarray()
    n = S + 7
    P = np.zeros((n, n + 1))
    P[:S, :S], P[:S, n] = base[:, :S], base[:, S]
    for i in range(5):
        P[S + i, i] = P[S + i, S + 5] = 0.5
    P[S + 5, S + 6] = P[S + 6, S + 5] = 1.0
    return sp.csr_array(P), np.full(n, 0.5)


def _reaches(P, targets):
    """States with a path into ``targets`` (breadth-first search on the reversed graph)."""
    reverse = sp.csr_array(P[:, :P.shape[0]].T)
    seen = set(int(t) for t in targets)
    todo = list(seen)
    while todo:
        t = todo.pop()
        for s in reverse.indices[reverse.indptr[t]:reverse.indptr[t + 1]]:
            if int(s) not in seen:
                seen.add(int(s))
                todo.append(int(s))
    return np.isin(np.arange(P.shape[0]), list(seen))


def test_infinite_states_are_kept_on_the_monotone_path(backend, monkeypatch):
    # The feeders and the trap are infinite; the others are solved on the monotone path
    # alone (the residual certificate and the elimination disabled).
    S = 1500
    P, costs = _with_trap(S, seed=2)
    infinite = _reaches(P, [S + 5, S + 6])
    finite = np.flatnonzero(~infinite)
    assert infinite.sum() == 7 and finite.size >= explicit.ITERATIVE_MIN_STATES
    M = sp.diags_array(P[finite].sum(axis=1)) - P[finite][:, finite]
    expected = sla.spsolve(sp.csc_array(M), costs[finite])
    monkeypatch.setattr(explicit, "_certified", lambda Q, *a: np.zeros(Q.shape[0], bool))
    monkeypatch.setattr(explicit, "_gth", _refuse_elimination)
    ssp = backend.SSP(P, costs.reshape(-1, 1), require_proper=False)
    values = backend.policy_values(ssp, np.zeros(S + 7, int))
    np.testing.assert_array_equal(np.isinf(values), infinite)
    np.testing.assert_allclose(values[finite], expected, rtol=1e-9)


def test_round_entries_bound_the_fill_in():
    # The count of a round (nnz plus in-degree times out-degree of each eliminated state)
    # is at least the stored entries of the Schur complement the round makes.
    rng = np.random.default_rng(0)
    for n in (50, 400):
        Q = sp.random_array((n, n), density=4.0 / n, random_state=rng, format="csr")
        Q = explicit._without_diagonal(sp.csr_array(Q))
        pick = np.flatnonzero(explicit._independent_set(Q, np.arange(n)))
        rest = np.setdiff1d(np.arange(n), pick)
        after = Q[rest][:, rest] + Q[rest][:, pick] @ Q[pick][:, rest]
        assert explicit._without_diagonal(sp.csr_array(after)).nnz <= fill.round_entries(Q, pick)
        assert pick.size > 0


def test_a_too_large_elimination_is_refused_before_its_round(backend, monkeypatch):
    # No certified solve (CERTIFIED_RTOL = 0) and a small entry limit: refused with the count,
    # before the round is made.
    S = 1200
    ssp = backend.garnet(S, 2, 5, seed=1, sparse=True)
    monkeypatch.setattr(explicit, "CERTIFIED_RTOL", 0.0)
    monkeypatch.setattr(fill, "ELIMINATION_MAX_ENTRIES", 5_000)
    rounds = []
    independent = explicit._independent_set
    monkeypatch.setattr(explicit, "_independent_set",
                        lambda *a: rounds.append(1) or independent(*a))
    with pytest.raises(backend.ConvergenceError, match="ELIMINATION_MAX_ENTRIES") as info:
        backend.policy_values(ssp, np.zeros(S, int))
    entries = int(re.search(r"([\d,]+) stored entries", str(info.value))[1].replace(",", ""))
    assert entries > 5_000
    assert "GiB" in str(info.value) and rounds == [1]


def test_a_memory_error_becomes_a_convergence_error(backend, monkeypatch):
    def exhausted(*args):
        raise MemoryError

    ssp = backend.garnet(200, 2, 3, seed=0)
    monkeypatch.setattr(explicit, "CERTIFIED_RTOL", 0.0)
    monkeypatch.setattr(explicit, "_gth", exhausted)
    with pytest.raises(backend.ConvergenceError, match="ran out of memory"):
        backend.policy_values(ssp, np.zeros(200, int))
