"""The scalar checks of the calculator, and its error class.

``bounds`` stands alone: it imports neither ``reference`` nor ``fast``, so
``import bounds`` costs sympy and scipy only. Its arguments are scalars, so
its checks are a real number in an interval, an integer with a floor, and the keyword
arguments a calculator is given.
"""

import inspect
import math
import numbers

__all__ = ["ParameterError", "real", "integer", "exact_params"]


class ParameterError(ValueError):
    """A parameter of a bound is missing, out of its domain, or unused.

    The message names the argument, the expected form and what was given.
    """


def real(name, value, low=None, high=None, low_open=False, high_open=False):
    """``value`` as a float, after checking it is a finite real in the interval.

    Parameters
    ----------
    name : str
        Argument name for the message.
    value : real number
        ``bool``, NaN and infinities are refused.
    low, high : float or None
        End points (``None``: unbounded).
    low_open, high_open : bool
        Exclude the end point.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        "`name` must lie in (low, high]; got value." and the like.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"`{name}` must be a real number; got {value!r}.")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf if value > 0 else -math.inf
    above = low is None or (x > low if low_open else x >= low)
    below = high is None or (x < high if high_open else x <= high)
    if not (math.isfinite(x) and above and below):
        left = "(" if low_open or low is None else "["
        right = ")" if high_open or high is None else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ParameterError(f"`{name}` must lie in {left}{lo}, {hi}{right}; got {value!r}.")
    return x


def integer(name, value, low):
    """``value`` as an int, after checking it is an integer ``>= low`` (not a bool or float).

    Raises
    ------
    ParameterError
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"`{name}` must be an integer; got {value!r}.")
    if value < low:
        raise ParameterError(f"`{name}` must be an integer >= {low}; got {value!r}.")
    return int(value)


def exact_params(what, function, params, but=()):
    """``params`` if they are exactly the parameters of ``function`` it needs (all its required
    ones but those of ``but``) or accepts, else a :class:`ParameterError` naming ``what``."""
    accepted = inspect.signature(function).parameters
    required = [p for p, v in accepted.items() if v.default is v.empty and p not in but]
    for problem, names in (("needs", [p for p in required if p not in params]),
                           ("has no parameter", [p for p in params if p not in accepted])):
        if names:
            raise ParameterError(f"{what} {problem} {', '.join(map(repr, names))}; give every "
                                 f"parameter of its calculator but {', '.join(but)}.")
    return params
