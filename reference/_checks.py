"""Argument checks shared by every public function.

Each check either returns the normalised value or raises a subclass of
:class:`ValueError` whose message names the argument, the expected form and
what was given.
"""

import math
import numbers

import numpy as np
import scipy.sparse as sp

from .errors import CostError, NotFiniteError, ParameterError, ShapeError, TooLargeError


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
    x = float(value)
    inside = np.isfinite(x) or (allow_inf and high is None and x == np.inf)
    if low is not None:
        inside = inside and (x > low if low_open else x >= low)
    if high is not None:
        inside = inside and (x < high if high_open else x <= high)
    if not inside or np.isnan(x):
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


def as_float_array(name, value, shape, form=None):
    """Return ``value`` as a C-contiguous float64 array of the given ``shape``.

    Parameters
    ----------
    name : str
        Argument name used in the messages.
    value : array_like
        The argument.
    shape : tuple of int
        Required shape.
    form : str, optional
        How the expected shape is described in the message (default: the
        tuple itself), e.g. ``"(S, A) = (3, 2), the sizes of the kernel `P`"``.

    Returns
    -------
    ndarray of float64, shape ``shape``
        C-contiguous; the input itself when it already is one (not a copy).

    Raises
    ------
    ShapeError
        If ``value`` is not numeric or has another shape.
    NotFiniteError
        If an entry is NaN or infinite; the message gives the first one.
    """
    expected = str(tuple(shape)) if form is None else form
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ShapeError(
            f"`{name}` must be a numeric array of shape {expected}; got {type(value).__name__} "
            f"({exc})."
        ) from None
    if arr.shape != tuple(shape):
        raise ShapeError(f"`{name}` must have shape {expected}; got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise NotFiniteError(
            f"`{name}` must be finite; got {float(arr[bad])!r} at index {bad}."
        )
    return np.ascontiguousarray(arr)


def check_costs(name, value, n_states, n_actions, source):
    """Return a cost array of shape ``(S, A)`` with entries in ``[0, 1]``, as float64.

    Parameters
    ----------
    name : str
        Argument name used in the messages (``"c"`` or ``"costs"``).
    value : array_like of shape (S, A)
        The costs.
    n_states, n_actions : int
        ``S`` and ``A``, the sizes the costs must match.
    source : str
        Where ``S`` and ``A`` come from, named when the shape is wrong (e.g.
        ``"the kernel"``).

    Returns
    -------
    ndarray of float64, shape (S, A)
        As :func:`as_float_array` (not a copy when the input is already one).

    Raises
    ------
    ShapeError, NotFiniteError
        From :func:`as_float_array`.
    CostError
        If some entry lies outside ``[0, 1]``; the message names the first one.
    """
    form = f"(S, A) = ({n_states}, {n_actions}), the sizes of {source}"
    c = as_float_array(name, value, (n_states, n_actions), form=form)
    bad = np.argwhere((c < 0) | (c > 1))
    if bad.size:
        s, a = (int(i) for i in bad[0])
        raise CostError(
            f"`{name}` must lie in [0, 1]; got {name}[{s}, {a}] = {float(c[s, a])!r}."
        )
    return c


def check_dense_size(what, shape, max_bytes, advice):
    """Refuse to build a dense float64 or int64 array of ``shape`` above ``max_bytes``.

    Parameters
    ----------
    what : str
        What would be built, for the message (e.g. ``"a dense kernel"``).
    shape : tuple of int
        Its shape.
    max_bytes : int
        The stated limit.
    advice : str
        What to do instead, appended to the message.

    Returns
    -------
    None

    Raises
    ------
    TooLargeError
        If ``8 * prod(shape) > max_bytes``; the message gives both sizes.
    """
    size = 8 * math.prod(shape)
    if size > max_bytes:
        raise TooLargeError(
            f"{what} of shape {tuple(shape)} needs {_bytes(size)}, above the limit of "
            f"{_bytes(max_bytes)}; {advice}"
        )


def _bytes(n):
    """``n`` bytes in the largest unit (bytes, MiB, GiB) that keeps the number >= 1."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} bytes"


def csr_position(matrix, k, n_actions):
    """The ``(s, a, s')`` of the ``k``-th stored entry of a CSR matrix of shape ``(S*A, S+1)``.

    Parameters
    ----------
    matrix : scipy.sparse CSR, shape (S*A, S+1)
        Row ``s*A + a`` belongs to the pair ``(s, a)``.
    k : int
        Index into ``matrix.data``.
    n_actions : int
        ``A``.

    Returns
    -------
    tuple of 3 int
    """
    row = int(np.searchsorted(matrix.indptr, k, side="right") - 1)
    return row // n_actions, row % n_actions, int(matrix.indices[k])


def csr_count_sizes(counts):
    """Return ``(S, A)`` of CSR counts of shape ``(S*A, S+1)`` after checking the shape.

    Raises
    ------
    ShapeError
        If the shape is not ``(S*A, S+1)`` with ``S, A >= 1``.
    """
    rows, cols = counts.shape
    S = cols - 1
    if S < 1 or rows < S or rows % S:
        raise ShapeError(
            f"`counts` must have shape (S*A, S+1) with S, A >= 1 when sparse; got {counts.shape}."
        )
    return S, rows // S


def check_count_values(values, where):
    """Raise unless ``values`` are finite and ``>= 0``; ``where(k)`` locates entry ``k``.

    Raises
    ------
    NotFiniteError
        On the first NaN or infinite count.
    ParameterError
        On the first negative count.
    """
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise NotFiniteError(
            f"`counts` must hold finite counts; got {float(values[k])!r} at "
            f"(s, a, s') = {where(k)}."
        )
    bad = np.flatnonzero(values < 0)
    if bad.size:
        k = int(bad[0])
        raise ParameterError(
            f"`counts` must be >= 0; got {float(values[k])!r} at (s, a, s') = {where(k)}."
        )


def count_table(counts):
    """Return checked counts: dense float64 ``(S, A, S+1)`` or canonical float64 CSR ``(S*A, S+1)``.

    Parameters
    ----------
    counts : array_like of shape (S, A, S+1) or scipy.sparse matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')`` (row ``s*A + a`` when sparse).

    Returns
    -------
    ndarray of float64, shape (S, A, S+1), C-contiguous, or scipy.sparse.csr_array
        A sparse input stays sparse: a float64 copy with duplicates summed
        and indices sorted.

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError
        On another shape, NaN or infinite counts, or negative counts (the
        first one is named by its ``(s, a, s')``).
    """
    if sp.issparse(counts):
        S, A = csr_count_sizes(counts)
        csr = sp.csr_array(counts, dtype=np.float64, copy=True)
        csr.sum_duplicates()
        check_count_values(csr.data, lambda k: csr_position(csr, k, A))
        return csr
    dense = np.ascontiguousarray(counts, dtype=np.float64)
    if dense.ndim != 3 or dense.shape[0] < 1 or dense.shape[2] != dense.shape[0] + 1:
        raise ShapeError(
            f"`counts` must have shape (S, A, S+1) or be CSR (S*A, S+1); got {dense.shape}."
        )
    check_count_values(
        dense.ravel(), lambda k: tuple(int(i) for i in np.unravel_index(k, dense.shape))
    )
    return dense


def check_policy(policy, n_states, n_actions):
    """Return a deterministic policy as an int64 array of shape ``(S,)``.

    Parameters
    ----------
    policy : array_like of int, shape (S,)
        Action of each non-goal state; integral floats are accepted.
    n_states, n_actions : int
        ``S`` and ``A``.

    Returns
    -------
    ndarray of int64, shape (S,)

    Raises
    ------
    ShapeError
        On another shape.
    ParameterError
        On non-integer entries or an action outside ``0..A-1`` (the first
        such state is named).
    """
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
    """Return a :class:`numpy.random.Generator` from ``None``, an int, or a Generator.

    Parameters
    ----------
    seed : None, int >= 0, or numpy.random.Generator
        ``None`` draws fresh entropy; an int seeds ``default_rng``; a
        Generator is returned unchanged (its state is shared).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ParameterError
        On a negative int or any other type.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ParameterError(f"`seed` must be a non-negative integer; got {seed!r}.")
        return np.random.default_rng(seed)
    raise ParameterError(
        f"`seed` must be None, a non-negative integer or a numpy Generator; got {seed!r}."
    )
