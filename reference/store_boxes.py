r"""Confidence boxes built on a sample store's own counts, in bounded memory.

:func:`store_boxes` gives the boxes of
:func:`reference.confidence.confidence_boxes`, the same floats, for the
counts of a :class:`~reference.generative.SampleStore`, as the certified solver
builds them every round. They take no copy of the counts: the row pointers,
the next states and the counts are the store's own arrays, and the empirical
frequencies are computed when asked (:attr:`StoreBoxes.p_hat`). What they add
to the store is the interval ends, two floats a stored entry, and one
number a pair (the sample sizes are summed from the counts when asked). The
intervals are computed a block of rows at a time, so the build needs no array
of the size of the counts beyond the two it keeps. Every array of the boxes is
read-only (the store's too: it never modifies them), so a pour kept on them
(``fast.kernels``) can tell they have not changed.

Round after round, a :class:`KeptEnds` hands the last round's ends and sample sizes of the
rows whose entries have not changed to the next build, which computes only the others (the
same floats; held for small stores only, :data:`KEPT_ENTRIES`).

Per stored entry, with the store's int64 counts and indices (16 bytes), the
boxes of :func:`reference.confidence.confidence_boxes` add 40 bytes (their
own next states, ``lo``, ``hi``, ``p_hat`` and, while they are built, a float
copy of the counts) and these 16.
"""

from dataclasses import dataclass

import numpy as np

from .confidence import BLOCK_ENTRIES, BoxLayout, box_ends, row_blocks

__all__ = []

KEPT_ENTRIES = BLOCK_ENTRIES
"""The most stored entries plus pairs of boxes whose ends :class:`KeptEnds` keeps for the
next round (a block of :func:`reference.confidence.row_blocks`, at most 1.5 MiB held
between rounds): larger stores recompute every row, so their peak memory is unchanged."""


@dataclass(frozen=True, repr=False)
class StoreBoxes(BoxLayout):
    r"""Per-entry boxes of every pair on the counts of a sample store, sharing its arrays.

    The layout of :class:`reference.confidence.ConfidenceBoxes` (the one the
    ``pour_values`` and ``pour_kernel`` kernels read), with the counts in
    place of the empirical frequencies.

    Attributes
    ----------
    n_states, n_actions, indptr, indices, lo, hi, hi_unseen, kind, delta
        As in :class:`~reference.confidence.ConfidenceBoxes`; ``indptr`` and
        ``indices`` are the store's arrays.
    counts : ndarray of int64, shape (nnz,)
        ``N(s, a, s')`` of the stored entries, the store's array.
    """

    counts: np.ndarray
    kind: str
    delta: float

    @property
    def n(self):
        """Samples ``N(s, a)`` of every pair, float64 ``(S*A,)``, summed from the counts at
        every access (:func:`row_sums`: the floats of
        :attr:`ConfidenceBoxes.n <reference.confidence.ConfidenceBoxes>` while every
        ``N(s, a)`` is below ``2^53``)."""
        return row_sums(self.indptr, lambda e0, e1: self.counts[e0:e1])

    @property
    def p_hat(self):
        """Empirical frequencies ``N(s, a, s') / N(s, a)`` of the stored entries, float64
        ``(nnz,)``, computed at every access (the same floats as
        :attr:`ConfidenceBoxes.p_hat <reference.confidence.ConfidenceBoxes>`)."""
        return self.counts / np.repeat(self.n, np.diff(self.indptr))


def row_sums(indptr, weights, block=None):
    """Per row, the sum of ``weights(e0, e1)`` (the weights of the stored entries ``e0:e1``)
    over its entries, a block of rows at a time.

    The same floats as ``np.bincount(rows, weights=w, minlength=n_rows)`` of the whole
    weights ``w`` (each row is summed in the order of its entries, from 0), with the
    weights and row numbers of one block (:func:`row_blocks`) in memory at once.

    Parameters
    ----------
    indptr : ndarray of int64, shape (n_rows + 1,)
    weights : callable
        ``weights(e0, e1)``: float or bool array of shape ``(e1 - e0,)``.
    block : int, optional
        Entries a block.

    Returns
    -------
    ndarray of float64, shape (n_rows,)
    """
    sums = np.empty(indptr.size - 1)
    for r0, r1, e0, e1, local in row_blocks(indptr, block):
        sums[r0:r1] = np.bincount(local, weights=weights(e0, e1), minlength=r1 - r0)
    return sums


class KeptEnds:
    r"""The last round's ends of :func:`store_boxes`, for the rows whose entries have not
    changed since.

    A row's ends are a function of its own entries (next states and counts) and of ``S``,
    ``A``, ``delta`` and the kind alone (:func:`reference.confidence.box_ends`: each
    kind's level is a function of the row's sample size ``N``, the sum of its counts, and
    its intervals of ``N``, the level and the row's frequencies), not of the round, the
    other rows or the total of the samples. So a row whose stored entries are, column for
    column and count for count, those of the last build of the same shape, ``delta`` and
    kind record has the last build's floats as its ends, whatever the store did in
    between: the match is on the exact entries, never on float sums, and needs nothing of
    the caller.

    A row's sample size is the sum of its counts, so an unchanged row keeps its size too:
    only the changed rows are summed again.

    :func:`store_boxes` reads :attr:`ends` and sets them to the boxes it builds, which
    are held with the counts' own arrays (not copied: a store never modifies the arrays
    of a matrix it returned, :meth:`~reference.generative.SampleStore.counts_csr`) until
    the next build when the boxes have at most :data:`KEPT_ENTRIES` stored entries plus
    pairs, and dropped otherwise.

    Attributes
    ----------
    ends : tuple or None
        ``(shape, indptr, indices, counts, n, lo, hi, hi_unseen, delta, record)`` of the
        last boxes built, or None.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from reference.box_kinds import box_kind
    >>> from reference.kernels import NUMPY_KERNELS
    >>> kept, kl = KeptEnds(), box_kind("kl")
    >>> first = sp.csr_array(np.array([[3, 1], [0, 5]], dtype=np.int64))
    >>> boxes = store_boxes(NUMPY_KERNELS, first, 0.1, kl, kept)
    >>> later = sp.csr_array(np.array([[3, 1], [2, 5]], dtype=np.int64))
    >>> rows, ends = kept.take(later, 0.1, kl)
    >>> rows, bool(ends[1][0] == boxes.lo[0])
    (array([1]), True)
    """

    def __init__(self):
        self.ends = None

    def take(self, csr, delta, record):
        """The rows of ``csr`` that need their ends computed, with the others' ends filled.

        Parameters
        ----------
        csr : scipy.sparse.csr_array, shape (S*A, S+1)
            This round's counts, canonical.
        delta : float
        record : BoxKind

        Returns
        -------
        rows : ndarray of int64 or None
            The rows whose entries differ from the last build's (None: every row, nothing
            kept).
        ends : tuple or None
            ``(n, lo, hi, hi_unseen)`` for :func:`reference.confidence.box_ends`, with
            the unchanged rows' ends in place (None with ``rows``).
        """
        last, self.ends = self.ends, None
        if last is None or last[0] != csr.shape or last[8:] != (delta, record):
            return None, None
        stored, old_stored = np.diff(csr.indptr), np.diff(last[1])
        same = _same_rows(csr, stored, old_stored, *last[2:4])
        old_n, old_lo, old_hi, old_unseen = last[4:8]
        last = None  # the last counts are no longer needed: freed before the new ends exist
        new_entry, old_entry = np.repeat(same, stored), np.repeat(same, old_stored)
        rows = np.flatnonzero(~same)
        n, hi_unseen = np.empty(same.size), np.empty(same.size)
        lo, hi = np.empty(csr.data.size), np.empty(csr.data.size)
        n[same], n[rows] = old_n[same], _sample_sizes(csr, rows)
        lo[new_entry], hi[new_entry] = old_lo[old_entry], old_hi[old_entry]
        hi_unseen[same] = old_unseen[same]
        return rows, (n, lo, hi, hi_unseen)

    def keep(self, csr, n, lo, hi, hi_unseen, delta, record):
        """Hold the sample sizes and ends just built on ``csr``, with its arrays, if they are
        small enough (:data:`KEPT_ENTRIES`)."""
        if lo.size + hi_unseen.size <= KEPT_ENTRIES:
            self.ends = (csr.shape, csr.indptr, csr.indices, csr.data, n, lo, hi, hi_unseen,
                         delta, record)


def _same_rows(csr, stored, old_stored, old_indices, old_counts):
    """Whether each row of ``csr`` (``stored`` entries a row) has the entries of the last
    counts (``old_stored`` a row, ``old_indices``, ``old_counts``), bool ``(S*A,)``: as many,
    with the same columns and counts in their order."""
    same = stored == old_stored
    if old_indices is csr.indices and old_counts is csr.data:
        return same
    new_entry, old_entry = np.repeat(same, stored), np.repeat(same, old_stored)
    differ = csr.data[new_entry] != old_counts[old_entry]
    if old_indices is not csr.indices:
        differ |= csr.indices[new_entry] != old_indices[old_entry]
    same[np.repeat(np.flatnonzero(same), stored[same])[differ]] = False
    return same


def _sample_sizes(csr, rows):
    """``N(s, a)`` of the rows ``rows`` (int64 ``(m,)``), float64 ``(m,)``: the floats of
    ``csr.sum(axis=1)[rows]`` (integer counts are summed exactly, by differences of their
    running sum, one pass over counts that :class:`KeptEnds` holds only when small, without
    scipy's overhead)."""
    if csr.data.dtype.kind not in "iu":
        return np.asarray(csr[rows].sum(axis=1), dtype=np.float64).ravel()
    totals = np.concatenate(([0], np.cumsum(csr.data, dtype=np.int64)))
    return (totals[csr.indptr[rows + 1]] - totals[csr.indptr[rows]]).astype(np.float64)


def store_boxes(kernels, csr, delta, record, kept=None):
    r"""The boxes of ``record`` on a store's counts ``csr``, sharing its arrays.

    Parameters
    ----------
    kernels : KernelSet
        Computes the intervals (``kernels.kl_interval`` for the Chernoff kinds).
    csr : scipy.sparse.csr_array of int64, shape (S*A, S+1)
        The counts of a :class:`~reference.generative.SampleStore`
        (:meth:`~reference.generative.SampleStore.counts_csr`): canonical,
        integer, ``>= 0``, trusted as the store made them. Its int64 index
        arrays and data are kept, not copied (others are converted once).
    delta : float in (0, 1), checked
    record : BoxKind
        The kind's record (:func:`~reference.box_kinds.box_kind`).
    kept : KeptEnds, optional
        The ends of the last boxes built with it: the rows whose entries have not changed
        take theirs from it, and it keeps these boxes' for the next call. Without it,
        every row is computed.

    Returns
    -------
    StoreBoxes
        The same intervals, bit for bit, as
        :func:`reference.confidence.confidence_boxes` of the same counts and
        kind; every array read-only, ``csr``'s own (which its store never modifies)
        included.

    Raises
    ------
    NumericRangeError
        If the log term overflows (:func:`reference.confidence.check_level`).
    ParameterError
        If a pair's box misses the simplex (only ``"paper"``, as there).

    Notes
    -----
    The sizes and ends are those of :func:`reference.confidence.box_ends`, which
    :func:`reference.confidence.confidence_boxes` reads too.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from reference.box_kinds import box_kind
    >>> from reference.confidence import confidence_boxes
    >>> from reference.kernels import NUMPY_KERNELS
    >>> csr = sp.csr_array(np.array([[30, 70], [0, 5]], dtype=np.int64))
    >>> boxes = store_boxes(NUMPY_KERNELS, csr, 0.1, box_kind("kl"))
    >>> same = confidence_boxes(csr.toarray().reshape(1, 2, 2), 0.1, kind="kl")
    >>> bool(np.array_equal(boxes.lo, same.lo) and np.array_equal(boxes.p_hat, same.p_hat))
    True
    """
    S = csr.shape[1] - 1
    rows, ends = (None, None) if kept is None else kept.take(csr, delta, record)
    n, lo, hi, hi_unseen = box_ends(kernels, csr, delta, record, rows, ends)
    if kept is not None:
        kept.keep(csr, n, lo, hi, hi_unseen, delta, record)
    arrays = dict(indptr=csr.indptr.astype(np.int64, copy=False),
                  indices=csr.indices.astype(np.int64, copy=False),
                  counts=csr.data.astype(np.int64, copy=False), lo=lo, hi=hi,
                  hi_unseen=hi_unseen)
    for array in arrays.values():
        array.flags.writeable = False
    return StoreBoxes(n_states=S, n_actions=csr.shape[0] // S, kind=record.name, delta=delta,
                      **arrays)
