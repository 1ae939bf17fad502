"""sspgm application layer: the ``sspgm`` command line, instance registry and validation harness.

The numerical code lives in the ``reference`` (numpy/scipy) and ``fast``
(Cython) backends, which expose the same API, and in ``bounds`` (sympy).
"""

import importlib

__version__ = "0.1.0"

__all__ = ["BACKENDS", "load_backend"]

BACKENDS = ("reference", "fast")


def load_backend(name):
    """Import and return the backend module called ``name`` (``"reference"`` or ``"fast"``).

    See Also
    --------
    sspgm.cli.version_report : which backends this installation has.

    Examples
    --------
    >>> load_backend("reference").__name__
    'reference'
    >>> load_backend("numpy")
    Traceback (most recent call last):
    ...
    ValueError: `backend` must be one of ('reference', 'fast'); got 'numpy'.
    """
    if name not in BACKENDS:
        raise ValueError(f"`backend` must be one of {BACKENDS}; got {name!r}.")
    return importlib.import_module(name)
