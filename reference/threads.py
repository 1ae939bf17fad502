"""Number of threads of the sweeps over states: one setting per process, used by ``fast``.

The reference backend is single-threaded and only records the setting; the
``fast`` backend re-exports these functions and reads the setting in every
compiled sweep, so code can set the thread count without knowing which
backend it runs on.
"""

import os

from ._checks import check_int

__all__ = ["set_num_threads", "get_num_threads"]

_setting = {"n_threads": None}


def choose_num_threads(environ, cores, load):
    """The default thread count, from the environment, the cores and the load average.

    A parallel sweep ends at a barrier that waits for its slowest thread, so a
    thread that another process pushes off its core holds every other one up:
    on a busy host, two threads were several times slower than one. Threads
    are therefore only given to cores the machine leaves free.

    Parameters
    ----------
    environ : mapping of str to str
        The process environment.
    cores : int >= 1
        The cores this process may use.
    load : float or None
        The 1-minute load average (None when the system gives none).

    Returns
    -------
    int >= 1
        ``OMP_NUM_THREADS`` when it holds a positive integer (the user's
        choice always wins); else 1 in a pytest-xdist worker (the environment
        holds ``PYTEST_XDIST_WORKER``: the workers already share the cores);
        else the cores the load leaves free, ``round(cores - load)``, between
        1 and ``cores`` (all of them with no load average).

    Examples
    --------
    >>> choose_num_threads({}, 2, 0.2), choose_num_threads({}, 2, 1.3)
    (2, 1)
    >>> choose_num_threads({"OMP_NUM_THREADS": "4"}, 2, 6.0)
    4
    >>> choose_num_threads({"PYTEST_XDIST_WORKER": "gw0"}, 8, None)
    1
    """
    value = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if environ.get("PYTEST_XDIST_WORKER"):
        return 1
    if load is None:
        return cores
    return max(1, min(cores, round(cores - load)))


def default_num_threads():
    """:func:`choose_num_threads` for this process, now."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    return choose_num_threads(os.environ, cores or 1, load)


def set_num_threads(n=None):
    """Set how many threads the sweeps over states use.

    Parameters
    ----------
    n : int >= 1 or None, default None
        Threads for the sweeps of extended value iteration and value
        iteration; ``None`` restores the default: ``OMP_NUM_THREADS`` when it
        is set, else one in a pytest-xdist worker, else the cores this process
        may use that the load average leaves free (at least one; see
        :func:`choose_num_threads`).

    Returns
    -------
    int
        The previous setting.

    Raises
    ------
    ParameterError
        If ``n`` is neither ``None`` nor an integer ``>= 1``.

    See Also
    --------
    get_num_threads : the current setting.

    Notes
    -----
    One setting per process, shared by both backends. In ``fast`` the
    compiled sweeps split the states among this many OpenMP threads (a sweep
    of less than a few milliseconds of work runs on one thread); each
    state's backup is computed by one thread, so results do not depend on the
    setting. ``reference`` is single-threaded: there the value is only
    validated and recorded (returned by :func:`get_num_threads`).

    Examples
    --------
    >>> previous = set_num_threads(1)
    >>> get_num_threads()
    1
    >>> set_num_threads(previous)
    1
    """
    previous = get_num_threads()
    _setting["n_threads"] = default_num_threads() if n is None else check_int("n", n, low=1)
    return previous


def get_num_threads():
    """Number of threads the sweeps over states use (see :func:`set_num_threads`).

    Returns
    -------
    int
        The last value given to :func:`set_num_threads`, or the default (read
        from the environment and the load average when first needed, or when
        ``None`` is set).

    See Also
    --------
    set_num_threads : change it.

    Notes
    -----
    ``fast`` built without OpenMP (``fast.OPENMP`` is False: the C compiler
    had none at build time, and ``sspgm --version`` says so) runs every
    compiled sweep on one thread, whatever this setting.

    Examples
    --------
    >>> get_num_threads() >= 1
    True
    """
    if _setting["n_threads"] is None:
        _setting["n_threads"] = default_num_threads()
    return _setting["n_threads"]
