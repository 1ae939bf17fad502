"""Generative models: the tabular model of a known SSP and the black-box simulator.

A generative model answers "sample a next state of the pair ``(s, a)``" for
any pair, as often as asked (Sec. 2 of the paper). The sample complexity of
every algorithm is the number of such calls, counted exactly (docs/semantics.md,
"Algorithms"): a model that draws ``n`` samples of a pair at once still counts
``n`` calls.
"""

import functools
import hashlib
import numbers
from typing import Protocol, runtime_checkable

import numpy as np

from .._checks import INT64_MAX, check_dense_size, check_int, exact_sum
from ..errors import GenerativeModelError, ParameterError, ShapeError
from ..model import DENSE_LIMIT_BYTES, SSP

__all__ = ["GenerativeModel", "TabularGenerativeModel", "SimulatorGenerativeModel"]

DRAW_PAIRS = 1 << 14
"""Pairs whose draws :meth:`TabularGenerativeModel.sample_pairs` lays out at once (unless the
layout is kept for the next call, as the top-ups of a sample store ask)."""


@runtime_checkable
class GenerativeModel(Protocol):
    """What the algorithms need from a generative model.

    Attributes
    ----------
    n_states : int
        Number ``S`` of non-goal states; next states lie in ``0..S`` (``S`` = goal).
    n_actions : int
        Number ``A`` of actions.
    n_calls : int
        Total number of samples drawn so far (one call per sample).
    calls : ndarray of int64, shape (S, A)
        Samples drawn so far per pair.

    Notes
    -----
    A model may also offer ``sample_pairs(pairs, n, rng)``, many pairs in one
    call with the draws ``sample`` would make pair after pair (see
    :meth:`TabularGenerativeModel.sample_pairs`); :meth:`SampleStore.top_up`
    uses it when present. It is not part of the protocol.

    A model may also carry an ``identity`` string, a name that determines
    its dynamics: checkpoints record it (:func:`model_fingerprint`) and a
    resumed run refuses a model with another one.
    """

    n_states: int
    n_actions: int
    n_calls: int
    calls: np.ndarray

    def sample(self, s, a, n, rng):
        """Draw ``n`` next states of ``(s, a)``, counting ``n`` calls.

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples, ``>= 0``.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Ascending, duplicate-free, in ``0..S``.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """


def _check_pair(s, a, n_states, n_actions):
    """Return ``(s, a)`` as ints after checking ``0 <= s < S`` and ``0 <= a < A``."""
    s = check_int("s", s, low=0)
    a = check_int("a", a, low=0)
    if s >= n_states:
        raise ParameterError(f"`s` must be a non-goal state in 0..{n_states - 1}; got {s}.")
    if a >= n_actions:
        raise ParameterError(f"`a` must be an action in 0..{n_actions - 1}; got {a}.")
    return s, a


def _check_pairs(pairs, n, n_states, n_actions):
    """Return ``(pairs, n)`` as int64 arrays of shape ``(m,)`` after checking them.

    ``pairs`` holds flat pair indices ``s*A + a`` in ``0..S*A-1``; ``n`` is an
    integer ``>= 0`` or one such integer per pair.
    """
    n_pairs = n_states * n_actions
    pairs = np.asarray(pairs)
    if pairs.ndim != 1 or (pairs.size and not np.issubdtype(pairs.dtype, np.integer)):
        raise ParameterError(
            "`pairs` must be a 1-d array of integer pair indices s*A + a; got an array of "
            f"shape {pairs.shape} and dtype {pairs.dtype}."
        )
    pairs = pairs.astype(np.int64)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n_pairs):
        outside = pairs[(pairs < 0) | (pairs >= n_pairs)]
        raise ParameterError(
            f"`pairs` must be pair indices s*A + a in 0..{n_pairs - 1}; got {_listing(outside)}."
        )
    n = np.asarray(n)
    if n.ndim > 1 or (n.size and not np.issubdtype(n.dtype, np.integer)):
        raise ParameterError(
            "`n` must be an integer or a 1-d integer array with one entry per pair; got an "
            f"array of shape {n.shape} and dtype {n.dtype}."
        )
    if n.ndim == 1 and n.shape != pairs.shape:
        raise ShapeError(
            f"`n` must have one entry per pair, shape {pairs.shape}; got {n.shape}."
        )
    if n.dtype == np.uint64 and n.size and n.max() > INT64_MAX:
        raise ParameterError(f"`n` must be at most 2^63 - 1; got {int(n.max())}.")
    n = np.broadcast_to(n, pairs.shape).astype(np.int64)
    if n.size and n.min() < 0:
        raise ParameterError(f"`n` must be >= 0; got {_listing(n[n < 0])}.")
    return pairs, n


def _check_samples(next_states, counts, n_states):
    """Return samples as int64 arrays of shape ``(k,)`` after checking them.

    ``next_states`` must lie in ``0..S`` and ``counts`` be ``>= 0``, with one
    count per next state.
    """
    next_states = np.asarray(next_states, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if next_states.shape != counts.shape or next_states.ndim != 1:
        raise ShapeError(
            "`next_states` and `counts` must be 1-d arrays of the same length; got "
            f"shapes {next_states.shape} and {counts.shape}."
        )
    outside = next_states[(next_states < 0) | (next_states > n_states)]
    if outside.size:
        raise ParameterError(f"`next_states` must lie in 0..{n_states}; got {_listing(outside)}.")
    if (counts < 0).any():
        raise ParameterError(f"`counts` must be >= 0; got {_listing(counts[counts < 0])}.")
    return next_states, counts


def _listing(values, limit=5):
    """The first ``limit`` offending values as a list, and how many more there are."""
    more = values.size - limit
    return f"{values[:limit].tolist()}" + (f" and {more} more" if more > 0 else "")


def check_pair_count(n_states, n_actions):
    """Refuse ``S * A`` pairs whose int64 per-pair counts exceed ``DENSE_LIMIT_BYTES``.

    Raises
    ------
    TooLargeError
        Naming ``S*A`` and the memory, before anything is allocated.
    """
    S, A = n_states, n_actions
    check_dense_size(f"the per-pair counts of S*A = {S}*{A} = {S * A} pairs", (S, A),
                     DENSE_LIMIT_BYTES, "no run can sample that many pairs.")


class _CountingModel:
    """Shared bookkeeping: sizes, call counters and the checks on ``(s, a, n)``."""

    def __init__(self, n_states, n_actions):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        check_pair_count(self.n_states, self.n_actions)
        self.calls = np.zeros((self.n_states, self.n_actions), dtype=np.int64)

    @property
    def n_calls(self):
        """Total number of samples drawn so far (an exact Python int)."""
        return exact_sum(self.calls)

    def _check_request(self, s, a, n):
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        return s, a, check_int("n", n, low=0)


class TabularGenerativeModel(_CountingModel):
    """Generative model of a known :class:`~reference.model.SSP`.

    Parameters
    ----------
    ssp : SSP
        The instance whose kernel is sampled.

    Notes
    -----
    ``sample(s, a, n, rng)`` is one multinomial draw on the support of the
    pair, in the order given by ``ssp.row(s, a)`` (ascending next states):

    .. math::

        (k_1, \\dots, k_m) = \\texttt{rng.multinomial}\\big(n,\\ q / \\textstyle\\sum_i q_i\\big),
        \\qquad (\\mathrm{support}, q) = \\texttt{ssp.row}(s, a),

    and the next states with ``k_i > 0`` are returned. It counts ``n`` calls.
    Any backend reproduces the reference samples by making exactly this call
    with the same generator.

    Examples
    --------
    >>> import numpy as np
    >>> from reference import TabularGenerativeModel, chain
    >>> model = TabularGenerativeModel(chain(3, p=0.8))
    >>> model.sample(0, 0, 100, np.random.default_rng(0))
    (array([0, 1]), array([21, 79]))
    >>> model.n_calls
    100
    """

    def __init__(self, ssp):
        if not isinstance(ssp, SSP):
            raise ParameterError(f"`ssp` must be an SSP; got {type(ssp).__name__}.")
        super().__init__(ssp.n_states, ssp.n_actions)
        self.ssp = ssp
        self._last_layout = None

    def sample(self, s, a, n, rng):
        """Draw ``n`` next states of ``(s, a)`` as one multinomial draw (``n`` calls).

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples, ``>= 0``.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Distinct next states in ``0..S``, ascending.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """
        s, a, n = self._check_request(s, a, n)
        support, probs = self.ssp.row(s, a)
        draw = rng.multinomial(n, probs / probs.sum())
        self.calls[s, a] += n
        keep = draw > 0
        return support[keep].astype(np.int64), draw[keep].astype(np.int64)

    @functools.cached_property
    def fingerprint(self):
        """The model's fingerprint: SHA-256 of its kernel's support and of its probabilities.

        See :func:`model_fingerprint`.
        """
        kernel = self._kernel
        support = hashlib.sha256(kernel.indptr.astype("<i8").tobytes())
        support.update(kernel.indices.astype("<i8").tobytes())
        probabilities = hashlib.sha256(kernel.data.astype("<f8").tobytes())
        return {
            "kind": "kernel",
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "support_sha256": support.hexdigest(),
            "probabilities_sha256": probabilities.hexdigest(),
        }

    @functools.cached_property
    def _kernel(self):
        """The kernel as CSR ``(S*A, S+1)``: the supports and probabilities of ``ssp.row``."""
        return self.ssp.kernel_csr()

    def sample_pairs(self, pairs, n, rng):
        """Draw ``n[i]`` next states of every pair ``pairs[i]``, in the order given.

        The draws are those of :meth:`sample` called pair after pair with the
        same ``rng``: the same ``rng.multinomial`` calls (same ``n``, same
        normalised probabilities), except that a run of consecutive pairs
        with supports of one length ``k`` is drawn by one vectorised call on a
        ``(run, k)`` array, which makes the same draws row after row.

        Parameters
        ----------
        pairs : array_like of int, shape (m,)
            Flat pair indices ``s*A + a``, each in ``0..S*A-1``.
        n : int or array_like of int, shape (m,)
            Samples per pair, ``>= 0`` (``n[i]`` calls for ``pairs[i]``).
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        indptr : ndarray of int64, shape (m + 1,)
            The samples of ``pairs[i]`` are entries ``indptr[i]:indptr[i+1]``.
        next_states : ndarray of int64, shape (indptr[-1],)
            Distinct next states per pair, ascending, in ``0..S``.
        counts : ndarray of int64, shape (indptr[-1],)
            Positive counts; those of ``pairs[i]`` sum to ``n[i]``.
        """
        pairs, n = _check_pairs(pairs, n, self.n_states, self.n_actions)
        return self._sample_checked(pairs, n, rng)

    def _sample_checked(self, pairs, n, rng, keep=False):
        """:meth:`sample_pairs` of ``pairs`` and ``n`` as :func:`_check_pairs` returns them.

        Its answer needs no check: the next states of every pair are the stored
        entries of its row of the (checked, canonical) kernel that were drawn, so
        they ascend in ``0..S``, with positive int64 counts summing to ``n[i]``.
        When every next state was drawn, the answer is the layout's (copied).
        With ``keep`` the layout of all the pairs is kept for the next call
        (:meth:`_layout`); otherwise the pairs are laid out and drawn
        :data:`DRAW_PAIRS` at a time. The draws are made row after row, so the
        chunks change none of them.
        """
        if keep:
            parts = [self._drawn(*self._layout(pairs, keep=True), n, rng)]
        else:
            parts = [self._drawn(*self._layout(pairs[i:i + DRAW_PAIRS]), n[i:i + DRAW_PAIRS],
                                 rng) for i in range(0, max(pairs.size, 1), DRAW_PAIRS)]
        np.add.at(self.calls.reshape(-1), pairs, n)
        if len(parts) == 1:
            return parts[0]
        ends = np.cumsum([part[0][-1] for part in parts])
        indptr = np.concatenate([[0]] + [part[0][1:] + end - part[0][-1]
                                         for part, end in zip(parts, ends)])
        return (indptr, *(np.concatenate([part[i] for part in parts]) for i in (1, 2)))

    @staticmethod
    def _drawn(offsets, next_states, pvals, run_starts, n, rng):
        """The answer of :meth:`sample_pairs` for the pairs of a layout (:meth:`_layout`) and
        their samples ``n``."""
        draws = np.empty(offsets[-1], dtype=np.int64)
        for lo, hi in zip(run_starts.tolist(), run_starts[1:].tolist()):
            block = pvals[offsets[lo]:offsets[hi]].reshape(hi - lo, -1)
            draws[offsets[lo]:offsets[hi]] = rng.multinomial(n[lo:hi], block).ravel()
        keep = draws > 0
        if keep.all():
            return offsets.copy(), next_states.copy(), draws
        indptr = np.concatenate([[0], np.cumsum(keep)])[offsets]
        return indptr, next_states[keep], draws[keep]

    def _layout(self, pairs, keep=False):
        """Where the supports of ``pairs`` lie in the draws of :meth:`sample_pairs`.

        ``(offsets, next_states, pvals, run_starts)``: the draws of ``pairs[i]``
        are entries ``offsets[i]:offsets[i+1]``, of the next states
        ``next_states`` (int64) with the probabilities ``pvals``, normalised in
        every run ``pairs[lo:hi]`` of supports of one length ``k`` (``lo, hi``
        consecutive entries of ``run_starts``, which ends with ``pairs.size``;
        the run's entries are one ``(hi - lo, k)`` block). With ``keep``, the
        layout is kept (read-only) and reused when the next ``pairs`` are the
        same: SEARCH tops up every pair again and again.
        """
        last = self._last_layout
        if keep and last is not None and np.array_equal(last[0], pairs):
            return last[1]
        kernel = self._kernel
        starts = kernel.indptr[pairs].astype(np.int64)
        lengths = kernel.indptr[pairs + 1] - starts
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        entries = np.arange(offsets[-1]) + np.repeat(starts - offsets[:-1], lengths)
        probs = kernel.data[entries]
        run_starts = np.append(np.flatnonzero(np.diff(lengths, prepend=-1)), pairs.size)
        for lo, hi in zip(run_starts.tolist(), run_starts[1:].tolist()):
            block = probs[offsets[lo]:offsets[hi]].reshape(hi - lo, lengths[lo])
            block /= block.sum(axis=1, keepdims=True)
        layout = (offsets, kernel.indices[entries].astype(np.int64), probs, run_starts)
        if keep:
            for array in layout:
                array.flags.writeable = False
            self._last_layout = (pairs.copy(), layout)
        return layout


class SimulatorGenerativeModel(_CountingModel):
    """Generative model wrapping a black-box simulator.

    Parameters
    ----------
    step : callable
        ``step(s, a, rng) -> next_state``: one sample of ``p(.|s, a)``, an
        integer in ``0..S`` (``S`` is the goal). Called once per sample.
    n_states : int
        Number ``S`` of non-goal states.
    n_actions : int
        Number ``A`` of actions.
    identity : str, optional
        A name that determines the simulator's dynamics (its environment and
        every parameter of it, e.g. ``"FrozenLake-v1 map=4x4 slippery"``).
        Checkpoints record it, and resuming one with a simulator of another
        identity is refused. Without it the simulator is *unfingerprinted*:
        a checkpoint cannot be checked against it, and resuming one warns
        with :class:`UnfingerprintedModelWarning`.

    Raises
    ------
    GenerativeModelError
        From :meth:`sample`, if ``step`` returns anything but an integer in
        ``0..S``; the message names the pair.

    Notes
    -----
    Every call of ``step`` is counted, including one that raises.

    Examples
    --------
    A simulator of a 3-chain whose only action moves forward with probability
    0.8 (state 3 is the goal):

    >>> import numpy as np
    >>> from reference import SimulatorGenerativeModel
    >>> def step(s, a, rng):
    ...     return s + 1 if rng.random() < 0.8 else s
    >>> model = SimulatorGenerativeModel(step, 3, 1)
    >>> model.sample(2, 0, 10, np.random.default_rng(0))
    (array([2, 3]), array([3, 7]))
    >>> model.n_calls
    10
    """

    def __init__(self, step, n_states, n_actions, identity=None):
        if not callable(step):
            raise ParameterError(f"`step` must be callable; got {type(step).__name__}.")
        if identity is not None and not isinstance(identity, str):
            raise ParameterError(
                f"`identity` must be a string or None; got {type(identity).__name__}."
            )
        super().__init__(n_states, n_actions)
        self.step = step
        self.identity = identity

    def sample(self, s, a, n, rng):
        """Call ``step(s, a, rng)`` ``n`` times and tally the next states.

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples (= calls), ``>= 0``.
        rng : numpy.random.Generator
            Passed to every call of ``step``.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Distinct next states in ``0..S``, ascending.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """
        s, a, n = self._check_request(s, a, n)
        draws = np.empty(n, dtype=np.int64)
        for i in range(n):
            self.calls[s, a] += 1
            draws[i] = self._check_state(s, a, self.step(s, a, rng))
        next_states, counts = np.unique(draws, return_counts=True)
        return next_states.astype(np.int64), counts.astype(np.int64)

    def _check_state(self, s, a, nxt):
        ok = isinstance(nxt, numbers.Integral) and not isinstance(nxt, bool)
        if not ok or not 0 <= nxt <= self.n_states:
            raise GenerativeModelError(
                f"`step` must return a next state in 0..{self.n_states} (goal = "
                f"{self.n_states}); for the pair (s, a) = ({s}, {a}) it returned {nxt!r}.",
                pair=(s, a),
            )
        return int(nxt)
