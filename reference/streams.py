r"""Counter-based random streams per pair, and the sampling of one chunk of them.

The draws of a :class:`~reference.parallel.ParallelGenerativeModel` never come
from one sequential generator: each request (one call of ``sample_pairs``)
takes one 64-bit word ``w`` from the run's generator, and the samples of the
entry ``i`` of the request, the pair ``p`` asked for the ``r``-th time in it
(``r = 0`` unless the request names ``p`` twice), are cut into blocks of
:data:`STREAM_BLOCK_SIZE` samples. Block ``b`` is drawn by a
:class:`numpy.random.Generator` on numpy's Philox-4x64 bit generator with

.. math::

    \mathrm{key} = (w, p), \qquad \mathrm{counter} = (0, 0, b, r),

(:func:`block_generator`): the simulator is called on it for the samples
``b B .. min((b + 1) B, n_i) - 1`` of the entry (``B`` = :data:`STREAM_BLOCK_SIZE`),
in order. Philox is a counter-based generator: its output at a counter is a
keyed function of that counter, so a block's draws depend on ``(w, p, r, b)``
only, never on which process draws it, on what it drew before, or on how the
blocks were grouped into chunks. Each block has ``2^{128}`` counter steps of its
own before its counter would reach the next block's (the block index sits
above them).

A chunk (:func:`run_chunk`) is a list of whole blocks; it returns the counts
of its samples per entry and next state, never the samples.
"""

import hashlib
import os
import pickle
import socket
import threading
import traceback

import numpy as np

__all__ = ["STREAM_BLOCK_SIZE", "STREAM_SCHEME", "block_generator", "request_word"]

STREAM_BLOCK_SIZE = 256
"""Samples per block: the unit of the counter-based streams (and of a chunk's size)."""

STREAM_SCHEME = f"philox4x64:key=(word,pair):counter=(0,0,block,repeat):block={STREAM_BLOCK_SIZE}"
"""Name of the stream scheme, recorded in a parallel model's fingerprint."""

_LOADED = {}
_LOADED_LIMIT = 8
_THREAD = threading.local()


def request_word(rng):
    """The 64-bit word ``w`` of one request, the next draw of the run's generator.

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's generator (its state is saved in checkpoints).

    Returns
    -------
    int
        ``rng.integers(2**64, dtype=np.uint64)`` as a Python int.

    See Also
    --------
    block_generator : the generator of one block, keyed by this word.

    Examples
    --------
    >>> import numpy as np
    >>> w = request_word(np.random.default_rng(0))
    >>> 0 <= w < 2**64, w == request_word(np.random.default_rng(0))
    (True, True)
    """
    return int(rng.integers(2**64, dtype=np.uint64))


def block_generator(word, pair, block, repeat=0):
    """The generator of block ``block`` of the pair ``pair`` in the request of word ``word``.

    Parameters
    ----------
    word : int
        The request's word, ``0 <= word < 2^64`` (:func:`request_word`).
    pair : int
        The flat pair index ``s*A + a``.
    block : int
        The block: samples ``block * STREAM_BLOCK_SIZE`` onwards of the entry.
    repeat : int, default 0
        How many earlier entries of the request name the same pair.

    Returns
    -------
    numpy.random.Generator
        On ``numpy.random.Philox(key=[word, pair], counter=[0, 0, block, repeat])``.

    Examples
    --------
    Two generators of one block draw the same numbers, whoever makes them:

    >>> from reference.streams import block_generator
    >>> a = block_generator(7, 3, 0).random(2)
    >>> b = block_generator(7, 3, 0).random(2)
    >>> bool((a == b).all()), bool((a != block_generator(7, 3, 1).random(2)).all())
    (True, True)
    """
    key = np.array([word, pair], dtype=np.uint64)
    counter = np.array([0, 0, block, repeat], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=key, counter=counter))


def _positioned(word, pair, block, repeat):
    """This thread's generator, its Philox set to the state :func:`block_generator` starts in
    (the same draws, without making a bit generator per block)."""
    generator = getattr(_THREAD, "generator", None)
    if generator is None:
        generator = _THREAD.generator = np.random.Generator(np.random.Philox(0))
    generator.bit_generator.state = {
        "bit_generator": "Philox",
        "state": {"counter": np.array([0, 0, block, repeat], dtype=np.uint64),
                  "key": np.array([word, pair], dtype=np.uint64)},
        "buffer": np.zeros(4, dtype=np.uint64),
        "buffer_pos": 4,
        "has_uint32": 0,
        "uinteger": 0,
    }
    return generator


def pack(function):
    """``(digest, blob)``: the pickled ``function`` and the SHA-256 of the pickle.

    cloudpickle (a dependency of dask) is used when it is installed, so that
    lambdas and functions of a ``__main__`` script travel by value; otherwise
    :mod:`pickle`. Raises what the pickler raises.
    """
    try:
        import cloudpickle
    except ImportError:
        blob = pickle.dumps(function, protocol=pickle.HIGHEST_PROTOCOL)
    else:
        blob = cloudpickle.dumps(function, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.sha256(blob).hexdigest(), blob


def install(digest, function):
    """Keep ``function`` as the loaded simulator of ``digest`` in this process."""
    if digest not in _LOADED and len(_LOADED) >= _LOADED_LIMIT:
        _LOADED.pop(next(iter(_LOADED)))
    _LOADED[digest] = function


def run_chunk(task):
    """Sample one chunk of blocks in this process (a worker, or the driver itself).

    Parameters
    ----------
    task : tuple
        ``(digest, blob, batched, n_states, n_actions, word, blocks, attempt)``:
        the simulator (unpickled from ``blob`` once per process and kept under
        ``digest``), whether it is ``step_batch(s, a, n, rng)`` rather than
        ``step(s, a, rng)``, ``S``, ``A``, the request's word, and ``blocks``,
        int64 of shape ``(k, 6)``, one row ``(entry, pair, repeat, first, end,
        n)`` per entry: its blocks ``first..end-1``, of ``n`` samples in all
        (the last block may be shorter), entries ascending. ``attempt`` only
        makes a retried task distinct.

    Returns
    -------
    tuple
        ``("ok", entries, next_states, counts)``: int64 arrays, one row per
        entry and next state seen, entries non-decreasing, next states
        ascending within an entry; or ``("error", info)`` when the simulator
        could not be loaded, raised, or answered out of its contract, with
        ``info`` a dict naming what happened, the entry, the pair, the
        sample and the worker (``host:pid``), and the traceback.
    """
    digest, blob, batched, n_states, n_actions, word, blocks, _ = task
    where = f"{socket.gethostname()}:{os.getpid()}"
    function = _LOADED.get(digest)
    if function is None:
        try:
            function = pickle.loads(blob)
        except Exception as exc:
            return "error", {"what": "load", "worker": where, "error": _describe(exc),
                             "traceback": traceback.format_exc()}
        install(digest, function)
    return sample_blocks(function, batched, n_states, n_actions, word, blocks, where)


def _describe(exc):
    return f"{type(exc).__name__}: {exc}"


def sample_blocks(function, batched, n_states, n_actions, word, rows, where):
    """:func:`run_chunk` once the simulator ``function`` is loaded; ``where`` names the
    process in errors."""
    entries, states, counts = [], [], []
    for entry, pair, repeat, first, end, n in rows.tolist():
        draws = [np.zeros(0, dtype=np.int64)]
        for block in range(first, end):
            length = min(STREAM_BLOCK_SIZE, n - block * STREAM_BLOCK_SIZE)
            drawn = _draw_block(function, batched, n_states, n_actions, word, pair, repeat,
                                block, length)
            if drawn[0] == "error":
                info = drawn[1]
                info.update(worker=where, entry=entry, pair=pair,
                            sample=block * STREAM_BLOCK_SIZE + info.pop("index"))
                return "error", info
            draws.append(drawn[1])
        seen, tally = _tally(np.concatenate(draws), n_states)
        entries.append(np.full(seen.size, entry, dtype=np.int64))
        states.append(seen)
        counts.append(tally)
    if not entries:
        empty = np.zeros(0, dtype=np.int64)
        return "ok", empty, empty, empty
    return "ok", np.concatenate(entries), np.concatenate(states), np.concatenate(counts)


def _draw_block(function, batched, n_states, n_actions, word, pair, repeat, block, length):
    """``("ok", draws)`` of one block as int64 ``(length,)``, or ``("error", info)``."""
    rng = _positioned(word, pair, block, repeat)
    s, a = divmod(pair, n_actions)
    if batched:
        try:
            answer = function(s, a, length, rng)
        except Exception as exc:
            return "error", {"what": "raised", "index": 0, "error": _describe(exc),
                             "traceback": traceback.format_exc()}
        return _checked_batch(answer, length, n_states)
    answers = []
    for j in range(length):
        try:
            answers.append(function(s, a, rng))
        except Exception as exc:
            return "error", {"what": "raised", "index": j, "error": _describe(exc),
                             "traceback": traceback.format_exc()}
    return _checked_steps(answers, n_states)


def _checked_batch(answer, length, n_states):
    array = np.asarray(answer)
    bad = array.shape != (length,) or (array.size and array.dtype.kind not in "iu")
    if bad:
        return "error", {"what": "shape", "index": 0,
                         "error": f"an array of shape {array.shape} and dtype {array.dtype} "
                                  f"where an integer array of shape ({length},) was due"}
    outside = np.flatnonzero((array < 0) | (array > n_states))
    if outside.size:
        j = int(outside[0])
        return "error", {"what": "state", "index": j, "error": f"{array[j].item()!r}"}
    return "ok", array.astype(np.int64)


def _checked_steps(answers, n_states):
    for j, value in enumerate(answers):
        integer = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        if not integer or not 0 <= value <= n_states:
            return "error", {"what": "state", "index": j, "error": f"{value!r}"}
    return "ok", np.array(answers, dtype=np.int64)


def _tally(draws, n_states):
    """Distinct next states of ``draws`` (ascending) and their counts, int64."""
    if draws.size * 4 >= n_states:
        counts = np.bincount(draws, minlength=n_states + 1)
        seen = np.flatnonzero(counts)
        return seen.astype(np.int64), counts[seen].astype(np.int64)
    seen, counts = np.unique(draws, return_counts=True)
    return seen.astype(np.int64), counts.astype(np.int64)
