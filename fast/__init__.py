"""sspgm fast backend: the public API of ``reference`` with compiled hot paths.

Extended value iteration (dense and CSR counts), the Bernstein radius and the
value-iteration sweep run in Cython kernels (``fast._evi``, ``fast._vi``;
typed memoryviews, ``nogil``, OpenMP threads over states, see
:func:`set_num_threads`). Everything else is re-exported from ``reference``
unchanged, so results, result classes and errors are the very same objects.
The algorithms are the reference's private implementations, handed the
compiled kernels.

Importing this package fails, rather than silently running the reference
code, when the compiled extensions are missing.
"""

try:
    from . import _evi, _vi  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "the `fast` backend needs its compiled Cython extensions (fast/_evi, fast/_vi), which "
        f"could not be imported ({exc}). Build them from the repository root with "
        "`pip install -e .` or `python setup.py build_ext --inplace` (needs a C compiler "
        "with OpenMP, Cython and numpy); or use the `reference` backend."
    ) from exc

import reference

from . import algorithms, evaluation, evi

_COMPILED = {
    name: getattr(module, name)
    for module in (algorithms, evaluation, evi)
    for name in module.__all__
}

__all__ = list(reference.__all__)
globals().update({name: _COMPILED.get(name, getattr(reference, name)) for name in __all__})
