"""The checkpoint format of a sample store: the file, its checks, the calls ledger."""

import json
import os
import stat

import numpy as np
import scipy.sparse as sp

from .._checks import INT64_MAX, check_int64_array, check_sparse_structure, exact_sum
from ..errors import CheckpointError, ParameterError, SSPValueError
from .files import check_regular, open_private, write_atomically

__all__ = ["CHECKPOINT_FORMAT", "load_rng_state"]

CHECKPOINT_FORMAT = 2
"""Version of the file :meth:`SampleStore.save` writes; :meth:`SampleStore.load` reads only it."""

LEDGER_SUFFIX = ".calls"
_ARRAYS = ("indptr", "indices", "data", "n_pair")
_BIT_GENERATORS = {
    name: getattr(np.random, name) for name in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
}


def write_checkpoint(store, path, rng, meta):
    """The body of :meth:`SampleStore.save <reference.generative.SampleStore.save>`."""
    csr = store.counts_csr()
    header = {
        "format": CHECKPOINT_FORMAT,
        "n_states": store.n_states,
        "n_actions": store.n_actions,
        "fingerprint": store.fingerprint,
        "calls_made": store._calls_made,
        "calls_redrawn": store._calls_redrawn,
        "rng_state": rng.bit_generator.state,
        "meta": meta or {},
    }
    path = os.path.abspath(os.fspath(path))
    check_regular(path, f"`checkpoint` {path!r}")
    write_atomically(path, lambda fh: np.savez(
        fh,
        header=np.array(json.dumps(header, default=_jsonable)),
        indptr=csr.indptr.astype(np.int64),
        indices=csr.indices.astype(np.int64),
        data=csr.data.astype(np.int64),
        n_pair=store.n_pair.reshape(-1),
    ))
    if store._ledger == path + LEDGER_SUFFIX:
        empty_ledger(store._ledger)


def empty_ledger(ledger):
    """Create or empty the calls ledger ``ledger`` (:func:`~.files.open_private`'s checks)."""
    fd = open_private(ledger, os.O_WRONLY | os.O_CREAT, "the calls ledger")
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def append_to_ledger(ledger, made):
    """Append the record ``made`` (8 bytes, little-endian) to the ledger, flushed to disk."""
    fd = open_private(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "the calls ledger")
    try:
        os.write(fd, int(made).to_bytes(8, "little", signed=True))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_checkpoint(cls, path):
    """The body of :meth:`SampleStore.load <reference.generative.SampleStore.load>`: a store
    of class ``cls``, its generator and ``meta``."""
    path = os.path.abspath(os.fspath(path))
    where = f"`checkpoint` {path!r}"
    header, arrays = _read_archive(path, where)
    S, A = (_header_int(header, key, where, low=1) for key in ("n_states", "n_actions"))
    indptr, indices, data, n_pair = arrays
    if indptr.shape != (S * A + 1,) or n_pair.shape != (S * A,):
        raise CheckpointError(
            f"{where} is malformed: with S = {S} and A = {A}, `indptr` must have shape "
            f"({S * A + 1},) and `n_pair` shape ({S * A},); got {indptr.shape} and "
            f"{n_pair.shape}."
        )
    store = cls(S, A)
    try:
        csr = _checked_counts(indptr, indices, data, (S * A, S + 1), A)
    except SSPValueError as exc:
        raise CheckpointError(f"{where} is malformed: {exc}") from None
    totals = np.bincount(np.repeat(np.arange(S * A), np.diff(csr.indptr)),
                         weights=csr.data.astype(np.float64), minlength=S * A)
    if (totals > INT64_MAX).any() or (n_pair < 0).any():
        raise CheckpointError(f"{where} is malformed: some pair holds a negative count or "
                              "more than 2^63 - 1 samples.")
    row_sums = np.asarray(csr.sum(axis=1)).ravel()
    bad = np.flatnonzero(row_sums != n_pair)
    if bad.size:
        s, a = divmod(int(bad[0]), A)
        raise CheckpointError(
            f"{where} is malformed: the counts of the pair (s, a) = ({s}, {a}) sum to "
            f"{int(row_sums[bad[0]])}, but the file records N(s, a) = {int(n_pair[bad[0]])}."
        )
    store._csr = csr
    store._n_total = exact_sum(n_pair)
    made = _header_int(header, "calls_made", where, low=0)
    redrawn = _header_int(header, "calls_redrawn", where, low=0)
    if made > INT64_MAX or made < store.n_samples + redrawn:
        raise CheckpointError(
            f"{where} is malformed: it records {made} calls made ({redrawn} redrawn) for "
            f"{store.n_samples} samples."
        )
    lost = _read_ledger(path + LEDGER_SUFFIX, where, made) - made
    store._calls_made = made + lost
    store._calls_redrawn = redrawn + lost
    fingerprint = header.get("fingerprint")
    if fingerprint is not None and not isinstance(fingerprint, dict):
        raise CheckpointError(f"{where} is malformed: its model fingerprint is not a dict.")
    store.fingerprint = fingerprint
    meta = header.get("meta")
    if not isinstance(meta, dict):
        raise CheckpointError(f"{where} is malformed: its `meta` is not a dict.")
    store._loaded_from = path
    try:
        rng = load_rng_state(header.get("rng_state"))
    except ParameterError as exc:
        raise CheckpointError(f"{where} is malformed: {exc}") from None
    return store, rng, meta


def _read_archive(path, where):
    """The header dict and the four int64 arrays of a store file, or a CheckpointError.

    The file is opened without blocking and refused unless it is a regular file
    (a link to one is followed), so a FIFO or a device at ``path`` fails at once.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        check_regular(path, where)
        raise CheckpointError(f"{where} is not a regular file; refused.")
    with os.fdopen(fd, "rb") as fh:
        return _read_open_archive(fh, where)


def _read_open_archive(fh, where):
    """:func:`_read_archive` of the open file ``fh``."""
    try:
        archive = np.load(fh, allow_pickle=False)
    except Exception as exc:
        raise CheckpointError(
            f"{where} is not a sample-store file ({type(exc).__name__}: {exc})."
        ) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise CheckpointError(f"{where} is not a sample-store file (a single array, not .npz).")
    with archive:
        missing = [key for key in ("header",) + _ARRAYS if key not in archive.files]
        if "header" in missing:
            raise CheckpointError(f"{where} is not a sample-store file (no header).")
        try:
            header = json.loads(str(archive["header"][()]))
        except Exception as exc:
            raise CheckpointError(
                f"{where} has an unreadable header ({type(exc).__name__}: {exc})."
            ) from None
        if not isinstance(header, dict):
            raise CheckpointError(f"{where} has a malformed header (not a JSON object).")
        if header.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(
                f"{where} is in format {header.get('format', 1)!r}, written by an earlier "
                f"sspgm without a model fingerprint or a calls count; this version reads "
                f"format {CHECKPOINT_FORMAT} only. Delete the file to start the run afresh."
            )
        if missing:
            raise CheckpointError(f"{where} is malformed: it lacks the arrays {missing}.")
        arrays = []
        for key in _ARRAYS:
            try:
                array = archive[key]
            except Exception as exc:
                raise CheckpointError(
                    f"{where} is corrupt: its array `{key}` cannot be read "
                    f"({type(exc).__name__}: {exc})."
                ) from None
            arrays.append(check_int64_array(f"{where} is malformed: `{key}`", array,
                                            CheckpointError))
    return header, arrays


def _header_int(header, key, where, low):
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise CheckpointError(
            f"{where} is malformed: its header must give `{key}` as an integer >= {low}; got "
            f"{value!r}."
        )
    return value


def _checked_counts(indptr, indices, data, shape, n_actions):
    """Saved counts as canonical int64 CSR after the checks of user-given sparse counts
    (canonical rows included: :func:`~reference._checks.check_sparse_structure` with
    ``n_actions``)."""
    if (data < 0).any():
        k = int(np.flatnonzero(data < 0)[0])
        raise ParameterError(f"`data` must hold counts >= 0; got {int(data[k])} at entry {k}.")
    check_sparse_structure("counts", _RawCSR(indptr, indices, data, shape), n_actions=n_actions)
    nnz = int(indptr[-1])
    if indices.size != nnz or not data[:nnz].all():
        raise ParameterError(
            "the counts must be in the canonical form a save writes: as many entries as "
            "`indptr` ends at, no zero count."
        )
    return sp.csr_array((data[:nnz], indices[:nnz], indptr), shape=shape)


class _RawCSR:
    """The raw arrays of a CSR matrix, for :func:`check_sparse_structure` to read unbuilt."""

    format = "csr"

    def __init__(self, indptr, indices, data, shape):
        self.indptr, self.indices, self.data, self.shape = indptr, indices, data, shape
        self.dtype = data.dtype


def _read_ledger(ledger, where, made):
    """The calls made according to the ledger: ``made``, or its last record if larger.

    Records at most ``made`` were written before the checkpoint's last save
    (a save killed before it emptied the ledger); a torn last record (a kill
    while it was written) is ignored.

    Raises
    ------
    CheckpointError
        If the ledger is a link or not a regular file, or its records are not
        positive and strictly increasing (each batch adds calls).
    """
    try:
        fd = open_private(ledger, os.O_RDONLY, "the calls ledger")
    except FileNotFoundError:
        return made
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    records = np.frombuffer(raw[:len(raw) - len(raw) % 8], dtype="<i8")
    if not records.size:
        return made
    if records[0] < 1 or (np.diff(records) <= 0).any():
        raise CheckpointError(
            f"the calls ledger of {where} is corrupt: its records must be positive and "
            f"increase, each batch adding calls; got {records[:6].tolist()}"
            f"{' ...' if records.size > 6 else ''}."
        )
    return max(made, int(records[-1]))


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
        A ``rng.bit_generator.state`` dictionary (it names its bit generator,
        one of numpy's ``PCG64``, ``PCG64DXSM``, ``MT19937``, ``Philox``,
        ``SFC64``).

    Returns
    -------
    numpy.random.Generator
        Its next draws are those the saved generator would have made.

    Raises
    ------
    ParameterError
        If ``state`` is not such a dictionary or numpy refuses it.

    See Also
    --------
    SampleStore.save : writes the generator's state into a checkpoint.

    Examples
    --------
    The restored generator draws what the saved one draws next:

    >>> import numpy as np
    >>> rng = np.random.default_rng(7)
    >>> state = rng.bit_generator.state
    >>> float(load_rng_state(state).random()) == float(rng.random())
    True
    """
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in _BIT_GENERATORS:
        raise ParameterError(
            f"the generator state must be a dict naming one of {sorted(_BIT_GENERATORS)} as "
            f"`bit_generator`; got {name!r}."
        )
    bit_generator = _BIT_GENERATORS[name]()
    try:
        bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ParameterError(
            f"the saved {name} state is malformed ({type(exc).__name__}: {exc})."
        ) from None
    return np.random.Generator(bit_generator)
