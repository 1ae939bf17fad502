"""sspgm: stochastic shortest path with a generative model, on the best available backend.

``import sspgm`` gives the whole public API of the backends (``sspgm.solve``,
``sspgm.solve_certified``, ``sspgm.certify``, ``sspgm.SSP``, ``sspgm.gridworld``,
...) from the compiled ``fast`` backend when it is built, else from the
numpy/scipy ``reference`` backend; :data:`backend` says which, and why. Both
backends give the same results for the same seed (docs/backends.md), and stay
importable on their own (``import reference``, ``import fast``). The package also
holds the application layer: the ``sspgm`` command line (:mod:`sspgm.cli`), the
instance registry (:mod:`sspgm.instances`), the gymnasium adapter
(:mod:`sspgm.gym_adapter`, whose :func:`~sspgm.gym_adapter.ssp_from_table` is
also ``sspgm.ssp_from_table``) and the validation harness.

The backend is chosen, and imported, on the first use of one of its names:
``import sspgm`` itself loads no numerical library, so the command line starts
at once.

Examples
--------
>>> import sspgm
>>> sspgm.backend in ("fast", "reference")
True
>>> ssp = sspgm.chain(3)
>>> sspgm.solve is sspgm.load_backend(sspgm.backend).solve
True
"""

import importlib
import importlib.util

__version__ = "0.1.0"

__all__ = ["BACKENDS", "backend", "load_backend"]
"""The package's own names. The backend's names are attributes too (``sspgm.solve``, listed
by ``dir(sspgm)``), documented with :mod:`reference`, whose pages they share."""

BACKENDS = ("reference", "fast")
"""The backends, in the order ``import sspgm`` falls back from the last to the first."""

_OWN = ("BACKENDS", "BackendChoice", "backend", "load_backend", "__version__")
"""The names defined here (``backend`` on first use); every other public name is the backend's."""
_GYM_NAMES = ("ssp_from_table",)
_choice = None


class BackendChoice(str):
    """The backend ``import sspgm`` uses: a ``str`` (``"fast"`` or ``"reference"``) with reasons.

    Attributes
    ----------
    reason : str
        Why this backend was chosen (for ``reference``: why ``fast`` did not
        import).
    module : module
        The backend's package.
    """

    def __new__(cls, name, reason, module):
        choice = super().__new__(cls, name)
        choice.reason = reason
        choice.module = module
        return choice


def load_backend(name):
    """Import and return the backend module called ``name`` (``"reference"`` or ``"fast"``).

    Parameters
    ----------
    name : str
        One of :data:`BACKENDS`.

    Returns
    -------
    module
        The backend's package.

    Raises
    ------
    ValueError
        On another name.
    ImportError
        When ``fast`` is asked for and its compiled extensions do not load.

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


def _choose():
    """The :class:`BackendChoice` of this process, made (and the backend imported) once."""
    global _choice
    if _choice is None:
        try:
            module = load_backend("fast")
        except ImportError as exc:
            reason = " ".join(f"the compiled backend `fast` does not import ({exc})".split())
            _choice = BackendChoice("reference", reason, load_backend("reference"))
        else:
            _choice = BackendChoice(
                "fast", "the compiled backend `fast` is built and imports", module)
    return _choice


def _public_names():
    return list(_OWN) + list(_choose().module.__all__) + list(_GYM_NAMES)


def __getattr__(name):
    if name == "backend":
        return _choose()
    if name.startswith("__"):
        raise AttributeError(f"module 'sspgm' has no attribute {name!r}")
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _GYM_NAMES:
        return getattr(importlib.import_module("sspgm.gym_adapter"), name)
    module = _choose().module
    if name in module.__all__:
        return getattr(module, name)
    raise AttributeError(
        f"module 'sspgm' has no attribute {name!r} (nor has its backend {_choose()!s})")


def __dir__():
    return sorted(set(globals()) | set(_public_names()))
