"""Generative models and the store of the samples drawn from them.

A generative model answers "sample a next state of the pair ``(s, a)``" for
any pair, as often as asked (Sec. 2 of the paper). The sample complexity of
every algorithm is the number of such calls, counted exactly (READING-NOTES,
"Algorithms"): a model that draws ``n`` samples of a pair at once still counts
``n`` calls.
"""

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
    """Counts ``N(s, a, s')`` of every sample drawn, kept sparse per pair.

    Parameters
    ----------
    n_states : int
        Number ``S`` of non-goal states.
    n_actions : int
        Number ``A`` of actions.

    Notes
    -----
    Each pair keeps its observed next states and their counts; the dense
    ``(S, A, S+1)`` array is only built by :meth:`counts_dense`. Top-ups visit
    the pairs in the order ``(0, 0), (0, 1), ..., (S-1, A-1)``, so a seed fixes
    the samples. The empirical branching factor is

    .. math::

        \\hat\\Gamma = \\max_{s,a} |\\{ s' : N(s, a, s') > 0 \\}|

    (``0`` before any sample), the ``G`` of eq. 6.
    """

    def __init__(self, n_states, n_actions):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        n_pairs = self.n_states * self.n_actions
        self._next = [np.zeros(0, dtype=np.int64) for _ in range(n_pairs)]
        self._count = [np.zeros(0, dtype=np.int64) for _ in range(n_pairs)]
        self._n_pair = np.zeros((self.n_states, self.n_actions), dtype=np.int64)
        self._csr = None

    @property
    def n_pair(self):
        """Samples per pair ``N(s, a)``, int64 array of shape ``(S, A)`` (a copy)."""
        return self._n_pair.copy()

    @property
    def n_samples(self):
        """Total number of samples stored."""
        return int(self._n_pair.sum())

    @property
    def gamma_hat(self):
        """Largest empirical support ``Gamma_hat`` (counted over ``S'``)."""
        return max(len(nxt) for nxt in self._next)

    def add(self, s, a, next_states, counts):
        """Merge samples of the pair ``(s, a)`` into the store.

        Parameters
        ----------
        s, a : int
            The pair.
        next_states : array_like of int, shape (k,)
            Next states in ``0..S``.
        counts : array_like of int, shape (k,)
            Their counts, ``>= 0``.
        """
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        next_states = np.asarray(next_states, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        if next_states.shape != counts.shape or next_states.ndim != 1:
            raise ShapeError(
                "`next_states` and `counts` must be 1-d arrays of the same length; got "
                f"shapes {next_states.shape} and {counts.shape}."
            )
        if next_states.size and (next_states.min() < 0 or next_states.max() > self.n_states):
            raise ParameterError(
                f"`next_states` must lie in 0..{self.n_states}; got {next_states.tolist()}."
            )
        if (counts < 0).any():
            raise ParameterError(f"`counts` must be >= 0; got {counts.tolist()}.")
        i = s * self.n_actions + a
        merged = np.concatenate([self._next[i], next_states])
        weights = np.concatenate([self._count[i], counts])
        keys, inverse = np.unique(merged, return_inverse=True)
        totals = np.bincount(inverse, weights=weights).astype(np.int64)
        keep = totals > 0
        self._next[i], self._count[i] = keys[keep], totals[keep]
        self._n_pair[s, a] += int(counts.sum())
        self._csr = None

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

    def top_up(self, model, target, rng):
        """Bring every pair to at least ``target`` samples, pairs in order ``(s, a)``.

        Parameters
        ----------
        model : GenerativeModel
            Source of the samples.
        target : int
            Samples every pair must hold afterwards.
        rng : numpy.random.Generator
            Passed to ``model.sample``.

        Returns
        -------
        int
            Number of samples drawn.
        """
        before = self.n_samples
        for s in range(self.n_states):
            for a in range(self.n_actions):
                self.draw(model, s, a, int(target) - int(self._n_pair[s, a]), rng)
        return self.n_samples - before

    def counts_csr(self):
        """Counts as a CSR matrix of shape ``(S*A, S+1)``, row ``s*A + a``.

        Returns
        -------
        scipy.sparse.csr_array of int64, shape (S*A, S+1)
            Only observed next states are stored, ascending per row. Cached
            until the next :meth:`add`; do not modify it.
        """
        if self._csr is None:
            lengths = np.array([len(nxt) for nxt in self._next], dtype=np.int64)
            indptr = np.concatenate([[0], np.cumsum(lengths)])
            indices = np.concatenate(self._next) if lengths.sum() else np.zeros(0, np.int64)
            data = np.concatenate(self._count) if lengths.sum() else np.zeros(0, np.int64)
            shape = (self.n_states * self.n_actions, self.n_states + 1)
            self._csr = sp.csr_array((data, indices, indptr), shape=shape)
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
        for i in range(store.n_states * store.n_actions):
            lo, hi = indptr[i], indptr[i + 1]
            store._next[i] = indices[lo:hi].astype(np.int64)
            store._count[i] = data[lo:hi].astype(np.int64)
        store._n_pair = np.array(
            [c.sum() for c in store._count], dtype=np.int64
        ).reshape(store.n_states, store.n_actions)
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
