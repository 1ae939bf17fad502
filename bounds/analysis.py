"""Comparing bounds: growth in ``1/eps``, ratios, the dominant term, O~ reduction, LaTeX.

Every function accepts a :class:`~bounds.expressions.Bound`, a sequence of
terms, or a single sympy expression (split into its additive terms after
expansion), and returns sympy objects.
"""

import sympy as sp

from ._checks import ParameterError

from .expressions import Bound
from .symbols import B, D_hat, alpha, cmin, eps

__all__ = [
    "terms_of",
    "drop_logs",
    "o_tilde_terms",
    "eps_exponent",
    "leading_exponent",
    "leading_terms",
    "ratio",
    "dominant_term",
    "to_latex",
    "LATEX_NAMES",
]


def terms_of(bound):
    """The additive terms of ``bound`` as a tuple of sympy expressions.

    An expression is expanded without splitting logarithms (splitting
    ``log(X S A / (y eps delta))`` into a sum of logs would make
    :func:`drop_logs` cancel them).

    Parameters
    ----------
    bound : Bound, sequence of sympy.Expr, or sympy.Expr
        A bound, its terms, or an expression.

    Returns
    -------
    tuple of sympy.Expr
        :attr:`Bound.terms`, the given terms, or the summands of the expanded
        expression.

    Examples
    --------
    >>> from bounds import THM1, S, eps
    >>> terms_of(THM1) == THM1.terms
    True
    >>> set(terms_of(S * (S + 1 / eps))) == {S**2, S / eps}
    True
    """
    if isinstance(bound, Bound):
        return bound.terms
    if isinstance(bound, (list, tuple)):
        return tuple(sp.sympify(t) for t in bound)
    return sp.Add.make_args(sp.expand(sp.sympify(bound), log=False))


def drop_logs(expr):
    """Replace every logarithm in ``expr`` by 1 (what :math:`\\tilde O` hides).

    Parameters
    ----------
    expr : sympy.Expr or number
        The expression.

    Returns
    -------
    sympy.Expr
        ``expr`` with each :math:`\\log(\\cdot)` replaced by 1.

    Examples
    --------
    >>> import sympy
    >>> from bounds import A, S, delta, eps
    >>> drop_logs(S * sympy.log(S * A / delta) / eps**2)
    S/epsilon**2
    """
    return sp.sympify(expr).replace(sp.log, lambda *args: sp.Integer(1))


def o_tilde_terms(bound):
    """Reduce a bound to its :math:`\\tilde O` terms.

    Logarithms and ``alpha`` become 1, the sum is expanded, each term loses
    its numerical coefficient, and repeated terms are merged (first
    occurrence kept). ``o_tilde_terms(S * A * phi(B, cmin))`` gives Thm. 1's
    three terms.

    Parameters
    ----------
    bound : Bound, sequence of sympy.Expr, or sympy.Expr
        The bound to reduce (see :func:`terms_of`).

    Returns
    -------
    tuple of sympy.Expr

    Examples
    --------
    >>> from bounds import A, B, S, THM1, cmin, phi
    >>> set(o_tilde_terms(S * A * phi(B, cmin))) == set(THM1.terms)
    True
    """
    reduced = drop_logs(sp.Add(*terms_of(bound))).subs(alpha, 1)
    out = []
    for term in sp.Add.make_args(sp.expand(reduced)):
        stripped = term.as_coeff_Mul()[1]
        if stripped not in out:
            out.append(stripped)
    return tuple(out)


def eps_exponent(term, var=eps):
    """The power ``k`` of ``1/var`` in a monomial term ``c * var**(-k)``.

    Logarithms are dropped first (:func:`drop_logs`), so
    ``log(1/eps) / eps**2`` has exponent 2.

    Parameters
    ----------
    term : sympy.Expr
        A monomial in ``var``.
    var : sympy.Symbol, default eps
        The variable.

    Returns
    -------
    sympy.Rational
        ``k`` such that ``term = c * var**(-k)``.

    Raises
    ------
    ParameterError
        If ``term`` is not of the form ``c * var**p`` with ``c`` free of ``var``.

    Examples
    --------
    >>> import sympy
    >>> from bounds import S, eps
    >>> eps_exponent(sympy.log(1 / eps) / eps**2), eps_exponent(S / sympy.sqrt(eps))
    (2, 1/2)
    """
    coeff, power = drop_logs(term).as_coeff_exponent(var)
    if coeff.has(var):
        raise ParameterError(
            f"`term` must be a monomial c * {var}**p in {var}; got {sp.sstr(term)}."
        )
    return -power


def leading_exponent(bound, var=eps):
    """The largest power of ``1/var`` among the terms (logs dropped).

    Thm. 1 gives 2, Thm. 2 gives 3, eq. 5 gives 4.

    Parameters
    ----------
    bound : Bound, sequence of sympy.Expr, or sympy.Expr
        The bound (see :func:`terms_of`).
    var : sympy.Symbol, default eps
        The variable.

    Returns
    -------
    sympy.Rational

    Examples
    --------
    >>> from bounds import SIMULATION_THETA, THM1, THM2
    >>> leading_exponent(THM1), leading_exponent(THM2), leading_exponent(SIMULATION_THETA)
    (2, 3, 4)
    """
    return max(eps_exponent(t, var) for t in _monomials(bound))


def leading_terms(bound, var=eps):
    """The sum of the terms with the largest power of ``1/var`` (logs dropped).

    Parameters
    ----------
    bound : Bound, sequence of sympy.Expr, or sympy.Expr
        The bound (see :func:`terms_of`).
    var : sympy.Symbol, default eps
        The variable.

    Returns
    -------
    sympy.Expr

    Examples
    --------
    Thm. 1's first term is its only one in :math:`1/\\epsilon^2` (the others
    grow like :math:`1/\\epsilon` and 1):

    >>> from bounds import THM1
    >>> leading_terms(THM1) == THM1.terms[0]
    True
    """
    monomials = _monomials(bound)
    top = max(eps_exponent(t, var) for t in monomials)
    return sp.Add(*(t for t in monomials if eps_exponent(t, var) == top))


def ratio(numerator, denominator, leading=True, var=eps):
    """The simplified ratio of two bounds.

    With ``leading=True`` the ratio of their leading terms in ``1/var``
    (:func:`leading_terms`): eq. 4 over Thm. 1 gives ``B / c_min``. With
    ``leading=False`` the ratio of the complete sums, simplified.

    Parameters
    ----------
    numerator, denominator : Bound, sequence of sympy.Expr, or sympy.Expr
        The two bounds (see :func:`terms_of`).
    leading : bool, default True
        Compare the leading terms only.
    var : sympy.Symbol, default eps
        The variable whose growth defines "leading".

    Returns
    -------
    sympy.Expr

    Examples
    --------
    >>> from bounds import SIMULATION_CMIN, THM1
    >>> ratio(SIMULATION_CMIN, THM1)
    B/c_min
    """
    if leading:
        return sp.simplify(leading_terms(numerator, var) / leading_terms(denominator, var))
    total = sp.Add(*terms_of(numerator)) / sp.Add(*terms_of(denominator))
    return sp.simplify(total)


def dominant_term(bound, values):
    """The term with the largest value once ``values`` are substituted.

    Parameters
    ----------
    bound : Bound, sequence of sympy.Expr, or sympy.Expr
    values : dict
        Symbol -> number; after substitution every term must be a number.

    Returns
    -------
    sympy.Expr
        The (unsubstituted) dominant term; ties go to the first one.

    Raises
    ------
    ParameterError
        If a term still holds a free symbol after substitution.

    Examples
    --------
    With ``S = 10``, ``A = Gamma = 2`` and ``B = c_min = 1``, Thm. 1's terms
    are ``40 / eps**2``, ``200 / eps`` and ``40``: 4000, 2000 and 40 at
    ``eps = 0.1``, but 40, 200 and 40 at ``eps = 1``.

    >>> from bounds import A, B, Gamma, S, THM1, cmin, eps
    >>> values = {S: 10, A: 2, Gamma: 2, B: 1, cmin: 1}
    >>> dominant_term(THM1, {**values, eps: 0.1}) == THM1.terms[0]
    True
    >>> dominant_term(THM1, {**values, eps: 1}) == THM1.terms[1]
    True
    """
    terms = terms_of(bound)
    numbers = []
    for term in terms:
        value = term.subs(values)
        if value.free_symbols:
            missing = ", ".join(sorted(str(s) for s in value.free_symbols))
            raise ParameterError(
                f"`values` must give every symbol of the bound; missing {missing}."
            )
        numbers.append(float(value))
    return terms[max(range(len(terms)), key=lambda i: (numbers[i], -i))]


LATEX_NAMES = {
    B: r"B_\star",
    cmin: r"c_{\min}",
    D_hat: r"\hat D",
}
"""How :func:`to_latex` writes the symbols whose sympy names differ from the paper's."""


def to_latex(expr):
    r"""LaTeX of a sympy expression, of a :class:`Bound` (its sum) or of a number, in the paper's notation.

    :math:`B_\star`, :math:`c_{\min}`, :math:`\hat D`, :math:`\epsilon`,
    :math:`\Gamma`, :math:`\theta` (:data:`LATEX_NAMES`); math mode without
    delimiters.

    Parameters
    ----------
    expr : Bound, sympy.Expr or number
        What to typeset.

    Returns
    -------
    str

    Examples
    --------
    >>> from bounds import THM1
    >>> to_latex(THM1.terms[0])
    '\\frac{A B_\\star^{3} \\Gamma S}{c_{\\min} \\epsilon^{2}}'
    """
    if isinstance(expr, Bound):
        expr = expr.total
    return sp.latex(sp.sympify(expr), symbol_names=LATEX_NAMES)


def _monomials(bound):
    return sp.Add.make_args(sp.expand(drop_logs(sp.Add(*terms_of(bound)))))
