r"""Kernels obtained by a greedy pour over boxes, stored in ``O(S + stored entries)``.

The inner problem of App. B (docs/semantics.md, "Confidence sets and EVI")
starts every next state at the lower end of its box and pours the leftover
mass along one order of the next states, each up to its upper end. The next
states a pair never reached all share the box ``[0, w]``, so the pour fills a
run of them at the common width ``w``: the solution of a pair is known from
its seen entries' probabilities, ``w``, and how far along the order the pour
went. :class:`PouredKernel` stores exactly that, whatever the number of
samples behind the boxes; an explicit row would hold about
``(1/7) sqrt(N / L) sum sqrt(p_hat)`` entries for a pair of ``N`` samples.
"""

import numpy as np
import scipy.sparse as sp

from .errors import NotFiniteError, ParameterError, ShapeError

__all__ = ["PouredKernel"]


def segment_positions(lengths):
    """Position of every element inside its segment, for consecutive segments of ``lengths``."""
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _read_only(array):
    array.flags.writeable = False
    return array


class PouredKernel:
    r"""A kernel of ``n`` rows over ``S+1`` next states, each row the result of a greedy pour.

    Row ``i`` holds its stored (seen) next states ``indices[indptr[i]:indptr[i+1]]``
    with their probabilities ``data``, and for every other next state ("unseen")
    a probability read from the shared pour ``order``: with ``rank`` the
    position of a next state in ``order``,

    .. math::

        p_i(s') = \begin{cases}
        \mathrm{data}_k & s' = \mathrm{indices}_k \text{ stored in row } i,\\
        w_i & \mathrm{rank}(s') < r_i,\\
        \rho_i & \mathrm{rank}(s') = r_i,\\
        0 & \mathrm{rank}(s') > r_i,
        \end{cases}

    where ``w_i = width[i]`` is the common width of the unseen boxes ``[0, w_i]``,
    ``r_i = reach[i]`` the position of ``order`` where the pour stopped (``S+1``
    when it went through the whole order) and ``rho_i = partial[i]`` what the
    unseen next state at that position received (0 when that position is a
    stored next state or the pour stopped at a run's end). The memory is
    ``O(S + n + stored)``: independent of the samples behind the boxes.

    Instances are immutable (every array is read-only). Built by the
    ``optimistic_kernel`` kernels of EVI (``p_tilde`` of
    :class:`~reference.evi.EVIResult` and :class:`~reference.range_search.SolveResult`).

    Parameters
    ----------
    order : array_like of int, shape (S+1,)
        The pour order, a permutation of ``0 .. S`` (the goal is ``S``).
    indptr : array_like of int, shape (n+1,)
        Row pointers of the stored entries (``indptr[0] = 0``, non-decreasing).
    indices : array_like of int, shape (stored,)
        Stored next states, strictly ascending within each row.
    data : array_like of float, shape (stored,)
        Their probabilities, finite and ``>= 0``.
    width : array_like of float, shape (n,)
        Common probability ``w_i >= 0`` of an unseen next state before the reach.
    reach : array_like of int, shape (n,)
        Position ``r_i`` in ``0 .. S+1`` of ``order`` where the pour stopped.
    partial : array_like of float, shape (n,)
        Probability ``0 <= rho_i <= w_i`` of the unseen next state at the reach.
    descending : bool, default False
        The pour's direction: ``False`` for the optimist (ascending values, goal
        first), ``True`` for the adversary (descending values, goal last).
        Recorded only; ``order`` defines the kernel.
    check : bool, default True
        Validate the pieces and copy them. The backends' kernels, whose pieces
        are valid by construction, pass ``False``: the arrays (of the dtypes
        above) are then taken over without a copy and made read-only, which
        keeps the construction out of the cost of an EVI call.

    Attributes
    ----------
    shape : tuple of int
        ``(n, S+1)``.
    rank : ndarray of int64, shape (S+1,)
        Position of every next state in ``order``.
    nnz : int
        Number of positive entries of the kernel as a matrix.
    nbytes : int
        Bytes of the stored arrays.

    Raises
    ------
    ShapeError
        On arrays of inconsistent shapes.
    NotFiniteError
        On non-finite ``data``, ``width`` or ``partial``.
    ParameterError
        On an ``order`` that is not a permutation, malformed row pointers or
        indices, negative probabilities, ``partial > width`` or a reach out of
        ``0 .. S+1``.

    Notes
    -----
    ``kernel @ x`` costs ``O(S + n + stored)`` by prefix sums of ``x`` along
    ``order``: the unseen entries before the reach contribute
    ``w_i (C[r_i] - sum of x over the stored entries ranked before r_i)``
    with ``C[t]`` the sum of ``x`` over the first ``t`` positions. Its
    rounding error is of order ``eps (S + stored) w_i sum |x|`` over the
    filled positions, as for a dense product. ``x`` may hold ``+inf`` and
    ``-inf`` (never NaN): an entry of probability 0 contributes 0 whatever its
    value (``0 * inf = 0``, as in the pour of the certificates), so a row is
    ``+inf`` (``-inf``) exactly when a positive entry meets ``+inf``
    (``-inf``), and NaN when it meets both.

    ``y @ kernel`` (a distribution over the rows pushed one step, ``y`` finite
    of shape ``(n,)``) costs ``O(S + n + stored)`` too: an unseen next state
    at position ``t`` of the order receives ``sum w_i y_i`` over the rows
    with ``r_i > t``, a suffix sum over the reaches, less the rows that store
    it.

    Examples
    --------
    Two rows over ``S+1 = 4`` next states, poured goal first (``order``
    ``3, 0, 1, 2``). Row 0 stores next state 1 (position 2 of the order) with
    probability 0.6, and its pour stopped there: the unseen goal and state 0
    before it get the width 0.2 each. Row 1 stores nothing: the goal gets the
    full width 0.75 and the pour stops at position 1, state 0, with 0.25:

    >>> import numpy as np
    >>> from reference.poured import PouredKernel
    >>> k = PouredKernel(order=[3, 0, 1, 2], indptr=[0, 1, 1], indices=[1], data=[0.6],
    ...                  width=[0.2, 0.75], reach=[2, 1], partial=[0.0, 0.25])
    >>> k
    PouredKernel(shape=(2, 4), stored=1, nnz=5, nbytes=152, descending=False)
    >>> k.toarray()
    array([[0.2 , 0.6 , 0.  , 0.2 ],
           [0.25, 0.  , 0.  , 0.75]])
    >>> k @ np.array([1.0, 2.0, 3.0, 0.0])
    array([1.4 , 0.25])
    >>> k @ np.array([1.0, 2.0, np.inf, 0.0])
    array([1.4 , 0.25])
    >>> np.array([1.0, 2.0]) @ k
    array([0.7, 0.6, 0. , 1.7])
    >>> k[1]
    array([0.25, 0.  , 0.  , 0.75])
    >>> k.tocsr().nnz
    5
    """

    __slots__ = ("order", "rank", "indptr", "indices", "data", "width", "reach", "partial",
                 "descending", "_layout")
    __array_ufunc__ = None
    """NumPy's operators defer to this class: ``y @ kernel`` runs :meth:`__rmatmul__`."""

    def __init__(self, order, indptr, indices, data, width, reach, partial, descending=False,
                 *, check=True):
        if not check:
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            self._set(order, rank, indptr, indices, data, width, reach, partial, descending)
            return
        order = np.array(order, dtype=np.int64)
        indptr = np.array(indptr, dtype=np.int64)
        indices = np.array(indices, dtype=np.int64)
        data = np.array(data, dtype=np.float64)
        width = np.array(width, dtype=np.float64)
        reach = np.array(reach, dtype=np.int64)
        partial = np.array(partial, dtype=np.float64)
        n_next = order.size
        if order.ndim != 1 or n_next < 1 or indptr.ndim != 1 or indptr.size < 1:
            raise ShapeError(
                "`order` must have shape (S+1,) and `indptr` shape (n+1,); got "
                f"{order.shape} and {indptr.shape}."
            )
        n = indptr.size - 1
        if indices.shape != data.shape or indices.ndim != 1:
            raise ShapeError(
                f"`indices` and `data` must have the same shape (stored,); got {indices.shape} "
                f"and {data.shape}."
            )
        for name, arr in (("width", width), ("reach", reach), ("partial", partial)):
            if arr.shape != (n,):
                raise ShapeError(f"`{name}` must have shape (n,) = ({n},); got {arr.shape}.")
        rank = np.full(n_next, -1, dtype=np.int64)
        if order.min() >= 0 and order.max() < n_next:
            rank[order] = np.arange(n_next)
        if np.any(rank < 0):
            raise ParameterError(
                f"`order` must be a permutation of 0 .. S = {n_next - 1}; got {order!r}."
            )
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.size:
            raise ParameterError(
                "`indptr` must start at 0, never decrease and end at the number of stored "
                f"entries {indices.size}; got {indptr!r}."
            )
        rows = np.repeat(np.arange(n), np.diff(indptr))
        later = rows[1:] == rows[:-1]
        if (indices.size and (indices.min() < 0 or indices.max() >= n_next)) or np.any(
                indices[1:][later] <= indices[:-1][later]):
            raise ParameterError(
                f"`indices` must lie in 0 .. S = {n_next - 1}, strictly ascending within each "
                "row."
            )
        for name, arr in (("data", data), ("width", width), ("partial", partial)):
            if not np.all(np.isfinite(arr)):
                raise NotFiniteError(
                    f"`{name}` must be finite; got {float(arr[~np.isfinite(arr)][0])!r}."
                )
            if np.any(arr < 0):
                raise ParameterError(
                    f"`{name}` must be >= 0; got {float(arr[arr < 0][0])!r}."
                )
        if np.any(partial > width):
            i = int(np.flatnonzero(partial > width)[0])
            raise ParameterError(
                f"`partial` must be at most `width`; got {partial[i]!r} > {width[i]!r} in row {i}."
            )
        outside = (reach < 0) | (reach > n_next)
        if np.any(outside):
            raise ParameterError(
                f"`reach` must lie in 0 .. S+1 = {n_next}; got {int(reach[outside][0])}."
            )
        self._set(order, rank, indptr, indices, data, width, reach, partial, descending)

    @classmethod
    def along(cls, order, rank, pieces, descending):
        """The kernel of the pieces ``(indptr, indices, data, width, reach, partial)`` along
        ``order``, whose positions ``rank`` are known: unchecked and uncopied, as with
        ``check=False``, for kernels whose pieces are valid by construction."""
        kernel = cls.__new__(cls)
        kernel._set(order, rank, *pieces, descending)
        return kernel

    def _set(self, order, rank, indptr, indices, data, width, reach, partial, descending):
        for name, array in (("order", order), ("rank", rank), ("indptr", indptr),
                            ("indices", indices), ("data", data), ("width", width),
                            ("reach", reach), ("partial", partial)):
            object.__setattr__(self, name, _read_only(array))
        object.__setattr__(self, "descending", bool(descending))
        object.__setattr__(self, "_layout", None)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set `{name}`.")

    def __reduce__(self):
        return (type(self), (self.order, self.indptr, self.indices, self.data, self.width,
                             self.reach, self.partial, self.descending))

    @property
    def shape(self):
        """``(n, S+1)``."""
        return (self.indptr.size - 1, self.order.size)

    @property
    def ndim(self):
        """2."""
        return 2

    @property
    def dtype(self):
        """float64."""
        return np.dtype(np.float64)

    @property
    def nbytes(self):
        """Bytes of the stored arrays: ``O(S + n + stored)``."""
        return sum(getattr(self, name).nbytes for name in
                   ("order", "rank", "indptr", "indices", "data", "width", "reach", "partial"))

    def _structure(self):
        """The kernel's layout, computed once (the kernel is immutable), read-only arrays:
        ``(rows, before, at, unseen_at_reach, reach_state)`` with the row of every stored
        entry, whether it lies before its row's reach and exactly at it, whether the next
        state at each row's reach is unseen (and within ``0 .. S``), and that next state
        (``order[min(reach, S)]``)."""
        if self._layout is None:
            n, n_next = self.shape
            rows = np.repeat(np.arange(n), np.diff(self.indptr))
            at = self.rank[self.indices]
            before, at_reach = at < self.reach[rows], at == self.reach[rows]
            stored_there = np.bincount(rows[at_reach], minlength=n) > 0
            unseen = (self.reach < n_next) & ~stored_there
            reach_state = self.order[np.minimum(self.reach, n_next - 1)]
            object.__setattr__(self, "_layout", tuple(
                _read_only(a) for a in (rows, before, at_reach, unseen, reach_state)))
        return self._layout

    def _rows(self):
        """Row of every stored entry, shape ``(stored,)`` (read-only)."""
        return self._structure()[0]

    def _stored_before_reach(self):
        """Whether each stored entry lies before its row's reach, and exactly at it."""
        rows, before, at_reach = self._structure()[:3]
        return rows, before, at_reach

    def _unseen_at_reach(self):
        """Whether the next state at each row's reach is unseen (and within ``0 .. S``)."""
        return self._structure()[3]

    @property
    def nnz(self):
        """Number of positive entries of the kernel as a matrix (computed, never expanded)."""
        rows, before, _ = self._stored_before_reach()
        full = self.reach - np.bincount(rows[before], minlength=self.shape[0])
        unseen = np.where(self.width > 0, full, 0).sum()
        return int(np.count_nonzero(self.data) + unseen
                   + np.count_nonzero(self._unseen_at_reach() & (self.partial > 0)))

    def __repr__(self):
        return (f"{type(self).__name__}(shape={self.shape}, stored={self.indices.size}, "
                f"nnz={self.nnz}, nbytes={self.nbytes}, descending={self.descending})")

    def toarray(self):
        """The kernel as a dense float64 array of shape ``(n, S+1)``."""
        position = self.rank[None, :]
        reach = self.reach[:, None]
        dense = np.where(position < reach, self.width[:, None],
                         np.where(position == reach, self.partial[:, None], 0.0))
        dense[self._rows(), self.indices] = self.data
        return dense

    def __array__(self, dtype=None, copy=None):
        """The dense array of :meth:`toarray` (always a new array: ``copy=False`` is refused)."""
        if copy is False:
            raise ValueError("a PouredKernel is expanded into a new array; it cannot be "
                             "viewed without a copy (copy=False).")
        dense = self.toarray()
        return dense if dtype is None else dense.astype(dtype, copy=False)

    def tocsr(self):
        """The kernel as a ``scipy.sparse.csr_array`` of its positive entries, indices sorted.

        Built in ``O(nnz + stored)`` without the dense array.
        """
        n, n_next = self.shape
        partial_there = self._unseen_at_reach() & (self.partial > 0)
        lengths = np.where(self.width > 0, self.reach + partial_there, 0)
        c_row = np.repeat(np.arange(n), lengths)
        c_pos = segment_positions(lengths)
        c_col = self.order[c_pos]
        stored = np.isin(c_row * n_next + c_col, self._rows() * n_next + self.indices)
        c_val = np.where(c_pos < self.reach[c_row], self.width[c_row], self.partial[c_row])
        keep = ~stored & (c_val > 0)
        positive = self.data > 0
        matrix = sp.csr_array(
            (np.concatenate([self.data[positive], c_val[keep]]),
             (np.concatenate([self._rows()[positive], c_row[keep]]),
              np.concatenate([self.indices[positive], c_col[keep]]))),
            shape=self.shape,
        )
        matrix.sort_indices()
        return matrix

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        """``kernel[i]``: row ``i`` as a dense ``(S+1,)`` array; ``kernel[rows]`` (a slice,
        an integer array or a boolean mask): a :class:`PouredKernel` of those rows."""
        n = self.shape[0]
        if isinstance(key, (int, np.integer)):
            if not -n <= key < n:
                raise IndexError(f"row {key} is out of range for a kernel of {n} rows.")
            return self[np.array([key])].toarray()[0]
        rows = np.arange(n)[key]
        if rows.ndim != 1:
            raise ShapeError(f"rows must be selected by a 1-D key; got shape {rows.shape}.")
        lengths = np.diff(self.indptr)[rows]
        entry = np.repeat(self.indptr[rows], lengths) + segment_positions(lengths)
        return PouredKernel(self.order, np.concatenate([[0], np.cumsum(lengths)]),
                            self.indices[entry], self.data[entry], self.width[rows],
                            self.reach[rows], self.partial[rows], self.descending, check=False)

    def __matmul__(self, x):
        """``kernel @ x`` for ``x`` of shape ``(S+1,)`` or ``(S+1, m)``, in ``O(S + stored)``
        per column (see Notes of the class for infinite values)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim not in (1, 2) or x.shape[0] != self.shape[1]:
            raise ShapeError(
                f"`x` must have shape (S+1,) or (S+1, m) with S+1 = {self.shape[1]}; got "
                f"{x.shape}."
            )
        if np.isnan(x).any():
            raise NotFiniteError("`x` must not hold NaN (infinities are allowed).")
        if x.ndim == 2:
            return np.stack([self @ x[:, j] for j in range(x.shape[1])], axis=1)
        return self.extended_product(x)

    def extended_product(self, x):
        """``kernel @ x`` for float64 ``x`` of shape ``(S+1,)`` that may hold ``+inf`` and
        ``-inf`` but no NaN (unchecked: :meth:`__matmul__` checks ``x``): the product with
        the infinities put to 0, plus ``+inf`` (``-inf``) on the rows where a positive entry
        meets ``+inf`` (``-inf``)."""
        finite = np.where(np.isfinite(x), x, 0.0)
        totals = [self.finite_product(finite)]
        for sign in (1.0, -1.0):
            totals.append(self.finite_product((x == sign * np.inf).astype(np.float64),
                                              positive=True))
        value, n_pos, n_neg = totals
        with np.errstate(invalid="ignore"):
            return np.where(n_pos > 0, np.inf, 0.0) + np.where(n_neg > 0, -np.inf, 0.0) + value

    def __rmatmul__(self, y):
        """``y @ kernel`` for finite ``y`` of shape ``(n,)``, in ``O(S + n + stored)``."""
        y = np.asarray(y, dtype=np.float64)
        n, n_next = self.shape
        if y.shape != (n,):
            raise ShapeError(f"`y` must have shape (n,) = ({n},); got {y.shape}.")
        if not np.all(np.isfinite(y)):
            raise NotFiniteError("`y` must be finite.")
        rows, before, _ = self._stored_before_reach()
        full = self.width * y
        reaching = np.bincount(self.reach, weights=full, minlength=n_next + 1)
        along = np.cumsum(reaching[::-1])[::-1][1:]
        out = np.zeros(n_next)
        out[self.order] = along
        out -= np.bincount(self.indices[before], weights=full[rows[before]], minlength=n_next)
        at_reach = self._unseen_at_reach()
        out += np.bincount(self.order[self.reach[at_reach]],
                           weights=(self.partial * y)[at_reach], minlength=n_next)
        return out + np.bincount(self.indices, weights=self.data * y[rows], minlength=n_next)

    def emptied(self, rows):
        """This kernel with the rows of the mask ``rows`` (bool ``(n,)``) put to 0: no stored
        entry, width 0 (an instance of the same class, along the same order)."""
        lengths = np.where(rows, 0, np.diff(self.indptr))
        entry = np.repeat(self.indptr[:-1], lengths) + segment_positions(lengths)
        kept = ~rows
        return type(self).along(
            self.order, self.rank,
            (np.concatenate([[0], np.cumsum(lengths)]), self.indices[entry], self.data[entry],
             np.where(kept, self.width, 0.0), np.where(kept, self.reach, 0),
             np.where(kept, self.partial, 0.0)), self.descending)

    def finite_product(self, x, positive=False):
        """``kernel @ x`` for finite ``x``; with ``positive``, count the positive entries'
        weights as 1 instead (how many of them meet a nonzero ``x``)."""
        n = self.shape[0]
        width = (self.width > 0).astype(np.float64) if positive else self.width
        partial = (self.partial > 0).astype(np.float64) if positive else self.partial
        data = (self.data > 0).astype(np.float64) if positive else self.data
        along = np.concatenate([[0.0], np.cumsum(x[self.order])])
        rows, before, _, unseen_at_reach, reach_state = self._structure()
        x_stored = x[self.indices]
        seen_before = np.bincount(rows[before], weights=x_stored[before], minlength=n)
        unseen = along[self.reach] - seen_before
        at_reach = np.where(unseen_at_reach, x[reach_state], 0.0)
        stored = np.bincount(rows, weights=data * x_stored, minlength=n)
        return stored + width * unseen + partial * at_reach
