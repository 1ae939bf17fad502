r"""Confidence sets on the transition kernel: named per-entry boxes, and the KL interval.

Lemma 5's radius is written once, in the leaf module :mod:`reference.lemma5`;
the kinds of boxes are records of :mod:`reference.box_kinds`
(:data:`~reference.box_kinds.KINDS`): ``"paper"`` (that radius),
``"bernstein"``, ``"kl"`` and ``"mixture"``. :func:`confidence_boxes` is the
one way to the boxes of any kind.

Each kind gives every next state ``s'`` of every pair ``(s, a)`` an interval
``[lo, hi]`` that contains ``p(s'|s, a)`` on one event of probability at least
``1 - delta`` (all pairs, all next states, and for the time-uniform kinds all
sample sizes at once). The box of a pair is the product of its intervals,
intersected with the simplex.

The boxes are stored sparse, on the pattern of the observed next states: a
next state a pair never reached has the interval of an empirical frequency 0,
which depends on the pair's sample size only, so all of them share one upper
end per pair (``hi_unseen``) and lower end 0. Dense counts are read the same
way, so dense and CSR counts give the same boxes and nothing is densified.
"""

from dataclasses import dataclass

import numpy as np

from ._checks import check_real, check_real_dtype
from .box_kinds import BOX_KINDS, SIMPLEX_SLACK, box_kind
from .counts import Counts
from .errors import NumericRangeError, ParameterError, ShapeError
from .kernels import NUMPY_KERNELS, segment_positions

__all__ = [
    "BOX_KINDS",
    "ConfidenceBoxes",
    "confidence_boxes",
    "kl_interval",
]


@dataclass(frozen=True, repr=False)
class BoxLayout:
    """The fields and methods every stored form of the boxes shares (the kernels read these).

    :class:`ConfidenceBoxes` and :class:`reference.store_boxes.StoreBoxes` add the sample
    sizes, the kind and ``delta``, and the frequencies or the counts.
    """

    n_states: int
    n_actions: int
    indptr: np.ndarray
    indices: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    hi_unseen: np.ndarray

    def __repr__(self):
        return (f"{type(self).__name__}(kind={self.kind!r}, delta={self.delta!r}, "
                f"n_states={self.n_states}, n_actions={self.n_actions}, nnz={self.lo.size})")

    @property
    def rows(self):
        """Row of every stored entry, int64 array of shape ``(nnz,)``."""
        return np.repeat(np.arange(self.indptr.size - 1), np.diff(self.indptr))

    @property
    def free_mass(self):
        """``1 - sum lo`` of every row, shape ``(S*A,)`` (unseen entries have ``lo = 0``)."""
        return 1.0 - np.bincount(self.rows, weights=self.lo, minlength=self.indptr.size - 1)

    def to_dense(self):
        """The boxes as arrays ``lo, hi`` of shape ``(S, A, S+1)`` (for small models and tests)."""
        S, A = self.n_states, self.n_actions
        hi = np.repeat(self.hi_unseen, S + 1).reshape(S * A, S + 1)
        lo = np.zeros_like(hi)
        rows = self.rows
        hi[rows, self.indices] = self.hi
        lo[rows, self.indices] = self.lo
        return lo.reshape(S, A, S + 1), hi.reshape(S, A, S + 1)


@dataclass(frozen=True, repr=False)
class ConfidenceBoxes(BoxLayout):
    r"""Per-entry boxes of every pair, on the sparsity pattern of the counts.

    The layout the ``pour_values`` and ``pour_kernel`` kernels read
    (``docs/backends.md``); a data structure, not a result.

    Row ``i = s * A + a`` holds the pair ``(s, a)``; its stored next states are
    ``indices[indptr[i]:indptr[i+1]]`` (ascending), with intervals
    ``[lo[k], hi[k]]``. Every other next state of the row has the interval
    ``[0, hi_unseen[i]]``.

    Attributes
    ----------
    n_states, n_actions : int
        ``S`` and ``A``.
    indptr : ndarray of int64, shape (S*A + 1,)
    indices : ndarray of int64, shape (nnz,)
        Stored next states (``0 .. S``, the goal is ``S``).
    lo, hi : ndarray of float64, shape (nnz,)
        Interval ends of the stored entries, ``0 <= lo <= hi <= 1``.
    hi_unseen : ndarray of float64, shape (S*A,)
        Upper end shared by the next states a row does not store.
    p_hat : ndarray of float64, shape (nnz,)
        Empirical frequencies of the stored entries.
    n : ndarray of float64, shape (S*A,)
        Sample size ``N(s, a)`` of every row.
    kind : str
        One of :data:`BOX_KINDS`.
    delta : float
        Confidence level.
    """

    p_hat: np.ndarray
    n: np.ndarray
    kind: str
    delta: float


def refuse_missed_simplex(hi_sum, n, n_actions, delta, rows=None):
    """Raise ``ParameterError`` on the first pair whose upper ends ``hi_sum`` (per row; the
    rows ``rows``, a sequence of row numbers, all from 0 by default) sum below 1: its box
    misses the simplex (``n``: the rows' sample sizes)."""
    short = np.flatnonzero(hi_sum < 1.0 - SIMPLEX_SLACK)
    if short.size:
        s, a = divmod(int(short[0] if rows is None else rows[short[0]]), n_actions)
        raise ParameterError(
            f"the confidence set of the pair (s, a) = ({s}, {a}) misses the simplex "
            f"(it has {int(n[short[0]])} samples and `delta` = {delta!r}); sample every "
            "pair at least once or use a smaller `delta`."
        )


@NUMPY_KERNELS.bind
def kl_interval(kernels, p_hat, n, level):
    r"""The Chernoff interval ``{q in [0, 1] : n kl(p_hat, q) <= level}``, rounded outwards.

    Parameters
    ----------
    p_hat : array_like of float in [0, 1]
        Empirical frequencies.
    n : array_like of float >= 0
        Sample sizes (broadcast with ``p_hat``); ``n = 0`` gives ``[0, 1]``.
    level : array_like of float > 0
        The bound ``l`` on ``n kl(p_hat, q)``.

    Returns
    -------
    lo, hi : ndarray of float64
        The ends, of the broadcast shape of the arguments. Each end is a
        point whose computed divergence exceeds ``level / n`` by more than
        its rounding-error bound, or the outer end ``0`` (``1``) when no
        point of that side was, so the exact interval lies inside
        ``[lo, hi]``:

        .. math::

            \{q : n\,\mathrm{kl}(\hat p, q) \le l\} \subseteq [lo, hi], \qquad
            \mathrm{kl}(p, q) = p \log\frac{p}{q} + (1 - p)\log\frac{1 - p}{1 - q}.

        Both backends compute the same floats (the same steps, operations,
        logarithm and exponential, numpy's).

    Raises
    ------
    ParameterError
        On ``p_hat`` outside ``[0, 1]``, negative ``n`` or ``level <= 0``
        (NaN included).

    Notes
    -----
    Each side of each entry is found on its own, with ``r = level / n``
    (infinite for ``n = 0``: ``[0, 1]``), ``p = p_hat`` and the side's mass
    ``s`` (``p`` below, ``1 - p`` above; ``s = 0`` gives the outer end).

    *The test.* A point ``q`` is **outside** when the computed divergence
    ``k = a + b``, ``a = p log(p / q)``, ``b = (1 - p) log((1 - p) / (1 - q))``
    (``0 log 0 = 0``), exceeds ``r + e`` with

    .. math::

        e = u\,\bigl(2p + 4(1 - p) + 16(|a| + |b|)\bigr) + \eta, \qquad
        u = 2^{-53}, \quad \eta = 2^{-1070},

    (:data:`KL_ROUNDOFF` and :data:`KL_UNDERFLOW`), a bound on the rounding
    error of ``k`` (infinite where ``a`` or ``b`` is). The quotient
    ``p / q`` is rounded by a relative ``u``, which moves its logarithm by
    at most ``u`` (``p u`` in ``a``); the roundings of ``1 - p``, ``1 - q``
    and their quotient move the second logarithm by at most ``3 u``
    (``3 u (1 - p)`` in ``b``); numpy's float64 ``log`` (taken to be within
    4 ulps, ``8 u``) and the two products and the sum add at most about
    ``11 u (|a| + |b|)``. The rest of ``e`` covers the rounding of
    ``level / n`` and of ``r + e`` (``r < k <= |a| + |b|``), and ``eta``
    the results in the subnormal range. So a point outside has
    ``kl(p, q) > level / n`` exactly. (Without ``e``, about half the ends of
    a bisection land inside the exact interval by a relative ``1e-11`` of
    ``kl`` on the 10^4 entries of ``garnet(500, 4, 5)``'s certificate.)

    *The start.* ``kl(p, .) - r`` is convex, decreasing below ``p`` and
    increasing above. On the lower side the start is the closest to ``p`` of
    ``p - min(sqrt(2 R min(1/4, p)), R + sqrt(R (R + 2 (1 - p))))``, outside
    by Pinsker's ``kl >= 2 (p - q)^2``, by ``kl >= (p - q)^2 / (2 max(p, q))``
    and by its mirror ``kl >= (p - q)^2 / (2 max(1 - p, 1 - q))``, and, where
    ``s < KL_EXP_START r``, ``p exp(-(R - (1 - p) log(1 - p)) / p)``, outside
    by ``kl >= p log(p / q) + (1 - p) log(1 - p)``; the upper side mirrors
    them (``p <-> 1 - p``, ``q <-> 1 - q``). They are taken at the lifted
    radius ``R = r + u (40 + 32 r)``, above ``r`` by about twice ``e`` at
    the root (there ``|a| + |b| <= r + 0.74``), and the start is the next
    float outwards of the closest, so that the start passes the test in
    spite of the rounding of the bounds. A start at the outer end (a root
    within a float of it) makes that end.

    *Newton's method.* From a start strictly inside the side and tested
    outside, at most :data:`KL_NEWTON_STEPS` steps
    ``q <- q - (k - (r + 2 m)) / kl'(q)``, with ``kl'(q) = (q - p) / (q (1 - q))``
    and the margin ``m = e + u q |kl'(q)|`` (the test's bound and the
    rounding of the new point), taken while ``k > r + 3 m`` and the step
    moves towards ``p`` without reaching it, each kept when its point tests
    outside. By convexity every exact step stays outside and they converge
    quadratically (to ``kl = r + 2 m``), so within a few steps the end has
    ``k <= r + 3 m``. A side whose start is neither (rounding at the root, a
    radius below the rounding error, a root below the smallest float) falls
    back to :data:`KL_BISECTIONS` bisection steps from ``[p, outer end]``
    with the same test; its end is the last point that tested outside, or
    the outer end.

    *Tightness.* An end lies outside the exact one by about ``e / |kl'|``:
    within ``1e-10`` of the interval's width while the radius is above about
    ``1e-5`` (``n`` below about ``10^6`` at the certificates' levels), a
    relative ``3e-5`` at ``n = 10^12``, and wider than the exact interval by
    a factor of a few once ``level / n`` nears the constant part of ``e``
    (``n`` about ``10^17``): always sound, looser as the radius falls to the
    rounding error of ``kl``. A radius ``level / n`` that is not a number
    (``n = level = inf``) gives ``[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = kl_interval(0.0, 100.0, 3.0)
    >>> float(lo), round(float(hi), 6), round(1 - float(np.exp(-0.03)), 6)
    (0.0, 0.029554, 0.029554)
    """
    arrays = []
    for name, value in (("p_hat", p_hat), ("n", n), ("level", level)):
        check_real_dtype(name, value)
        try:
            arrays.append(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError):
            raise ParameterError(f"`{name}` must be real numbers; got {value!r:.80}.") from None
    try:
        p_hat, n, level = np.broadcast_arrays(*arrays)
    except ValueError:
        raise ShapeError(f"`p_hat`, `n` and `level` must broadcast together; got shapes "
                         f"{[a.shape for a in arrays]}.") from None
    for name, value, good, form in (("p_hat", p_hat, (p_hat >= 0) & (p_hat <= 1), "in [0, 1]"),
                                    ("n", n, n >= 0, ">= 0"), ("level", level, level > 0, "> 0")):
        if not good.all():
            bad = value[~good].flat[0]
            raise ParameterError(f"`{name}` must hold floats {form}; got {float(bad)!r}.")
    lo, hi = kernels.kl_interval(*(np.ascontiguousarray(x).ravel() for x in (p_hat, n, level)))
    return lo.reshape(p_hat.shape), hi.reshape(p_hat.shape)


def check_level(kind, n_max, n_states, n_actions, delta, where="these counts"):
    """Refuse a ``delta`` whose log term of ``kind`` overflows float64 at ``n_max`` samples.

    Every kind's log term is ``log(g(N) / delta)`` with ``g`` growing in the
    samples ``N`` of a row, so the largest ``N`` decides; an overflowing term
    would make every box ``[0, 1]``.

    Parameters
    ----------
    kind : str
        A name of :data:`BOX_KINDS`.
    n_max : float
        The most samples a row holds (or may come to hold).
    n_states, n_actions : int
        ``S`` and ``A``.
    delta : float in (0, 1), checked
    where : str
        What ``n_max`` is, for the message.

    Raises
    ------
    NumericRangeError
        If the log term is not finite; the message gives the smallest ``delta``
        allowed, ``g(N)`` over the largest float.
    """
    record = box_kind(kind)
    S, A, n = n_states, n_actions, np.float64(max(1.0, float(n_max)))
    with np.errstate(over="ignore", divide="ignore"):
        level = record.level(n, S, A, delta)
    if np.isfinite(level):
        return
    smallest = np.exp(record.level(n, S, A, 1.0)) / np.finfo(np.float64).max
    raise NumericRangeError(
        f"the log term of the {kind!r} boxes overflows float64 with S = {S}, A = {A}, "
        f"N = {n:.3g} ({where}) and `delta` = {delta!r}; `delta` must be at least "
        f"{smallest * (1 + 1e-9):.4g}."
    )


@NUMPY_KERNELS.bind
def confidence_boxes(kernels, counts, delta, kind="kl"):
    r"""Per-entry confidence boxes of a named kind, from sample counts.

    Parameters
    ----------
    counts : Counts, ndarray of shape (S, A, S+1) or CSR matrix of shape (S*A, S+1)
        Sample counts ``N(s, a, s')`` (row ``s*A + a`` when CSR; see
        :class:`~reference.counts.Counts`); never densified.
    delta : float in (0, 1)
        Confidence level: the true kernel lies in every box, for every pair,
        with probability at least ``1 - delta``.
    kind : {"kl", "mixture", "bernstein", "paper"}, default "kl"
        Which intervals; see Notes.

    Returns
    -------
    ConfidenceBoxes
        The boxes, stored on the pattern of the observed next states.

    Raises
    ------
    ShapeError, NotFiniteError, SparseFormatError, NumericRangeError
        On counts that :class:`~reference.counts.Counts` refuses.
    ParameterError
        On negative counts, ``delta`` outside ``(0, 1)``, an unknown ``kind``,
        or a pair whose box misses the simplex (only ``"paper"`` with a
        ``delta`` close to 1 and a pair without samples).
    NumericRangeError
        If the log term overflows float64 (``delta`` below about ``1e-270``
        with many samples, :func:`check_level`).

    Notes
    -----
    Each kind is a record of :data:`reference.box_kinds.KINDS`, whose ``doc``
    says what its intervals are and why they hold; a row without samples gets
    ``[0, 1]`` for its unseen next states under a time-uniform kind. With
    ``N = N(s, a)``, ``p_hat = N(s, a, s') / N`` and ``S`` non-goal states:

    - ``"paper"`` is Lemma 5 as docs/semantics.md fixes it: ``N+ = max(1, N)``,
      ``L = log(S A N+ / delta)`` and the box
      ``p_hat -+ (4 sqrt(p_hat L / N+) + 28 L / N+)`` clipped to ``[0, 1]``.
    - ``"kl"`` is the Chernoff interval of each entry,

      .. math::

          \{q : N\,\mathrm{kl}(\hat p, q) \le l_N\}, \qquad
          l_N = \log\frac{2 S A (S+1) N (N+1)}{\delta},

      computed by :func:`kl_interval`. For a fixed entry and a fixed ``N``,
      the Chernoff bound gives each side probability at most ``exp(-l_N)``.
    - ``"mixture"`` is the same Chernoff interval at the level of a
      Krichevsky-Trofimov mixture of the entry's likelihood ratios,

      .. math::

          \{q : N\,\mathrm{kl}(\hat p, q) \le m_N\}, \qquad
          m_N = \log\frac{S A (S+1)}{\delta} + \frac{1}{2}\log N + \log 2,

      which holds for every ``N`` at once and both sides together with
      probability at least ``1 - delta / (S A (S+1))`` per entry (Ville's
      inequality on the mixture martingale and the mixture's regret bound,
      ``docs/certificates.md``). Since ``m_N < l_N`` for every ``N >= 1``,
      its intervals lie inside those of ``"kl"``.
    - ``"bernstein"`` is the empirical Bernstein interval of Maurer and
      Pontil (2009, Thm. 4) on each side with ``delta_N / 2``:

      .. math::

          |\hat p - p| \le \sqrt{\frac{2 V_N L_N}{N}} + \frac{7 L_N}{3 (N - 1)},
          \qquad V_N = \frac{N \hat p (1 - \hat p)}{N - 1}, \qquad
          L_N = \log\frac{4 S A (S+1) N (N+1)}{\delta},

      and ``[0, 1]`` while ``N < 2``.

    The kinds other than ``"paper"`` are **time-uniform** (``"mixture"`` by
    its own argument, the others as follows). The ``N``-th sample of a pair is
    the ``N``-th draw of an i.i.d. sequence, whatever rule chose to draw it,
    so the event that every interval built from the first ``N`` samples holds
    is one event about those sequences. Its failure probability is at most the
    union over ``(s, a, s', N)``:

    .. math::

        \sum_{s, a, s'} \sum_{N \ge 1} \frac{\delta}{S A (S+1) N (N+1)} = \delta,

    since :math:`\sum_{N \ge 1} 1 / (N (N+1)) = 1`. Data-dependent stopping
    and adaptive sampling therefore cost nothing in ``delta``.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros((1, 1, 2)); counts[0, 0] = [30, 70]
    >>> boxes = confidence_boxes(counts, 0.1, kind="kl")
    >>> bool(boxes.lo[1] < 0.7 < boxes.hi[1])
    True
    """
    counts = Counts(counts)
    delta = check_real("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return _confidence_boxes(kernels, counts, delta, box_kind(kind))


def _confidence_boxes(kernels, counts, delta, record):
    """:func:`confidence_boxes` of checked arguments, which it trusts.

    Parameters
    ----------
    kernels : KernelSet
    counts : Counts
    delta : float in (0, 1)
    record : BoxKind
        The kind's record (:func:`~reference.box_kinds.box_kind`).

    Returns
    -------
    ConfidenceBoxes
    """
    csr, S, A = counts.csr(), counts.n_states, counts.n_actions
    n, lo, hi, hi_unseen = box_ends(kernels, csr, delta, record)
    return ConfidenceBoxes(
        n_states=S, n_actions=A, indptr=csr.indptr.astype(np.int64),
        indices=csr.indices.astype(np.int64), lo=lo, hi=hi, hi_unseen=hi_unseen,
        p_hat=csr.data / np.repeat(n, np.diff(csr.indptr)), n=n, kind=record.name,
        delta=delta,
    )


BLOCK_ENTRIES = 1 << 16
"""Stored entries a block of :func:`row_blocks` holds (whole rows)."""


def row_blocks(indptr, block=None, local=True):
    """Blocks of whole rows of a CSR layout, each of about ``block`` stored entries
    (:data:`BLOCK_ENTRIES` by default, at least one row).

    Parameters
    ----------
    indptr : ndarray of int, shape (n_rows + 1,)
    block : int, optional
        Entries a block.
    local : bool, default True
        Whether to build ``local`` (None otherwise).

    Yields
    ------
    r0, r1, e0, e1 : int
        The rows ``r0:r1`` and their stored entries ``e0:e1``.
    local : ndarray of int64, shape (e1 - e0,)
        The row of every entry, from 0 (``r - r0``): the bins of ``np.bincount``.
    """
    block = BLOCK_ENTRIES if block is None else block
    n_rows = indptr.size - 1
    r0 = 0
    while r0 < n_rows:
        r1 = max(r0 + 1, int(np.searchsorted(indptr, indptr[r0] + block, side="right")) - 1)
        r1 = min(r1, n_rows)
        yield (r0, r1, int(indptr[r0]), int(indptr[r1]),
               np.repeat(np.arange(r1 - r0), np.diff(indptr[r0:r1 + 1])) if local else None)
        r0 = r1


class EntryBlocks:
    """The stored entries of the rows ``rows`` of a CSR layout, a block of them at a time.

    Iterating yields ``(i0, i1, local, entry)``: the rows ``rows[i0:i1]``, the
    position in it of the row of every stored entry (from 0, the bins of
    ``np.bincount``) and the entries' positions in the layout, in the order of
    the rows and of their entries; :func:`row_blocks` sizes the blocks. It can
    be iterated again: the blocks are computed anew each time, unless the
    entries fit in one block, which is then kept (:attr:`single`).

    Parameters
    ----------
    indptr : ndarray of int, shape (n_rows + 1,)
    rows : ndarray of int64, shape (m,)

    Attributes
    ----------
    single : tuple or None
        The one block, when the entries fit in one.
    """

    def __init__(self, indptr, rows):
        self.indptr, self.rows = indptr, rows
        self.single = None
        stored = np.diff(indptr)[rows]
        if int(stored.sum()) <= BLOCK_ENTRIES:
            self.single = (0, rows.size, np.repeat(np.arange(rows.size), stored),
                           np.repeat(indptr[rows], stored) + segment_positions(stored))

    def __iter__(self):
        if self.single is not None:
            return iter([self.single])
        return self._blocks()

    def _blocks(self):
        stored = np.diff(self.indptr)[self.rows]
        starts = self.indptr[self.rows]
        for i0, i1, _, _, local in row_blocks(np.concatenate([[0], np.cumsum(stored)])):
            yield i0, i1, local, np.repeat(starts[i0:i1], stored[i0:i1]) + segment_positions(
                stored[i0:i1])


def box_ends(kernels, csr, delta, record, rows=None, ends=None):
    r"""The sample sizes and interval ends of the boxes of ``record`` on CSR counts ``csr``.

    Row ``i`` of ``N`` samples has the log term ``l = level(max(N, 1))`` of the
    kind; each stored entry gets ``interval(p_hat, N, l)`` and every unseen
    next state of the row ``[0, interval(0, N, l)[1]]`` (``[0, 1]`` for a
    time-uniform kind while ``N = 0``). The levels and intervals are
    elementwise, so they are computed a block of whole rows at a time
    (:func:`row_blocks`), which changes no float and needs no array of the size
    of the counts besides the two ends, and no array of the pairs besides
    ``n``, ``hi_unseen`` and their row lengths. For the same reason a row's
    ends depend on its own counts only, and ``rows`` computes those of some
    rows alone (:func:`reference.store_boxes.store_boxes` keeps the others
    from the last round).

    Parameters
    ----------
    kernels : KernelSet
        Computes the intervals (``kernels.kl_interval`` for the Chernoff kinds).
    csr : scipy.sparse.csr_array, shape (S*A, S+1)
        Canonical counts, ``>= 0``.
    delta : float in (0, 1)
    record : BoxKind
    rows : ndarray of int64, shape (m,), optional
        The rows to compute, ascending (all by default).
    ends : tuple of ndarray, optional
        ``(n, lo, hi, hi_unseen)`` as returned, ``n`` filled (the floats of
        ``csr.sum(axis=1)``): the ends of ``rows`` are written into them.

    Returns
    -------
    n, hi_unseen : ndarray of float64, shape (S*A,)
        ``N(s, a)`` and the upper end of every unseen next state.
    lo, hi : ndarray of float64, shape (nnz,)
        The ends of the stored entries.

    Raises
    ------
    NumericRangeError
        If the log term overflows (:func:`check_level`).
    ParameterError
        If a pair's box misses the simplex (only ``"paper"``,
        :func:`refuse_missed_simplex`).
    """
    n_rows, width = csr.shape
    S = width - 1
    A = n_rows // S
    if ends is None:
        n = np.asarray(csr.sum(axis=1), dtype=np.float64).ravel()
        ends = n, np.empty(csr.data.size), np.empty(csr.data.size), np.empty(n_rows)
    n, lo, hi, hi_unseen = ends
    check_level(record.name, n.max(), S, A, delta)
    if record.chernoff:  # whole rows by the kernel chernoff_rows: the same floats
        indptr = csr.indptr.astype(np.int64, copy=False)
        for numbers in [rows] if rows is not None else (
                np.arange(r0, r1) for r0, r1, *_ in row_blocks(indptr, local=False)):
            level = record.level(np.maximum(n[numbers], 1.0), S, A, delta)
            refuse_missed_simplex(kernels.chernoff_rows(indptr, csr.data, n, level, numbers,
                                                        width, lo, hi, hi_unseen),
                                  n[numbers], A, delta, numbers)
        return n, lo, hi, hi_unseen
    stored = np.diff(csr.indptr)
    if rows is None:
        blocks = ((range(r0, r1), slice(r0, r1), slice(e0, e1), local)
                  for r0, r1, e0, e1, local in row_blocks(csr.indptr))
    else:
        blocks = ((rows[i0:i1], rows[i0:i1], entry, local)
                  for i0, i1, local, entry in EntryBlocks(csr.indptr, rows))
    # An unseen entry's interval depends on its row's sample size only: one per distinct size.
    sizes = np.unique(n if rows is None else n[rows])
    hi_size = record.interval(kernels, np.zeros_like(sizes), sizes,
                              record.level(np.maximum(sizes, 1.0), S, A, delta))[1]
    for numbers, at_rows, at_entries, local in blocks:
        n_row, k = n[at_rows], stored[at_rows]
        n_entry = np.repeat(n_row, k)
        unseen = hi_size[np.searchsorted(sizes, n_row)]
        if record.time_uniform:
            unseen = np.where(n_row > 0, unseen, 1.0)
        hi_unseen[at_rows] = unseen
        level = record.level(np.maximum(n_row, 1.0), S, A, delta)
        lo[at_entries], hi[at_entries] = record.interval(
            kernels, csr.data[at_entries] / n_entry, n_entry, np.repeat(level, k))
        refuse_missed_simplex((S + 1 - k) * unseen
                              + np.bincount(local, weights=hi[at_entries], minlength=k.size),
                              n_row, A, delta, numbers)
    return n, lo, hi, hi_unseen
