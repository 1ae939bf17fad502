"""Argument checks shared by every public function.

Each check either returns the normalised value or raises a subclass of
:class:`ValueError` whose message names the argument, the expected form and
what was given.
"""

import numbers

import numpy as np

from .errors import NotFiniteError, ParameterError, ShapeError


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}"
    return repr(value)


def check_real(name, value, low=None, high=None, low_open=False, high_open=False):
    """Return ``value`` as a float after checking it lies in the stated interval.

    ``low``/``high`` of ``None`` mean unbounded; ``low_open``/``high_open``
    exclude the end point.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"`{name}` must be a real number; got {_describe(value)}.")
    x = float(value)
    inside = np.isfinite(x) or (high is None and x == np.inf and not high_open)
    if low is not None:
        inside = inside and (x > low if low_open else x >= low)
    if high is not None:
        inside = inside and (x < high if high_open else x <= high)
    if not inside or np.isnan(x):
        left = "(" if low_open or low is None else "["
        right = ")" if high_open or high is None else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ParameterError(f"`{name}` must lie in {left}{lo}, {hi}{right}; got {value!r}.")
    return x


def check_int(name, value, low=None):
    """Return ``value`` as an int after checking it is an integer ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"`{name}` must be an integer; got {_describe(value)}.")
    if low is not None and value < low:
        raise ParameterError(f"`{name}` must be an integer >= {low}; got {value!r}.")
    return int(value)


def as_float_array(name, value, shape):
    """Return ``value`` as a C-contiguous float64 array of the given ``shape``.

    ``shape`` is a tuple of ints, with the symbolic form used in the message
    derived from it.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ShapeError(
            f"`{name}` must be a numeric array of shape {shape}; got {type(value).__name__} "
            f"({exc})."
        ) from None
    if arr.shape != tuple(shape):
        raise ShapeError(f"`{name}` must have shape {tuple(shape)}; got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise NotFiniteError(
            f"`{name}` must be finite; got {float(arr[bad])!r} at index {bad}."
        )
    return np.ascontiguousarray(arr)


def check_policy(policy, n_states, n_actions):
    """Return a deterministic policy as an int64 array of shape ``(S,)``."""
    arr = np.asarray(policy)
    if arr.shape != (n_states,):
        raise ShapeError(
            f"`policy` must have shape (S,) = ({n_states},); got {arr.shape}."
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
            raise ParameterError(
                f"`policy` must hold integer action indices; got dtype {arr.dtype}."
            )
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= n_actions))
    if bad.size:
        s = int(bad[0])
        raise ParameterError(
            f"`policy` must hold actions in 0..{n_actions - 1}; got {arr[s]} at state {s}."
        )
    return arr


def make_rng(seed):
    """Return a :class:`numpy.random.Generator` from ``None``, an int, or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ParameterError(f"`seed` must be a non-negative integer; got {seed!r}.")
        return np.random.default_rng(seed)
    raise ParameterError(
        f"`seed` must be None, a non-negative integer or a numpy Generator; got {seed!r}."
    )
