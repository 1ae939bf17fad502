"""The paper's sample-complexity bounds as sympy expressions, one per result.

Every bound is a :class:`Bound`: its terms (a tuple of sympy expressions) and
their sum. The :math:`\\tilde O` bounds (Thms. 1-2, eqs. 4-5, Lemma 9) and the
:math:`\\Omega` lower bound are written as the paper states them: each term
with coefficient 1 and no logarithm, since :math:`\\tilde O` hides absolute
constants and polylogarithmic factors. Their numbers are therefore orders of
magnitude, not certified counts. The explicit totals keep the logarithms and
the constant ``alpha`` of the allocation function (eq. 6): they bound the calls
the algorithms make, given their final doubling guesses (:data:`EXPLICIT_CMIN`
leaves out the rounding of each pair up to an integer).

Where ``docs/semantics.md`` and the paper differ, that document is implemented.
"""

from dataclasses import dataclass
import math
import numbers

import sympy as sp

from ._checks import real
from .symbols import A, B, D, D_hat, Delta, Gamma, S, W, alpha, cmin, delta, eps, theta

__all__ = [
    "Bound", "THM1", "THM2", "SIMULATION_CMIN", "SIMULATION_THETA", "LOWER_BOUND",
    "THM2_PROVED", "DIAMETER", "EXPLICIT_CMIN", "EXPLICIT_DIAMETER", "EXPLICIT_THETA",
    "BOUNDS", "NU", "NU_LARGEST", "D_HAT_UPPER", "phi_terms", "phi", "explicit_total_terms",
    "diameter_samples", "diameter_total_terms", "perturbed_range", "proved_range",
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
    latex_title : str
        The same in LaTeX text mode (math in ``$...$``), in the paper's notation.
    kind : str
        ``"O~"`` (upper bound up to constants and logs), ``"Omega"`` (lower
        bound up to constants) or ``"explicit"`` (with logs and ``alpha``).
    terms : tuple of sympy.Expr
        The additive terms, in the paper's order.
    """

    key: str
    title: str
    latex_title: str
    kind: str
    terms: tuple

    @property
    def total(self):
        """The sum of :attr:`terms` (a sympy expression)."""
        return sp.Add(*self.terms)


THM1 = Bound(
    "thm1",
    "Thm. 1 (Alg. 1, c_min > 0)",
    r"Thm.~1 (Alg.~1, $c_{\min} > 0$)",
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
    "Thm. 2 as printed (Alg. 3, theta >= 1)",
    r"Thm.~2 as printed (Alg.~3, $\theta \ge 1$)",
    "O~",
    (
        theta * D * B**3 * Gamma * S * A / eps**3,
        theta * D * B * S**2 * A / eps**2,
        theta**2 * D**2 * B**2 * Gamma * S * A / eps**2,
    ),
)
"""Thm. 2 as the paper prints it:

.. math::
    \\tilde O\\Big(\\frac{\\theta D B_\\star^3 \\Gamma S A}{\\epsilon^3}
    + \\frac{\\theta D B_\\star S^2 A}{\\epsilon^2}
    + \\frac{\\theta^2 D^2 B_\\star^2 \\Gamma S A}{\\epsilon^2}\\Big).

Its middle term is a factor ``B`` below what the proof gives, and it drops
the diameter subroutine (docs/semantics.md, "Errata", 4): :data:`THM2_PROVED`.
"""

THM2_PROVED = Bound(
    "thm2_proved",
    "Thm. 2 as proved (Alg. 3, theta >= 1)",
    r"Thm.~2 as proved (Alg.~3, $\theta \ge 1$)",
    "O~",
    (
        THM2.terms[0],
        theta * D * B**2 * S**2 * A / eps**2,
        THM2.terms[2],
        D**2 * Gamma * S * A / eps**2,
        D * S**2 * A / eps,
    ),
)
"""Thm. 2 as App. E proves it (docs/semantics.md, "Errata", 4): Thm. 1 with
``c_min`` replaced by :math:`\\nu = \\epsilon / (2 \\theta \\hat D)` at accuracy
``eps / 2``, plus the diameter subroutine (Lemma 9):

.. math::
    \\tilde O\\Big(\\frac{\\theta D B^3 \\Gamma S A}{\\epsilon^3}
    + \\frac{\\theta D B^2 S^2 A}{\\epsilon^2}
    + \\frac{\\theta^2 D^2 B^2 \\Gamma S A}{\\epsilon^2}
    + \\frac{D^2 \\Gamma S A}{\\epsilon^2} + \\frac{D S^2 A}{\\epsilon}\\Big).

The last two terms are Lemma 9's; the paper calls them subsumed, which holds
only when :math:`\\theta B \\ge 1` and :math:`\\theta B^2 \\ge \\epsilon`. Here ``B``
is the range of the problem SEARCH solves, with costs :math:`\\max(c, \\nu)`;
it equals :math:`B_\\star` when :math:`c_{\\min} \\ge \\nu` and lies between
:math:`B_\\star` and ``D`` otherwise.
"""

SIMULATION_CMIN = Bound(
    "eq4",
    "Eq. 4 (simulation lemma, c_min > 0)",
    r"Eq.~4 (simulation lemma, $c_{\min} > 0$)",
    "O~",
    (
        B**4 * Gamma * S * A / (cmin**2 * eps**2),
        B**2 * S**2 * A / (cmin * eps),
    ),
)
"""Eq. 4, the simulation-lemma route for ``c_min > 0`` (Lemma 2 holds under
:math:`\\eta \\|V'\\| \\le c_{\\min}/2`, not :math:`2 c_{\\min}` as printed: a constant
only, docs/semantics.md, "Errata", 2):

.. math::
    \\tilde O\\Big(\\frac{B^4 \\Gamma S A}{c_{\\min}^2\\epsilon^2}
    + \\frac{B^2 S^2 A}{c_{\\min}\\epsilon}\\Big).
"""

SIMULATION_THETA = Bound(
    "eq5",
    "Eq. 5 (simulation lemma, theta >= 1)",
    r"Eq.~5 (simulation lemma, $\theta \ge 1$)",
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
    "Lower bound (Sec. 5, from discounted MDPs)",
    r"Lower bound (Sec.~5, from discounted MDPs)",
    "Omega",
    (S * A * B**3 / eps**2,),
)
"""Sec. 5: the discounted lower bound :math:`\\Omega(S A / ((1-\\gamma)^3 \\epsilon^2))`
carries over through footnote 1 to SSPs with costs in ``[0, 1]`` (the rewards ``r``
become costs ``1 - r``), whose range is :math:`B_\\star \\le 1/(1-\\gamma)`:

.. math::
    \\Omega\\Big(\\frac{S A B_\\star^3}{\\epsilon^2}\\Big).

Not with unit costs, as the paper says: there every policy of the converted
problem has the value :math:`1/(1-\\gamma)`, and no sample is needed
(docs/semantics.md, "Errata", 10).
"""

DIAMETER = Bound(
    "lemma9",
    "Lemma 9 (diameter subroutine, Alg. 4)",
    r"Lemma~9 (diameter subroutine, Alg.~4)",
    "O~",
    (
        D**2 * Gamma * S * A / eps**2,
        D * S**2 * A / eps,
    ),
)
"""Lemma 9, samples used by the diameter subroutine (Alg. 4), in at most
:math:`\\lceil \\log_2 D \\rceil + 1` rounds (docs/semantics.md, "Errata", 3):

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

    Raises
    ------
    ParameterError
        If ``X``, ``y`` or ``accuracy`` is neither a sympy expression nor a
        finite real number.

    See Also
    --------
    phi : their sum.
    reference.allocation_function : the same function on floats, as the algorithms run it.

    Notes
    -----
    Powers of plain numbers are taken in float64 as given; where one would overflow (a huge ``X``)
    or divide by zero, the numbers are taken as sympy numbers instead, whose exponents do not
    overflow.

    Examples
    --------
    >>> [term.subs({S: 1, A: 1, Gamma: 1, alpha: 1, delta: sp.S.Half}) for term in phi_terms(1, 1, 1)]
    [log(2), log(2), log(2)**2]
    """
    for name, value in (("X", X), ("y", y), ("accuracy", accuracy)):
        if not isinstance(value, sp.Basic):
            real(name, value)
    try:
        return _phi_terms(X, y, accuracy)
    except (OverflowError, ZeroDivisionError):
        return _phi_terms(*(sp.sympify(v) for v in (X, y, accuracy)))


def _phi_terms(X, y, accuracy):
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

    Examples
    --------
    >>> phi(1, 1, 1).subs({S: 1, A: 1, Gamma: 1, alpha: 1, delta: sp.S.Half})  # reference.allocation_function
    log(2)**2 + 2*log(2)
    """
    return sp.Add(*phi_terms(X, y, accuracy))


def explicit_total_terms(X, y, accuracy):
    r"""The allocation function summed over the ``S * A`` pairs, term by term.

    .. math::
        N(X, y) = S A \, \phi(X, y)

    (no rounding up to integers).

    Parameters
    ----------
    X, y : sympy.Expr or number
        The arguments of :math:`\phi` (``X = Delta``; ``y = c_min`` for
        Alg. 1, :math:`\max(c_{\min}, \nu)` for Alg. 3).
    accuracy : sympy.Expr or number
        The accuracy SEARCH runs at (``eps``, or ``eps / 2`` in Alg. 3).

    Returns
    -------
    tuple of 3 sympy.Expr

    Examples
    --------
    >>> sp.simplify(sp.Add(*explicit_total_terms(2, 1, eps)) - S * A * phi(2, 1, eps))
    0
    """
    return tuple(S * A * t for t in phi_terms(X, y, accuracy))


def diameter_samples(W_value, accuracy=eps):
    r"""Samples per pair that end Alg. 4's sampling at the guess ``W``, and their constant.

    The derivation is docs/semantics.md, "Errata", 7.

    Alg. 4 samples a pair until :math:`\sum_{s'} \beta(s, a, s') \le \eta / 2`
    with :math:`\eta = \epsilon / W`. By Cauchy-Schwarz over the empirical
    support (at most :math:`\Gamma` next states),

    .. math::
        \sum_{s'} \beta(s, a, s') \le 4 \sqrt{\frac{\Gamma L}{N}}
        + \frac{28 (S + 1) L}{N}, \qquad L = \log\frac{S A N}{\delta},

    which is at most :math:`\eta / 2` as soon as :math:`N \ge K \log(S A N / \delta)`
    with

    .. math::
        K = \frac{256 \Gamma W^2}{\epsilon^2} + \frac{112 (S + 1) W}{\epsilon},

    and that holds for every :math:`N \ge N_4 = 2 K \log(2 S A K / \delta)`
    (at :math:`N_4`, :math:`\log(S A N_4 / \delta) = \log(2 S A K/\delta)
    + \log\log(2 S A K/\delta) \le 2 \log(2 S A K / \delta)`, and
    :math:`N - K \log(S A N/\delta)` increases for :math:`N \ge K`).

    Parameters
    ----------
    W_value : sympy.Expr or number
        The guess ``W`` (Alg. 4's last one bounds every round's sampling).
    accuracy : sympy.Expr or number, optional
        The accuracy Alg. 4 runs at (default the symbol ``eps``).

    Returns
    -------
    N4 : sympy.Expr
        :math:`N_4 = 2 K \log(2 S A K / \delta)`.
    K : sympy.Expr
        The constant ``K`` above.

    See Also
    --------
    diameter_total_terms : the calls of Alg. 4 over every pair.
    reference.estimate_diameter : Alg. 4.

    Examples
    --------
    >>> diameter_samples(2, 1)[1].subs({Gamma: 1, S: 1})  # K = 256 * 4 + 112 * 2 * 2
    1472
    """
    K = 256 * Gamma * W_value**2 / accuracy**2 + 112 * (S + 1) * W_value / accuracy
    return 2 * K * sp.log(2 * S * A * K / delta), K


def diameter_total_terms(W_value, accuracy=eps):
    r"""Alg. 4's calls summed over the ``S * A`` pairs, up to the guess ``W``.

    A failing pair doubles its count (1, 2, 4, ...), and every power of two
    at least :math:`N_4` (:func:`diameter_samples`) passes every round's test
    up to ``W``, so each pair ends with fewer than :math:`2 N_4` samples:

    .. math::
        N_{\mathrm{Alg.\,4}} \le 2 S A N_4 = 4 S A K \log\frac{2 S A K}{\delta}
        = S A \Big(\frac{1024 \Gamma W^2}{\epsilon^2}
        + \frac{448 (S+1) W}{\epsilon}\Big) \log\frac{2 S A K}{\delta}.

    Parameters
    ----------
    W_value : sympy.Expr or number
        Alg. 4's last guess ``W`` (at most the first power of two at least
        ``D``, under the event of Lemma 5).
    accuracy : sympy.Expr or number, optional
        Alg. 4's accuracy (default the symbol ``eps``).

    Returns
    -------
    tuple of 2 sympy.Expr

    Examples
    --------
    >>> sp.simplify(sp.Add(*diameter_total_terms(2, 1)) / diameter_samples(2, 1)[0])
    2*A*S
    """
    _, K = diameter_samples(W_value, accuracy)
    log_term = sp.log(2 * S * A * K / delta)
    return (
        S * A * 1024 * Gamma * W_value**2 / accuracy**2 * log_term,
        S * A * 448 * (S + 1) * W_value / accuracy * log_term,
    )


NU = eps / (2 * theta * D_hat)
"""The cost perturbation of Alg. 3, :math:`\\nu = \\epsilon / (2 \\theta \\hat D)`."""

NU_LARGEST = eps / (2 * theta * D)
"""The largest perturbation a run can have under Lemma 9's lower side ``D <= D_hat``:
:math:`\\nu \\le \\epsilon / (2 \\theta D)`."""

D_HAT_UPPER = (1 + 2 * eps * (1 + eps)) * (1 + eps) * D
"""Lemma 9's upper bound on the diameter estimate run at accuracy ``eps``:
:math:`\\hat D \\le (1 + 2\\epsilon(1+\\epsilon))(1+\\epsilon) D`, with the proof's
:math:`\\hat D` (docs/semantics.md, "Errata", 1; the lower side :math:`D \\le \\hat D` is
proved for :math:`\\epsilon \\le 0.366`, "Errata", 2)."""

EXPLICIT_CMIN = Bound(
    "explicit1",
    "Explicit total of Alg. 1 (S A phi(Delta, c_min))",
    r"Explicit total of Alg.~1, $S A\,\phi(\Delta, c_{\min})$",
    "explicit",
    explicit_total_terms(Delta, cmin, eps),
)
"""Calls of Alg. 1 up to the round with guess ``Delta``: every pair holds
:math:`\\lceil\\phi(\\Delta, c_{\\min})\\rceil` samples at accuracy ``eps`` (this
total leaves out the rounding up, at most ``S A`` calls); the final guess is at
most :func:`final_delta` of :math:`B_\\star` under the event of Lemma 5."""

EXPLICIT_DIAMETER = Bound(
    "explicit4",
    "Explicit total of Alg. 4 (diameter subroutine, 2 S A N4(W))",
    r"Explicit total of Alg.~4, $2 S A N_4(W)$",
    "explicit",
    diameter_total_terms(W),
)
"""Calls of Alg. 4 up to the round with guess ``W`` (:func:`diameter_total_terms`),
rounding included; the final guess is at most :func:`final_delta` of ``D``
under the event of Lemma 5."""

EXPLICIT_THETA = Bound(
    "explicit3",
    "Explicit total of Alg. 3 (Alg. 4 + S A phi(Delta, max(c_min, nu)), accuracy eps/2)",
    r"Explicit total of Alg.~3, Alg.~4 $+\ S A\,\phi(\Delta, \max(c_{\min}, \nu))$",
    "explicit",
    diameter_total_terms(W) + explicit_total_terms(Delta, sp.Max(cmin, NU), eps / 2),
)
"""Calls of Alg. 3: its diameter subroutine at accuracy ``eps`` up to the
guess ``W`` (:data:`EXPLICIT_DIAMETER`), then SEARCH on the costs
:math:`\\max(c, \\nu)`, whose minimum is :math:`\\max(c_{\\min}, \\nu)`, at
accuracy ``eps / 2`` up to the guess ``Delta``:

.. math::
    N_{\\mathrm{Alg.\\,4}}(W) + S A \\, \\phi\\big(\\Delta, \\max(c_{\\min}, \\nu)\\big),
    \\qquad \\nu = \\frac{\\epsilon}{2 \\theta \\hat D}.

The two phases share one sample store, so a pair ends with the larger of its
two counts; the sum bounds it, the rounding up of :math:`\\phi` included
(every pair holds at least one sample from Alg. 4). Under the event of Lemma 5
``W`` is at most :func:`final_delta` of ``D``, and ``Delta`` at most
:func:`final_delta` of the range of the perturbed problem
(:func:`perturbed_range`). docs/semantics.md, "Errata", 4 and 7.
"""

BOUNDS = {
    bound.key: bound
    for bound in (
        THM1,
        SIMULATION_CMIN,
        LOWER_BOUND,
        EXPLICIT_CMIN,
        THM2,
        THM2_PROVED,
        SIMULATION_THETA,
        DIAMETER,
        EXPLICIT_DIAMETER,
        EXPLICIT_THETA,
    )
}
"""Every bound by key, the ``c_min > 0`` family first."""


def perturbed_range(D_value, B_value=None, cmin_value=None, nu=NU):
    r"""An upper bound on the optimal values of the problem SEARCH solves inside Alg. 3.

    SEARCH runs on the costs :math:`c_\nu = \max(c, \nu)`. With
    :math:`\pi_D` a policy reaching the goal in :math:`D_s` expected steps,
    :math:`V^\star_\nu(s) \le V^{\pi_D}_\nu(s) \le D_s \le D` since
    :math:`c_\nu \le 1`. When :math:`c_{\min} > 0`,
    :math:`c_\nu \le \max(1, \nu / c_{\min})\, c`, so
    :math:`V^\star_\nu \le \max(1, \nu / c_{\min}) B_\star`:

    .. math::
        B_\nu \le \min\Big(D, \max\big(1, \tfrac{\nu}{c_{\min}}\big) B_\star\Big).

    With :math:`c_{\min} = 0` nothing better than ``D`` holds: on
    ``theta_example`` :math:`B_\star = 0` while :math:`B_\nu = \min(1/2, 20 \nu) > 0`.

    Parameters
    ----------
    D_value : sympy.Expr or number
        The SSP-diameter.
    B_value, cmin_value : sympy.Expr or number, optional
        :math:`B_\star` and :math:`c_{\min} > 0`; both or neither.
    nu : sympy.Expr or number, optional
        The perturbation (default :data:`NU`).

    Returns
    -------
    sympy.Expr or number

    Examples
    --------
    >>> float(perturbed_range(10, 2, 0.5, nu=1)), perturbed_range(10)  # min(10, 2 * 2), D
    (4.0, 10)
    """
    if B_value is None:
        return D_value
    return sp.Min(D_value, sp.Max(1, nu / cmin_value) * B_value)


def proved_range(D_value, B_value=None, cmin_value=None, nu=NU_LARGEST):
    r"""The range Thm. 2's proof works with: :math:`\max(1, B_\nu)`, by :func:`perturbed_range`.

    App. E applies Thm. 1 to the costs :math:`\max(c, \nu)`, whose optimal values
    range up to :math:`B_\nu`, and SEARCH's guess never falls below 1, so Thm. 1's
    :math:`B` becomes :math:`\max(1, B_\nu)`, not :math:`B_\star` (which is 0 on
    zero-cost problems). With :math:`\nu \le \epsilon / (2 \theta D)`
    (:data:`NU_LARGEST`, from :math:`\hat D \ge D`):

    .. math::
        R = \max\Big(1, \min\Big(D, \max\big(1, \tfrac{\nu}{c_{\min}}\big)
        B_\star\Big)\Big), \qquad R = D \text{ when } c_{\min} = 0.

    Parameters
    ----------
    D_value : sympy.Expr or number
        The SSP-diameter (at least 1).
    B_value, cmin_value : sympy.Expr or number, optional
        :math:`B_\star` and :math:`c_{\min} > 0`; both or neither.
    nu : sympy.Expr or number, optional
        An upper bound on the perturbation (default :data:`NU_LARGEST`).

    Returns
    -------
    sympy.Expr or number

    Examples
    --------
    >>> proved_range(12), proved_range(12, 0, 0.5, 0.01), proved_range(12, 3, 0.001, 0.01)
    (12, 1, 12)
    """
    if B_value is None:
        return D_value
    return sp.Max(1, perturbed_range(D_value, B_value, cmin_value, nu))


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

    Examples
    --------
    >>> final_delta(0.5), final_delta(3), final_delta(4)
    (1, 4, 4)
    """
    if isinstance(B_value, numbers.Real):
        mantissa, exponent = math.frexp(B_value)
        power = exponent - 1 if mantissa == 0.5 else exponent
        return 2 ** max(power, 0)
    return sp.Max(1, 2 ** sp.ceiling(sp.log(B_value, 2)))
