"""The store of the samples drawn from a generative model: counts, calls, top-ups."""

import os

import numpy as np
import scipy.sparse as sp

from .._checks import INT64_MAX, check_call_budget, check_dense_size, check_int, exact_sum
from ..errors import GenerativeModelError, ParameterError
from ..counts import Counts
from ..kernels import NUMPY_KERNELS
from ..model import DENSE_LIMIT_BYTES
from .checkpoint import (
    LEDGER_SUFFIX,
    append_to_ledger,
    empty_ledger,
    read_checkpoint,
    write_checkpoint,
)
from .fingerprint import compare_fingerprints, model_fingerprint
from .increments import _increment, _summed, _with_arrays
from .models import (
    TabularGenerativeModel,
    _check_pair,
    _check_pairs,
    _check_samples,
    _listing,
    check_pair_count,
)

__all__ = ["SampleStore"]


class SampleStore:
    r"""Counts ``N(s, a, s')`` of every sample drawn, kept sparse, and the calls made.

    Parameters
    ----------
    n_states : int
        Number ``S`` of non-goal states.
    n_actions : int
        Number ``A`` of actions.
    fingerprint : dict, optional
        :func:`model_fingerprint` of the model the samples come from, saved
        with the counts so that a resumed run can be checked against its
        model (:meth:`check_model`).

    Attributes
    ----------
    context : str
        Where the store is being filled (e.g. ``"SEARCH round 3 (Delta = 8)"``),
        named in every :class:`GenerativeModelError`; empty by default.
    merge : callable
        The kernel ``merge_counts`` (docs/backends.md) that sums the samples
        waiting since the counts were last read into them:
        the numpy one by default; :func:`~reference.certified.solve_certified`
        sets its own kernel set's. Every kernel set's sum is the same arrays.

    Notes
    -----
    The counts are one CSR matrix of shape ``(S*A, S+1)`` (row ``s*A + a``, observed next
    states only); samples added since it was last read wait in a list and are summed into it
    in one merge when it is read (:meth:`counts_csr`, :attr:`Gamma_hat`, :meth:`save`;
    :attr:`merge`), so merging costs nothing per pair. The samples of each pair are the sums
    of its row, computed when asked (:attr:`n_pair`); the store keeps their total only.
    The dense ``(S, A, S+1)`` array is only built by :meth:`counts_dense`. Top-ups visit the
    pairs in the order ``(0, 0), (0, 1), ..., (S-1, A-1)``, so a seed fixes the samples. The
    empirical branching factor is

    .. math::

        \hat\Gamma = \max_{s,a} |\{ s' : N(s, a, s') > 0 \}|

    (``0`` before any sample), the ``G`` of eq. 6.

    Every sampling goes through :meth:`draw_pairs`, which checks the model's
    answers (the counts of each pair sum to the number asked, next states
    in ``0..S``, integer dtypes; not those of the ``sample_pairs`` of a
    :class:`TabularGenerativeModel`, correct by construction, see
    :meth:`TabularGenerativeModel._sample_checked`) and refuses, before drawing, a batch that
    would bring the calls made past ``2^63 - 1``. :attr:`calls_made` counts
    every call asked of the model, including those of a round lost when a
    run was killed before its checkpoint (see :meth:`track_calls`).
    """

    def __init__(self, n_states, n_actions, fingerprint=None):
        self.n_states = check_int("n_states", n_states, low=1)
        self.n_actions = check_int("n_actions", n_actions, low=1)
        check_pair_count(self.n_states, self.n_actions)
        if fingerprint is not None and not isinstance(fingerprint, dict):
            raise ParameterError(
                f"`fingerprint` must be a dict (see `model_fingerprint`) or None; got "
                f"{type(fingerprint).__name__}.")
        self.fingerprint = fingerprint
        self.context = ""
        self.merge = NUMPY_KERNELS.merge_counts
        shape = (self.n_states * self.n_actions, self.n_states + 1)
        self._csr = sp.csr_array(shape, dtype=np.int64)
        self._pending = []
        self._gamma_hat = None
        self._n_total = 0
        self._calls_made = 0
        self._calls_redrawn = 0
        self._ledger = None
        self._loaded_from = None

    @property
    def n_pair(self):
        """Samples per pair ``N(s, a)``, int64 ``(S, A)``: the row sums of :meth:`counts_csr`."""
        csr = self.counts_csr()
        seen, sums = np.flatnonzero(np.diff(csr.indptr)), np.zeros(csr.shape[0], dtype=np.int64)
        sums[seen] = np.add.reduceat(csr.data, csr.indptr[seen]) if seen.size else 0
        return sums.reshape(self.n_states, self.n_actions)

    @property
    def n_samples(self):
        """Total number of samples stored (an exact Python int)."""
        return self._n_total

    @property
    def calls_made(self):
        """Calls asked of models through this store, since the run began.

        Includes the calls of a batch interrupted midway (counted in full)
        and, after :meth:`load`, those a killed run made after its last
        checkpoint, as found in the calls ledger (:meth:`track_calls`).
        Equals :attr:`n_samples` plus :attr:`calls_redrawn` when every batch
        completed.
        """
        return self._calls_made

    @property
    def calls_redrawn(self):
        """Calls made by runs killed after their last checkpoint, whose samples were lost.

        The resumed run draws those samples again (the generator is restored
        to its state at the checkpoint), so these calls are made twice.
        """
        return self._calls_redrawn

    @property
    def Gamma_hat(self):
        """Largest empirical support ``Gamma_hat`` (counted over ``S'``), computed once per
        version of the counts."""
        csr = self.counts_csr()
        if self._gamma_hat is None or self._gamma_hat[0] is not csr:
            self._gamma_hat = (csr, int(np.diff(csr.indptr).max()))
        return self._gamma_hat[1]

    def check_model(self, model, where="the checkpoint"):
        """Raise unless ``model`` is the model whose samples this store holds.

        Parameters
        ----------
        model : GenerativeModel
            The model about to add samples.
        where : str, default "the checkpoint"
            How the store is named in the message (e.g. the file's path).

        Raises
        ------
        CheckpointError
            See :func:`compare_fingerprints`.
        """
        compare_fingerprints(self.fingerprint, model_fingerprint(model), where)

    def _where(self, pair):
        s, a = divmod(int(pair), self.n_actions)
        return f"the pair (s, a) = ({s}, {a})" + (f" in {self.context}" if self.context else "")

    def _merge(self, pairs, lengths, next_states, counts, totals, canonical=False):
        """Queue checked samples, in arrays the store owns: ``pairs[i]`` saw the next
        ``lengths[i]`` entries of ``next_states``, ``counts`` times each, ``totals[i]`` in all;
        ``canonical`` when they are known to be in canonical order (see :func:`_increment`)."""
        self._pending.append((pairs, lengths, next_states, counts, canonical))
        self._n_total += exact_sum(totals)

    def add(self, s, a, next_states, counts):
        """Merge samples of the pair ``(s, a)`` into the store.

        They count as calls (:attr:`calls_made`): samples obtained elsewhere,
        from as many calls.

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
        total = exact_sum(counts)
        self._record_calls(check_call_budget(self._calls_made, total))
        self._merge(np.array([s * self.n_actions + a], dtype=np.int64),
                    np.array([next_states.size], dtype=np.int64), next_states.copy(),
                    counts.copy(), np.array([total], dtype=np.int64))

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
            Passed to ``model.sample`` (or ``model.sample_pairs``, which
            makes the same draws).
        """
        s, a = _check_pair(s, a, self.n_states, self.n_actions)
        n = check_int("n", n)
        if n > 0:
            self.draw_pairs(model, [s * self.n_actions + a], n, rng)

    def draw_pairs(self, model, pairs, n, rng):
        """Draw ``n[i]`` samples of every pair ``pairs[i]``, in the order given, and store them.

        Uses ``model.sample_pairs`` (one call for all pairs, see
        :meth:`TabularGenerativeModel.sample_pairs`) when the model has it, and
        otherwise ``model.sample`` pair after pair (skipping ``n[i] = 0``);
        either way the model makes the same draws as :meth:`draw` called pair
        after pair. The samples are merged in one operation; when a pair
        fails, those of the pairs before it are kept.

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

        Raises
        ------
        TooLargeError
            Before drawing, if the calls made would pass ``2^63 - 1``.
        GenerativeModelError
            If the model raises (the original exception is the cause) or
            answers with anything but integer next states in ``0..S`` and
            non-negative integer counts summing to ``n[i]`` for every pair;
            the message names the pair and :attr:`context`.
        """
        pairs, n = _check_pairs(pairs, n, self.n_states, self.n_actions)
        self._draw(model, pairs, n, exact_sum(n), rng)

    def _draw(self, model, pairs, n, total, rng, keep_layout=False):
        """:meth:`draw_pairs` of ``pairs`` and ``n`` as :func:`_check_pairs` returns them,
        ``total`` samples in all; ``keep_layout``: a :class:`TabularGenerativeModel` keeps the
        layout of the pairs for the next draw (:meth:`TabularGenerativeModel._sample_checked`)."""
        if total == 0:
            return
        made = check_call_budget(self._calls_made, total)
        self._record_calls(made)
        sample_pairs = getattr(model, "sample_pairs", None)
        if getattr(sample_pairs, "__func__", None) is TabularGenerativeModel.sample_pairs:
            self._draw_tabular(model, pairs, n, rng, keep_layout)
            return
        if sample_pairs is not None:
            self._draw_batched(sample_pairs, pairs, n, rng)
            return
        drawn = []
        try:
            for pair, n_i in zip(pairs.tolist(), n.tolist()):
                if n_i > 0:
                    try:
                        answer = model.sample(*divmod(pair, self.n_actions), n_i, rng)
                    except Exception as exc:
                        raise self._model_raised(exc, f"sampling {self._where(pair)}") from exc
                    nxt, cnt = self._check_answer(answer, pair, n_i)
                    drawn.append((pair, nxt.size, nxt, cnt, n_i))
        finally:
            if drawn:
                pairs, lengths, next_states, counts, totals = zip(*drawn)
                self._merge(np.array(pairs, dtype=np.int64), np.array(lengths, dtype=np.int64),
                            np.concatenate(next_states), np.concatenate(counts),
                            np.array(totals, dtype=np.int64))

    def _draw_tabular(self, model, pairs, n, rng, keep_layout):
        """:meth:`_draw_batched` of the ``sample_pairs`` of a :class:`TabularGenerativeModel`
        (not overridden), whose answer the model makes correct (see
        :meth:`TabularGenerativeModel._sample_checked`): it is merged unchecked, and in
        canonical order when ``pairs`` ascend."""
        try:
            indptr, next_states, counts = model._sample_checked(pairs, n, rng, keep_layout)
        except Exception as exc:
            raise self._model_raised(exc, f"sampling {self._batch(pairs)}") from exc
        self._merge(pairs.copy(), np.diff(indptr), next_states, counts, n,
                    canonical=bool((pairs[1:] > pairs[:-1]).all()))

    def _batch(self, pairs):
        """How a message names a batch of ``pairs``: its size and its first pair."""
        return f"a batch of {pairs.size} pair(s) from {self._where(pairs[0])}"

    def _draw_batched(self, sample_pairs, pairs, n, rng):
        where = self._batch(pairs)
        try:
            answer = sample_pairs(pairs, n, rng)
            indptr, next_states, counts = answer
        except Exception as exc:
            raise self._model_raised(exc, f"sampling {where}") from exc
        indptr = _integer_answer(indptr, "indptr", where)
        next_states, counts = self._check_samples_answer(next_states, counts, where)
        lengths = np.diff(indptr) if indptr.ndim == 1 and indptr.size else np.array([-1])
        if (indptr.shape != (pairs.size + 1,) or indptr[0] != 0
                or indptr[-1] != counts.size or (lengths < 0).any()):
            raise GenerativeModelError(
                f"`sample_pairs` must return an `indptr` of shape ({pairs.size + 1},), "
                f"non-decreasing from 0 to {counts.size}; got {_listing(indptr.ravel())} for "
                f"{where}."
            )
        totals = np.diff(np.concatenate([[0], np.cumsum(counts)])[indptr])
        short = np.flatnonzero(totals != n)
        if short.size:
            i = int(short[0])
            raise GenerativeModelError(
                f"the model returned {int(totals[i])} sample(s) where {int(n[i])} were asked, "
                f"for {self._where(pairs[i])}; the counts of every pair must sum to the number "
                "asked.")
        self._merge(pairs.copy(), lengths, next_states, counts, totals)

    def _model_raised(self, exc, what):
        """The error to raise for ``exc``, raised by the model while doing ``what``: the
        model's own message, with the pair unless the model named it and the round."""
        if isinstance(exc, GenerativeModelError) and exc.pair is not None:
            where = f", in {self.context}" if self.context else ""
            return GenerativeModelError(f"{str(exc).rstrip('.')}{where}.", pair=exc.pair)
        if isinstance(exc, GenerativeModelError):
            return GenerativeModelError(f"{exc} (while {what})")
        return GenerativeModelError(
            f"the generative model raised {type(exc).__name__} while {what}: {exc}"
        )

    def _check_samples_answer(self, next_states, counts, where):
        next_states = _integer_answer(next_states, "next_states", where)
        counts = _integer_answer(counts, "counts", where)
        if next_states.ndim != 1 or next_states.shape != counts.shape:
            raise GenerativeModelError(
                f"the model must return `next_states` and `counts` as 1-d arrays of one "
                f"length; got shapes {next_states.shape} and {counts.shape} for {where}."
            )
        if next_states.size and (next_states.min() < 0 or next_states.max() > self.n_states):
            outside = next_states[(next_states < 0) | (next_states > self.n_states)]
            raise GenerativeModelError(
                f"the model returned next states outside 0..{self.n_states}: "
                f"{_listing(outside)}, for {where}."
            )
        if counts.size and counts.min() < 0:
            raise GenerativeModelError(
                f"the model returned negative counts {_listing(counts[counts < 0])} for {where}."
            )
        return next_states, counts

    def _check_answer(self, answer, pair, n):
        where = self._where(pair)
        try:
            next_states, counts = answer
        except (TypeError, ValueError):
            raise GenerativeModelError(
                f"`sample` must return a pair (next_states, counts); got "
                f"{type(answer).__name__} for {where}."
            ) from None
        next_states, counts = self._check_samples_answer(next_states, counts, where)
        got = exact_sum(counts)
        if got != n:
            raise GenerativeModelError(
                f"the model returned {got} sample(s) where {n} were asked, for {where}; the "
                "counts must sum to the number asked."
            )
        return next_states, counts

    def top_up(self, model, target, rng):
        """Bring every pair to at least ``target`` samples, pairs in order ``(s, a)``.

        One :meth:`draw_pairs` over the pairs below ``target``, each drawing
        ``target - N(s, a)`` (pairs and numbers the store made, so not checked
        again).

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

        Raises
        ------
        TooLargeError
            Before drawing, if the calls made would pass ``2^63 - 1``.
        """
        target = check_int("target", target)
        held = self.n_pair.reshape(-1)
        below = held < target if target <= INT64_MAX else np.ones(held.size, dtype=bool)
        need_total = target * int(below.sum()) - exact_sum(held[below])
        check_call_budget(self._calls_made, need_total)
        pairs = np.flatnonzero(below)
        self._draw(model, pairs, target - held[pairs], need_total, rng, keep_layout=True)
        return need_total

    def track_calls(self, path):
        """Record the calls made in a ledger next to the checkpoint ``path``, before each batch.

        The ledger ``path + ".calls"`` receives, before every batch is drawn,
        the calls made once it completes (8 bytes, fsync'ed); :meth:`save`
        empties it, since the checkpoint then holds the count. A run killed
        after its last checkpoint thus leaves the calls it made in the ledger,
        and :meth:`load` adds them to :attr:`calls_made` and
        :attr:`calls_redrawn`. The ledger is opened without following a link
        and must be a regular file with one name
        (:func:`reference.generative.files.open_private`).

        Parameters
        ----------
        path : str or os.PathLike
            The checkpoint file. The ledger is kept if this store was loaded
            from ``path`` (a resumed run) and emptied otherwise (a new run),
            which also checks at once that the directory is writable.

        Raises
        ------
        CheckpointError
            If the ledger is a link, not a regular file, or a hard link.
        OSError
            If the ledger cannot be created.
        """
        path = os.path.abspath(os.fspath(path))
        ledger = path + LEDGER_SUFFIX
        if self._loaded_from != path:
            empty_ledger(ledger)
        self._ledger = ledger

    def _record_calls(self, made):
        if self._ledger is not None:
            append_to_ledger(self._ledger, made)
        self._calls_made = made

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
            batch = self._pending[0]
            if len(self._pending) > 1:
                *parts, _ = zip(*self._pending)
                batch = (*(np.concatenate(part) for part in parts), False)
            self._pending = []
            self._csr = _summed(self._csr, *_increment(*batch, self._csr.shape), self.merge)
        return self._csr

    def count_table(self):
        """The counts as the ``table`` of :class:`~reference.counts.Counts`, unchecked.

        The same arrays, bit for bit, as ``Counts(store.counts_csr()).table``,
        without its checks: the store built its counts from answers it checked
        or that a :class:`TabularGenerativeModel` makes correct (next states in
        ``0..S``, integer counts ``>= 0``, at most ``2^63 - 1`` calls), so they
        hold nothing to refuse.

        Returns
        -------
        scipy.sparse.csr_array of float64, shape (S*A, S+1)
            Canonical (indices sorted, no duplicates, no explicit zeros), int64
            ``indptr`` and ``indices`` (shared with :meth:`counts_csr`: do not modify
            them); a new matrix at every call.
        """
        csr = self.counts_csr()
        return _with_arrays(csr, csr.indptr.astype(np.int64, copy=False),
                            csr.indices.astype(np.int64, copy=False),
                            csr.data.astype(np.float64))

    def counts(self):
        """The counts as a :class:`~reference.counts.Counts`, without checking them again.

        The store built them from answers it checked or that a
        :class:`TabularGenerativeModel` makes correct, so :meth:`count_table`
        is wrapped as it is (:meth:`Counts.trusted <reference.counts.Counts.trusted>`).

        Returns
        -------
        Counts
            CSR storage, shape ``(S*A, S+1)``; a new object at every call.
        """
        return Counts.trusted(self.count_table())

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

        The file is written to a temporary file created exclusively under an
        unpredictable name ``<name>.<random>.tmp`` in the directory of ``path``
        (never through a link planted there), flushed to disk (``fsync``) and
        renamed over ``path``; the directory is then synced, so a crash leaves
        either the old file or the new one. A ``path`` that exists and is not
        a regular file (directory, FIFO, device) is refused with a
        :class:`CheckpointError`.

        Parameters
        ----------
        path : str or os.PathLike
            Destination file (NumPy ``.npz`` format, whatever its suffix).
        rng : numpy.random.Generator
            Its ``bit_generator.state`` is saved, so drawing resumes exactly.
        meta : dict, optional
            JSON-serialisable data stored alongside (run parameters, history).
        """
        write_checkpoint(self, path, rng, meta)

    @classmethod
    def load(cls, path):
        """Read a file written by :meth:`save`, checked as strictly as user input.

        Calls recorded in the ledger ``path + ".calls"`` beyond those the file
        holds (a round lost before its checkpoint) are added to
        :attr:`calls_made` and :attr:`calls_redrawn`. The file is refused
        unless it is a regular file (a FIFO or a device fails at once, never
        blocks), and its counts unless they are in the canonical form a save
        writes (next states strictly increasing within each pair, no zero).

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        store : SampleStore
            The counts, the fingerprint and the calls made.
        rng : numpy.random.Generator
            A generator in the saved state.
        meta : dict
            The saved ``meta``.

        Raises
        ------
        CheckpointError
            If the file is not one :meth:`save` writes in the current format
            (:data:`CHECKPOINT_FORMAT`), or its header or arrays are malformed:
            sizes, dtypes, shapes, an ``indptr`` not starting at 0 or
            decreasing, next states outside ``0..S``, negative counts,
            per-pair totals disagreeing with the saved ``N(s, a)``, counts not
            in canonical form, fewer calls than samples, a calls ledger whose
            records do not increase (or that is a link or not a regular file),
            or a generator state numpy refuses.
        OSError
            If the file cannot be read (missing, a directory, no permission).
        """
        return read_checkpoint(cls, path)


def _integer_answer(values, name, where):
    """A model's answer ``values`` as an int64 array, refusing non-integer dtypes."""
    array = np.asarray(values)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise GenerativeModelError(
            f"the model must return integer `{name}`; got dtype {array.dtype} for {where}."
        )
    if array.dtype == np.uint64 and array.size and array.max() > INT64_MAX:
        raise GenerativeModelError(f"the model returned `{name}` above 2^63 - 1 for {where}.")
    return array.astype(np.int64)
