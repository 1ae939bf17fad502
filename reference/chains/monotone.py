r"""Accuracy of an approximate solution of an absorbing chain, proved by monotone bounds.

From any candidate :math:`\hat V` of :math:`V = c + Q V` (a dense LU, a Krylov
solve) and any candidate :math:`\hat\tau` of the hitting times, build an upper
solution :math:`U` and a lower solution :math:`L` of the chain's Bellman
operator, check both inequalities with a rigorous bound on the rounding of
their own evaluation, and accept :math:`\hat V` where :math:`U - L` is within
the stated relative accuracy. Monotonicity gives :math:`L \le V \le U` whatever
the conditioning of the system (docs/exact-evaluation.md).

The checks run in ``numpy.longdouble`` (:data:`WORKING_ROUNDOFF` is its unit
roundoff, the float64 one where it is no wider): their rounding then costs
almost nothing next to that of the candidate, so that chains whose hitting
times reach :math:`10^5` are certified to ``1e-10``.
"""

import numpy as np
import scipy.sparse as sp

__all__ = []

WORKING_ROUNDOFF = float(np.finfo(np.longdouble).eps) / 2.0
"""Unit roundoff of ``numpy.longdouble``, the precision of the checks (``2**-64`` on x86)."""

DOUBLE_ROUNDOFF = 2.0**-53
"""Unit roundoff of float64, the precision of the chain's summed exit masses."""

SLACK_TRIES = 4
"""Times the slack of a bound is multiplied by 4 after a failed check before giving up."""


class Chain:
    r"""The transient block of a chain in working precision, and its rounding constants.

    Parameters
    ----------
    Q : CSR or ndarray, shape (n, n)
        Off-diagonal block, non-negative (float64, kept exactly; a CSR block
        stores no zeros).
    exits : ndarray of float64, shape (n,)
        Exit mass of each state, each a float64 sum of non-negative stored
        probabilities.
    rhs : ndarray of float64, shape (n,)
        Costs, ``>= 0``.
    exit_terms : int or array_like of int, shape (n,)
        The number of terms of each exit mass, or a bound on all of them
        (``1``: stored as is, exact).
    """

    def __init__(self, Q, exits, rhs, exit_terms):
        work = np.longdouble
        self.Q = Q.astype(work) if sp.issparse(Q) else np.asarray(Q, dtype=work)
        self.gamma = 2.0 * (2 * row_lengths(Q) + 8) * WORKING_ROUNDOFF
        self.exits = np.asarray(exits, dtype=work)
        self.rhs = np.asarray(rhs, dtype=work)
        self.exit_slack = sum_slack(exit_terms)
        self.leave = self.exits + np.asarray(self.Q.sum(axis=1), dtype=work).ravel()

    def residual(self, W, rhs=None):
        r"""``(r, m)``: computed :math:`r = c + Q W - d W` and a bound ``m`` on its error.

        ``W`` is non-negative (working precision, shape ``(n,)``); ``rhs``
        replaces the costs (the hitting times use ones). With :math:`d` the
        exact leaving probabilities (exit masses as exact sums of the stored
        probabilities), the exact :math:`c + Q W - d W` lies in
        ``[r - m, r + m]``.
        """
        rhs = self.rhs if rhs is None else rhs
        flow = self.Q @ W
        stay = self.leave * W
        r = (rhs + flow) - stay
        m = self.gamma * (rhs + flow + stay) + self.exit_slack * self.exits * W
        return r, m


def _upper(chain, x, h, drive, times_gap):
    """An upper solution ``x + t h`` (``t`` from the residual), checked, or ``None``."""
    r, m = drive
    need = np.max((np.maximum(r, 0) + m) / times_gap)
    t = 2.0 * need
    for _ in range(SLACK_TRIES):
        U = x + t * h
        r_U, m_U = chain.residual(U)
        if np.all(r_U + m_U <= 0):
            return U
        t *= 4.0
    return None


def _lower(chain, x, h, drive, times_gap):
    """A lower solution ``max(x - t h, 0)``, checked, or ``None``."""
    r, m = drive
    need = np.max((np.maximum(-r, 0) + m) / times_gap)
    t = 2.0 * need
    for _ in range(SLACK_TRIES):
        L = np.maximum(x - t * h, 0)
        r_L, m_L = chain.residual(L)
        if np.all(r_L - m_L >= 0):
            return L
        t *= 4.0
    return None


def bracket(chain, values, times):
    r"""Checked bounds :math:`L \le V \le U` around a candidate, or ``None``.

    Parameters
    ----------
    chain : Chain
    values, times : ndarray, shape (n,)
        Candidates of :math:`V` (clipped at 0) and of the hitting times
        :math:`\tau` (any precision; finite, ``times > 0``).

    Returns
    -------
    (L, U) : tuple of ndarray of longdouble, shape (n,), or None
        ``None`` when ``times`` is too poor a solution (some state with
        :math:`(M \hat\tau)(s) < 1/2` after rounding) or a check fails after
        :data:`SLACK_TRIES` widenings.

    Notes
    -----
    With :math:`r = c - M\hat V` and :math:`M\hat\tau \ge g > 0`, the vector
    :math:`U = \hat V + t\hat\tau` has :math:`c - M U = r - t M\hat\tau`, which
    is negative once :math:`t g \ge r^+` plus the rounding margin; the slack
    ``t`` is twice that estimate, and :math:`U` is then checked as it is
    stored (its own rounding included). Symmetrically for :math:`L`, clipped
    at zero (0 is a lower solution).
    """
    work = np.longdouble
    x = np.maximum(np.asarray(values, dtype=work), 0)
    h = np.asarray(times, dtype=work)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(h)) and np.all(h > 0)):
        return None
    r_h, m_h = chain.residual(h, np.ones(h.size, dtype=work))
    times_gap = 1 - np.abs(r_h) - m_h
    if not np.all(times_gap >= 0.5):
        return None
    drive = chain.residual(x)
    U = _upper(chain, x, h, drive, times_gap)
    L = None if U is None else _lower(chain, x, h, drive, times_gap)
    return None if L is None else (L, U)


def certified_values(chain, values, times, rtol):
    r"""``values`` rounded to float64 when proved within ``rtol`` of :math:`V`, else ``None``.

    Parameters
    ----------
    chain : Chain
    values, times : ndarray, shape (n,)
        Candidates (float64 or longdouble).
    rtol : float
        Relative accuracy to prove.

    Returns
    -------
    ndarray of float64, shape (n,), or None
        With :math:`(L, U)` from :func:`bracket` and :math:`v` the float64
        rounding of ``values``, returned when for every state

        .. math::

            \max(U - \hat V, \hat V - L) + |v - \hat V| \le \mathrm{rtol} \cdot L,

        so that :math:`|v - V| \le \mathrm{rtol} \cdot V` (as :math:`L \le V \le U`).

    Examples
    --------
    One state leaving w.p. 1/2 at cost 1 has value 2 (and hitting time 2);
    a candidate off by ``1e-6`` is refused:

    >>> import numpy as np
    >>> from reference.chains import monotone
    >>> chain = monotone.Chain(np.zeros((1, 1)), np.array([0.5]), np.array([1.0]), 1)
    >>> monotone.certified_values(chain, np.array([2.0]), np.array([2.0]), 1e-10)
    array([2.])
    >>> monotone.certified_values(chain, np.array([2.000002]), np.array([2.0]), 1e-10) is None
    True
    """
    bounds = bracket(chain, values, times)
    if bounds is None:
        return None
    L, U = bounds
    x = np.maximum(np.asarray(values, dtype=np.longdouble), 0)
    v = x.astype(np.float64)
    error = np.maximum(U - x, x - L) + np.abs(v - x)
    if np.all(error * (1 + 1e-6) <= rtol * L):
        return v
    return None


def row_lengths(Q):
    """Stored entries of each row of ``Q`` (CSR storing no zeros, or dense: its nonzeros).

    Returns
    -------
    ndarray of int64, shape (n,)
        The ``k`` of each row in the rounding bounds of :class:`Chain` and of
        ``reference.chains.explicit._certified``.
    """
    if sp.issparse(Q):
        return np.diff(sp.csr_array(Q).indptr).astype(np.int64)
    return np.count_nonzero(Q, axis=1).astype(np.int64)


def sum_slack(terms):
    r"""Relative error bound of a float64 sum of ``terms`` non-negative numbers.

    In a sum of :math:`k` non-negative numbers computed in any order each term
    passes through at most :math:`k - 1` roundings, so the computed sum
    :math:`\hat e` is within :math:`\gamma_{k-1} e` of the exact one :math:`e`,
    :math:`\gamma_{k-1} = (k-1) u / (1 - (k-1) u)`. Relative to the computed
    sum, :math:`\hat e \ge (1 - \gamma_{k-1}) e` gives

    .. math::

        |\hat e - e| \le \frac{\gamma_{k-1}}{1 - \gamma_{k-1}} \hat e
        \le 2 (k-1) u \, \hat e \quad \text{when } (k-1) u \le 1/4,

    since then :math:`\gamma_{k-1} \le \tfrac43 (k-1) u \le \tfrac13` (any
    :math:`k < 2^{51}`); a single term (or none) is exact.

    Parameters
    ----------
    terms : int or array_like of int

    Returns
    -------
    float or ndarray of float64
        ``2 max(terms - 1, 0) u`` with ``u`` the float64 unit roundoff.

    Examples
    --------
    >>> from reference.chains import monotone
    >>> monotone.sum_slack([0, 1, 3]).tolist() == [0.0, 0.0, 4 * 2.0**-53]
    True
    """
    return 2.0 * np.maximum(np.asarray(terms, dtype=np.int64) - 1, 0) * DOUBLE_ROUNDOFF


def refined_values(chain, values, times, rtol, correct=None, steps=0):
    r""":func:`certified_values` of ``values``, corrected up to ``steps`` times if needed.

    Parameters
    ----------
    chain : Chain
    values, times : ndarray of float64, shape (n,)
        Candidates of :math:`V` and :math:`\tau`.
    rtol : float
    correct : callable or None
        ``correct(r) -> z``: an approximate solution of :math:`M z = r` (float64
        ``(n,)``), ``None`` on failure.
    steps : int

    Returns
    -------
    ndarray of float64, shape (n,), or None

    Notes
    -----
    Each correction adds to the candidate, kept in working precision, the
    solution of its residual computed in working precision: mixed-precision
    iterative refinement, whose answer is then checked like any other.
    """
    x = np.asarray(values, dtype=np.longdouble)
    for step in range(steps + 1):
        answer = certified_values(chain, x, times, rtol)
        if answer is not None or correct is None or step == steps:
            return answer
        z = correct(chain.residual(x)[0].astype(np.float64))
        if z is None or not np.all(np.isfinite(z)):
            return None
        x = x + z
    return None
