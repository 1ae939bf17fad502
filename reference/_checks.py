"""Argument checks shared by every public function.

Each check either returns the normalised value or raises a subclass of
:class:`ValueError` whose message names the argument, the expected form and
what was given.
"""

import math
import numbers

import numpy as np
import scipy.sparse as sp

from .errors import (
    CostError,
    NotFiniteError,
    NumericRangeError,
    ParameterError,
    ShapeError,
    SparseFormatError,
    TooLargeError,
)


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
    if not np.isfinite(arr).all():
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


def count_table(counts):
    """Return checked counts: dense float64 ``(S, A, S+1)`` or canonical float64 CSR ``(S*A, S+1)``.

    The one check of every public function taking counts, made before any
    kernel (numpy or compiled) reads them.

    Parameters
    ----------
    counts : array_like of shape (S, A, S+1) or scipy.sparse matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')`` (row ``s*A + a`` when sparse).

    Returns
    -------
    ndarray of float64, shape (S, A, S+1), C-contiguous, or scipy.sparse.csr_array
        A sparse input stays sparse: a float64 copy with duplicate entries
        summed and indices sorted (:func:`check_csr_counts`).

    Raises
    ------
    ShapeError, NotFiniteError, ParameterError, NumericRangeError
        As :func:`check_dense_counts` and :func:`check_csr_counts`: another
        shape (``S`` or ``A`` of 0 included), a non-real dtype, NaN, infinite
        or negative counts (the first one is named by its ``(s, a, s')``), or a
        pair with more than ``2^63 - 1`` samples.
    SparseFormatError
        On a malformed sparse structure (indices out of range, ``indptr`` not
        starting at 0 or decreasing, non-integer index arrays).
    """
    if sp.issparse(counts):
        return check_csr_counts(counts)[0]
    return check_dense_counts(counts)


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


INT64_MAX = 2**63 - 1
"""Largest number of samples (or calls) a count can hold: counts are int64."""


def check_real_dtype(name, value):
    """Refuse an array whose dtype is not real numbers, naming the dtype.

    Parameters
    ----------
    name : str
        Argument name used in the message.
    value : array_like or scipy.sparse matrix
        The argument. Booleans, integers and floats of any width pass;
        ``float32`` and narrower are converted to float64 by the callers.
        A ragged sequence, which numpy cannot make an array of, passes too:
        the caller's conversion refuses it with its own message.

    Returns
    -------
    None

    Raises
    ------
    ShapeError
        On strings, bytes or other non-numeric data.
    ParameterError
        On a complex, object or other non-real numeric dtype (a complex
        array is never silently cut to its real part).
    """
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):
            return
    dtype = np.dtype(dtype)
    if dtype.kind in "USVMm":
        raise ShapeError(f"`{name}` must be a numeric array; got dtype {dtype}.")
    if dtype.kind not in "fiub":  # floating, signed or unsigned integer, boolean
        raise ParameterError(
            f"`{name}` must hold real numbers (an integer or float dtype); got dtype {dtype}."
        )


def check_int64_array(label, array, error=SparseFormatError):
    """Return ``array`` as a 1-d int64 array after checking it holds integers that fit.

    Parameters
    ----------
    label : str
        How the array is named at the start of the message (e.g. ```P.indices```).
    array : array_like
        The array.
    error : type, default SparseFormatError
        The :class:`SSPValueError` subclass raised.

    Returns
    -------
    ndarray of int64, shape (n,)

    Raises
    ------
    error
        If ``array`` is not 1-d, not of an integer dtype, or holds a value
        above ``2^63 - 1``.
    """
    array = np.asarray(array)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise error(
            f"{label} must be a 1-d integer array; got shape {array.shape} and dtype "
            f"{array.dtype}."
        )
    if array.dtype == np.uint64 and array.size and array.max() > INT64_MAX:
        raise error(f"{label} holds a value above 2^63 - 1.")
    return array.astype(np.int64)


def _index_array(name, part, array):
    """``array`` as an int64 1-d array after checking it holds integers."""
    return check_int64_array(f"`{name}.{part}`", array)


def _check_range(name, part, array, bound, what):
    """Raise unless every entry of ``array`` lies in ``0..bound-1``; name the first offender."""
    if not array.size or (array.min() >= 0 and array.max() < bound):
        return
    bad = np.flatnonzero((array < 0) | (array >= bound))
    if bad.size:
        k = int(bad[0])
        raise SparseFormatError(
            f"`{name}.{part}` must hold {what} in 0..{bound - 1}; got {int(array[k])} at "
            f"position {k} ({bad.size} such entries)."
        )


def _compressed_parts(name, matrix, n_major, n_minor, what):
    """Checked ``(indptr, indices, data)`` of a CSR/CSC/BSR matrix, cut to ``indptr[-1]``."""
    indptr = _index_array(name, "indptr", matrix.indptr)
    indices = _index_array(name, "indices", matrix.indices)
    data = np.asarray(matrix.data)
    if indptr.size != n_major + 1:
        raise SparseFormatError(
            f"`{name}.indptr` must have {n_major + 1} entries for shape {matrix.shape}; got "
            f"{indptr.size}."
        )
    if indptr[0] != 0:
        raise SparseFormatError(f"`{name}.indptr` must start at 0; got {int(indptr[0])}.")
    drops = np.flatnonzero(np.diff(indptr) < 0)
    if drops.size:
        k = int(drops[0])
        raise SparseFormatError(
            f"`{name}.indptr` must never decrease; got indptr[{k + 1}] = {int(indptr[k + 1])} "
            f"< indptr[{k}] = {int(indptr[k])}."
        )
    nnz = int(indptr[-1])
    if indices.size < nnz or data.shape[:1] != (indices.size,):
        raise SparseFormatError(
            f"`{name}` must have as many indices as data entries, at least indptr[-1] = {nnz}; "
            f"got {indices.size} indices and {data.shape[0] if data.ndim else 0} data entries."
        )
    indices = indices[:nnz]
    _check_range(name, "indices", indices, n_minor, what)
    return indptr, indices, data[:nnz]


def check_sparse_structure(name, matrix):
    """Return a scipy sparse matrix as canonical CSR after checking its raw structure.

    Nothing of ``matrix`` but its raw arrays is read before the checks pass,
    so malformed indices never reach scipy's or the compiled kernels' C code.

    Parameters
    ----------
    name : str
        Argument name used in the messages.
    matrix : scipy.sparse matrix or array, any format
        The argument.

    Returns
    -------
    scipy.sparse.csr_array of float64
        Same shape; indices sorted and int64, explicit zeros kept. Duplicate
        entries (the same row and column stored twice) are **summed**, as
        scipy's own conversions do.

    Raises
    ------
    ParameterError
        On a non-real dtype (:func:`check_real_dtype`).
    ShapeError
        If ``matrix`` is not 2-d.
    SparseFormatError
        On index arrays that are not integer, an ``indptr`` of the wrong
        length, not starting at 0 or decreasing, lengths that disagree, or a
        row or column index outside the shape (negative ones included).
    """
    check_real_dtype(name, matrix)
    shape = tuple(int(n) for n in matrix.shape)
    if len(shape) != 2:
        raise ShapeError(f"`{name}` must be a 2-d sparse matrix; got shape {shape}.")
    fmt = matrix.format
    if fmt == "csr":
        indptr, indices, data = _compressed_parts(name, matrix, shape[0], shape[1],
                                                  "column indices")
        out = sp.csr_array((data.astype(np.float64), indices, indptr), shape=shape)
    elif fmt == "csc":
        indptr, indices, data = _compressed_parts(name, matrix, shape[1], shape[0],
                                                  "row indices")
        out = sp.csc_array((data.astype(np.float64), indices, indptr), shape=shape).tocsr()
    elif fmt == "bsr":
        R, C = matrix.blocksize
        indptr, indices, data = _compressed_parts(name, matrix, shape[0] // R, shape[1] // C,
                                                  "block column indices")
        out = sp.bsr_array((data.astype(np.float64), indices, indptr), shape=shape).tocsr()
    elif fmt == "coo":
        row = _index_array(name, "row", matrix.row)
        col = _index_array(name, "col", matrix.col)
        data = np.asarray(matrix.data)
        if not row.size == col.size == data.shape[0]:
            raise SparseFormatError(
                f"`{name}` must have one row and one column index per entry; got {row.size} "
                f"rows, {col.size} columns and {data.shape[0]} entries."
            )
        _check_range(name, "row", row, shape[0], "row indices")
        _check_range(name, "col", col, shape[1], "column indices")
        out = sp.coo_array((data.astype(np.float64), (row, col)), shape=shape).tocsr()
    else:
        out = sp.csr_array(matrix.tocsr(), dtype=np.float64)
    out.sum_duplicates()
    out.indptr = out.indptr.astype(np.int64)
    out.indices = out.indices.astype(np.int64)
    return out


def check_csr_counts(counts, name="counts"):
    """Return sample counts given as a sparse matrix, checked, as canonical CSR float64.

    The check every entry point taking sparse counts (the EVI and radius
    functions of both backends) makes before any compiled code reads them.

    Parameters
    ----------
    counts : scipy.sparse matrix, shape (S*A, S+1)
        ``N(s, a, s')`` at row ``s*A + a``, column ``s'`` (the goal last).
    name : str, default "counts"
        Argument name used in the messages.

    Returns
    -------
    csr : scipy.sparse.csr_array of float64, shape (S*A, S+1)
        Indices sorted (int64), duplicate entries **summed** (two stored
        counts of one ``(s, a, s')`` are samples of it both), explicit zeros
        removed: one matrix per table of counts, however it was stored.
    n_states, n_actions : int
        ``S`` and ``A``, both ``>= 1``.

    Raises
    ------
    ShapeError
        On a shape that is not ``(S*A, S+1)`` with ``S, A >= 1``.
    SparseFormatError, ParameterError
        As :func:`check_sparse_structure` (malformed indices, non-real dtype).
    NotFiniteError
        On a NaN or infinite count.
    ParameterError
        On a negative count.
    NumericRangeError
        If some pair holds more than ``2^63 - 1`` samples, more than any run
        can draw (its confidence terms would lose all precision).
    """
    shape = tuple(counts.shape)
    if len(shape) != 2 or shape[1] < 2 or shape[0] < shape[1] - 1 or shape[0] % (shape[1] - 1):
        raise ShapeError(
            f"`{name}` must have shape (S*A, S+1) with S, A >= 1 when sparse; got {shape}."
        )
    S = shape[1] - 1
    A = shape[0] // S
    csr = check_sparse_structure(name, counts)
    values = csr.data
    largest = largest_count(values) if values.size else 0.0
    if math.isnan(largest):
        for bad, error, what in ((~np.isfinite(values), NotFiniteError, "hold finite counts"),
                                 (values < 0, ParameterError, "be >= 0")):
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise error(
                    f"`{name}` must {what}; got {float(values[k])!r} at (s, a, s') = "
                    f"{csr_position(csr, k, A)}."
                )
        largest = float(values.max())
    lengths = np.diff(csr.indptr)
    if largest * float(lengths.max()) > _ROW_TOTAL_BOUND:
        totals = np.bincount(np.repeat(np.arange(shape[0]), lengths), weights=values,
                             minlength=shape[0])
        over = np.flatnonzero(~(totals <= INT64_MAX))
        if over.size:
            s, a = divmod(int(over[0]), A)
            raise NumericRangeError(
                f"`{name}` of the pair (s, a) = ({s}, {a}) total {float(totals[over[0]]):.3g} "
                f"samples, above 2^63 - 1 = {INT64_MAX:.3g}, more than any run can draw."
            )
    if (values == 0).any():
        csr.eliminate_zeros()
    return csr, S, A


_ROW_TOTAL_BOUND = 2.0**62
"""Largest count times longest row up to which no pair's total needs summing.

Each total is then at most ``2^62 (1 + 2^-53)``, and its float sum, off by a
relative ``n 2^-53`` at most over ``n`` entries, stays below ``2^63``: no
total can pass the ``2^63 - 1`` check.
"""


_INF_BITS = np.float64(np.inf).view(np.uint64)
"""Bit pattern of ``+inf``: every finite float64 ``>= +0.0`` lies below it, read as uint64."""


def largest_count(dense):
    """The largest of dense counts if all are plainly valid, in one pass; else NaN.

    Read as unsigned 64-bit integers, the finite float64 values ``>= +0.0``
    lie below the bits of ``+inf`` and in the order of their values, while a
    negative number (sign bit set), an infinity or a NaN does not. So one
    integer maximum, without a temporary, gives the largest count when every
    count is finite with its sign bit clear, and tells when one is not
    (``-0.0`` included, which :func:`check_dense_values` then accepts).

    Parameters
    ----------
    dense : ndarray of float64, not empty
        The counts, any shape: dense ``(S, A, S+1)`` C-contiguous, or the
        stored entries of CSR counts.

    Returns
    -------
    float
        The largest count, or NaN.
    """
    top = dense.view(np.uint64).max()
    return float(top.view(np.float64)) if top < _INF_BITS else math.nan


def dense_count_array(counts, name="counts"):
    """Dense counts as a C-contiguous float64 array ``(S, A, S+1)``, their values not checked.

    Parameters
    ----------
    counts : array_like, shape (S, A, S+1)
    name : str, default "counts"
        Argument name used in the messages.

    Returns
    -------
    ndarray of float64, shape (S, A, S+1)

    Raises
    ------
    ShapeError, ParameterError
        As :func:`check_dense_counts`, for the dtype and the shape.
    """
    check_real_dtype(name, counts)
    dense = np.asarray(counts, dtype=np.float64)
    if (dense.ndim != 3 or dense.shape[0] < 1 or dense.shape[1] < 1
            or dense.shape[2] != dense.shape[0] + 1):
        raise ShapeError(
            f"`{name}` must have shape (S, A, S+1) with S, A >= 1, or be CSR (S*A, S+1); got "
            f"{dense.shape}."
        )
    return np.ascontiguousarray(dense)


def check_dense_values(dense, largest, name="counts"):
    """Raise unless dense counts are finite, ``>= 0`` and at most ``2^63 - 1`` per pair.

    Parameters
    ----------
    dense : ndarray of float64, shape (S, A, S+1)
        As :func:`dense_count_array` returns it.
    largest : float
        :func:`largest_count` of ``dense`` (or a kernel's own pass computing
        it): when every count is at most ``largest`` and ``S+1`` times it fits
        in int64, the counts pass without being read again.
    name : str, default "counts"
        Argument name used in the messages.

    Raises
    ------
    NotFiniteError
        On a NaN or infinite count (the first one is named by its ``(s, a, s')``).
    ParameterError
        On a negative count (the first one is named).
    NumericRangeError
        If some pair holds more than ``2^63 - 1`` samples.
    """
    if largest * dense.shape[2] <= INT64_MAX:
        return
    for bad, error, what in ((~np.isfinite(dense), NotFiniteError, "hold finite counts"),
                             (dense < 0, ParameterError, "be >= 0")):
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise error(f"`{name}` must {what}; got {float(dense[at])!r} at (s, a, s') = "
                        f"{at}.")
    with np.errstate(over="ignore"):
        totals = dense.sum(axis=2)
    over = np.argwhere(~(totals <= INT64_MAX))
    if over.size:
        s, a = (int(i) for i in over[0])
        raise NumericRangeError(
            f"`{name}` of the pair (s, a) = ({s}, {a}) total {float(totals[s, a]):.3g} "
            f"samples, above 2^63 - 1 = {INT64_MAX:.3g}, more than any run can draw."
        )


def check_dense_counts(counts, name="counts"):
    """Return dense sample counts, checked, as a C-contiguous float64 array ``(S, A, S+1)``.

    Parameters
    ----------
    counts : array_like, shape (S, A, S+1)
        ``N(s, a, s')``, the goal last.
    name : str, default "counts"
        Argument name used in the messages.

    Returns
    -------
    ndarray of float64, shape (S, A, S+1)

    Raises
    ------
    ShapeError
        On another shape, or ``S < 1`` or ``A < 1``.
    ParameterError
        On a non-real dtype (:func:`check_real_dtype`) or a negative count.
    NotFiniteError
        On a NaN or infinite count.
    NumericRangeError
        If some pair holds more than ``2^63 - 1`` samples.
    """
    dense = dense_count_array(counts, name)
    check_dense_values(dense, largest_count(dense), name)
    return dense


def check_log_term(n_states, n_actions, max_samples, delta):
    r"""Refuse a confidence level whose logarithm term overflows float64.

    The radii of Lemma 5 use

    .. math::

        L = \log \frac{S A N^+}{\delta}, \qquad N^+ = \max(1, N(s, a)),

    whose argument overflows (and the radius turns to NaN) when
    ``delta`` is tiny or the counts huge.

    Parameters
    ----------
    n_states, n_actions : int
        ``S`` and ``A``.
    max_samples : float
        The largest ``N(s, a)`` (``0`` before any sample).
    delta : float in (0, 1)
        Confidence level, already checked.

    Returns
    -------
    float
        The largest ``L``, finite.

    Raises
    ------
    NumericRangeError
        If ``S A N^+ / delta`` is not a finite float64; the message gives the
        smallest ``delta`` these counts allow.
    """
    n_plus = max(1.0, float(max_samples))
    with np.errstate(over="ignore"):
        argument = np.float64(n_states) * n_actions * n_plus / np.float64(delta)
    if not np.isfinite(argument):
        smallest = n_states * n_actions * n_plus / np.finfo(np.float64).max
        raise NumericRangeError(
            f"the confidence term log(S A N / delta) overflows float64 with S = {n_states}, "
            f"A = {n_actions}, N = {n_plus:.3g} and `delta` = {delta!r}; `delta` must be at "
            f"least {smallest:.3g} for these counts."
        )
    return float(np.log(argument))


def check_counts_log_term(table, delta, largest=math.nan):
    """:func:`check_log_term` for checked counts (a :func:`count_table`) and a checked ``delta``.

    Parameters
    ----------
    table : ndarray of float64, shape (S, A, S+1), or scipy.sparse.csr_array (S*A, S+1)
        Counts as :func:`count_table` returns them.
    delta : float in (0, 1)
    largest : float, optional
        The largest entry of dense counts (:func:`largest_count`), NaN when
        unknown (CSR counts are read for it: their stored entries only). Every
        pair's total is below ``2 k largest`` however it is summed, with ``k``
        the entries of the longest row (``S+1`` when dense), so when that bound
        keeps ``S A N^+ / delta`` finite the counts pass without their totals;
        otherwise their totals decide.

    Raises
    ------
    NumericRangeError
        As :func:`check_log_term`.
    """
    if sp.issparse(table):
        S = table.shape[1] - 1
        A = table.shape[0] // S
        width = int(np.diff(table.indptr).max())
        largest = float(table.data.max()) if table.nnz else 0.0
    else:
        S, A = table.shape[:2]
        width = S + 1
    bound = 2.0 * width * float(largest)
    if bound >= 0.0 and math.isfinite(float(S) * A * max(1.0, bound) / float(delta)):
        return
    totals = table.sum(axis=1) if sp.issparse(table) else table.sum(axis=2)
    check_log_term(S, A, totals.max(), delta)


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
