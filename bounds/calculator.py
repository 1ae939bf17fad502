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

import sympy as sp

from ._checks import ParameterError, integer, real
from .expressions import (BOUNDS, D_HAT_UPPER, NU, NU_LARGEST, final_delta, perturbed_range,
                          proved_range)
from .symbols import SYMBOLS

__all__ = [
    "samp_comp",
    "samp_comp_theta",
    "samp_comp_diameter",
    "samp_comp_lower",
]

CMIN_KEYS = ("thm1", "eq4", "explicit1")
THETA_KEYS = ("thm2", "eq5", "explicit3")
DIAMETER_KEYS = ("lemma9", "explicit4")
VARIANTS = ("proved", "printed")


def samp_comp(
    eps, B, cmin, S=None, A=None, Gamma=None, delta=None, alpha=None, Delta=None,
    variant=None, bound="thm1", terms=False,
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
    variant : {"proved", "printed"}, optional
        For ``"thm1"`` only: the bound its proof gives (default), with
        :math:`\\max(B_\\star, 1/2)` in place of :math:`B_\\star` since SEARCH
        never stops below ``Delta = 1``, or as printed (docs/semantics.md,
        "Errata", 8). They differ only for ``B < 1/2``.
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

    See Also
    --------
    samp_comp_theta : the bounds of Alg. 3.
    samp_comp_lower : the lower bound of Sec. 5.
    accuracy_for_budget : the inverse: ``eps`` from a budget.
    reference.solve : Alg. 1.

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

    Below ``B = 1/2`` the proof's range is 1/2: at ``B = c_min = 0.1``, ``eps = 0.5`` and
    ``S = A = Gamma = 1``, :math:`0.125 / (0.1 \\cdot 0.25) + 0.25 / (0.1 \\cdot 0.5)
    + 0.25 / 0.01 = 35` against the printed :math:`0.04 + 0.2 + 1`:

    >>> samp_comp(0.5, 0.1, 0.1, S=1, A=1, Gamma=1), samp_comp(0.5, 0.1, 0.1, S=1, A=1,
    ...                                                          Gamma=1, variant="printed")
    (35.0, 1.24)
    """
    return _evaluate(*_cmin_substitutions(eps, B, cmin, S, A, Gamma, delta, alpha, Delta,
                                          variant, bound), terms)


def _cmin_substitutions(eps, B, cmin, S=None, A=None, Gamma=None, delta=None, alpha=None,
                        Delta=None, variant=None, bound="thm1"):
    """``(key, substitutions)`` of :func:`samp_comp`."""
    key = _choose(bound, CMIN_KEYS)
    if variant is not None and key != "thm1":
        raise ParameterError(f"`variant` applies to bound 'thm1' only; got bound {bound!r}.")
    if variant not in (None, *VARIANTS):
        raise ParameterError(f"`variant` must be one of {VARIANTS}; got {variant!r}.")
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
    elif key == "thm1" and variant != "printed":
        subs[SYMBOLS["B"]] = sp.Max(subs.get(SYMBOLS["B"], SYMBOLS["B"]), sp.Rational(1, 2))
    return key, subs


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
        problems). Thm. 2 as printed and eq. 5 use it as printed. Thm. 2 as
        proved and ``"explicit3"`` use it only with ``cmin > 0``, to bound the
        range of the perturbed problem (:func:`~bounds.expressions.proved_range`,
        :func:`~bounds.expressions.perturbed_range`); with ``cmin`` 0 or omitted
        it is refused, since only ``D`` bounds that range. ``"explicit3"`` does
        not take it with ``Delta``.
    S, A, Gamma : as in :func:`samp_comp`
    delta, alpha : as in :func:`samp_comp` (``"explicit3"`` only)
    cmin : float in [0, 1], optional
        Minimum cost, for Thm. 2 as proved and ``"explicit3"``: with ``B`` it
        bounds the perturbed range; in ``"explicit3"`` SEARCH's cost floor is
        :math:`\\max(c_{\\min}, \\nu)`. Default 0 (unknown).
    D_hat : float >= max(1, D), optional
        The diameter estimate of a run, for ``"explicit3"``. Default: every
        estimate a run can return under Lemma 9, ``D <= D_hat <=
        (1 + 2 eps (1 + eps))(1 + eps) D``; the total is then at least its value
        at each of them (the cost floor at the largest, the range at the
        smallest).
    W : float >= 1, optional
        Alg. 4's final guess, for ``"explicit3"``; default
        :func:`~bounds.expressions.final_delta` of ``D``.
    Delta : float >= 1, optional
        SEARCH's final guess, for ``"explicit3"``; default ``final_delta`` of
        :func:`~bounds.expressions.perturbed_range` (at the largest ``nu`` of the
        estimates ``D_hat`` allows).
    variant : {"proved", "printed"}, optional
        For ``"thm2"`` only: the bound as App. E proves it (default: Thm. 1 with
        the range :math:`\\max(1, B_\\nu)` of the perturbed problem in place
        of :math:`B_\\star`, ``B^2`` in the middle term, Lemma 9's terms) or as
        the paper prints it (docs/semantics.md, "Errata", 4).
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

    See Also
    --------
    samp_comp : the bounds of Alg. 1.
    samp_comp_diameter : the diameter subroutine's share.

    Examples
    --------
    Thm. 2 as printed, at ``theta = 5, D = 12, B = 10``: :math:`1.44 \\cdot 10^{10}
    + 9.6 \\cdot 10^7 + 8.64 \\cdot 10^9`. As proved with ``c_min = 0.5``, the range
    stays 10 (:math:`\\nu \\le 0.1 / 120 < c_{\\min}`), the middle term is ten times
    larger and Lemma 9's :math:`3.456 \\cdot 10^6 + 1.92 \\cdot 10^5` join; without
    ``c_min`` only ``D = 12`` bounds the range:

    >>> samp_comp_theta(0.1, 5, 12, 10, S=20, A=4, Gamma=3, variant="printed")
    23136000000.0
    >>> samp_comp_theta(0.1, 5, 12, 10, S=20, A=4, Gamma=3, cmin=0.5)
    24003648000.0
    >>> samp_comp_theta(0.1, 5, 12, S=20, A=4, Gamma=3)
    38710848000.0
    """
    return _evaluate(*_theta_substitutions(eps, theta, D, B, S, A, Gamma, delta, alpha, cmin,
                                           D_hat, W, Delta, variant, bound), terms)


def _theta_substitutions(eps, theta, D, B=None, S=None, A=None, Gamma=None, delta=None,
                         alpha=None, cmin=None, D_hat=None, W=None, Delta=None, variant=None,
                         bound="thm2"):
    """``(key, substitutions)`` of :func:`samp_comp_theta`."""
    key = _choose(bound, THETA_KEYS)
    explicit = key == "explicit3"
    if variant is not None and key != "thm2":
        raise ParameterError(f"`variant` applies to bound 'thm2' only; got bound {bound!r}.")
    if key == "thm2":
        if variant not in (None, *VARIANTS):
            raise ParameterError(f"`variant` must be one of {VARIANTS}; got {variant!r}.")
        key = "thm2" if variant == "printed" else "thm2_proved"
    if not explicit:
        unused = dict(delta=delta, alpha=alpha, D_hat=D_hat, W=W, Delta=Delta)
        if key != "thm2_proved":
            unused["cmin"] = cmin
        _refuse_unused(f"bound {bound!r}" + (" as proved" if key == "thm2_proved" else ""),
                       **unused)
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
    elif key == "thm2_proved":
        subs[SYMBOLS["B"]] = _proved_range(values, subs, B, cmin)
    return key, subs


def _floor_cmin(values, B, cmin, where):
    """Alg. 3's ``c_min`` (0 when not given), refusing ``B`` when it cannot bound the range."""
    cmin = 0.0 if cmin is None else real("cmin", cmin, low=0.0, high=1.0)
    if cmin == 0.0 and B is not None:
        raise ParameterError(
            f"`B` does not bound the range of the problem SEARCH solves inside Alg. 3 ({where}) "
            "when `cmin` = 0: the perturbed costs max(c, nu) can exceed B* "
            "(docs/semantics.md, \"Errata\", 4); omit it (D bounds the range) or give `cmin` > 0."
        )
    if cmin > 0.0 and values["B"] is not None and values["B"] < cmin:
        raise ParameterError(f"`B` must be >= `cmin` = {cmin:g}; got {B!r}.")
    return cmin


def _proved_range(values, subs, B, cmin):
    """Thm. 2 as proved: the range bound ``max(1, perturbed_range)`` with ``nu`` at its largest."""
    cmin = _floor_cmin(values, B, cmin, "Thm. 2 as proved")
    D_sym = subs.get(SYMBOLS["D"], SYMBOLS["D"])
    if cmin == 0.0:
        return proved_range(D_sym)
    return proved_range(D_sym, subs.get(SYMBOLS["B"], SYMBOLS["B"]), _exact(cmin),
                        NU_LARGEST.subs(subs))


def _alg3_substitutions(values, subs, B, cmin, D_hat, W, Delta):
    """``cmin``, ``D_hat``, ``W`` and ``Delta`` of Alg. 3's explicit total.

    Without ``D_hat``, the total must hold for every estimate a run can return,
    ``D <= D_hat <= D_HAT_UPPER`` (Lemma 9): a larger ``D_hat`` lowers the cost
    floor (more samples per pair), a smaller one raises ``nu`` and with it the
    range bound and SEARCH's guess. So the floor takes ``D_hat = D_HAT_UPPER``
    and the default guess the range at ``nu = eps / (2 theta D)``
    (:data:`~bounds.expressions.NU_LARGEST`): the total is at least its value at
    any ``D_hat`` in that interval.
    """
    cmin = _floor_cmin(values, B, cmin, "its explicit total")
    out = {SYMBOLS["cmin"]: _exact(cmin)}
    D_sym = subs.get(SYMBOLS["D"], SYMBOLS["D"])
    if D_hat is None:
        out[SYMBOLS["D_hat"]] = D_HAT_UPPER.subs(subs)
        nu_range = NU_LARGEST.subs(subs)
    else:
        D_hat = real("D_hat", D_hat, low=1.0)
        if values["D"] is not None and D_hat < values["D"]:
            raise ParameterError(
                f"`D_hat` must be >= `D` = {values['D']:g} (Lemma 9: D <= D_hat); got {D_hat!r}."
            )
        out[SYMBOLS["D_hat"]] = _exact(D_hat)
        nu_range = NU.subs({**subs, **out})
    out[SYMBOLS["W"]] = _guess("W", W, "D", values["D"] is not None, D_sym, exclusive=False)
    if cmin > 0.0:
        B_sym = subs.get(SYMBOLS["B"], SYMBOLS["B"])
        bound = perturbed_range(D_sym, B_sym, _exact(cmin), nu_range)
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

    See Also
    --------
    samp_comp_theta : Alg. 3, which runs it first.
    reference.estimate_diameter : Alg. 4.

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
    return _evaluate(*_diameter_substitutions(eps, D, S, A, Gamma, delta, W, bound), terms)


def _diameter_substitutions(eps, D, S=None, A=None, Gamma=None, delta=None, W=None,
                            bound="lemma9"):
    """``(key, substitutions)`` of :func:`samp_comp_diameter`."""
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
    return key, subs


def samp_comp_lower(eps, B, S=None, A=None, terms=False):
    """The lower bound :math:`\\Omega(S A B^3 / \\epsilon^2)` of Sec. 5, for costs in ``[0, 1]``.

    Parameters
    ----------
    eps : float in (0, 1] or None
    B : float >= 1 or None
        Range of the optimal values; the discounted instances behind the bound
        have :math:`B_\\star \\le 1/(1-\\gamma)` with :math:`1/(1-\\gamma) \\ge 1`
        (docs/semantics.md, "Errata", 10: not a unit-cost bound).
    S, A : int >= 1 or None
    terms : bool, optional

    Returns
    -------
    float, sympy.Expr, or a tuple of them

    See Also
    --------
    samp_comp : the upper bound of Thm. 1.
    reference.instance_lower_bound : a lower bound for one known instance.

    Examples
    --------
    :math:`S A B^3 / \\epsilon^2 = 20 \\cdot 4 \\cdot 10^3 / 0.1^2`:

    >>> samp_comp_lower(0.1, 10, S=20, A=4)
    8000000.0
    """
    return _evaluate(*_lower_substitutions(eps, B, S, A), terms)


def _lower_substitutions(eps, B, S=None, A=None):
    """``(key, substitutions)`` of :func:`samp_comp_lower`."""
    values = _common(eps=eps, S=S, A=A)
    values["B"] = _real("B", B, low=1.0)
    return "lower", _substitutions(values)


CALCULATORS = {
    **{key: partial(samp_comp, bound=key) for key in CMIN_KEYS},
    **{key: partial(samp_comp_theta, bound=key) for key in THETA_KEYS},
    **{key: partial(samp_comp_diameter, bound=key) for key in DIAMETER_KEYS},
    "lower": samp_comp_lower,
}
"""Every bound key of :func:`~bounds.budget.accuracy_for_budget` -> its calculator."""

SUBSTITUTIONS = {
    **{key: partial(_cmin_substitutions, bound=key) for key in CMIN_KEYS},
    **{key: partial(_theta_substitutions, bound=key) for key in THETA_KEYS},
    **{key: partial(_diameter_substitutions, bound=key) for key in DIAMETER_KEYS},
    "lower": _lower_substitutions,
}
"""The same keys -> ``(expression key, substitutions)`` builders of the calculators."""


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
    out = tuple(_to_number(key, sp.sympify(e.subs(subs))) for e in exprs)
    return out if terms else out[0]


def _to_number(key, expr):
    """A float when ``expr`` has no free symbol; a value beyond the float range is refused."""
    if expr.free_symbols:
        return expr
    value = float(expr)
    if not math.isfinite(value):
        raise ParameterError(
            f"bound {key!r} is {sp.N(expr, 6)} at these parameters, beyond the float range "
            "(about 1.8e308); give smaller sizes or a larger eps, or leave a parameter symbolic."
        )
    return value
