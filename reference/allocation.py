"""The allocation function phi of eq. 6 and the top-up to its Gamma_hat fixpoint."""

import math
import sys
from decimal import Decimal

from ._checks import check_int, check_real
from .errors import TooLargeError

__all__ = ["allocation_function", "top_up_to_fixpoint"]


def allocation_function(X, y, eps, delta, n_states, n_actions, Gamma_hat, alpha=1.0):
    r"""Samples per pair prescribed by the allocation function (eq. 6).

    Parameters
    ----------
    X : float > 0
        Range guess (``Delta`` in SEARCH, Alg. 2).
    y : float > 0
        Minimum cost (``iota`` in SEARCH).
    eps : float > 0
        Accuracy.
    delta : float in (0, 1)
        Confidence level.
    n_states, n_actions : int >= 1
        ``S`` (non-goal states) and ``A``.
    Gamma_hat : int in 0..S+1
        Largest empirical support ``G = Gamma_hat`` of the current samples.
    alpha : float > 0, default 1.0
        The numerical constant the paper leaves unspecified (docs/semantics.md:
        a parameter with default 1).

    Returns
    -------
    float
        .. math::

            \phi(X, y) = \alpha \Big( \frac{X^3 G}{y \epsilon^2} l_1
            + \frac{X^2 S}{y \epsilon} l_1 + \frac{X^2 G}{y^2} l_2^2 \Big),\quad
            l_1 = \log\frac{X S A}{y \epsilon \delta},\quad
            l_2 = \log\frac{X S A}{y \delta}

        with natural logarithms. Callers use ``ceil(phi)``.

    Raises
    ------
    ParameterError
        On an argument out of range.
    TooLargeError
        If ``phi`` overflows float64 (far more samples per pair than any
        run can count); tiny ``y``, ``eps`` or ``delta`` whose products
        underflow are computed in wider precision, never divided by zero.

    See Also
    --------
    top_up_to_fixpoint : samples every pair up to ``ceil(phi)``.
    bounds.phi : the same function in sympy.
    search : Alg. 2, its caller.

    Examples
    --------
    With ``X = y = eps = S = A = G = 1`` and ``delta = 1/2``, ``l_1 = l_2 = log 2``
    and ``phi = 2 log 2 + (log 2)^2``:

    >>> round(allocation_function(1.0, 1.0, 1.0, 0.5, 1, 1, 1), 6)
    1.866747
    >>> import math; round(2 * math.log(2) + math.log(2) ** 2, 6)
    1.866747
    """
    return _phi(*_checked(X, y, eps, delta, n_states, n_actions, Gamma_hat, alpha))


def _checked(X, y, eps, delta, n_states, n_actions, Gamma_hat, alpha):
    """The arguments of :func:`allocation_function`, checked, as floats and ints."""
    return (
        check_real("X", X, 0.0, None, low_open=True),
        check_real("y", y, 0.0, None, low_open=True),
        check_real("eps", eps, 0.0, None, low_open=True),
        check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True),
        check_int("n_states", n_states, low=1),
        check_int("n_actions", n_actions, low=1),
        check_int("Gamma_hat", Gamma_hat, low=0),
        check_real("alpha", alpha, 0.0, None, low_open=True),
    )


def _phi(X, y, eps, delta, S, A, G, alpha):
    """:func:`allocation_function` of checked arguments (:func:`_checked`).

    Computed in float64 when every quotient's denominator is a normal float and
    nothing overflows; otherwise (a subnormal or underflowing ``y``, ``eps`` or
    ``delta``, a huge ``X`` or ``alpha``) in :class:`decimal.Decimal`, whose
    exponent range holds every such term (to 28 digits), so that a finite
    value is returned and an infinite one is refused.
    """
    try:
        denominators = (y * eps * delta, y * delta, y * eps**2, y * eps, y**2)
        if min(denominators) >= sys.float_info.min:
            l1 = math.log(X * S * A / (y * eps * delta))
            l2 = math.log(X * S * A / (y * delta))
            phi = alpha * (
                X**3 * G / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1
                + X**2 * G / y**2 * l2**2
            )
            if math.isfinite(phi):
                return phi
    except OverflowError:
        pass
    x, c, e, d, k = (Decimal(v) for v in (X, y, eps, delta, alpha))
    l1 = (x * S * A / (c * e * d)).ln()
    l2 = (x * S * A / (c * d)).ln()
    phi = float(k * (x**3 * G / (c * e**2) * l1 + x**2 * S / (c * e) * l1
                     + x**2 * G / c**2 * l2**2))
    if not math.isfinite(phi):
        raise TooLargeError(
            f"the allocation phi(X, y) overflows float64 (X = {X:.3g}, y = {y:.3g}, `eps` = "
            f"{eps:.3g}, `delta` = {delta:.3g}, `alpha` = {alpha:.3g}): more samples per pair "
            "than any run can count (2^63 - 1); use a larger `eps`, `delta` or `c_min`, or a "
            "smaller `alpha`."
        )
    return phi


def top_up_to_fixpoint(model, store, rng, X, y, eps, delta, alpha=1.0):
    """Top every pair up to ``ceil(phi(X, y))`` samples at the ``Gamma_hat`` fixpoint.

    ``phi`` depends on ``Gamma_hat``, which depends on the samples
    (docs/semantics.md, "Allocation function"): compute the target with the
    current ``Gamma_hat``, top up every pair (in order ``(s, a)``), recompute,
    and repeat until every pair has at least the target. The arguments are
    checked once, as :func:`allocation_function` checks them (SEARCH, whose
    public caller checked them, calls :func:`_top_up_to_fixpoint`). This
    terminates because ``Gamma_hat`` never decreases and is at most ``S + 1``.

    Parameters
    ----------
    model : GenerativeModel
        Source of the samples.
    store : SampleStore
        Where they go.
    rng : numpy.random.Generator
        Randomness passed to ``model.sample``.
    X, y, eps, delta, alpha : float
        As in :func:`allocation_function`.

    Returns
    -------
    target : int
        The final ``ceil(phi)``: every pair has at least this many samples.
    Gamma_hat : int
        The ``Gamma_hat`` it was computed with.

    See Also
    --------
    allocation_function : the target per pair.

    Examples
    --------
    >>> import numpy as np
    >>> from reference import SampleStore, TabularGenerativeModel, chain
    >>> model, store = TabularGenerativeModel(chain(3)), SampleStore(3, 2)
    >>> target, Gamma_hat = top_up_to_fixpoint(model, store, np.random.default_rng(0),
    ...                                        1.0, 1.0, 1.0, 0.5)
    >>> target == int(np.ceil(allocation_function(1.0, 1.0, 1.0, 0.5, 3, 2, Gamma_hat)))
    True
    >>> bool((store.n_pair >= target).all()), model.n_calls == 6 * target
    (True, True)
    """
    X, y, eps, delta, _, _, _, alpha = _checked(X, y, eps, delta, store.n_states,
                                                store.n_actions, store.Gamma_hat, alpha)
    return _top_up_to_fixpoint(model, store, rng, X, y, eps, delta, alpha)


def _top_up_to_fixpoint(model, store, rng, X, y, eps, delta, alpha):
    """:func:`top_up_to_fixpoint` of checked arguments (floats: ``X, y, eps, alpha > 0``,
    ``delta`` in ``(0, 1)``), which it trusts."""
    S, A = store.n_states, store.n_actions
    while True:
        Gamma_hat = store.Gamma_hat
        target = math.ceil(_phi(X, y, eps, delta, S, A, Gamma_hat, alpha))
        if store.n_pair.min() >= target:
            return target, Gamma_hat
        store.top_up(model, target, rng)
