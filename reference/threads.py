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


def default_num_threads():
    """``OMP_NUM_THREADS`` when it holds a positive integer, else the cores this process may use."""
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def set_num_threads(n=None):
    """Set how many threads the sweeps over states use.

    Parameters
    ----------
    n : int >= 1 or None, default None
        Threads for the sweeps of extended value iteration and value
        iteration; ``None`` restores the default: ``OMP_NUM_THREADS`` when it
        is set, else the number of cores this process may use.

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
        from the environment when first needed, or when ``None`` is set).

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
