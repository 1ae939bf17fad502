"""A generative model whose draws run on any :class:`concurrent.futures.Executor`.

:class:`ParallelGenerativeModel` wraps a simulator ``step(s, a, rng)`` (or a
batched ``step_batch(s, a, n, rng)``) and answers the store's requests by
splitting them into chunks of whole blocks of the counter-based streams of
:mod:`reference.streams`, run by the executor's workers: a local
:class:`~concurrent.futures.ProcessPoolExecutor`, or
``dask.distributed.Client(...).get_executor()`` on a cluster. Workers return
counts, never samples; the driver merges them and the store checks them like
any model's answer. The samples depend on the run's seed and the requests
only: never on the number of workers, the chunk size, or a chunk run twice.
"""

import concurrent.futures as cf
import multiprocessing
import numbers
import os
import socket
import weakref

import numpy as np

from . import streams
from ._checks import check_int
from .errors import GenerativeModelError, ParameterError
from .generative.models import _check_pairs, _CountingModel
from .model import SSP

__all__ = ["ParallelGenerativeModel", "KernelSimulator"]


class ParallelGenerativeModel(_CountingModel):
    r"""Generative model of a simulator, sampled in chunks on an executor's workers.

    Parameters
    ----------
    step : callable or None
        ``step(s, a, rng) -> s'``, one next state (an integer in ``0..S``,
        ``S`` = goal) drawn with ``rng``, a :class:`numpy.random.Generator`.
        May be None when ``step_batch`` is given.
    n_states, n_actions : int
        ``S >= 1`` and ``A >= 1``.
    executor : None, int or concurrent.futures.Executor, default None
        Where the chunks run: None, in this process, one after the other;
        an int ``N >= 1``, ``N`` local worker processes the model starts at its
        first request (``spawn``), restarts when one dies, and stops in
        :meth:`close`; or any executor, e.g. a
        :class:`~concurrent.futures.ProcessPoolExecutor` or
        ``dask.distributed.Client(address).get_executor()``.
    chunk : int, default 16384
        Samples per task sent to a worker, rounded up to whole blocks of
        :data:`~reference.streams.STREAM_BLOCK_SIZE`; a performance setting only.
    step_batch : callable or None, default None
        ``step_batch(s, a, n, rng) -> array of n next states``, used instead of
        ``step`` when given (a vectorised simulator).
    identity : str or None, default None
        A name that determines the simulator's dynamics, recorded in
        checkpoints with the stream scheme and checked on resume (see
        :func:`~reference.generative.model_fingerprint`); None leaves the model
        unfingerprinted.
    retries : int, default 3
        Times a chunk is submitted again when its worker is lost (the
        executor raises instead of returning its counts).

    Attributes
    ----------
    chunks_retried : int
        Chunks submitted again after a lost worker, since the model was made.

    Notes
    -----
    Every request (one :meth:`sample_pairs` call: a top-up of the store) takes
    one word ``w`` from the run's generator, and the ``i``-th sample of a pair
    ``p`` in it comes from block ``i // B`` of the Philox stream keyed by
    ``(w, p)`` (:func:`reference.streams.block_generator`, ``B =``
    :data:`~reference.streams.STREAM_BLOCK_SIZE`). A chunk is a run of whole blocks;
    its worker returns ``(entry, next state, count)`` rows. So the samples,
    hence every result and checkpoint, are identical for any executor, any
    number of workers, any ``chunk`` and any chunk run again after a lost
    worker; calls are counted once, by the store, for the samples asked.

    The simulator travels to the workers pickled (by cloudpickle when it is
    installed, which sends lambdas and the functions of a ``__main__`` script
    by value), with each chunk; a worker unpickles it once and keeps it. An
    importable function must be importable on the workers.

    Examples
    --------
    A walk along a chain of 3 states that moves right with probability 0.8,
    sampled in this process:

    >>> import numpy as np
    >>> from reference import KernelSimulator, ParallelGenerativeModel, chain
    >>> def step(s, a, rng):
    ...     return s + 1 if rng.random() < 0.8 else s
    >>> model = ParallelGenerativeModel(step, 3, 1)
    >>> model.sample(2, 0, 1000, np.random.default_rng(0))
    (array([2, 3]), array([191, 809]))

    The draws of a (picklable) simulator are the same on two worker
    processes, in chunks of 300 samples, as in this process in one chunk:

    >>> simulator = KernelSimulator(chain(3, p=0.8))
    >>> here = ParallelGenerativeModel(None, 3, 2, step_batch=simulator)
    >>> with ParallelGenerativeModel(None, 3, 2, executor=2, chunk=300,
    ...                              step_batch=simulator) as pool:
    ...     there = pool.sample_pairs([0, 5], 1000, np.random.default_rng(1))
    >>> mine = here.sample_pairs([0, 5], 1000, np.random.default_rng(1))
    >>> all(np.array_equal(x, y) for x, y in zip(mine, there))
    True
    """

    def __init__(self, step, n_states, n_actions, executor=None, chunk=16384, step_batch=None,
                 identity=None, retries=3):
        function = step_batch if step_batch is not None else step
        if not callable(function):
            raise ParameterError(
                "`step` (or `step_batch`) must be callable; got "
                f"{type(step).__name__} and {type(step_batch).__name__}."
            )
        if identity is not None and not isinstance(identity, str):
            raise ParameterError(
                f"`identity` must be a string or None; got {type(identity).__name__}."
            )
        super().__init__(n_states, n_actions)
        self.chunk = check_int("chunk", chunk, low=1)
        self.retries = check_int("retries", retries, low=0)
        self.step, self.step_batch, self.identity = step, step_batch, identity
        self.batched = step_batch is not None
        self.chunks_retried = 0
        self._processes = None
        self._executor = None
        if isinstance(executor, numbers.Integral) and not isinstance(executor, bool):
            self._processes = check_int("executor", executor, low=1)
        elif executor is not None and not isinstance(executor, cf.Executor):
            raise ParameterError(
                "`executor` must be None, a number of local processes >= 1 or a "
                f"concurrent.futures.Executor; got {type(executor).__name__}."
            )
        else:
            self._executor = executor
        self._digest, self._blob = None, None
        if executor is not None:
            try:
                self._digest, self._blob = streams.pack(function)
            except Exception as exc:
                name = "step_batch" if self.batched else "step"
                raise ParameterError(
                    f"`{name}` must be picklable to run on workers; pickling it raised "
                    f"{type(exc).__name__}: {exc}. Define it at module level (or as an "
                    "instance of a module-level class holding picklable data), or pass "
                    "executor=None to sample in this process."
                ) from exc
        self._finalizer = None
        self._submitted_to = weakref.WeakKeyDictionary()

    @property
    def fingerprint(self):
        """The model's fingerprint (:func:`~reference.generative.model_fingerprint`).

        ``kind = "declared"`` with the ``identity`` and the stream scheme
        (``streams``: :data:`~reference.streams.STREAM_SCHEME`, and whether
        ``step`` or ``step_batch`` draws), or ``kind = "unfingerprinted"``
        without an identity.
        """
        sizes = {"n_states": self.n_states, "n_actions": self.n_actions}
        if self.identity is None:
            kind = type(self)
            return {"kind": "unfingerprinted", **sizes,
                    "type": f"{kind.__module__}.{kind.__qualname__}"}
        drawer = "step_batch" if self.batched else "step"
        return {"kind": "declared", **sizes, "identity": self.identity,
                "streams": f"{streams.STREAM_SCHEME}:{drawer}"}

    def sample(self, s, a, n, rng):
        """Draw ``n`` next states of ``(s, a)`` (``n`` calls): :meth:`sample_pairs` of one pair.

        Parameters
        ----------
        s, a : int
            The pair, ``0 <= s < S``, ``0 <= a < A``.
        n : int
            Number of samples, ``>= 0``.
        rng : numpy.random.Generator
            The run's generator; one word is drawn from it.

        Returns
        -------
        next_states : ndarray of int64, shape (k,)
            Distinct next states in ``0..S``, ascending.
        counts : ndarray of int64, shape (k,)
            Positive counts summing to ``n``.
        """
        s, a, n = self._check_request(s, a, n)
        _, next_states, counts = self.sample_pairs([s * self.n_actions + a], n, rng)
        return next_states, counts

    def sample_pairs(self, pairs, n, rng):
        """Draw ``n[i]`` next states of every pair ``pairs[i]`` on the workers.

        One word ``w`` is drawn from ``rng``; the samples of ``pairs[i]`` come
        from its blocks of the streams keyed by ``(w, pairs[i])`` (see Notes of
        the class), cut into chunks of about ``chunk`` samples.

        Parameters
        ----------
        pairs : array_like of int, shape (m,)
            Flat pair indices ``s*A + a``, each in ``0..S*A-1``.
        n : int or array_like of int, shape (m,)
            Samples per pair, ``>= 0``.
        rng : numpy.random.Generator
            The run's generator.

        Returns
        -------
        indptr : ndarray of int64, shape (m + 1,)
            The samples of ``pairs[i]`` are entries ``indptr[i]:indptr[i+1]``.
        next_states : ndarray of int64, shape (indptr[-1],)
            Distinct next states per pair, ascending, in ``0..S``.
        counts : ndarray of int64, shape (indptr[-1],)
            Positive counts; those of ``pairs[i]`` sum to ``n[i]``.

        Raises
        ------
        GenerativeModelError
            If the simulator raises (the pair, the sample and the worker are
            named, and the worker's traceback is the error's cause), answers
            out of its contract, cannot be loaded on a worker, or a chunk's
            worker was lost more than ``retries`` times.
        """
        pairs, n = _check_pairs(pairs, n, self.n_states, self.n_actions)
        word = streams.request_word(rng)
        chunks = self._chunks(pairs, n)
        outputs = self._run(chunks, word)
        indptr, next_states, counts = _merged(outputs, pairs.size)
        np.add.at(self.calls.reshape(-1), pairs, n)
        return indptr, next_states, counts

    def _chunks(self, pairs, n):
        """The request's blocks, cut into chunks: a chunk holds the blocks whose first sample
        lies in one span of ``chunk`` samples of the request (entries laid end to end).

        Each chunk is int64 rows ``(entry, pair, repeat, first block, end block, n[entry])``,
        one per entry with blocks in it, entries ascending.
        """
        size = streams.STREAM_BLOCK_SIZE
        order = np.argsort(pairs, kind="stable")
        first = np.r_[True, pairs[order][1:] != pairs[order][:-1]]
        group_start = np.maximum.accumulate(np.where(first, np.arange(pairs.size), 0))
        repeat = np.empty(pairs.size, dtype=np.int64)
        repeat[order] = np.arange(pairs.size) - group_start
        n_blocks = -(-n // size)
        start = np.cumsum(n) - n
        low = start // self.chunk
        spans = np.where(n_blocks > 0, (start + (n_blocks - 1) * size) // self.chunk - low + 1, 0)
        entry = np.repeat(np.arange(pairs.size, dtype=np.int64), spans)
        chunk = low[entry] + np.arange(entry.size) - np.repeat(np.cumsum(spans) - spans, spans)
        lo = np.maximum(0, -((start[entry] - chunk * self.chunk) // size))
        hi = np.minimum(n_blocks[entry], -((start[entry] - (chunk + 1) * self.chunk) // size))
        keep = lo < hi
        rows = np.stack([entry, pairs[entry], repeat[entry], lo, hi, n[entry]], axis=1)[keep]
        cuts = np.flatnonzero(np.diff(chunk[keep])) + 1
        return np.split(rows, cuts) if rows.size else []

    def _run(self, chunks, word):
        """The outputs of every chunk, in order: in this process, or on the executor."""
        if self._processes is None and self._executor is None:
            where = f"{socket.gethostname()}:{os.getpid()} (this process)"
            function = self.step_batch if self.batched else self.step
            outputs = []
            for rows in chunks:
                outputs.append(streams.sample_blocks(function, self.batched, self.n_states,
                                                     self.n_actions, word, rows, where))
                self._raise_for(outputs[-1])
            return outputs
        return self._run_on_executor(chunks, word)

    def _task(self, rows, word, attempt):
        return (self._digest, self._blob, self.batched, self.n_states, self.n_actions, word,
                rows, attempt)

    def _run_on_executor(self, chunks, word):
        """The chunks' outputs, each chunk submitted again (up to ``retries`` times) when the
        executor raises instead of returning it."""
        outputs = [None] * len(chunks)
        attempts = [0] * len(chunks)
        pending = {}
        try:
            for i, rows in enumerate(chunks):
                pending[self._submit(self._task(rows, word, 0))] = i
            while pending:
                done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    i = pending.pop(future)
                    try:
                        output = future.result()
                    except Exception as exc:
                        attempts[i] += 1
                        if attempts[i] > self.retries:
                            raise self._lost(chunks[i], attempts[i], exc) from exc
                        self.chunks_retried += 1
                        self._repair(future, exc)
                        pending[self._submit(self._task(chunks[i], word, attempts[i]))] = i
                        continue
                    self._raise_for(output)
                    outputs[i] = output
        finally:
            for future in pending:
                future.cancel()
        return outputs

    def _submit(self, task):
        executor = self._pool()
        try:
            future = executor.submit(streams.run_chunk, task)
        except cf.BrokenExecutor as exc:
            raise GenerativeModelError(
                f"the executor can no longer run tasks ({type(exc).__name__}: {exc}): a "
                "concurrent.futures.ProcessPoolExecutor cannot replace a lost process. Pass "
                "executor=N (an int) to let the model restart its own N processes, or use a "
                "Dask cluster, which restarts lost workers."
            ) from exc
        self._submitted_to[future] = executor
        return future

    def _pool(self):
        """The executor: the one given, or the model's own processes (started on first use)."""
        if self._executor is None:
            context = multiprocessing.get_context("spawn")
            self._executor = cf.ProcessPoolExecutor(self._processes, mp_context=context)
            if self._finalizer is not None:
                self._finalizer.detach()
            self._finalizer = weakref.finalize(self, self._executor.shutdown, wait=False,
                                               cancel_futures=True)
        return self._executor

    def _repair(self, future, exc):
        """Replace the model's own processes when ``future`` failed (``exc``) on them, broken."""
        failed_on = self._submitted_to.pop(future, None)
        own = self._processes is not None
        if own and isinstance(exc, cf.BrokenExecutor) and failed_on is self._executor:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _lost(self, rows, attempts, exc):
        s, a = divmod(int(rows[0, 1]), self.n_actions)
        size = streams.STREAM_BLOCK_SIZE
        samples = int(np.minimum(rows[:, 4] * size, rows[:, 5]).sum() - (rows[:, 3] * size).sum())
        return GenerativeModelError(
            f"a chunk of {samples} sample(s) starting at the pair (s, a) = ({s}, {a}) failed "
            f"{attempts} time(s) on the executor (last: {type(exc).__name__}: {exc}); its "
            "workers keep being lost. Raise `retries` or check the workers' memory and logs."
        )

    def _raise_for(self, output):
        """Raise the :class:`GenerativeModelError` a chunk's ``("error", info)`` output names."""
        if output[0] == "ok":
            return
        info = output[1]
        name = "step_batch" if self.batched else "step"
        if info["what"] == "load":
            error = GenerativeModelError(
                f"the worker {info['worker']} cannot load `{name}` ({info['error']}): its module "
                "must be importable there (installed on every worker, or pass the function "
                "itself from a module the workers can import)."
            )
        else:
            s, a = divmod(info["pair"], self.n_actions)
            pair = f"the pair (s, a) = ({s}, {a}), sample {info['sample']} of its request"
            if info["what"] == "raised":
                error = GenerativeModelError(
                    f"`{name}` raised {info['error']} for {pair}, on the worker "
                    f"{info['worker']} (its traceback is this error's cause)", pair=(s, a)
                )
            elif info["what"] == "shape":
                error = GenerativeModelError(f"`step_batch` returned {info['error']}, for {pair}",
                                             pair=(s, a))
            else:
                error = GenerativeModelError(
                    f"`{name}` must return next states in 0..{self.n_states} (goal = "
                    f"{self.n_states}) as integers; for {pair} it returned {info['error']}",
                    pair=(s, a),
                )
        if "traceback" in info:
            raise error from WorkerTraceback(info["traceback"])
        raise error

    def close(self):
        """Stop the model's own worker processes (a no-op for an executor that was given)."""
        if self._processes is not None and self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class WorkerTraceback(Exception):
    """The traceback of an exception raised on a worker, as its text."""

    def __str__(self):
        return "\n" + self.args[0]


def _merged(outputs, m):
    """``(indptr, next_states, counts)`` of ``m`` entries from the chunks' ``("ok", entries,
    next_states, counts)`` outputs in order (an entry split over chunks summed)."""
    entries = np.concatenate([o[1] for o in outputs]) if outputs else np.zeros(0, np.int64)
    states = np.concatenate([o[2] for o in outputs]) if outputs else np.zeros(0, np.int64)
    counts = np.concatenate([o[3] for o in outputs]) if outputs else np.zeros(0, np.int64)
    same = entries[1:] == entries[:-1]
    if (states[1:][same] <= states[:-1][same]).any():
        order = np.lexsort((states, entries))
        entries, states, counts = entries[order], states[order], counts[order]
        starts = np.flatnonzero(np.r_[True, (entries[1:] != entries[:-1])
                                      | (states[1:] != states[:-1])])
        entries, states = entries[starts], states[starts]
        counts = np.add.reduceat(counts, starts)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(entries, minlength=m), out=indptr[1:])
    return indptr, states, counts


class KernelSimulator:
    """A picklable ``step_batch`` of a known :class:`~reference.model.SSP`.

    ``simulator(s, a, n, rng)`` draws ``n`` next states of ``(s, a)`` by
    inversion: ``n`` uniforms ``rng.random(n)`` placed in the cumulative
    probabilities of the pair's row (next states ascending).

    Parameters
    ----------
    ssp : SSP
        The instance.

    Examples
    --------
    >>> import numpy as np
    >>> from reference import KernelSimulator, chain
    >>> draws = KernelSimulator(chain(3, p=0.8))(0, 0, 5, np.random.default_rng(0))
    >>> draws.shape, bool(np.isin(draws, [0, 1]).all())
    ((5,), True)
    """

    def __init__(self, ssp):
        if not isinstance(ssp, SSP):
            raise ParameterError(f"`ssp` must be an SSP; got {type(ssp).__name__}.")
        kernel = ssp.kernel_csr()
        self.indptr = kernel.indptr.astype(np.int64)
        self.indices = kernel.indices.astype(np.int64)
        lengths = np.diff(self.indptr)
        running = np.cumsum(kernel.data)
        before = np.repeat(running[self.indptr[:-1]] - kernel.data[self.indptr[:-1]], lengths)
        within = running - before
        self.cumulative = within / np.repeat(within[self.indptr[1:] - 1], lengths)
        self.n_actions = ssp.n_actions

    def __call__(self, s, a, n, rng):
        row = s * self.n_actions + a
        lo, hi = self.indptr[row], self.indptr[row + 1]
        picks = np.searchsorted(self.cumulative[lo:hi], rng.random(n), side="right")
        return self.indices[lo + np.minimum(picks, hi - lo - 1)]
