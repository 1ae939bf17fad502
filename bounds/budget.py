"""The smallest accuracy a bound certifies for a budget of calls.

:func:`accuracy_for_budget` inverts every total of :mod:`bounds.calculator` in
``eps``. The totals are not all monotone in ``eps``: Alg. 3's explicit total has a
SEARCH guess ``Delta`` that steps up with ``eps`` (through the perturbation ``nu``)
and, with the default diameter estimate, a cost floor that falls for large ``eps``.
The search therefore never relies on monotonicity of the total itself; it relies on
the monotonicity of its parts, which holds for every total (see
:func:`accuracy_for_budget`'s Notes), and proves every interval of ``eps`` it skips
infeasible.
"""

import math

import mpmath
import sympy as sp

from ._checks import ParameterError, exact_params, real
from .calculator import CALCULATORS, SUBSTITUTIONS
from .expressions import BOUNDS
from .symbols import SYMBOLS

__all__ = ["accuracy_for_budget"]

_PRECISION = 40
"""Decimal digits of the arbitrary-precision evaluation."""

_TOLERANCE = mpmath.mpf("1e-14")
"""Relative width in ``eps`` below which an interval is not split further."""

_CELLS_PER_OCTAVE = 8
"""Cells of the first grid per halving of ``eps``."""

_MAX_HALVINGS = 4000
"""Halvings of ``eps`` from 1 before the total is declared never to exceed the budget."""

_MAX_EVALUATIONS = 100_000
"""Evaluations of the total before the search gives up and says so."""

_TINY = mpmath.mpf("1e-30")
"""Relative offset of the point just right of a cell's left end."""


def accuracy_for_budget(n, bound="thm1", **params):
    r"""The smallest accuracy a bound certifies for a budget of ``n`` calls.

    .. math::
        \epsilon(n) = \min\{\epsilon \in (0, 1] : N(\epsilon) \le n\}

    where :math:`N` is the bound's total. Every parameter other than ``eps``
    must be given. The total is evaluated in 40-digit arithmetic, so no budget
    a float can hold overflows it.

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
        The smallest feasible ``eps`` up to a relative ``1e-14``: :math:`N(\epsilon(n))
        \le n`, and no ``eps`` below :math:`\epsilon(n) (1 - 10^{-14})` has
        :math:`N(\epsilon) \le n`.

    Raises
    ------
    ParameterError
        If a parameter is missing, unused or out of range; if no ``eps`` in
        ``(0, 1]`` needs at most ``n`` calls; if the total stays at most ``n``
        as ``eps`` tends to 0 (every ``eps`` fits, none is the smallest); or if
        the search cannot decide within its evaluation limit.

    See Also
    --------
    samp_comp : the bounds it inverts.

    Notes
    -----
    Write the total as :math:`N(\epsilon) = F(\epsilon, \hat D(\epsilon),
    \Delta(\epsilon))`, where :math:`\hat D(\epsilon)` is Alg. 3's default
    diameter estimate and :math:`\Delta(\epsilon)` its default SEARCH guess
    (both constant for the other totals). For every total:

    * :math:`F` decreases in :math:`\epsilon` (each term is a positive power of
      :math:`1/\epsilon` times logarithms of arguments above 1 that fall with
      :math:`\epsilon`; in Thm. 2 as proved the range bound :math:`R` grows at
      most like :math:`\epsilon`, so :math:`R^k / \epsilon^k` does not grow),
      and grows in :math:`\hat D` (through :math:`\nu = \epsilon / (2 \theta
      \hat D)`, the cost floor) and in :math:`\Delta`;
    * :math:`\hat D(\epsilon)` and :math:`\Delta(\epsilon)` do not decrease.

    So on a cell :math:`(a, b]`, :math:`N(\epsilon) \ge F(b, \hat D(a),
    \Delta(a^+))`. The search finds the first ``eps`` from 1 down by halving
    below which this lower bound exceeds ``n`` on all of :math:`(0, \epsilon_0]`,
    then scans cells of :math:`[\epsilon_0, 1]` upwards (eight a halving),
    dropping a cell when its lower bound exceeds ``n`` and halving it
    otherwise, until a cell narrower than ``1e-14`` (relative) holds a point
    with :math:`N \le n`. Every skipped cell is proved infeasible, so the point
    returned is the smallest feasible one to that width.

    Examples
    --------
    The lower bound :math:`S A B^3 / \epsilon^2` inverts by hand:
    :math:`\epsilon = \sqrt{20 \cdot 4 \cdot 10^3 / 10^8}`.

    >>> round(accuracy_for_budget(1e8, bound="lower", B=10, S=20, A=4), 12)
    0.028284271247
    """
    n = real("n", n, low=0.0, low_open=True)
    if bound not in CALCULATORS:
        raise ParameterError(f"`bound` must be one of {tuple(CALCULATORS)}; got {bound!r}.")
    for name in ("eps", "terms", "bound"):
        if name in params:
            raise ParameterError(f"`{name}` is not a parameter of accuracy_for_budget's **params.")
    total, D_hat_of, Delta_of = _split(bound, params)
    with mpmath.workdps(_PRECISION):
        return _search(mpmath.mpf(n), bound, total, D_hat_of, Delta_of)


def _split(bound, params):
    """``(F, D_hat(eps), Delta(eps))`` as mpmath functions, after checking every symbol is given."""
    params = exact_params(f"bound {bound!r}", SUBSTITUTIONS[bound], params, but=("eps",))
    key, subs = SUBSTITUTIONS[bound](eps=None, **params)
    eps, D_hat, Delta = SYMBOLS["eps"], SYMBOLS["D_hat"], SYMBOLS["Delta"]
    D_hat_expr = sp.sympify(subs.pop(D_hat, 1))
    Delta_expr = sp.sympify(subs.pop(Delta, 1))
    total = sp.sympify(BOUNDS[key].total.subs(subs))
    missing = ((total.free_symbols - {eps, D_hat, Delta})
               | D_hat_expr.free_symbols | Delta_expr.free_symbols) - {eps}
    if missing:
        names = ", ".join(sorted(str(s) for s in missing))
        raise ParameterError(
            f"accuracy_for_budget needs every parameter but `eps`; missing {names}."
        )
    if eps not in (total.free_symbols | D_hat_expr.free_symbols | Delta_expr.free_symbols):
        raise ParameterError(
            f"bound {bound!r} does not depend on `eps` with these parameters (its total is "
            f"{total}): every eps or none fits a budget, so there is no smallest."
        )
    return (sp.lambdify((eps, D_hat, Delta), total, "mpmath"),
            sp.lambdify(eps, D_hat_expr, "mpmath"), sp.lambdify(eps, Delta_expr, "mpmath"))


def _search(n, bound, total, D_hat_of, Delta_of):
    """The smallest ``eps`` in ``(0, 1]`` with total at most ``n`` (see accuracy_for_budget)."""
    count = [0]

    def value(e):
        count[0] += 1
        if count[0] > _MAX_EVALUATIONS:
            raise ParameterError(
                f"accuracy_for_budget could not decide within {_MAX_EVALUATIONS} evaluations "
                f"of bound {bound!r} at n = {float(n):g} (its total stays within rounding of "
                "n over a wide range of eps); no answer is given."
            )
        return total(e, D_hat_of(e), Delta_of(e))

    def lower(a, b):
        right_of_a = a * (1 + _TINY) if a > 0 else mpmath.mpf("1e-300")
        return total(b, D_hat_of(right_of_a), Delta_of(right_of_a))

    def smallest(a, b):
        if lower(a, b) > n:
            return None
        if b - a <= _TOLERANCE * b:
            for point in (a * (1 + _TINY), b):
                if point > 0 and value(point) <= n:
                    return point
            return None
        middle = (a + b) / 2 if a > 0 else b / 2
        found = smallest(a, middle)
        return found if found is not None else smallest(middle, b)

    start = mpmath.mpf(1)
    for _ in range(_MAX_HALVINGS):
        if lower(0, start) > n:
            break
        start /= 2
    else:
        raise ParameterError(
            f"bound {bound!r} stays at most n = {float(n):g} as eps tends to 0: every eps "
            "fits the budget, so there is no smallest."
        )
    cells = int(mpmath.nint(-mpmath.log(start, 2))) * _CELLS_PER_OCTAVE
    edges = [start * mpmath.power(2, mpmath.mpf(k) / _CELLS_PER_OCTAVE) for k in range(cells)]
    edges.append(mpmath.mpf(1))
    for a, b in zip(edges, edges[1:]):
        found = smallest(a, b)
        if found is not None:
            return _nearest_feasible_float(found, lambda e: value(mpmath.mpf(e)) <= n)
    raise ParameterError(
        f"`n` = {float(n):g} calls is below bound {bound!r} for every eps in (0, 1] "
        f"(at eps = 1 it is {mpmath.nstr(value(mpmath.mpf(1)), 6)}): no eps is certified."
    )


def _nearest_feasible_float(x, feasible):
    """The float nearest ``x``, or its neighbour above or below, whichever is feasible first."""
    f = float(x)
    for candidate in (f, math.nextafter(f, 2.0), math.nextafter(f, 0.0)):
        if 0.0 < candidate <= 1.0 and feasible(candidate):
            return candidate
    return f
