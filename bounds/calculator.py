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

import numpy as np
import sympy as sp
from scipy.optimize import brentq

from reference._checks import check_int, check_real
from reference.errors import ParameterError

from .expressions import BOUNDS, D_HAT_UPPER, final_delta
from .symbols import SYMBOLS

__all__ = [
    "samp_comp",
    "samp_comp_theta",
    "samp_comp_diameter",
    "samp_comp_lower",
    "accuracy_for_budget",
]

CMIN_KEYS = ("thm1", "eq4", "explicit1")
THETA_KEYS = ("thm2", "eq5", "explicit3")

_GRID_POINTS = 257


def samp_comp(
    eps, B, cmin, S=None, A=None, Gamma=None, delta=None, alpha=1.0, Delta=None,
    bound="thm1", terms=False,
):
    """Sample complexity of Alg. 1 (``c_min > 0``).

    Parameters
    ----------
    eps : float in (0, 1] or None
        Accuracy.
    B : float >= cmin or None
        Range of the optimal values :math:`B_\\star`.
    cmin : float in (0, 1] or None
        Minimum cost.
    S, A : int >= 1 or None
        Numbers of non-goal states and of actions.
    Gamma : int in [1, S + 1] or None
        Branching factor.
    delta : float in (0, 1) or None
        Confidence level (only ``"explicit1"`` uses it).
    alpha : float > 0 or None, optional
        Constant of the allocation function (only ``"explicit1"``; default 1).
    Delta : float >= 1 or None, optional
        Final doubling guess for ``"explicit1"``; default
        :func:`~bounds.expressions.final_delta` of ``B``.
    bound : {"thm1", "eq4", "explicit1"}, optional
        Thm. 1 (default), eq. 4 (simulation lemma) or the explicit total
        :math:`S A \\, \\phi(\\Delta, c_{\\min})`.
    terms : bool, optional
        Return the tuple of the terms' values instead of their sum.

    Returns
    -------
    float, sympy.Expr, or a tuple of them (``terms=True``)

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
    values = _common(eps=eps, S=S, A=A, Gamma=Gamma, delta=delta, alpha=alpha)
    values.update(_positive_range(B=B, cmin=cmin))
    return _evaluate(_choose(bound, CMIN_KEYS), values, B, Delta, terms)


def samp_comp_theta(
    eps, theta, D, B, S=None, A=None, Gamma=None, delta=None, alpha=1.0, Delta=None,
    D_hat=None, bound="thm2", terms=False,
):
    """Sample complexity of Alg. 3 (any ``c_min``, slack ``theta >= 1``).

    Parameters
    ----------
    eps : float in (0, 1] or None
    theta : float >= 1 or None
        Slack parameter.
    D : float >= 1 or None
        SSP-diameter.
    B : float > 0 or None
        Range of the optimal values (for ``"explicit3"``: of the perturbed
        problem SEARCH solves).
    S, A, Gamma, delta, alpha, Delta :
        As in :func:`samp_comp`.
    D_hat : float >= 1 or None, optional
        The diameter estimate, for ``"explicit3"``. Default: Lemma 9's upper
        bound :math:`(1 + 2\\epsilon(1+\\epsilon))(1+\\epsilon) D` (Alg. 4 run at
        accuracy ``eps``).
    bound : {"thm2", "eq5", "explicit3"}, optional
        Thm. 2 (default), eq. 5 or the explicit total of SEARCH inside Alg. 3,
        :math:`S A \\, \\phi(\\Delta, \\nu)` at accuracy ``eps / 2``.
    terms : bool, optional

    Returns
    -------
    float, sympy.Expr, or a tuple of them (``terms=True``)
    """
    values = _common(eps=eps, S=S, A=A, Gamma=Gamma, delta=delta, alpha=alpha)
    values.update(
        theta=_real("theta", theta, low=1.0),
        D=_real("D", D, low=1.0),
        B=_real("B", B, low=0.0, low_open=True),
    )
    key = _choose(bound, THETA_KEYS)
    values["D_hat"] = _real("D_hat", D_hat, low=1.0)
    if D_hat is None:
        values["D_hat"] = D_HAT_UPPER.subs(_substitutions(values))
    return _evaluate(key, values, B, Delta, terms)


def samp_comp_diameter(eps, D, S=None, A=None, Gamma=None, terms=False):
    """Samples of the diameter subroutine (Lemma 9), :math:`\\tilde O` form.

    Parameters
    ----------
    eps : float in (0, 1] or None
    D : float >= 1 or None
    S, A, Gamma : as in :func:`samp_comp`
    terms : bool, optional

    Returns
    -------
    float, sympy.Expr, or a tuple of them
    """
    values = _common(eps=eps, S=S, A=A, Gamma=Gamma)
    values["D"] = _real("D", D, low=1.0)
    return _evaluate("lemma9", values, None, None, terms)


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
    """
    values = _common(eps=eps, S=S, A=A)
    values["B"] = _real("B", B, low=1.0)
    return _evaluate("lower", values, None, None, terms)


_CALCULATORS = {
    **{key: partial(samp_comp, bound=key) for key in CMIN_KEYS},
    **{key: partial(samp_comp_theta, bound=key) for key in THETA_KEYS},
    "lemma9": samp_comp_diameter,
    "lower": samp_comp_lower,
}


def accuracy_for_budget(n, bound="thm1", **params):
    """The smallest accuracy a bound certifies for a budget of ``n`` calls.

    .. math::
        \\epsilon(n) = \\min\\{\\epsilon \\in (0, 1] : N(\\epsilon) \\le n\\}

    where :math:`N` is the bound's total. Every parameter other than ``eps``
    must be given. The search halves ``eps`` from 1 until :math:`N > n` (at
    the latest when floats overflow), takes the first point with
    :math:`N \\le n` on a logarithmic grid of the last bracket, and refines
    it with Brent's method. Every bound decreases in ``eps`` except possibly
    ``"explicit3"`` with the default ``D_hat`` (which grows with ``eps``);
    there the grid still finds the smallest crossing, up to its resolution.

    Parameters
    ----------
    n : float > 0
        Budget (number of calls to the generative model).
    bound : str, optional
        A key of :data:`~bounds.expressions.BOUNDS` (default ``"thm1"``).
    **params
        The other arguments of the matching calculator (:func:`samp_comp`,
        :func:`samp_comp_theta`, :func:`samp_comp_diameter` or
        :func:`samp_comp_lower`), all given.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        If a parameter is missing or out of range, or if no ``eps`` in
        ``(0, 1]`` needs at most ``n`` calls.
    """
    n = check_real("n", n, low=0.0, low_open=True)
    if bound not in _CALCULATORS:
        raise ParameterError(f"`bound` must be one of {tuple(_CALCULATORS)}; got {bound!r}.")
    for name in ("eps", "terms", "bound"):
        if name in params:
            raise ParameterError(f"`{name}` is not a parameter of accuracy_for_budget's **params.")
    expr = _CALCULATORS[bound](eps=None, **params)
    eps = SYMBOLS["eps"]
    missing = expr.free_symbols - {eps}
    if missing:
        names = ", ".join(sorted(str(s) for s in missing))
        raise ParameterError(
            f"accuracy_for_budget needs every parameter but `eps`; missing {names}."
        )
    total = sp.lambdify(eps, expr, "math")
    low = 0.5
    while _calls(total, low) <= n:
        low /= 2
    grid = [float(e) for e in np.geomspace(low, 1.0, _GRID_POINTS)]
    first = next((i for i, e in enumerate(grid) if _calls(total, e) <= n), None)
    if first is None:
        smallest = min(_calls(total, e) for e in grid)
        raise ParameterError(
            f"`n` = {n:g} calls is below bound {bound!r} for every eps in (0, 1] "
            f"(its smallest value is {smallest:.6g}): no eps is certified."
        )
    return brentq(lambda e: _calls(total, e) - n, grid[first - 1], grid[first], rtol=1e-14)


def _calls(total, eps):
    """The bound at ``eps``; ``inf`` once ``eps`` is so small that floats overflow.

    Every bound has ``eps`` in a denominator, so halving ``eps`` ends here at
    the latest when it reaches 0.
    """
    try:
        return total(eps)
    except (OverflowError, ZeroDivisionError):
        return math.inf


def _choose(bound, keys):
    if bound not in keys:
        raise ParameterError(f"`bound` must be one of {keys}; got {bound!r}.")
    return bound


def _real(name, value, **interval):
    return None if value is None else check_real(name, value, **interval)


def _common(**given):
    values = {
        "eps": _real("eps", given.get("eps"), low=0.0, high=1.0, low_open=True),
        "delta": _real("delta", given.get("delta"), low=0.0, high=1.0,
                       low_open=True, high_open=True),
        "alpha": _real("alpha", given.get("alpha"), low=0.0, low_open=True),
    }
    for name in ("S", "A", "Gamma"):
        value = given.get(name)
        values[name] = None if value is None else check_int(name, value, low=1)
    if values["S"] is not None and values["Gamma"] is not None:
        if values["Gamma"] > values["S"] + 1:
            raise ParameterError(
                f"`Gamma` must lie in [1, S + 1] = [1, {values['S'] + 1}]; got {values['Gamma']!r}."
            )
    return values


def _positive_range(B, cmin):
    cmin = _real("cmin", cmin, low=0.0, high=1.0, low_open=True)
    B = _real("B", B, low=0.0, low_open=True)
    if B is not None and cmin is not None and B < cmin:
        raise ParameterError(
            f"`B` must be >= `cmin` = {cmin:g} (every step costs at least cmin); got {B!r}."
        )
    return {"B": B, "cmin": cmin}


def _exact(value):
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, numbers.Integral):
        return sp.Integer(value)
    return sp.Rational(repr(float(value)))


def _substitutions(values):
    return {SYMBOLS[name]: _exact(v) for name, v in values.items() if v is not None}


def _evaluate(key, values, B, Delta, terms):
    bound = BOUNDS[key]
    subs = _substitutions(values)
    if key.startswith("explicit"):
        Delta = _real("Delta", Delta, low=1.0)
        if Delta is None:
            Delta = final_delta(SYMBOLS["B"] if B is None else B)
        subs[SYMBOLS["Delta"]] = _exact(Delta)
    exprs = bound.terms if terms else (bound.total,)
    out = tuple(_to_number(e.subs(subs)) for e in exprs)
    return out if terms else out[0]


def _to_number(expr):
    return expr if expr.free_symbols else float(expr)
