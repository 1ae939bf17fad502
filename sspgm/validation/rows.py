"""The rows of a sweep: one dataclass is the CSV schema, and an append-only, locked CSV file.

A :class:`Row` records one run; its fields, in order, are the CSV columns and
their annotations the cell types. :class:`RowLog` appends rows to a CSV file
and never rewrites it: a line cut by a kill (the only damage an append can
leave) is cut off before the next append, and an exclusive lock keeps a
second sweep from writing to the same file at the same time.
"""

import csv
import dataclasses
import io
import os
import stat
import types
import typing

from reference.errors import ParameterError

__all__ = ["Row", "COLUMNS", "KEY_COLUMNS", "CONFIG_COLUMNS", "TIMING_COLUMNS", "RowLog",
           "read_rows", "posix_lock"]


@dataclasses.dataclass(frozen=True)
class Row:
    """One run of a sweep, as recorded in the CSV file (one field per column, in order).

    The first seven fields identify the run (:data:`KEY_COLUMNS`). A run that
    raised has its ``exception`` set and every result field ``None``; Alg. 1
    runs have ``theta``, ``D_hat`` and ``eps_diameter`` ``None``. Values are
    converted to their annotated type on construction, so a fresh row equals
    the same row read back from the CSV file.

    Attributes
    ----------
    instance, backend : str
        Instance spec and backend.
    theta : float or None
        Slack of Alg. 3 (``None``: Alg. 1).
    alpha, eps, delta : float
        Constant of the allocation function, accuracy, confidence level.
    seed : int
    exception : str or None
        ``"ExceptionClass: message"`` when the run raised, else ``None``.
    success : bool or None
        Thm. 1: :math:`\\|V^\\pi - V^\\star\\|_\\infty \\le \\epsilon`; Thm. 2 in the
        one-sided form of docs/semantics.md: :math:`V^\\pi \\le V^\\star_\\theta +
        \\epsilon` componentwise.
    error : float or None
        The left-hand side: :math:`\\|V^\\pi - V^\\star\\|_\\infty`, or
        :math:`\\max_s (V^\\pi(s) - V^\\star_\\theta(s))` (negative when the policy
        beats :math:`V^\\star_\\theta`); ``inf`` for an improper policy.
    calls : int or None
        Calls made to the generative model by the whole run.
    calls_diameter : int or None
        Calls made by Alg. 3's diameter phase (0 for Alg. 1).
    bound : float or None
        The explicit total the run's calls are compared with (see
        :func:`sspgm.validation.runner.run_one`).
    calls_over_bound : float or None
        ``calls / bound``; above 1 the run spent more than its explicit total.
    rounds : int or None
        Rounds of SEARCH.
    uncertified : bool or None
        True when the result's certificate, on the run's own samples, does not
        prove the policy eps-optimal.
    Delta_final : float or None
        SEARCH's final guess ``Delta``.
    D_hat : float or None
        Alg. 3's diameter estimate.
    eps_diameter : float or None
        The accuracy Alg. 3 ran its diameter subroutine at.
    D, B_star : float or None
        The instance's SSP-diameter and :math:`B_\\star`.
    n_states, n_actions, branching : int or None
        ``S``, ``A`` and :math:`\\Gamma` of the instance.
    c_min : float or None
        Smallest cost of the instance.
    seconds : float
        Wall time of the run (differs between repeated runs).
    """

    instance: str
    backend: str
    theta: float | None
    alpha: float
    eps: float
    delta: float
    seed: int
    exception: str | None = None
    success: bool | None = None
    error: float | None = None
    calls: int | None = None
    calls_diameter: int | None = None
    bound: float | None = None
    calls_over_bound: float | None = None
    rounds: int | None = None
    uncertified: bool | None = None
    Delta_final: float | None = None
    D_hat: float | None = None
    eps_diameter: float | None = None
    D: float | None = None
    B_star: float | None = None
    n_states: int | None = None
    n_actions: int | None = None
    branching: int | None = None
    c_min: float | None = None
    seconds: float = 0.0

    def __post_init__(self):
        for name, (kind, optional) in _KINDS.items():
            value = getattr(self, name)
            if value is None:
                if not optional:
                    raise ParameterError(f"row field `{name}` must be set; got None.")
                continue
            value = kind(value)
            if kind is str and ("\n" in value or "\r" in value):
                raise ParameterError(f"row field `{name}` must be one line; got {value!r}.")
            object.__setattr__(self, name, value)

    @property
    def key(self):
        """The values of :data:`KEY_COLUMNS`: what identifies the run."""
        return tuple(getattr(self, name) for name in KEY_COLUMNS)

    @property
    def config(self):
        """The values of :data:`CONFIG_COLUMNS`: the run's configuration."""
        return tuple(getattr(self, name) for name in CONFIG_COLUMNS)

    def cells(self):
        """The row as CSV cells: ``""`` for None, ``repr`` for floats (exact round trip)."""
        return [_format_cell(getattr(self, name)) for name in COLUMNS]

    @classmethod
    def from_cells(cls, record):
        """Parse a mapping of column name to cell text (a :class:`csv.DictReader` record)."""
        return cls(**{name: _parse_cell(kind, record[name]) for name, (kind, _) in _KINDS.items()})


def _kinds():
    """Each field's cell type and whether it may be None, from the annotations."""
    out = {}
    for name, hint in typing.get_type_hints(Row).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        out[name] = (next(a for a in args if a is not type(None)), type(None) in args)
    return out


_KINDS = _kinds()

COLUMNS = tuple(_KINDS)
"""Every column of the CSV file, in order: the fields of :class:`Row`."""

KEY_COLUMNS = ("instance", "backend", "theta", "alpha", "eps", "delta", "seed")
"""The columns that identify a run (the resume key)."""

CONFIG_COLUMNS = ("instance", "backend", "theta", "alpha", "delta")
"""The columns of a configuration: a run's key without ``eps`` and ``seed``."""

TIMING_COLUMNS = ("seconds",)
"""Columns that differ between repeated runs of the same key."""


def _format_cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _parse_cell(kind, text):
    if text is None:
        raise ValueError("missing cell")
    if text == "":
        return None
    if kind is bool:
        if text not in ("True", "False"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "True"
    return kind(text)


def _line(cells):
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()


def _parse(data, path):
    """The rows of CSV bytes whose every line is complete; the last row of a key wins."""
    try:
        return _parse_text(data.decode("utf-8"), path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ParameterError(f"`{path}` is not a sweep CSV: {exc}.") from None


def _parse_text(text, path):
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is not None and tuple(reader.fieldnames) != COLUMNS:
        raise ParameterError(
            f"`{path}` is not a sweep CSV of this version: its columns are "
            f"{reader.fieldnames}, expected {list(COLUMNS)}."
        )
    rows = {}
    for number, record in enumerate(reader, start=2):
        if None in record:
            raise ParameterError(f"`{path}` line {number} has more cells than columns.")
        try:
            row = Row.from_cells(record)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"`{path}` line {number} is not a row: {exc}.") from None
        rows.pop(row.key, None)
        rows[row.key] = row
    return list(rows.values())


def _complete(data):
    """The bytes of ``data`` up to and including its last newline."""
    return data[: data.rfind(b"\n") + 1]


def read_rows(path):
    """Read the rows of a sweep CSV; an incomplete last line (a write in progress) is ignored.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    list of Row
        One row per key (the last one recorded), in the order first recorded;
        empty if the file does not exist.

    Raises
    ------
    ParameterError
        If the file's columns are not :data:`COLUMNS`, a complete line is
        not a row, or it is not a regular file (a FIFO is refused at once).

    See Also
    --------
    RowLog : the file the rows are appended to.
    sspgm.validation.run_sweep : writes it.

    Examples
    --------
    >>> import os, tempfile
    >>> from sspgm.validation import Sweep, run_sweep
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "validation.csv")
    >>> rows = run_sweep(Sweep(instances=("tradeoff",), eps=(0.2,), seeds=(0, 1)), path,
    ...                  n_jobs=1, progress=False)
    >>> read_rows(path) == rows
    True
    >>> tmp.cleanup()
    """
    if not os.path.exists(path):
        return []
    with _open_regular(path, os.O_RDONLY, "rb") as handle:
        data = handle.read()
    return _parse(_complete(data), path)


def _open_regular(path, flags, mode):
    """``open`` of a rows file that refuses, without blocking, one that is not a regular file
    (a FIFO, a directory, a device); a link to a regular file is followed."""
    flags |= getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
        kind = os.fstat(fd).st_mode
    except IsADirectoryError:
        fd, kind = None, stat.S_IFDIR
    if not stat.S_ISREG(kind):
        if fd is not None:
            os.close(fd)
        what = "a directory" if stat.S_ISDIR(kind) else "a FIFO" if stat.S_ISFIFO(kind) else \
            "a device or socket"
        raise ParameterError(f"`{os.fspath(path)}` is {what}, not a regular file; give a new or "
                             "a sweep's rows file.")
    return os.fdopen(fd, mode)


def posix_lock():
    """The :mod:`fcntl` module that locks rows files, or an ImportError saying why it is needed.

    The lock is ``flock``, which POSIX systems (Linux, macOS) have and Windows
    lacks.

    Returns
    -------
    module
        :mod:`fcntl`.

    Raises
    ------
    ImportError
        On a system without :mod:`fcntl`, naming the requirement.

    Examples
    --------
    >>> posix_lock().__name__
    'fcntl'
    """
    try:
        import fcntl
    except ImportError:
        raise ImportError(
            "sweep rows files are locked with fcntl.flock, so `sspgm validate` and "
            "`run_sweep(csv_path=...)` need a POSIX system (Linux, macOS; on Windows, WSL); "
            "`run_sweep` without `csv_path` needs no lock."
        ) from None
    return fcntl


class RowLog:
    """An append-only CSV file of :class:`Row` records, held under an exclusive lock.

    Opening the log locks the file (``flock``; the lock goes with the process,
    so a killed sweep leaves none behind), reads and checks the rows already
    recorded, and only then cuts off an incomplete last line left by a kill
    during a write and writes the header into an empty file: a file that is
    not a sweep CSV is refused untouched. :meth:`append` writes one complete line
    per row and flushes it. Nothing already recorded is ever rewritten.

    Parameters
    ----------
    path : str or os.PathLike

    Attributes
    ----------
    rows : list of Row
        The rows recorded when the log was opened (:func:`read_rows`).

    Raises
    ------
    ParameterError
        When another process holds the file (another sweep is writing to it),
        or as :func:`read_rows`.
    ImportError
        On a system without ``flock`` (:func:`posix_lock`).

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     path = os.path.join(directory, "rows.csv")
    ...     with RowLog(path) as log:
    ...         log.append(Row("tradeoff", "reference", None, 1.0, 0.1, 0.1, 0, seconds=1.5))
    ...     read_rows(path)[0].seconds
    1.5
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.rows = []
        self._handle = None

    def __enter__(self):
        fcntl = posix_lock()
        handle = _open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, "a+b")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ParameterError(
                f"`{self.path}` is being written by another sweep; wait for it to end or "
                f"give another rows file."
            ) from None
        try:
            handle.seek(0)
            data = handle.read()
            complete = _complete(data)
            header = _line(COLUMNS).encode("utf-8")
            if not complete and not header.startswith(data):
                raise ParameterError(
                    f"`{self.path}` is not a sweep CSV: its first line is not the header "
                    f"{','.join(COLUMNS)}; give a new or a sweep's rows file."
                )
            self.rows = _parse(complete, self.path)
            if len(complete) < len(data):
                handle.truncate(len(complete))
            if not complete:
                handle.write(header)
                handle.flush()
        except BaseException:
            handle.close()
            raise
        self._handle = handle
        return self

    def append(self, row):
        """Append ``row`` as one complete line and flush it to the operating system."""
        self._handle.write(_line(row.cells()).encode("utf-8"))
        self._handle.flush()

    def __exit__(self, *exc):
        handle, self._handle = self._handle, None
        try:
            os.fsync(handle.fileno())
        finally:
            handle.close()
        return False
