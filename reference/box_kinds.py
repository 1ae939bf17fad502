r"""The kinds of confidence boxes, one record each, in one registry.

A kind gives every next state ``s'`` of every pair ``(s, a)`` an interval
``[lo, hi]`` that contains ``p(s'|s, a)`` on one event of probability at least
``1 - delta`` (all pairs, all next states, and for the time-uniform kinds all
sample sizes at once). :func:`reference.confidence.confidence_boxes` builds the
boxes of any kind from its record; the command line offers the time-uniform
kinds (:func:`time_uniform_kinds`), and a run that stops on its data accepts
only those. :data:`BOX_KINDS` (the names) is exported by :mod:`reference.confidence`.
Adding a kind is adding one :class:`BoxKind` to :data:`KINDS`
(``docs/backends.md`` walks through it).

With ``N = N(s, a)``, ``p_hat = N(s, a, s') / N`` and ``S`` non-goal states, a
record's ``level(n, S, A, delta)`` is the log term of rows of ``n`` samples and
its ``interval(kernels, p_hat, n, level)`` the interval ends of frequencies
``p_hat`` in rows of ``n`` samples (``kernels`` the caller's kernel set, for a
compiled interval). This module imports nothing of this package but Lemma 5's
leaf module.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import ParameterError, ShapeError, SparseFormatError
from .lemma5 import log_term, radius

__all__ = ["BoxKind", "KINDS", "box_kind", "time_uniform_kinds"]

SIMPLEX_SLACK = 1e-12
"""Tolerance of the simplex test of a box.

A box meets the simplex when ``sum lo <= 1 + SIMPLEX_SLACK`` and
``sum hi >= 1 - SIMPLEX_SLACK``.
"""

KL_BISECTIONS = 64
"""Bisection steps of the KL interval's fallback: below one ulp of ``[0, 1]`` after 53."""

KL_NEWTON_STEPS = 12
"""Most Newton steps of the KL interval on one side of an entry."""

KL_EXP_START = 8.0
"""The side masses ``s`` below ``KL_EXP_START * r`` where the KL interval also tries the
exponential start."""

KL_ROUNDOFF = 2.0**-53
"""The unit roundoff ``u`` of float64 in the rounding-error bound of the KL interval."""

KL_UNDERFLOW = 2.0**-1070
"""The absolute term of that bound, for results in the subnormal range (16 half-ulps there)."""


@dataclass(frozen=True)
class BoxKind:
    """One kind of confidence box: its name, log term, interval and guarantee.

    Attributes
    ----------
    name : str
        The ``kind`` argument that selects it.
    level : callable
        ``level(n, S, A, delta) -> ndarray``: the log term of rows of ``n``
        samples (float64 array, ``n >= 1``), elementwise.
    interval : callable
        ``interval(kernels, p_hat, n, level) -> (lo, hi)``: the interval ends of
        frequencies ``p_hat`` in rows of ``n`` samples with log term ``level``
        (float64 arrays of one shape), clipped to ``[0, 1]``. ``kernels`` is the
        caller's :class:`~reference.backend.KernelSet`: an interval with a
        compiled kernel calls it (``kernels.kl_interval``), others ignore it.
    time_uniform : bool
        Whether the event holds for all sample sizes at once, so that a run may
        stop, or choose what to sample, from its data without any cost in
        ``delta``.
    doc : str
        What the intervals are and the union bound that makes the event hold
        with probability ``1 - delta``.
    chernoff : bool, default False
        Whether ``interval`` is the Chernoff interval (``kernels.kl_interval``),
        whose ends :func:`reference.confidence.box_ends` then computes whole rows
        at once, a block of them a call, with the kernel ``chernoff_rows`` (the same floats).
    """

    name: str
    level: Callable
    interval: Callable
    time_uniform: bool
    doc: str
    chernoff: bool = False

    def __repr__(self):
        return f"BoxKind({self.name!r}, time_uniform={self.time_uniform})"


def _paper_level(n, S, A, delta):
    return log_term(np.maximum(1.0, n), S, A, delta)


def _paper_interval(kernels, p_hat, n, level):
    width = radius(p_hat, level, np.maximum(1.0, n))
    return np.maximum(0.0, p_hat - width), np.minimum(1.0, p_hat + width)


def _union_level(factor):
    """The log term ``log(factor S A (S+1) N (N+1) / delta)`` of the time-uniform kinds."""
    def level(n, S, A, delta):
        return np.log(factor * (S * A * (S + 1) * n * (n + 1) / delta))
    return level


def _kl_interval(kernels, p_hat, n, level):
    return kernels.kl_interval(p_hat, n, level)


def _bernstein_interval(kernels, p_hat, n, level):
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = n * p_hat * (1.0 - p_hat) / (n - 1.0)
        width = np.sqrt(2.0 * variance * level / n) + 7.0 * level / (3.0 * (n - 1.0))
    width = np.where(n >= 2, width, np.inf)
    return np.maximum(0.0, p_hat - width), np.minimum(1.0, p_hat + width)


_UNION = r"""Time-uniform: the ``N``-th sample of a pair is the ``N``-th draw of an i.i.d.
sequence, whatever rule chose to draw it, so the event that every interval built
from the first ``N`` samples holds is one event about those sequences. Its failure
probability is at most the union over ``(s, a, s', N)``:

.. math::

    \sum_{s, a, s'} \sum_{N \ge 1} \frac{\delta}{S A (S+1) N (N+1)} = \delta,

since :math:`\sum_{N \ge 1} 1 / (N (N+1)) = 1`. Data-dependent stopping and
adaptive sampling therefore cost nothing in ``delta``."""

PAPER = BoxKind(
    name="paper",
    level=_paper_level,
    interval=_paper_interval,
    time_uniform=False,
    doc=r"""Lemma 5 as docs/semantics.md fixes it: ``N+ = max(1, N)``,
``L = log(S A N+ / delta)`` and the box ``p_hat -+ (4 sqrt(p_hat L / N+) + 28 L / N+)``
clipped to ``[0, 1]``. Its event holds for the sample sizes of one fixed schedule
(the union over ``(s, a, s')`` of the lemma), not for all sizes at once.""",
)

BERNSTEIN = BoxKind(
    name="bernstein",
    level=_union_level(4.0),
    interval=_bernstein_interval,
    time_uniform=True,
    doc=r"""The empirical Bernstein interval of Maurer and Pontil (2009, Thm. 4) on each
side with ``delta_N / 2``:

.. math::

    |\hat p - p| \le \sqrt{\frac{2 V_N L_N}{N}} + \frac{7 L_N}{3 (N - 1)},
    \qquad V_N = \frac{N \hat p (1 - \hat p)}{N - 1}, \qquad
    L_N = \log\frac{4 S A (S+1) N (N+1)}{\delta},

and ``[0, 1]`` while ``N < 2``. """ + _UNION,
)

KL = BoxKind(
    name="kl",
    level=_union_level(2.0),
    interval=_kl_interval,
    time_uniform=True,
    doc=r"""The Chernoff interval of each entry,

.. math::

    \{q : N\,\mathrm{kl}(\hat p, q) \le l_N\}, \qquad
    l_N = \log\frac{2 S A (S+1) N (N+1)}{\delta},

computed by :func:`reference.confidence.kl_interval` (the kernel ``kl_interval``). For a
fixed entry and a fixed ``N``, the Chernoff bound gives each side probability at most
``exp(-l_N)``. """ + _UNION,
    chernoff=True,
)

def _mixture_level(n, S, A, delta):
    """The mixture's level ``log(S A (S+1) / delta) + log(N) / 2 + log 2``."""
    return np.log(S * A * (S + 1) / delta) + 0.5 * np.log(n) + np.log(2.0)


MIXTURE = BoxKind(
    name="mixture",
    level=_mixture_level,
    interval=_kl_interval,
    time_uniform=True,
    doc=r"""The Chernoff interval of each entry at the level of a Krichevsky-Trofimov
mixture of the entry's likelihood ratios,

.. math::

    \{q : N\,\mathrm{kl}(\hat p, q) \le m_N\}, \qquad
    m_N = \log\frac{S A (S+1)}{\delta} + \frac{1}{2}\log N + \log 2,

computed by :func:`reference.confidence.kl_interval` like ``"kl"``. Time-uniform by
itself: under the true ``p`` the Beta(1/2, 1/2) mixture of an entry's likelihood
ratios is a non-negative martingale of mean 1, so by Ville's inequality it stays
below ``S A (S+1) / delta`` for every ``N`` at once with probability at least
``1 - delta / (S A (S+1))``, and the mixture's regret (at most
``log(N) / 2 + log 2``) turns that into ``N kl(p_hat, p) < m_N``, both sides
together; the union over the ``S A (S+1)`` entries gives ``delta``
(``docs/certificates.md``). Since ``m_N < l_N`` for every ``N >= 1``, its intervals
lie inside those of ``"kl"``.""",
    chernoff=True,
)

KINDS = {kind.name: kind for kind in (PAPER, BERNSTEIN, KL, MIXTURE)}
"""The registry: every box kind by name, in the order of the docs."""

BOX_KINDS = tuple(KINDS)
"""The names of the box kinds, in the order of the docs."""


def box_kind(name, time_uniform=False):
    """The record of the box kind ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`KINDS`.
    time_uniform : bool, default False
        Accept only a time-uniform kind (for runs that stop on their data).

    Returns
    -------
    BoxKind

    Raises
    ------
    ParameterError
        On an unknown name, or a kind that is not time-uniform when one is needed.

    Examples
    --------
    >>> box_kind("kl").time_uniform, box_kind("paper").time_uniform
    (True, False)
    """
    names = time_uniform_kinds() if time_uniform else BOX_KINDS
    if name not in names:
        why = (" (time-uniform boxes, needed by a run that stops on its data)"
               if time_uniform else "")
        raise ParameterError(f"`kind` must be one of {names}{why}; got {name!r}.")
    return KINDS[name]


def time_uniform_kinds():
    """The names of the time-uniform kinds, in registry order (a tuple).

    See Also
    --------
    box_kind : the record of a kind.
    reference.confidence.confidence_boxes : the boxes of a kind.

    Examples
    --------
    The paper's kind (Lemma 5 at a fixed sample size) is not time-uniform:

    >>> time_uniform_kinds()
    ('bernstein', 'kl', 'mixture')
    """
    return tuple(name for name, kind in KINDS.items() if kind.time_uniform)


def check_chernoff_rows(indptr, counts, n, level, rows, lo, hi, hi_unseen):
    """The arguments of the kernel ``chernoff_rows`` (docs/backends.md), checked, in the
    dtypes its kernels read: both kernels call it, and the compiled one indexes unchecked.

    Parameters
    ----------
    indptr : ndarray of int, shape (n_rows + 1,)
    counts : ndarray of int or float, shape (indptr[-1],)
        Converted to int64 (integers of at most 32 bits) or float64 (floats of at most 64).
    n : ndarray of float, shape (n_rows,)
    level : ndarray of float, shape (m,)
    rows : ndarray of int, shape (m,)
        Entries in ``[0, n_rows)``.
    lo, hi : ndarray of float64, shape (indptr[-1],)
    hi_unseen : ndarray of float64, shape (n_rows,)
        Written in place, so not converted.

    Returns
    -------
    indptr, counts, n, level, rows : ndarray
        C-contiguous: int64, int64 or float64, float64, float64, int64 (the arrays given
        when they are so already).

    Raises
    ------
    SparseFormatError
        If ``indptr`` or ``counts`` has another dtype, or ``counts``, ``lo`` or ``hi``
        holds other than ``indptr[-1]`` entries.
    ShapeError
        If an array is not one-dimensional, or ``level``, ``n`` or ``hi_unseen`` has
        another length.
    ParameterError
        If ``rows`` is not integer or has an entry outside ``[0, n_rows)``, or ``lo``,
        ``hi`` or ``hi_unseen`` is not a float64 array.

    Examples
    --------
    >>> import numpy as np
    >>> ends = np.zeros(2), np.zeros(2), np.zeros(2)
    >>> args = check_chernoff_rows(np.array([0, 2, 2]), np.array([1, 3], dtype=np.int32),
    ...                            np.array([4.0, 0.0]), np.ones(1), np.array([0]), *ends)
    >>> args[1].dtype
    dtype('int64')
    >>> check_chernoff_rows(np.array([0, 2, 2]), np.array([1, 3]), np.array([4.0, 0.0]),
    ...                     np.ones(1), np.array([2]), *ends)
    Traceback (most recent call last):
    ...
    reference.errors.ParameterError: `rows` must hold row numbers in [0, 2); got entries ...
    """
    arrays = dict(indptr=indptr, counts=counts, n=n, level=level, rows=rows, lo=lo, hi=hi,
                  hi_unseen=hi_unseen)
    for name, array in arrays.items():
        if np.ndim(array) != 1:
            raise ShapeError(f"`{name}` must be one-dimensional; got shape {np.shape(array)}.")
    for name in ("lo", "hi", "hi_unseen"):
        if not (isinstance(arrays[name], np.ndarray) and arrays[name].dtype == np.float64):
            raise ParameterError(f"`{name}` must be a float64 array (written in place); "
                                 f"got {type(arrays[name]).__name__} of "
                                 f"{np.asarray(arrays[name]).dtype}.")
    indptr, counts, rows = (np.asarray(a) for a in (indptr, counts, rows))
    if indptr.dtype.kind not in "iu" or not np.can_cast(indptr.dtype, np.int64):
        raise SparseFormatError(f"`indptr` must hold int64 row pointers; got {indptr.dtype}.")
    for kind, dtype in (("iu", np.int64), ("f", np.float64)):
        if counts.dtype.kind in kind and np.can_cast(counts.dtype, dtype):
            counts = np.ascontiguousarray(counts, dtype=dtype)
            break
    else:
        raise SparseFormatError("`counts` must hold int64 or float64 counts (or integers or "
                                f"floats that convert exactly); got {counts.dtype}.")
    if rows.dtype.kind not in "iu" or not np.can_cast(rows.dtype, np.int64):
        raise ParameterError(f"`rows` must hold int64 row numbers; got {rows.dtype}.")
    indptr, rows = (np.ascontiguousarray(a, dtype=np.int64) for a in (indptr, rows))
    if not indptr.size:
        raise ShapeError("`indptr` must have n_rows + 1 >= 1 entries; got none.")
    n_rows, entries = indptr.size - 1, int(indptr[-1])
    for name in ("counts", "lo", "hi"):
        if np.size(arrays[name]) != entries:
            raise SparseFormatError(f"`{name}` must have indptr[-1] = {entries} entries; got "
                                    f"{np.size(arrays[name])}.")
    for name, size in (("n", n_rows), ("hi_unseen", n_rows), ("level", rows.size)):
        if np.size(arrays[name]) != size:
            raise ShapeError(f"`{name}` must have shape ({size},) (" + (
                "one level a row of `rows`" if name == "level" else "one a row of `indptr`")
                + f"); got {np.shape(arrays[name])}.")
    if rows.size and not (rows.min() >= 0 and rows.max() < n_rows):
        raise ParameterError(f"`rows` must hold row numbers in [0, {n_rows}); got entries "
                             f"from {rows.min()} to {rows.max()}.")
    return (indptr, counts, np.ascontiguousarray(n, dtype=np.float64),
            np.ascontiguousarray(level, dtype=np.float64), rows)
