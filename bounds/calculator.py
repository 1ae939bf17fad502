"""Numbers in, numbers out: the bounds evaluated at given parameters.

Every calculator takes the parameters as keyword arguments. A parameter left
as ``None`` stays symbolic: the result is a float when every symbol of the
bound is given, and a sympy expression in the missing symbols otherwise
(``samp_comp(0.1, 10, 0.5)`` is an expression in ``S, A, Gamma``). Given
numbers are checked as in the rest of the project and enter the expression
as exact rationals (``0.1`` becomes ``1/10``).
"""

from functools import partial
import math
import numbers
import sys

import mpmath
import sympy as sp

from ._checks import ParameterError, exact_params, integer, real
from .expressions import BOUNDS, D_HAT_UPPER, NU, final_delta, perturbed_range
from .symbols import SYMBOLS

__all__ = [
    "samp_comp",
    "samp_comp_theta",
    "samp_comp_diameter",
    "samp_comp_lower",
    "accuracy_for_budget",
    "run_total",
]

CMIN_KEYS = ("thm1", "eq4", "explicit1")
THETA_KEYS = ("thm2", "eq5", "explicit3")
DIAMETER_KEYS = ("lemma9", "explicit4")
VARIANTS = ("proved", "printed")


def samp_comp(
    eps, B, cmin, S=None, A=None, Gamma=None, delta=None, alpha=None, Delta=None,
    bound="thm1", terms=False,
):
    """Sample complexity of Alg. 1 (``c_min > 0``).

    Parameters
    ----------
    eps : float in (0, 1] or None
        Accuracy.
    B : float >= cmin or None
        Range of the optimal values :math:`B_\\star`. For ``"explicit1"`` it
        bounds the final guess (:func:`~bounds.expressions.final_delta`);
        give it or ``Delta``, not both.
    cmin : float in (0, 1] or None
        Minimum cost.
    S, A : int >= 1 or None
        Numbers of non-goal states and of actions.
    Gamma : int in [1, S + 1] or None
        Branching factor.
    delta : float in (0, 1) or None
        Confidence level (``"explicit1"`` only: the O~ bounds hide it).
    alpha : float > 0, optional
        Constant of the allocation function (``"explicit1"`` only; default 1).
    Delta : float >= 1, optional
        SEARCH's final guess, for ``"explicit1"`` (e.g. a finished run's);
        replaces ``B``.
    bound : {"thm1", "eq4", "explicit1"}, optional
        Thm. 1 (default), eq. 4 (simulation lemma) or the explicit total
        :math:`S A \\, \\phi(\\Delta, c_{\\min})`.
    terms : bool, optional
        Return the tuple of the terms' values instead of their sum.

    Returns
    -------
    float, sympy.Expr, or a tuple of them (``terms=True``)

    Raises
    ------
    ParameterError
        On a value out of its domain, or an argument the bound does not use.

    Examples
    --------
    Thm. 1 at ``eps = 0.1, B = 10, c_min = 0.5, S = 20, A = 4, Gamma = 3``:
    :math:`10^3 \\cdot 3 \\cdot 20 \\cdot 4 / (0.5 \\cdot 0.01)`,
    :math:`10^2 \\cdot 20^2 \\cdot 4 / (0.5 \\cdot 0.1)` and
    :math:`10^2 \\cdot 3 \\cdot 20 \\cdot 4 / 0.25`:

    >>> samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3, terms=True)
    (48000000.0, 3200000.0, 96000.0)
    >>> samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3)
    51296000.0
    >>> samp_comp(0.1, 10, 0.5)
    200400*A*Gamma*S + 2000*A*S**2
    """
    key = _choose(bound, CMIN_KEYS)
    explicit = key == "explicit1"
    if not explicit:
        _refuse_unused(f"bound {key!r}", delta=delta, alpha=alpha, Delta=Delta)
    values = _common(eps=eps, S=S, A=A, Gamma=Gamma, delta=delta, alpha=alpha)
    values["cmin"] = _real("cmin", cmin, low=0.0, high=1.0, low_open=True)
    values["B"] = _real("B", B, low=0.0, low_open=True)
    if values["B"] is not None and values["cmin"] is not None and values["B"] < values["cmin"]:
        raise ParameterError(
            f"`B` must be >= `cmin` = {values['cmin']:g} (every step costs at least cmin); "
            f"got {B!r}."
        )
    subs = _substitutions(values)
    if explicit:
        source = SYMBOLS["B"] if values["B"] is None else values["B"]
        subs[SYMBOLS["Delta"]] = _guess("Delta", Delta, "B", B is not None, source)
    return _evaluate(key, subs, terms)


def samp_comp_theta(
    eps, theta, D, B=None, S=None, A=None, Gamma=None, delta=None, alpha=None, cmin=None,
    D_hat=None, W=None, Delta=None, variant=None, bound="thm2", terms=False,
):
    """Sample complexity of Alg. 3 (any ``c_min``, slack ``theta >= 1``).

    Parameters
    ----------
    eps : float in (0, 1] or None
    theta : float >= 1 or None
        Slack parameter.
    D : float >= 1 or None
        SSP-diameter.
    B : float in [0, D] or None
        Range of the optimal values :math:`B_\\star`; 0 is allowed (zero-cost
        problems). ``"explicit3"`` uses it only with ``cmin > 0``
        (:func:`~bounds.expressions.perturbed_range`), and not with ``Delta``.
    S, A, Gamma : as in :func:`samp_comp`
    delta, alpha : as in :func:`samp_comp` (``"explicit3"`` only)
    cmin : float in [0, 1], optional
        Minimum cost, for ``"explicit3"``: SEARCH's cost floor is
        :math:`\\max(c_{\\min}, \\nu)`. Default 0.
    D_hat : float >= max(1, D), optional
        The diameter estimate, for ``"explicit3"``. Default: Lemma 9's upper
        bound :math:`(1 + 2\\epsilon(1+\\epsilon))(1+\\epsilon) D`.
    W : float >= 1, optional
        Alg. 4's final guess, for ``"explicit3"``; default
        :func:`~bounds.expressions.final_delta` of ``D``.
    Delta : float >= 1, optional
        SEARCH's final guess, for ``"explicit3"``; default ``final_delta`` of
        :func:`~bounds.expressions.perturbed_range`.
    variant : {"proved", "printed"}, optional
        For ``"thm2"`` only: the bound as App. E proves it (default) or as the
        paper prints it (docs/semantics.md, "Errata", 4).
    bound : {"thm2", "eq5", "explicit3"}, optional
        Thm. 2 (default), eq. 5 or the explicit total of Alg. 3
        (:data:`~bounds.expressions.EXPLICIT_THETA`).
    terms : bool, optional

    Returns
    -------
    float, sympy.Expr, or a tuple of them (``terms=True``)

    Raises
    ------
    ParameterError
        On a value out of its domain (``B > D``, ``D_hat < D``, ...) or an
        argument the bound does not use.

    Examples
    --------
    Thm. 2 as printed, at ``theta = 5, D = 12, B = 10``: :math:`1.44 \\cdot 10^{10}
    + 9.6 \\cdot 10^7 + 8.64 \\cdot 10^9`; as proved the middle term is ten times larger and
    Lemma 9's :math:`3.456 \\cdot 10^6 + 1.92 \\cdot 10^5` join:

    >>> samp_comp_theta(0.1, 5, 12, 10, S=20, A=4, Gamma=3, variant="printed")
    23136000000.0
    >>> samp_comp_theta(0.1, 5, 12, 10, S=20, A=4, Gamma=3)
    24003648000.0
    """
    key = _choose(bound, THETA_KEYS)
    explicit = key == "explicit3"
    if variant is not None and key != "thm2":
        raise ParameterError(f"`variant` applies to bound 'thm2' only; got bound {bound!r}.")
    if key == "thm2":
        if variant not in (None, *VARIANTS):
            raise ParameterError(f"`variant` must be one of {VARIANTS}; got {variant!r}.")
        key = "thm2" if variant == "printed" else "thm2_proved"
    if not explicit:
        _refuse_unused(f"bound {bound!r}", delta=delta, alpha=alpha, cmin=cmin, D_hat=D_hat,
                       W=W, Delta=Delta)
    values = _common(eps=eps, S=S, A=A, Gamma=Gamma, delta=delta, alpha=alpha)
    values["theta"] = _real("theta", theta, low=1.0)
    values["D"] = _real("D", D, low=1.0)
    values["B"] = _real("B", B, low=0.0)
    if values["B"] is not None and values["D"] is not None and values["B"] > values["D"]:
        raise ParameterError(
            f"`B` must be <= `D` = {values['D']:g} (B* <= D, costs lie in [0, 1]); got {B!r}."
        )
    subs = _substitutions(values)
    if explicit:
        subs.update(_alg3_substitutions(values, subs, B, cmin, D_hat, W, Delta))
    return _evaluate(key, subs, terms)


def _alg3_substitutions(values, subs, B, cmin, D_hat, W, Delta):
    """``cmin``, ``D_hat``, ``W`` and ``Delta`` of Alg. 3's explicit total."""
    cmin = 0.0 if cmin is None else real("cmin", cmin, low=0.0, high=1.0)
    out = {SYMBOLS["cmin"]: _exact(cmin)}
    D_sym = subs.get(SYMBOLS["D"], SYMBOLS["D"])
    if D_hat is None:
        out[SYMBOLS["D_hat"]] = D_HAT_UPPER.subs(subs)
    else:
        D_hat = real("D_hat", D_hat, low=1.0)
        if values["D"] is not None and D_hat < values["D"]:
            raise ParameterError(
                f"`D_hat` must be >= `D` = {values['D']:g} (Lemma 9: D <= D_hat); got {D_hat!r}."
            )
        out[SYMBOLS["D_hat"]] = _exact(D_hat)
    out[SYMBOLS["W"]] = _guess("W", W, "D", values["D"] is not None, D_sym, exclusive=False)
    if cmin == 0.0 and B is not None:
        raise ParameterError(
            "`B` does not bound SEARCH's range inside Alg. 3 when `cmin` = 0: the perturbed "
            "costs max(c, nu) can exceed B* (docs/semantics.md, \"Errata\", 4); omit it "
            "(D bounds the range) or give `cmin` > 0."
        )
    if cmin > 0.0 and values["B"] is not None and values["B"] < cmin:
        raise ParameterError(f"`B` must be >= `cmin` = {cmin:g}; got {B!r}.")
    nu = NU.subs({**subs, **out})
    if cmin > 0.0:
        B_sym = subs.get(SYMBOLS["B"], SYMBOLS["B"])
        bound = perturbed_range(D_sym, B_sym, _exact(cmin), nu)
        out[SYMBOLS["Delta"]] = _guess("Delta", Delta, "B", B is not None, bound)
    else:
        out[SYMBOLS["Delta"]] = _guess("Delta", Delta, "D", values["D"] is not None, D_sym,
                                       exclusive=False)
    return out


def samp_comp_diameter(eps, D, S=None, A=None, Gamma=None, delta=None, W=None,
                       bound="lemma9", terms=False):
    """Samples of the diameter subroutine (Alg. 4): Lemma 9 or the explicit total.

    Parameters
    ----------
    eps : float in (0, 1] or None
    D : float >= 1 or None
        SSP-diameter (for ``"explicit4"``: bounds the final guess; give it or
        ``W``, not both).
    S, A, Gamma : as in :func:`samp_comp`
    delta : float in (0, 1) or None
        Confidence level (``"explicit4"`` only).
    W : float >= 1, optional
        Alg. 4's final guess, for ``"explicit4"``; replaces ``D``.
    bound : {"lemma9", "explicit4"}, optional
        Lemma 9's :math:`\\tilde O` bound (default) or the explicit total
        :data:`~bounds.expressions.EXPLICIT_DIAMETER`.
    terms : bool, optional

    Returns
    -------
    float, sympy.Expr, or a tuple of them

    Examples
    --------
    Lemma 9's terms are :math:`D^2 \\Gamma S A / \\epsilon^2` and
    :math:`D S^2 A / \\epsilon`: 192 and 72 at ``eps = 0.5``, ``D = 2``,
    ``S = 3``, ``A = Gamma = 2``.

    >>> samp_comp_diameter(0.5, 2, S=3, A=2, Gamma=2, terms=True)
    (192.0, 72.0)
    >>> samp_comp_diameter(0.5, 2, S=3, A=2, Gamma=2)
    264.0
    """
    key = _choose(bound, DIAMETER_KEYS)
    explicit = key == "explicit4"
    if not explicit:
        _refuse_unused(f"bound {key!r}", delta=delta, W=W)
    values = _common(eps=eps, S=S, A=A, Gamma=Gamma, delta=delta)
    values["D"] = _real("D", D, low=1.0)
    subs = _substitutions(values)
    if explicit:
        subs.pop(SYMBOLS["D"], None)
        source = SYMBOLS["D"] if values["D"] is None else values["D"]
        subs[SYMBOLS["W"]] = _guess("W", W, "D", D is not None, source)
    return _evaluate(key, subs, terms)


def samp_comp_lower(eps, B, S=None, A=None, terms=False):
    """The unit-cost lower bound :math:`\\Omega(S A B^3 / \\epsilon^2)` (Sec. 5).

    Parameters
    ----------
    eps : float in (0, 1] or None
    B : float >= 1 or None
        With unit costs :math:`B_\\star \\ge 1`.
    S, A : int >= 1 or None
    terms : bool, optional

    Returns
    -------
    float, sympy.Expr, or a tuple of them

    Examples
    --------
    :math:`S A B^3 / \\epsilon^2 = 20 \\cdot 4 \\cdot 10^3 / 0.1^2`:

    >>> samp_comp_lower(0.1, 10, S=20, A=4)
    8000000.0
    """
    values = _common(eps=eps, S=S, A=A)
    values["B"] = _real("B", B, low=1.0)
    return _evaluate("lower", _substitutions(values), terms)


_CALCULATORS = {
    **{key: partial(samp_comp, bound=key) for key in CMIN_KEYS},
    **{key: partial(samp_comp_theta, bound=key) for key in THETA_KEYS},
    **{key: partial(samp_comp_diameter, bound=key) for key in DIAMETER_KEYS},
    "lower": samp_comp_lower,
}

_PRECISION = 40
"""Decimal digits of the arbitrary-precision evaluation in :func:`accuracy_for_budget`."""

_FINE_POINTS = 129
"""Grid points over ``eps`` in ``[1/16, 1]``, where a total can fail to decrease."""

_TOLERANCE = 1e-14
"""Relative width in ``eps`` at which :func:`accuracy_for_budget` stops bisecting."""


def accuracy_for_budget(n, bound="thm1", **params):
    """The smallest accuracy a bound certifies for a budget of ``n`` calls.

    .. math::
        \\epsilon(n) = \\min\\{\\epsilon \\in (0, 1] : N(\\epsilon) \\le n\\}

    where :math:`N` is the bound's total. Every parameter other than ``eps``
    must be given. The total is evaluated in 40-digit arithmetic (no overflow
    at any budget a float can hold) as a function of :math:`\\log\\epsilon`
    over the whole domain :math:`(0, 1]`: down from ``eps = 1`` by halving
    until the total exceeds ``n`` and grows as ``eps`` shrinks (every total
    grows as a power of :math:`1/\\epsilon`), with a finer grid on
    ``[1/16, 1]`` where a total can rise with ``eps`` (``"explicit3"`` with the
    default ``D_hat``, which grows with ``eps``). The first grid point with
    :math:`N \\le n` and the point before it bracket the answer, which
    bisection narrows to a relative width of ``1e-14``. The result is the
    bracket's upper end, so :math:`N(\\epsilon(n)) \\le n`; where the total
    is continuous (every total except ``"explicit3"`` with ``cmin > 0``,
    whose default ``Delta`` is a power of two that depends on ``eps``
    through :math:`\\nu`), :math:`N(\\epsilon(n)) = n` to about ``1e-13``.

    Parameters
    ----------
    n : float > 0
        Budget (number of calls to the generative model).
    bound : str, optional
        ``"thm1"`` (default), ``"eq4"``, ``"explicit1"``, ``"thm2"``,
        ``"eq5"``, ``"explicit3"``, ``"lemma9"``, ``"explicit4"`` or
        ``"lower"``.
    **params
        The other arguments of the matching calculator (:func:`samp_comp`,
        :func:`samp_comp_theta`, :func:`samp_comp_diameter` or
        :func:`samp_comp_lower`), all given (``variant`` too for ``"thm2"``).

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If a parameter is missing, unused or out of range, or if no ``eps`` in
        ``(0, 1]`` needs at most ``n`` calls.

    Examples
    --------
    The lower bound :math:`S A B^3 / \\epsilon^2` inverts by hand:
    :math:`\\epsilon = \\sqrt{20 \\cdot 4 \\cdot 10^3 / 10^8}`.

    >>> round(accuracy_for_budget(1e8, bound="lower", B=10, S=20, A=4), 12)
    0.028284271247
    """
    n = real("n", n, low=0.0, low_open=True)
    if bound not in _CALCULATORS:
        raise ParameterError(f"`bound` must be one of {tuple(_CALCULATORS)}; got {bound!r}.")
    for name in ("eps", "terms", "bound"):
        if name in params:
            raise ParameterError(f"`{name}` is not a parameter of accuracy_for_budget's **params.")
    params = exact_params(f"bound {bound!r}", _CALCULATORS[bound], params, but=("eps",))
    expr = _CALCULATORS[bound](eps=None, **params)
    eps = SYMBOLS["eps"]
    missing = expr.free_symbols - {eps}
    if missing:
        names = ", ".join(sorted(str(s) for s in missing))
        raise ParameterError(
            f"accuracy_for_budget needs every parameter but `eps`; missing {names}."
        )
    total = sp.lambdify(eps, expr, "mpmath")
    with mpmath.workdps(_PRECISION):
        log_n = mpmath.log(n)

        def excess(t):
            return mpmath.log(total(mpmath.exp(t))) - log_n

        points = _search_grid(excess)
        first = next((i for i, (_, g) in enumerate(points) if g <= 0), None)
        if first is None:
            smallest = mpmath.exp(min(g for _, g in points) + log_n)
            raise ParameterError(
                f"`n` = {n:g} calls is below bound {bound!r} for every eps in (0, 1] "
                f"(its smallest value is {mpmath.nstr(smallest, 6)}): no eps is certified."
            )
        if first == 0:
            return float(mpmath.exp(points[0][0]))
        low, high = points[first - 1][0], points[first][0]
        while high - low > _TOLERANCE:
            middle = (low + high) / 2
            if excess(middle) <= 0:
                high = middle
            else:
                low = middle
        return float(mpmath.exp(high))


def _search_grid(excess):
    """``(log eps, excess)`` on a grid of ``(0, 1]`` in increasing ``eps``.

    Halving from ``eps = 1`` stops at the first point where the total exceeds
    the budget and is larger than at the point above (so it keeps growing as
    ``eps`` shrinks); the fine grid covers ``[1/16, 1]``.
    """
    step = mpmath.log(2)
    coarse = [(mpmath.mpf(0), excess(mpmath.mpf(0)))]
    while not (coarse[-1][1] > 0 and len(coarse) > 1 and coarse[-1][1] > coarse[-2][1]):
        t = coarse[-1][0] - step
        coarse.append((t, excess(t)))
    fine = [(t, excess(t)) for t in mpmath.linspace(-4 * step, 0, _FINE_POINTS)]
    lowest = coarse[-1][0]
    return sorted(coarse + [p for p in fine if p[0] > lowest], key=lambda p: p[0])


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
    """The allocation function of eq. 6 as a run computes it: in floats, or at 30 digits where
    a denominator is not a normal float or a term overflows; refused where ``phi`` does."""
    try:
        if min(y * eps * delta, y * delta, y * eps**2, y * eps, y**2) >= sys.float_info.min:
            l1 = math.log(X * S * A / (y * eps * delta))
            l2 = math.log(X * S * A / (y * delta))
            value = alpha * (X**3 * Gamma / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                             + X**2 * Gamma / y**2 * l2**2)
            if math.isfinite(value):
                return value
    except OverflowError:
        pass
    with mpmath.workdps(30):
        X, y, eps, delta, alpha = (mpmath.mpf(v) for v in (X, y, eps, delta, alpha))
        l1, l2 = mpmath.log(X * S * A / (y * eps * delta)), mpmath.log(X * S * A / (y * delta))
        value = float(alpha * (X**3 * Gamma / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                               + X**2 * Gamma / y**2 * l2**2))
    if not math.isfinite(value):
        raise ParameterError("the allocation phi overflows float64: more samples per pair than "
                             "any run can count; use a larger `eps`, `delta` or `cmin`.")
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
            raise ParameterError(f"the diameter subroutine's accuracy {target:.3g} needs more "
                                 "samples per pair than any run can count (2^63 - 1).")
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if passes(middle) else (middle, high)
    return 1 << (high - 1).bit_length()


def _choose(bound, keys):
    if bound not in keys:
        raise ParameterError(f"`bound` must be one of {keys}; got {bound!r}.")
    return bound


def _refuse_unused(where, **given):
    """Refuse every argument of ``given`` that is not ``None``: ``where`` does not use it."""
    for name, value in given.items():
        if value is not None:
            raise ParameterError(
                f"`{name}` is not used by {where}; got {value!r}. Omit it."
            )


def _real(name, value, **interval):
    return None if value is None else real(name, value, **interval)


def _branching(S, Gamma):
    if Gamma > S + 1:
        raise ParameterError(f"`Gamma` must lie in [1, S + 1] = [1, {S + 1}]; got {Gamma!r}.")
    return Gamma


def _common(**given):
    values = {
        "eps": _real("eps", given.get("eps"), low=0.0, high=1.0, low_open=True),
        "delta": _real("delta", given.get("delta"), low=0.0, high=1.0,
                       low_open=True, high_open=True),
    }
    if "alpha" in given:
        alpha = given["alpha"]
        values["alpha"] = 1.0 if alpha is None else real("alpha", alpha, low=0.0, low_open=True)
    for name in ("S", "A", "Gamma"):
        value = given.get(name)
        values[name] = None if value is None else integer(name, value, 1)
    if values["S"] is not None and values["Gamma"] is not None:
        _branching(values["S"], values["Gamma"])
    return values


def _guess(name, value, source_name, source_given, source, exclusive=True):
    """A final doubling guess: ``value`` if given, else ``final_delta(source)``.

    With ``exclusive``, ``source_name`` serves only this default, so giving
    both is refused.
    """
    if value is None:
        if isinstance(source, sp.Basic) and not source.free_symbols:
            source = float(source)
        return _exact(final_delta(source))
    if exclusive and source_given:
        raise ParameterError(
            f"give `{source_name}` (which bounds the final guess) or `{name}` (the guess "
            f"itself), not both; got {source_name} and {name} = {value!r}."
        )
    return _exact(real(name, value, low=1.0))


def _exact(value):
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, numbers.Integral):
        return sp.Integer(value)
    return sp.Rational(repr(float(value)))


def _substitutions(values):
    return {SYMBOLS[name]: _exact(v) for name, v in values.items() if v is not None}


def _evaluate(key, subs, terms):
    bound = BOUNDS[key]
    exprs = bound.terms if terms else (bound.total,)
    out = tuple(_to_number(e.subs(subs)) for e in exprs)
    return out if terms else out[0]


def _to_number(expr):
    return expr if expr.free_symbols else float(expr)
