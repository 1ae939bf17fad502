"""The most calls a finished run can have made, from its own final guesses.

:func:`run_total` is evaluated in floats (it is a count, not an expression) and
holds on every sample path, so a run above it is a defect of the code.
"""

import math

from ._checks import ParameterError, integer, real
from .calculator import _branching, _refuse_unused

__all__ = ["run_total"]


def run_total(eps, delta, S, A, Gamma, cmin, Delta, alpha=1.0, theta=None, D_hat=None, W=None):
    """The most calls a finished run of Alg. 1 or Alg. 3 can have made, from its final guesses.

    Given the run's own final guesses this holds on every sample path (no
    event needed), so a run above it is a defect, not bad luck. Per pair:

    * Alg. 1 (``theta=None``): SEARCH tops every pair up to
      :math:`\\lceil \\phi(\\Delta, c_{\\min}) \\rceil` at accuracy ``eps``,
      with :math:`\\hat\\Gamma \\le \\Gamma` in :math:`\\phi`.
    * Alg. 3: Alg. 4 doubles a pair's count (1, 2, 4, ...) until the radius
      sum passes the test of its round; every power of two at least
      :math:`N^\\star = \\min\\{N \\ge 3 : 4\\sqrt{\\Gamma L/N} + 28 (S+1) L / N
      \\le \\epsilon / (2W)\\}` passes every round (the left side bounds the
      radius sum and decreases for :math:`N \\ge 3`), so the pair ends with at
      most the first power of two :math:`\\ge N^\\star`. SEARCH then tops it up
      to :math:`\\lceil \\phi(\\Delta, \\max(c_{\\min}, \\nu)) \\rceil` at accuracy
      ``eps / 2``, :math:`\\nu = \\epsilon / (2 \\theta \\hat D)`; the pair keeps
      the larger count.

    The total is ``S * A`` times the per-pair count. It is at most the
    explicit total at the same guesses (``samp_comp(..., bound="explicit1",
    Delta=Delta)`` plus ``S A`` for the rounding, or
    ``samp_comp_theta(..., bound="explicit3", Delta=Delta, W=W,
    D_hat=D_hat, cmin=cmin)``).

    Parameters
    ----------
    eps : float in (0, 1]
        The run's accuracy.
    delta : float in (0, 1)
        The run's confidence level.
    S, A : int >= 1
        Numbers of non-goal states and of actions.
    Gamma : int in [1, S + 1]
        The instance's branching factor.
    cmin : float in [0, 1]
        The minimum cost (``> 0`` for Alg. 1).
    Delta : float >= 1
        The run's final SEARCH guess (``result.Delta_final``).
    alpha : float > 0, default 1.0
        The run's allocation constant.
    theta : float >= 1 or None
        Alg. 3's slack; ``None`` for Alg. 1.
    D_hat : float >= 1, optional
        Alg. 3's diameter estimate (``result.D_hat``); Alg. 3 only.
    W : float >= 1, optional
        Alg. 4's final guess (the ``scale`` of the last ``"diameter"`` round
        of ``result.history``); Alg. 3 only.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        On a value out of its domain, a missing Alg. 3 argument, or ``D_hat``
        or ``W`` given for Alg. 1.

    See Also
    --------
    samp_comp : the explicit totals as a bound.

    Examples
    --------
    One state, one action, ``Delta = 1``, ``c_min = 1``, ``eps = delta = 1/2``:
    :math:`\\phi = 4 \\log 4 + 2 \\log 4 + \\log^2 2 \\approx 8.80` rounds up to 9.

    >>> run_total(0.5, 0.5, 1, 1, 1, 1.0, 1.0)
    9
    """
    eps = real("eps", eps, low=0.0, high=1.0, low_open=True)
    delta = real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    S, A = integer("S", S, 1), integer("A", A, 1)
    Gamma = _branching(S, integer("Gamma", Gamma, 1))
    alpha = real("alpha", alpha, low=0.0, low_open=True)
    Delta = real("Delta", Delta, low=1.0)
    if theta is None:
        _refuse_unused("Alg. 1 (theta=None)", D_hat=D_hat, W=W)
        cmin = real("cmin", cmin, low=0.0, high=1.0, low_open=True)
        return S * A * _ceil(_phi(Delta, cmin, eps, delta, S, A, Gamma, alpha))
    theta = real("theta", theta, low=1.0)
    cmin = real("cmin", cmin, low=0.0, high=1.0)
    for name, value in (("D_hat", D_hat), ("W", W)):
        if value is None:
            raise ParameterError(f"`{name}` is needed for Alg. 3 (theta given); got None.")
    D_hat, W = real("D_hat", D_hat, low=1.0), real("W", W, low=1.0)
    floor = max(cmin, eps / (2.0 * theta * D_hat))
    search = _ceil(_phi(Delta, floor, eps / 2.0, delta, S, A, Gamma, alpha))
    return S * A * max(_diameter_count(eps / (2.0 * W), delta, S, A, Gamma), search)


def _phi(X, y, eps, delta, S, A, Gamma, alpha):
    """The allocation function of eq. 6 in floats; a value beyond the float range is refused."""
    try:
        l1 = math.log(X * S * A / (y * eps * delta))
        l2 = math.log(X * S * A / (y * delta))
        value = alpha * (X**3 * Gamma / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                         + X**2 * Gamma / y**2 * l2**2)
    except (OverflowError, ZeroDivisionError):
        value = math.inf
    if not math.isfinite(value):
        raise ParameterError(
            f"run_total: the allocation function leaves the float range at Delta = {X:g}, "
            f"floor {y:g}, eps = {eps:g}; no run can make that many calls."
        )
    return value


def _ceil(value):
    """``ceil`` with a relative margin of ``1e-12`` against rounding in the run's own ``phi``."""
    return math.ceil(value * (1.0 + 1e-12))


def _diameter_count(target, delta, S, A, Gamma):
    """The first power of two at least ``N* = min{N >= 3 : radius bound(N) <= target}``."""

    def passes(N):
        L = math.log(S * A * N / delta)
        return (4.0 * math.sqrt(Gamma * L / N) + 28.0 * (S + 1) * L / N) * (1.0 + 1e-12) <= target

    low, high = 2, 3
    while not passes(high):
        if high > 2**64:
            raise ParameterError(f"run_total: the diameter subroutine's accuracy {target:.3g} "
                                 "needs more samples per pair than any run can count.")
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if passes(middle) else (middle, high)
    return 1 << (high - 1).bit_length()
