"""Checks of count tables ``N(s, a, s')``, dense or CSR, and of the log term they give."""

import math

import numpy as np
import scipy.sparse as sp

from ..errors import (
    NotFiniteError,
    NumericRangeError,
    ParameterError,
    ShapeError,
)
from .arrays import check_real_dtype, check_sparse_structure
from .scalars import INT64_MAX


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
        Canonical: indices sorted (int64), no entry stored twice, explicit
        zeros removed: one matrix per table of counts. A CSR ``counts`` must
        already have sorted, distinct column indices in each row
        (:func:`check_sparse_structure` with ``n_actions``); another format (COO, CSC, ...) is
        converted, its repeated entries summed as scipy does.
    n_states, n_actions : int
        ``S`` and ``A``, both ``>= 1``.

    Raises
    ------
    ShapeError
        On a shape that is not ``(S*A, S+1)`` with ``S, A >= 1``.
    SparseFormatError, ParameterError
        As :func:`check_sparse_structure` (malformed indices, non-real dtype),
        and for CSR counts whose column indices are unsorted or repeated within
        a row.
    NotFiniteError
        On a NaN or infinite count.
    ParameterError
        On a negative or fractional count (counts are numbers of samples).
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
    csr = check_sparse_structure(name, counts, n_actions=A)
    values = csr.data
    largest = largest_count(values) if values.size else 0.0
    if math.isnan(largest):
        for bad, error, what in _defects(values):
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

def _defects(values):
    """The defects a count can have, in the order they are reported: for each, where
    ``values`` has it, its error class and what counts must be instead."""
    yield ~np.isfinite(values), NotFiniteError, "hold finite counts"
    yield values < 0, ParameterError, "be >= 0"
    yield values != np.trunc(values), ParameterError, "hold integers (numbers of samples)"


_INF_BITS = np.float64(np.inf).view(np.uint64)
"""Bit pattern of ``+inf``: every finite float64 ``>= +0.0`` lies below it, read as uint64."""


def largest_count(dense):
    """The largest of dense counts if all are plainly valid, else NaN.

    Read as unsigned 64-bit integers, the finite float64 values ``>= +0.0``
    lie below the bits of ``+inf`` and in the order of their values, while a
    negative number (sign bit set), an infinity or a NaN does not. So one
    integer maximum, without a temporary, gives the largest count when every
    count is finite with its sign bit clear, and tells when one is not
    (``-0.0`` included, which :func:`check_dense_values` then accepts); the
    counts are then compared with their truncation (a temporary of the size of
    ``dense``), which a fractional count differs from.

    Parameters
    ----------
    dense : ndarray of float64, not empty
        The counts, any shape: dense ``(S, A, S+1)`` C-contiguous, or the
        stored entries of CSR counts.

    Returns
    -------
    float
        The largest count when every count is finite, has its sign bit clear
        and is an integer; else NaN.
    """
    top = dense.view(np.uint64).max()
    if top < _INF_BITS and np.array_equal(np.trunc(dense), dense):
        return float(top.view(np.float64))
    return math.nan


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
    """Raise unless dense counts are finite integers ``>= 0``, at most ``2^63 - 1`` per pair.

    Parameters
    ----------
    dense : ndarray of float64, shape (S, A, S+1)
        As :func:`dense_count_array` returns it.
    largest : float
        :func:`largest_count` of ``dense`` (or a kernel's own pass computing
        it, NaN unless every count is a finite integer with its sign bit
        clear): when every count is at most ``largest`` and ``S+1`` times it
        fits in int64, the counts pass without being read again.
    name : str, default "counts"
        Argument name used in the messages.

    Raises
    ------
    NotFiniteError
        On a NaN or infinite count (the first one is named by its ``(s, a, s')``).
    ParameterError
        On a negative count, else on a fractional one (the first one is named).
    NumericRangeError
        If some pair holds more than ``2^63 - 1`` samples.
    """
    if largest * dense.shape[2] <= INT64_MAX:
        return
    for bad, error, what in _defects(dense):
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
        On a non-real dtype (:func:`check_real_dtype`), a negative count or a
        fractional one (counts are numbers of samples; ``3.0`` is one).
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
    """:func:`check_log_term` for checked counts (a ``Counts.table``) and a checked ``delta``.

    Parameters
    ----------
    table : ndarray of float64, shape (S, A, S+1), or scipy.sparse.csr_array (S*A, S+1)
        The ``table`` of a :class:`~reference.counts.Counts`.
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
