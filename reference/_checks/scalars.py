"""Checks of scalar arguments: reals, integers, seeds, call budgets; exact sums."""

import math
import numbers

import numpy as np

from ..errors import ParameterError, TooLargeError


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}"
    return repr(value)


def check_real(name, value, low=None, high=None, low_open=False, high_open=False,
               allow_inf=False):
    """Return ``value`` as a float after checking it lies in the stated interval.

    Parameters
    ----------
    name : str
        Argument name used in the message.
    value : real number
        The argument; ``bool`` and non-real values are refused, NaN always.
    low, high : float or None, default None
        End points; ``None`` means unbounded.
    low_open, high_open : bool, default False
        Exclude the end point.
    allow_inf : bool, default False
        Accept ``+inf`` when ``high`` is ``None`` (the interval is then
        shown as ``[low, inf]``). Infinities are refused otherwise.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        "``name`` must lie in (low, high]; got value." and the like.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"`{name}` must be a real number; got {_describe(value)}.")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf if value > 0 else -math.inf
    inside = math.isfinite(x) or (allow_inf and high is None and x == math.inf)
    if low is not None:
        inside = inside and (x > low if low_open else x >= low)
    if high is not None:
        inside = inside and (x < high if high_open else x <= high)
    if not inside or math.isnan(x):
        left = "(" if low_open or low is None else "["
        if high is None:
            right = "]" if allow_inf else ")"
        else:
            right = ")" if high_open else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ParameterError(f"`{name}` must lie in {left}{lo}, {hi}{right}; got {value!r}.")
    return x


def check_int(name, value, low=None):
    """Return ``value`` as an int after checking it is an integer ``>= low``.

    Parameters
    ----------
    name : str
        Argument name used in the message.
    value : int
        The argument (``bool`` and floats are refused, even integral ones).
    low : int or None, default None
        Smallest accepted value.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        If ``value`` is not an integer or is below ``low``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"`{name}` must be an integer; got {_describe(value)}.")
    if low is not None and value < low:
        raise ParameterError(f"`{name}` must be an integer >= {low}; got {value!r}.")
    return int(value)


def make_rng(seed):
    """Return a :class:`numpy.random.Generator` from any seed numpy accepts.

    Parameters
    ----------
    seed : None, int >= 0, sequence of int >= 0, numpy.random.SeedSequence, \
numpy.random.BitGenerator or numpy.random.Generator
        What :func:`numpy.random.default_rng` takes: ``None`` draws fresh
        entropy; an int (or a sequence of them) or a ``SeedSequence`` seeds a
        new ``PCG64``; a bit generator is wrapped and a Generator returned
        unchanged (their state is shared with the caller's, and advances).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ParameterError
        On a negative int, a bool, or anything else numpy does not take.

    Examples
    --------
    >>> a = make_rng(np.random.SeedSequence(7)).integers(100, size=3)
    >>> b = make_rng(7).integers(100, size=3)
    >>> bool((a == b).all())
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (np.random.SeedSequence, np.random.BitGenerator)) or seed is None:
        return np.random.default_rng(seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ParameterError(f"`seed` must be a non-negative integer; got {seed!r}.")
        return np.random.default_rng(int(seed))
    if not isinstance(seed, (bool, str, bytes, float)):
        try:
            return np.random.default_rng(seed)
        except (TypeError, ValueError):
            pass
    raise ParameterError(
        "`seed` must be what numpy.random.default_rng takes: None, a non-negative integer "
        "(or a sequence of them), a SeedSequence, a BitGenerator or a Generator; "
        f"got {seed!r} ({type(seed).__name__})."
    )


INT64_MAX = 2**63 - 1
"""Largest number of samples (or calls) a count can hold: counts are int64."""


def check_call_budget(made, more):
    """Refuse to draw ``more`` samples on top of ``made`` if the total overflows int64.

    Parameters
    ----------
    made : int
        Calls already made.
    more : int
        Calls about to be made.

    Returns
    -------
    int
        ``made + more``, at most ``2^63 - 1``.

    Raises
    ------
    TooLargeError
        If ``made + more > 2^63 - 1``, before any of them is drawn.
    """
    total = int(made) + int(more)
    if total > INT64_MAX:
        raise TooLargeError(
            f"drawing {int(more):.3e} more samples on top of the {int(made):.3e} calls made "
            f"would bring the run to {total:.3e} calls, above 2^63 - 1 = {INT64_MAX:.3e}, the "
            "most an int64 count holds; nothing was drawn. The run asks for more samples than "
            "can be counted: use a larger `eps`, a larger `c_min` or a smaller `alpha`."
        )
    return total


def exact_sum(values):
    """The exact sum of an integer array as a Python int (no int64 wrap-around).

    Parameters
    ----------
    values : ndarray of int

    Returns
    -------
    int
    """
    values = np.asarray(values)
    if not values.size:
        return 0
    if float(np.abs(values).sum(dtype=np.float64)) < 2.0**62:
        return int(values.sum(dtype=np.int64))
    return sum(values.ravel().tolist())
