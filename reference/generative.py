"""Generative models and the store of the samples drawn from them.

A generative model answers "sample a next state of the pair ``(s, a)``" for
any pair, as often as asked (Sec. 2 of the paper). The sample complexity of
every algorithm is the number of such calls, counted exactly (docs/semantics.md,
"Algorithms"): a model that draws ``n`` samples of a pair at once still counts
``n`` calls.
"""

import functools
import json
import numbers
import os
import tempfile
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from ._checks import check_dense_size, check_int
from .errors import ParameterError, ShapeError
from .model import DENSE_LIMIT_BYTES, SSP

__all__ = [
    "GenerativeModel",
    "TabularGenerativeModel",
    "SimulatorGenerativeModel",
    "SampleStore",
    "load_rng_state",
]


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
    outside = pairs[(pairs < 0) | (pairs >= n_pairs)]
    if outside.size:
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
    n = np.broadcast_to(n, pairs.shape).astype(np.int64)
    if (n < 0).any():
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


class _CountingModel:
    """Shared bookkeeping: sizes, call counters and the checks on ``(s, a, n)``."""

    def __init__(self, n_states, n_actions):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        self.calls = np.zeros((self.n_states, self.n_actions), dtype=np.int64)

    @property
    def n_calls(self):
        """Total number of samples drawn so far."""
        return int(self.calls.sum())

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
        kernel = self._kernel
        starts = kernel.indptr[pairs].astype(np.int64)
        lengths = kernel.indptr[pairs + 1] - starts
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        entry_pair = np.repeat(np.arange(pairs.size), lengths)
        entries = np.arange(offsets[-1]) + (starts - offsets[:-1])[entry_pair]
        probs = kernel.data[entries]
        draws = np.empty(offsets[-1], dtype=np.int64)
        run_starts = np.flatnonzero(np.diff(lengths, prepend=-1))
        for lo, hi in zip(run_starts, np.append(run_starts[1:], pairs.size)):
            block = probs[offsets[lo]:offsets[hi]].reshape(hi - lo, lengths[lo])
            pvals = block / block.sum(axis=1, keepdims=True)
            draws[offsets[lo]:offsets[hi]] = rng.multinomial(n[lo:hi], pvals).ravel()
        np.add.at(self.calls.reshape(-1), pairs, n)
        keep = draws > 0
        kept = np.bincount(entry_pair[keep], minlength=pairs.size)
        indptr = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
        return indptr, kernel.indices[entries[keep]].astype(np.int64), draws[keep]


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

    Raises
    ------
    ParameterError
        From :meth:`sample`, if ``step`` returns anything but an integer in
        ``0..S``; the message names the pair.

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

    def __init__(self, step, n_states, n_actions):
        if not callable(step):
            raise ParameterError(f"`step` must be callable; got {type(step).__name__}.")
        super().__init__(n_states, n_actions)
        self.step = step

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
            nxt = self.step(s, a, rng)
            self.calls[s, a] += 1
            draws[i] = self._check_state(s, a, nxt)
        next_states, counts = np.unique(draws, return_counts=True)
        return next_states.astype(np.int64), counts.astype(np.int64)

    def _check_state(self, s, a, nxt):
        ok = isinstance(nxt, numbers.Integral) and not isinstance(nxt, bool)
        if not ok or not 0 <= nxt <= self.n_states:
            raise ParameterError(
                f"`step` must return a next state in 0..{self.n_states} (goal = "
                f"{self.n_states}); for the pair (s, a) = ({s}, {a}) it returned {nxt!r}."
            )
        return int(nxt)


class SampleStore:
    """Counts ``N(s, a, s')`` of every sample drawn, kept sparse.

    Parameters
    ----------
    n_states : int
        Number ``S`` of non-goal states.
    n_actions : int
        Number ``A`` of actions.

    Notes
    -----
    The counts are one CSR matrix of shape ``(S*A, S+1)`` (row ``s*A + a``,
    observed next states only); samples added since it was last read wait in
    a list and are summed into it in one sparse addition when it is read
    (:meth:`counts_csr`, :attr:`Gamma_hat`, :meth:`save`), so merging costs
    nothing per pair. The dense ``(S, A, S+1)`` array is only built by
    :meth:`counts_dense`. Top-ups visit the pairs in the order
    ``(0, 0), (0, 1), ..., (S-1, A-1)``, so a seed fixes the samples. The
    empirical branching factor is

    .. math::

        \\hat\\Gamma = \\max_{s,a} |\\{ s' : N(s, a, s') > 0 \\}|

    (``0`` before any sample), the ``G`` of eq. 6.
    """

    def __init__(self, n_states, n_actions):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        shape = (self.n_states * self.n_actions, self.n_states + 1)
        self._csr = sp.csr_array(shape, dtype=np.int64)
        self._pending = []
        self._n_pair = np.zeros((self.n_states, self.n_actions), dtype=np.int64)

    @property
    def n_pair(self):
        """Samples per pair ``N(s, a)``, int64 array of shape ``(S, A)`` (a copy)."""
        return self._n_pair.copy()

    @property
    def n_samples(self):
        """Total number of samples stored."""
        return int(self._n_pair.sum())

    @property
    def Gamma_hat(self):
        """Largest empirical support ``Gamma_hat`` (counted over ``S'``)."""
        return int(np.diff(self.counts_csr().indptr).max())

    def _merge(self, rows, next_states, counts):
        """Queue checked samples: ``counts[i]`` more of ``next_states[i]`` in row ``rows[i]``."""
        self._pending.append((rows, next_states, counts))
        np.add.at(self._n_pair.reshape(-1), rows, counts)

    def add(self, s, a, next_states, counts):
        """Merge samples of the pair ``(s, a)`` into the store.

        Parameters
        ----------
        s, a : int
            The pair.
        next_states : array_like of int, shape (k,)
            Next states in ``0..S`` (repeats are summed).
        counts : array_like of int, shape (k,)
            Their counts, ``>= 0``.
        """
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        next_states, counts = _check_samples(next_states, counts, self.n_states)
        rows = np.full(next_states.size, s * self.n_actions + a, dtype=np.int64)
        self._merge(rows, next_states, counts)

    def draw(self, model, s, a, n, rng):
        """Draw ``n`` samples of ``(s, a)`` from ``model`` and store them.

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples (``n`` calls).
        s, a : int
            The pair.
        n : int
            Number of samples; nothing is drawn when ``n <= 0``.
        rng : numpy.random.Generator
            Passed to ``model.sample``.
        """
        if n > 0:
            next_states, counts = model.sample(s, a, n, rng)
            self.add(s, a, next_states, counts)

    def draw_pairs(self, model, pairs, n, rng):
        """Draw ``n[i]`` samples of every pair ``pairs[i]``, in the order given, and store them.

        Uses ``model.sample_pairs`` (one call for all pairs, see
        :meth:`TabularGenerativeModel.sample_pairs`) when the model has it, and
        otherwise ``model.sample`` pair after pair (skipping ``n[i] = 0``);
        either way the model makes the same draws as :meth:`draw` called pair
        after pair. The samples are merged in one operation.

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples (``n.sum()`` calls).
        pairs : array_like of int, shape (m,)
            Flat pair indices ``s*A + a`` (rows of :meth:`counts_csr`).
        n : int or array_like of int, shape (m,)
            Samples per pair, ``>= 0``.
        rng : numpy.random.Generator
            Passed to the model.
        """
        pairs, n = _check_pairs(pairs, n, self.n_states, self.n_actions)
        sample_pairs = getattr(model, "sample_pairs", None)
        if sample_pairs is not None:
            indptr, next_states, counts = sample_pairs(pairs, n, rng)
            next_states, counts = _check_samples(next_states, counts, self.n_states)
            indptr = np.asarray(indptr, dtype=np.int64)
            lengths = np.diff(indptr)
            if (indptr.shape != (pairs.size + 1,) or indptr[0] != 0
                    or indptr[-1] != counts.size or (lengths < 0).any()):
                raise ShapeError(
                    f"`sample_pairs` must return an `indptr` of shape ({pairs.size + 1},), "
                    f"non-decreasing from 0 to {counts.size}; got {_listing(indptr)}."
                )
            self._merge(np.repeat(pairs, lengths), next_states, counts)
            return
        drawn = []
        try:
            for pair, n_i in zip(pairs.tolist(), n.tolist()):
                if n_i > 0:
                    nxt, cnt = model.sample(*divmod(pair, self.n_actions), n_i, rng)
                    nxt, cnt = _check_samples(nxt, cnt, self.n_states)
                    drawn.append((np.full(nxt.size, pair, dtype=np.int64), nxt, cnt))
        finally:
            if drawn:
                self._merge(*(np.concatenate(part) for part in zip(*drawn)))

    def top_up(self, model, target, rng):
        """Bring every pair to at least ``target`` samples, pairs in order ``(s, a)``.

        One :meth:`draw_pairs` over the pairs below ``target``, each drawing
        ``target - N(s, a)``.

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples.
        target : int
            Samples every pair must hold afterwards.
        rng : numpy.random.Generator
            Passed to the model.

        Returns
        -------
        int
            Number of samples drawn.
        """
        need = check_int("target", target) - self._n_pair.reshape(-1)
        pairs = np.flatnonzero(need > 0)
        self.draw_pairs(model, pairs, need[pairs], rng)
        return int(need[pairs].sum())

    def counts_csr(self):
        """Counts as a CSR matrix of shape ``(S*A, S+1)``, row ``s*A + a``.

        Returns
        -------
        scipy.sparse.csr_array of int64, shape (S*A, S+1)
            Only observed next states are stored, ascending per row. The
            store does not change it afterwards (a later :meth:`add` makes a
            new matrix); do not modify it.
        """
        if self._pending:
            rows, next_states, counts = (np.concatenate(part) for part in zip(*self._pending))
            self._pending = []
            seen = counts > 0
            increment = sp.coo_array(
                (counts[seen], (rows[seen], next_states[seen])), shape=self._csr.shape
            ).tocsr()
            self._csr = self._csr + increment
        return self._csr

    def counts_dense(self, max_bytes=DENSE_LIMIT_BYTES):
        """Counts as an int64 array of shape ``(S, A, S+1)``.

        Parameters
        ----------
        max_bytes : int, default DENSE_LIMIT_BYTES
            Largest array built (2 GiB by default).

        Returns
        -------
        ndarray of int64, shape (S, A, S+1)

        Raises
        ------
        TooLargeError
            If the array would exceed ``max_bytes``.
        """
        S, A = self.n_states, self.n_actions
        check_dense_size("dense counts", (S, A, S + 1), max_bytes, "use `counts_csr()`.")
        return self.counts_csr().toarray().reshape(S, A, S + 1)

    def save(self, path, rng, meta=None):
        """Write the counts, the generator's state and ``meta`` to ``path`` atomically.

        Parameters
        ----------
        path : str or os.PathLike
            Destination file (NumPy ``.npz`` format, whatever its suffix).
        rng : numpy.random.Generator
            Its ``bit_generator.state`` is saved, so drawing resumes exactly.
        meta : dict, optional
            JSON-serialisable data stored alongside (run parameters, history).
        """
        csr = self.counts_csr()
        header = {
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "rng_state": rng.bit_generator.state,
            "meta": meta or {},
        }
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(
                    fh,
                    header=np.array(json.dumps(header, default=_jsonable)),
                    indptr=csr.indptr.astype(np.int64),
                    indices=csr.indices.astype(np.int64),
                    data=csr.data.astype(np.int64),
                )
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

    @classmethod
    def load(cls, path):
        """Read a file written by :meth:`save`.

        Returns
        -------
        store : SampleStore
            The counts.
        rng : numpy.random.Generator
            A generator in the saved state.
        meta : dict
            The saved ``meta``.
        """
        with np.load(path, allow_pickle=False) as archive:
            header = json.loads(str(archive["header"]))
            indptr, indices, data = archive["indptr"], archive["indices"], archive["data"]
        store = cls(header["n_states"], header["n_actions"])
        store._csr = sp.csr_array((data, indices, indptr), shape=store._csr.shape)
        store._n_pair = store._csr.sum(axis=1).reshape(store.n_states, store.n_actions)
        return store, load_rng_state(header["rng_state"]), header["meta"]


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot save a {type(value).__name__} in a sample-store file")


def load_rng_state(state):
    """Return a :class:`numpy.random.Generator` whose bit generator is in ``state``.

    Parameters
    ----------
    state : dict
        A ``rng.bit_generator.state`` dictionary (it names its bit generator).

    Returns
    -------
    numpy.random.Generator
        Its next draws are those the saved generator would have made.
    """
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    return np.random.Generator(bit_generator)
