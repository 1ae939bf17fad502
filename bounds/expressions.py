"""The paper's sample-complexity bounds as sympy expressions, one per result.

Every bound is a :class:`Bound`: its terms (a tuple of sympy expressions) and
their sum. The :math:`\\tilde O` bounds (Thms. 1-2, eqs. 4-5, Lemma 9) and the
:math:`\\Omega` lower bound are written as the paper states them: each term
with coefficient 1 and no logarithm, since :math:`\\tilde O` hides absolute
constants and polylogarithmic factors. Their numbers are therefore orders of
magnitude, not certified counts. The explicit totals keep the logarithms and
the constant ``alpha`` of the allocation function (eq. 6): they are the budget
the algorithms actually spend (up to rounding each pair up to an integer).

Where ``docs/semantics.md`` and the paper differ, that document is implemented.
"""

from dataclasses import dataclass
import math
import numbers

import sympy as sp

from .symbols import A, B, D, D_hat, Delta, Gamma, S, alpha, cmin, delta, eps, theta

__all__ = [
    "Bound",
    "THM1",
    "THM2",
    "SIMULATION_CMIN",
    "SIMULATION_THETA",
    "LOWER_BOUND",
    "DIAMETER",
    "EXPLICIT_CMIN",
    "EXPLICIT_THETA",
    "BOUNDS",
    "NU",
    "D_HAT_UPPER",
    "phi_terms",
    "phi",
    "explicit_total_terms",
    "final_delta",
]


@dataclass(frozen=True)
class Bound:
    """One sample-complexity result.

    Attributes
    ----------
    key : str
        Short name (``"thm1"``, ``"eq4"``, ...), the key in :data:`BOUNDS`.
    title : str
        Human-readable name with the paper's numbering.
    kind : str
        ``"O~"`` (upper bound up to constants and logs), ``"Omega"`` (lower
        bound up to constants) or ``"explicit"`` (with logs and ``alpha``).
    terms : tuple of sympy.Expr
        The additive terms, in the paper's order.
    """

    key: str
    title: str
    kind: str
    terms: tuple

    @property
    def total(self):
        """The sum of :attr:`terms` (a sympy expression)."""
        return sp.Add(*self.terms)


THM1 = Bound(
    "thm1",
    "Thm. 1 (Alg. 1, c_min > 0)",
    "O~",
    (
        B**3 * Gamma * S * A / (cmin * eps**2),
        B**2 * S**2 * A / (cmin * eps),
        B**2 * Gamma * S * A / cmin**2,
    ),
)
"""Thm. 1:

.. math::
    \\tilde O\\Big(\\frac{B^3 \\Gamma S A}{c_{\\min}\\epsilon^2}
    + \\frac{B^2 S^2 A}{c_{\\min}\\epsilon} + \\frac{B^2 \\Gamma S A}{c_{\\min}^2}\\Big).
"""

THM2 = Bound(
    "thm2",
    "Thm. 2 (Alg. 3, theta >= 1)",
    "O~",
    (
        theta * D * B**3 * Gamma * S * A / eps**3,
        theta * D * B * S**2 * A / eps**2,
        theta**2 * D**2 * B**2 * Gamma * S * A / eps**2,
    ),
)
"""Thm. 2, as stated (and as in docs/semantics.md):

.. math::
    \\tilde O\\Big(\\frac{\\theta D B^3 \\Gamma S A}{\\epsilon^3}
    + \\frac{\\theta D B S^2 A}{\\epsilon^2}
    + \\frac{\\theta^2 D^2 B^2 \\Gamma S A}{\\epsilon^2}\\Big).

Deriving it from the allocation function (``X = B``,
``y = eps / (2 theta D)``, accuracy ``eps / 2``) gives the same first and third
terms but :math:`\\theta D B^2 S^2 A / \\epsilon^2` for the middle one: the
stated middle term is smaller by a factor ``B``.
"""

SIMULATION_CMIN = Bound(
    "eq4",
    "Eq. 4 (simulation lemma, c_min > 0)",
    "O~",
    (
        B**4 * Gamma * S * A / (cmin**2 * eps**2),
        B**2 * S**2 * A / (cmin * eps),
    ),
)
"""Eq. 4, the simulation-lemma route for ``c_min > 0``:

.. math::
    \\tilde O\\Big(\\frac{B^4 \\Gamma S A}{c_{\\min}^2\\epsilon^2}
    + \\frac{B^2 S^2 A}{c_{\\min}\\epsilon}\\Big).
"""

SIMULATION_THETA = Bound(
    "eq5",
    "Eq. 5 (simulation lemma, theta >= 1)",
    "O~",
    (
        theta**2 * D**2 * B**4 * Gamma * S * A / eps**4,
        theta * D * B**2 * S**2 * A / eps**2,
    ),
)
"""Eq. 5, the simulation-lemma route for the ``theta`` variant:

.. math::
    \\tilde O\\Big(\\frac{\\theta^2 D^2 B^4 \\Gamma S A}{\\epsilon^4}
    + \\frac{\\theta D B^2 S^2 A}{\\epsilon^2}\\Big).
"""

LOWER_BOUND = Bound(
    "lower",
    "Lower bound (Sec. 5, unit cost)",
    "Omega",
    (S * A * B**3 / eps**2,),
)
"""Sec. 5: with unit costs (``c_min = 1``) the DMDP lower bound with
:math:`1/(1-\\gamma) = B_\\star` carries over,

.. math::
    \\Omega\\Big(\\frac{S A B_\\star^3}{\\epsilon^2}\\Big).
"""

DIAMETER = Bound(
    "lemma9",
    "Lemma 9 (diameter subroutine, Alg. 4)",
    "O~",
    (
        D**2 * Gamma * S * A / eps**2,
        D * S**2 * A / eps,
    ),
)
"""Lemma 9, samples used by the diameter subroutine (Alg. 4):

.. math::
    \\tilde O\\Big(\\frac{D^2 \\Gamma S A}{\\epsilon^2} + \\frac{D S^2 A}{\\epsilon}\\Big).
"""


def phi_terms(X, y, accuracy=eps):
    """The three terms of the allocation function of eq. 6 (natural logs).

    .. math::
        \\phi(X, y) = \\alpha \\Big( \\frac{X^3 \\hat\\Gamma}{y \\epsilon^2} l_1
        + \\frac{X^2 S}{y \\epsilon} l_1 + \\frac{X^2 \\hat\\Gamma}{y^2} l_2^2 \\Big),
        \\quad l_1 = \\log\\frac{X S A}{y \\epsilon \\delta},
        \\quad l_2 = \\log\\frac{X S A}{y \\delta}.

    The symbol ``Gamma`` stands for :math:`\\hat\\Gamma`, the largest support of
    the empirical model (``<= Gamma``).

    Parameters
    ----------
    X, y : sympy.Expr or number
        The arguments of :math:`\\phi` (SEARCH uses ``X = Delta`` and
        ``y = iota``, the minimum of the costs it is given).
    accuracy : sympy.Expr or number, optional
        The :math:`\\epsilon` of eq. 6 (default the symbol ``eps``; Alg. 3 runs
        SEARCH at ``eps / 2``).

    Returns
    -------
    tuple of 3 sympy.Expr
    """
    l1 = sp.log(X * S * A / (y * accuracy * delta))
    l2 = sp.log(X * S * A / (y * delta))
    return (
        alpha * X**3 * Gamma / (y * accuracy**2) * l1,
        alpha * X**2 * S / (y * accuracy) * l1,
        alpha * X**2 * Gamma / y**2 * l2**2,
    )


def phi(X, y, accuracy=eps):
    """The allocation function of eq. 6, the sum of :func:`phi_terms`.

    Parameters
    ----------
    X, y : sympy.Expr or number
        The arguments of :math:`\\phi`.
    accuracy : sympy.Expr or number, optional
        The :math:`\\epsilon` of eq. 6 (default the symbol ``eps``).

    Returns
    -------
    sympy.Expr
    """
    return sp.Add(*phi_terms(X, y, accuracy))


def explicit_total_terms(X, y, accuracy):
    """The allocation function summed over the ``S * A`` pairs, term by term.

    .. math::
        N(X, y) = S A \\, \\phi(X, y)

    (no rounding up to integers).

    Parameters
    ----------
    X, y : sympy.Expr or number
        The arguments of :math:`\\phi` (``X = Delta``; ``y = c_min`` for
        Alg. 1, ``nu`` for Alg. 3).
    accuracy : sympy.Expr or number
        The accuracy SEARCH runs at (``eps``, or ``eps / 2`` in Alg. 3).

    Returns
    -------
    tuple of 3 sympy.Expr
    """
    return tuple(S * A * t for t in phi_terms(X, y, accuracy))


NU = eps / (2 * theta * D_hat)
"""The cost perturbation of Alg. 3, :math:`\\nu = \\epsilon / (2 \\theta \\hat D)`."""

D_HAT_UPPER = (1 + 2 * eps * (1 + eps)) * (1 + eps) * D
"""Lemma 9's upper bound on the diameter estimate run at accuracy ``eps``:
:math:`\\hat D \\le (1 + 2\\epsilon(1+\\epsilon))(1+\\epsilon) D`."""

EXPLICIT_CMIN = Bound(
    "explicit1",
    "Explicit total of Alg. 1 (S A phi(Delta, c_min))",
    "explicit",
    explicit_total_terms(Delta, cmin, eps),
)
"""Calls of Alg. 1 up to the round with guess ``Delta``: every pair holds
:math:`\\phi(\\Delta, c_{\\min})` samples at accuracy ``eps``; the final guess
satisfies ``Delta <= 2 B`` (:func:`final_delta`)."""

EXPLICIT_THETA = Bound(
    "explicit3",
    "Explicit total of Alg. 3's SEARCH (S A phi(Delta, nu), accuracy eps/2)",
    "explicit",
    explicit_total_terms(Delta, NU, eps / 2),
)
"""Calls of SEARCH inside Alg. 3 up to the round with guess ``Delta``:
:math:`S A \\, \\phi(\\Delta, \\nu)` at accuracy ``eps / 2`` with
:math:`\\nu = \\epsilon/(2\\theta\\hat D)` (reading notes: App. E applies Thm. 1
to the perturbed costs at accuracy ``eps / 2``). SEARCH's actual ``y`` is
:math:`\\max(c_{\\min}, \\nu) \\ge \\nu`, and :math:`\\phi` decreases in ``y``, so
this is an upper bound. The diameter subroutine's own samples are not included.
"""

BOUNDS = {
    bound.key: bound
    for bound in (
        THM1,
        SIMULATION_CMIN,
        LOWER_BOUND,
        EXPLICIT_CMIN,
        THM2,
        SIMULATION_THETA,
        DIAMETER,
        EXPLICIT_THETA,
    )
}
"""Every bound by key, the ``c_min > 0`` family first."""


def final_delta(B_value):
    """The largest guess ``Delta`` SEARCH can stop at when the values lie in ``[0, B]``.

    SEARCH doubles ``Delta`` from 1 and stops once :math:`\\|\\tilde v\\|_\\infty
    \\le \\Delta`; optimism gives :math:`\\|\\tilde v\\|_\\infty \\le B`, so it stops
    at the latest at the first power of two that is ``>= B`` (and ``>= 1``):

    .. math::
        \\Delta_{\\mathrm{final}} \\le \\max\\big(1, 2^{\\lceil \\log_2 B \\rceil}\\big) < 2 B
        \\quad (B > 1).

    Parameters
    ----------
    B_value : positive real number or sympy.Expr

    Returns
    -------
    int or sympy.Expr
        An exact integer for a number (no floating-point logarithm), a sympy
        expression otherwise.
    """
    if isinstance(B_value, numbers.Real):
        mantissa, exponent = math.frexp(B_value)
        power = exponent - 1 if mantissa == 0.5 else exponent
        return 2 ** max(power, 0)
    return sp.Max(1, 2 ** sp.ceiling(sp.log(B_value, 2)))
