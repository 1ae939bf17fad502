r"""Sample counts ``N(s, a, s')`` as one checked, immutable object: the door for user counts.

Every public function that takes counts (EVI, the radius, the confidence
boxes, the robust values, the certificates) accepts a :class:`Counts` or
builds one from what it is given, through the one constructor, before any
kernel reads them. The sample store of a run hands out its counts as a
:class:`Counts` without checking them again
(:meth:`~reference.generative.SampleStore.counts`): it built them from
answers it checked.
"""

import math

import numpy as np
import scipy.sparse as sp

from ._checks import check_csr_counts, check_dense_counts

__all__ = ["Counts"]


class Counts:
    r"""Checked sample counts ``N(s, a, s')``, dense or CSR; immutable.

    Parameters
    ----------
    counts : Counts, array_like of shape (S, A, S+1) or scipy.sparse matrix of shape (S*A, S+1)
        ``N(s, a, s')``, the goal last (row ``s*A + a`` when sparse): numbers
        of samples, so integers ``>= 0`` of any real dtype (``3.0`` is one,
        ``2.5`` is not). CSR counts must be canonical in their columns: each
        row's sorted, none stored twice (scipy's ``sort_indices()`` and
        ``sum_duplicates()`` make them so). A :class:`Counts` is taken as it
        is.

    Attributes
    ----------
    n_states, n_actions : int
        ``S`` and ``A``, both ``>= 1``.
    storage : {"dense", "csr"}
        How the counts are stored: as given (a sparse input stays sparse,
        never densified).
    table : ndarray of float64, shape (S, A, S+1), or scipy.sparse.csr_array of shape (S*A, S+1)
        The checked counts: dense float64 C-contiguous, or canonical float64
        CSR (indices sorted, int64, each entry once, no explicit zeros). Read it, never write it; a dense array may share the memory
        of the array given.

    Raises
    ------
    ShapeError
        On another shape (``S`` or ``A`` of 0 included).
    ParameterError
        On a non-real dtype (complex, object, bool, string), a negative count
        or a fractional one (the first one is named by its ``(s, a, s')`` and
        its value).
    NotFiniteError
        On a NaN or infinite count.
    SparseFormatError
        On a malformed sparse structure: column indices outside ``0..S``, an
        ``indptr`` of the wrong length, not starting at 0, decreasing or not
        ending at the number of entries, non-integer index arrays; and on CSR
        counts whose column indices are unsorted or repeated within a row (the
        row and its pair are named; the message says which scipy method makes
        them canonical).
    NumericRangeError
        If some pair holds more than ``2^63 - 1`` samples, more than any run
        can draw.

    Notes
    -----
    The checks are those of :func:`reference._checks.check_dense_counts` and
    :func:`reference._checks.check_csr_counts`, made once: functions given a
    :class:`Counts` read it without checking it again. Counts must be
    integers: the coverage of the confidence boxes (Lemma 5, and the KL and
    mixture kinds) is proved for numbers of samples, and holds for no weights.

    Examples
    --------
    >>> import numpy as np
    >>> counts = Counts(np.array([[[3.0, 1.0]], ]))
    >>> counts.n_states, counts.n_actions, counts.storage
    (1, 1, 'dense')
    >>> counts.n_pair
    array([[4.]])
    >>> Counts(counts) is not counts, Counts(counts).table is counts.table
    (True, True)
    >>> Counts(np.array([[[2.5, 1.0]], ]))
    Traceback (most recent call last):
    ...
    reference.errors.ParameterError: `counts` must hold integers (numbers of samples); got 2.5 at (s, a, s') = (0, 0, 0).
    """

    __slots__ = ("n_states", "n_actions", "storage", "table", "_largest")

    def __init__(self, counts):
        if isinstance(counts, Counts):
            table, S, A, largest = counts.table, counts.n_states, counts.n_actions, counts._largest
        elif sp.issparse(counts):
            table, S, A = check_csr_counts(counts)
            largest = math.nan
        else:
            table = check_dense_counts(counts)
            S, A = table.shape[:2]
            largest = math.nan
        self._set(table, S, A, largest)

    def _set(self, table, n_states, n_actions, largest):
        for name, value in (("n_states", int(n_states)), ("n_actions", int(n_actions)),
                            ("storage", "csr" if sp.issparse(table) else "dense"),
                            ("table", table), ("_largest", largest)):
            object.__setattr__(self, name, value)

    @classmethod
    def trusted(cls, table, largest=math.nan):
        """Counts already checked, wrapped without reading them again.

        For counts that code of this package built or checked itself: the
        table of a :class:`~reference.generative.SampleStore` (built from
        answers it checked) or dense counts whose check was decided from a
        kernel's pass over them (EVI's ``scan_counts``).

        Parameters
        ----------
        table : ndarray of float64, shape (S, A, S+1), or scipy.sparse.csr_array
            As :attr:`table` holds it (dense C-contiguous, or canonical CSR).
        largest : float, optional
            The largest count, when known (NaN otherwise).

        Returns
        -------
        Counts
        """
        out = object.__new__(cls)
        if sp.issparse(table):
            S = table.shape[1] - 1
            out._set(table, S, table.shape[0] // S, largest)
        else:
            out._set(table, table.shape[0], table.shape[1], largest)
        return out

    def __setattr__(self, name, value):
        raise AttributeError(f"Counts are immutable; cannot set `{name}`.")

    def __delattr__(self, name):
        raise AttributeError(f"Counts are immutable; cannot delete `{name}`.")

    def __repr__(self):
        stored = f", stored={self.table.nnz}" if self.storage == "csr" else ""
        return (f"Counts(n_states={self.n_states}, n_actions={self.n_actions}, "
                f"storage={self.storage!r}{stored})")

    @property
    def largest(self):
        """The largest count when known from a check that read it, else NaN (a float)."""
        return self._largest

    @property
    def n_pair(self):
        """Samples of every pair ``N(s, a)``: float64 array of shape ``(S, A)`` (a new array)."""
        if self.storage == "csr":
            totals = np.asarray(self.table.sum(axis=1), dtype=np.float64).ravel()
            return totals.reshape(self.n_states, self.n_actions)
        return self.table.sum(axis=2)

    def csr(self):
        """The counts as canonical float64 CSR of shape ``(S*A, S+1)``, whatever their storage.

        Returns
        -------
        scipy.sparse.csr_array of float64, shape (S*A, S+1)
            :attr:`table` itself when stored CSR; a new matrix of the
            nonzero entries of dense counts otherwise (indices sorted).
        """
        if self.storage == "csr":
            return self.table
        csr = sp.csr_array(self.table.reshape(-1, self.n_states + 1))
        csr.sum_duplicates()
        csr.eliminate_zeros()
        csr.sort_indices()
        return csr
