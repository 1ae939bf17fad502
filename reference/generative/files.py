"""The files next to a checkpoint, opened so that nothing planted in its directory is followed.

A checkpoint lives in a directory that someone else may be able to write to
(a shared scratch space, a copy received from someone). Every file sspgm
writes there is opened without following a symbolic link, refused unless it
is a regular file with one name, and never truncated before that check; the
checkpoint itself is written to a temporary file created exclusively under an
unpredictable name in the same directory and renamed over it. A lock file
held for a run's lifetime keeps two runs off one checkpoint (POSIX ``flock``;
where ``fcntl`` is missing, as on Windows, runs are not locked).
"""

import os
import stat
import sys
import tempfile
import weakref

from ..errors import CheckpointError

try:
    import fcntl
except ImportError:
    fcntl = None

LOCK_SUFFIX = ".lock"
TMP_SUFFIX = ".tmp"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path, what):
    """Refuse ``path`` when it exists and is not a regular file (a link to one is followed).

    Parameters
    ----------
    path : str
        An absolute path.
    what : str
        The file's role, for the message (e.g. "`checkpoint` '/a/b'").

    Raises
    ------
    CheckpointError
        If ``path`` is a directory, a FIFO, a device or a socket.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"{what} is {_kind(mode)}, not a regular file; refused.")


def open_private(path, flags, what):
    """``os.open`` of a side file (ledger, lock) that refuses links and non-regular files.

    The file is opened with ``O_NOFOLLOW`` (a symbolic link at ``path`` fails)
    and ``O_NONBLOCK`` (a FIFO does not block), created with mode ``0o600``
    when missing; it must be a regular file with a single name (a hard link
    planted to another file is refused) before anything is written to it.

    Parameters
    ----------
    path : str
    flags : int
        ``os.O_RDONLY``, or ``os.O_WRONLY``/``os.O_RDWR`` with ``os.O_CREAT``
        or ``os.O_APPEND``; truncation is done by the caller, after the checks.
    what : str
        The file's role, for the message.

    Returns
    -------
    int
        The file descriptor.

    Raises
    ------
    CheckpointError
        If ``path`` is a symbolic link, not a regular file, or has other names.
    FileNotFoundError
        If it is missing and ``flags`` does not create it.
    """
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | _BINARY, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise CheckpointError(f"{what} {path!r} is a symbolic link; refused.") from None
        if isinstance(exc, FileNotFoundError):
            raise
        raise CheckpointError(f"{what} {path!r} cannot be opened: {exc}.") from None
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = f"is {_kind(info.st_mode)}, not a regular file"
    elif info.st_nlink > 1 and (flags & (os.O_WRONLY | os.O_RDWR)):
        problem = f"has {info.st_nlink} names (a hard link to another file)"
    if problem is not None:
        os.close(fd)
        raise CheckpointError(f"{what} {path!r} {problem}; refused.")
    return fd


def write_atomically(path, write):
    """Write a file through ``write(fh)`` into a new temporary file, then rename it to ``path``.

    The temporary file is created exclusively (``O_EXCL``, mode ``0o600``) under
    an unpredictable name ``<name>.<random>.tmp`` in the directory of ``path``
    (:func:`tempfile.mkstemp`), flushed to disk and renamed over ``path``; the
    directory is then synced, so a crash leaves the old file or the new one. A
    link at ``path`` is replaced, never written through.

    Parameters
    ----------
    path : str
        An absolute path; if it exists it must be a regular file.
    write : callable
        Called with the open binary file.
    """
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=name + ".", suffix=TMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    sync_directory(directory)


def remove_stale_temporaries(path):
    """Remove the temporary files a save of ``path`` killed before its rename left behind.

    Only regular files named ``<name>.<random>.tmp`` or ``<name>.tmp`` (the
    latter from earlier versions) are removed; a link is removed, not followed.
    Call it only while holding the checkpoint's lock (:class:`CheckpointLock`),
    so that the temporary file of a save in progress is never taken.
    """
    directory, name = os.path.split(path)
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        if entry == name + TMP_SUFFIX or (entry.startswith(name + ".")
                                          and entry.endswith(TMP_SUFFIX)
                                          and len(entry) == len(name) + 1 + 8 + len(TMP_SUFFIX)):
            full = os.path.join(directory, entry)
            try:
                if stat.S_ISREG(os.lstat(full).st_mode):
                    os.remove(full)
            except OSError:
                pass


def sync_directory(directory):
    """``fsync`` a directory so that a rename in it is durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class CheckpointLock:
    """An exclusive lock on a checkpoint for the lifetime of a run (POSIX ``flock``).

    The lock is taken on the file ``path + ".lock"`` (opened by
    :func:`open_private`, never removed, since removing a lock file lets two
    holders lock two files), without waiting: a checkpoint locked by another
    run is refused at once, naming the process that holds it. The lock is
    released by :meth:`release` or when the lock object is collected (its run
    returned) or its process ends. A lock that a run of this process still
    holds after its call raised (its frame, kept by the traceback, no longer
    runs in any thread) is handed over to the new run. Without ``fcntl``
    (Windows) no lock is taken.

    Parameters
    ----------
    path : str
        The checkpoint, an absolute path.
    owner : frame
        The frame of the call that runs on the checkpoint (only its identity
        is kept).

    Raises
    ------
    CheckpointError
        If another run holds the lock, or the lock file is a link or not a
        regular file.
    """

    _held = weakref.WeakValueDictionary()

    def __init__(self, path, owner):
        self.path = path
        self.fd = None
        self.owner = id(owner)
        if fcntl is None:
            return
        lock = path + LOCK_SUFFIX
        previous = CheckpointLock._held.get(lock)
        if previous is not None and previous.fd is not None:
            if _running(previous.owner):
                raise CheckpointError(
                    f"`checkpoint` {path!r} is in use by another run of this process (a "
                    "call running in another thread); two runs cannot share a checkpoint."
                )
            previous.release()
        fd = open_private(lock, os.O_RDWR | os.O_CREAT, "the lock file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise CheckpointError(
                f"`checkpoint` {path!r} is in use by another run (process {holder} holds "
                f"{lock!r}); two runs cannot share a checkpoint: wait for it to end, or use "
                "another path."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self.fd = fd
        CheckpointLock._held[lock] = self

    def release(self):
        """Release the lock (idempotent)."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def __del__(self):
        self.release()


def _running(frame_id):
    """Whether the frame of identity ``frame_id`` is executing in some thread of this process."""
    for top in sys._current_frames().values():
        while top is not None:
            if id(top) == frame_id:
                return True
            top = top.f_back
    return False
