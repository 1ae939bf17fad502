"""Checks of array arguments: float arrays, costs, policies, dtypes, sizes, sparse structure."""

import math

import numpy as np
import scipy.sparse as sp

from ..errors import (
    CostError,
    NotFiniteError,
    ParameterError,
    ShapeError,
    SparseFormatError,
    TooLargeError,
)
from .scalars import INT64_MAX


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
    if n >= 2**1000:
        return f"about 10^{len(str(int(n))) - 1} bytes"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} bytes"


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


def check_canonical_rows(name, indptr, indices, n_actions):
    """Refuse CSR counts whose column indices are not strictly increasing within a row.

    Canonical CSR (scipy's ``has_canonical_format``) stores each row's
    columns sorted and once. Counts that are not are refused rather than
    repaired. When some row stores a column twice, the first such row is
    named, with scipy's ``sum_duplicates()`` (which sums the repeats and
    sorts); otherwise the first unsorted row, with ``sort_indices()``.

    Parameters
    ----------
    name : str
        Argument name used in the messages.
    indptr, indices : ndarray of int
        The matrix's raw arrays, already checked by :func:`check_sparse_structure`
        (``indptr`` well formed, every used index in range).
    n_actions : int
        ``A``: row ``s*A + a`` is the pair ``(s, a)``.

    Raises
    ------
    SparseFormatError
        Naming the row, its pair and the column stored twice, or the two
        columns out of order.

    Examples
    --------
    >>> import numpy as np
    >>> check_canonical_rows("counts", np.array([0, 2, 3]), np.array([0, 2, 1]), 1)
    >>> check_canonical_rows("counts", np.array([0, 2, 3]), np.array([2, 0, 1]), 1)
    Traceback (most recent call last):
    ...
    reference.errors.SparseFormatError: `counts` must store the columns of each row sorted and once (canonical CSR); row 0, the pair (s, a) = (0, 0), stores column 0 after column 2. Call the matrix's `sort_indices()` (scipy) first.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices[: int(indptr[-1])], dtype=np.int64)
    starts = indptr[1:-1]
    out_of_order = np.diff(indices) <= 0
    out_of_order[starts[(starts > 0) & (starts < indices.size)] - 1] = False
    if not out_of_order.any():
        return
    later = np.flatnonzero(out_of_order) + 1
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    order = np.lexsort((indices, rows))
    repeated = np.flatnonzero((np.diff(rows[order]) == 0) & (np.diff(indices[order]) == 0))
    if repeated.size:
        k = int(order[repeated[0]])
        row, column = int(rows[k]), int(indices[k])
        found, fix = f"stores column {column} twice", "`sum_duplicates()` (scipy; it also sorts)"
    else:
        k = int(later[0])
        row, column, before = int(rows[k]), int(indices[k]), int(indices[k - 1])
        found, fix = f"stores column {column} after column {before}", "`sort_indices()` (scipy)"
    raise SparseFormatError(
        f"`{name}` must store the columns of each row sorted and once (canonical CSR); row "
        f"{row}, the pair (s, a) = ({row // n_actions}, {row % n_actions}), {found}. Call the "
        f"matrix's {fix} first."
    )


def check_sparse_structure(name, matrix, n_actions=None):
    """Return a scipy sparse matrix as canonical CSR after checking its raw structure.

    Nothing of ``matrix`` but its raw arrays is read before the checks pass,
    so malformed indices never reach scipy's or the compiled kernels' C code.

    Parameters
    ----------
    name : str
        Argument name used in the messages.
    matrix : scipy.sparse matrix or array, any format
        The argument.
    n_actions : int, optional
        When given, the rows are pairs (row ``s*A + a`` is ``(s, a)``, ``A =
        n_actions``) and a CSR ``matrix`` must already be canonical: its
        rows' columns sorted and stored once (:func:`check_canonical_rows`,
        whose message names the pair). Counts are refused rather than summed.

    Returns
    -------
    scipy.sparse.csr_array of float64
        Same shape; indices sorted and int64, explicit zeros kept. Duplicate
        entries (the same row and column stored twice) of a matrix that is
        not CSR, or of a CSR matrix without ``n_actions``, are **summed**, as
        scipy's own conversions do.

    Raises
    ------
    ParameterError
        On a non-real dtype (:func:`check_real_dtype`).
    ShapeError
        If ``matrix`` is not 2-d.
    SparseFormatError
        On index arrays that are not integer, an ``indptr`` of the wrong
        length, not starting at 0 or decreasing, lengths that disagree, a
        row or column index outside the shape (negative ones included), or
        with ``n_actions`` a CSR row whose columns are unsorted or repeated.
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
        if n_actions is not None:
            check_canonical_rows(name, indptr, indices, n_actions)
            out.has_canonical_format = True
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
