"""sspgm fast backend: the public API of ``reference`` on compiled kernels.

Extended value iteration (dense and CSR counts), the Bernstein radius and the
value-iteration sweep run in Cython kernels (``fast._boxes``, ``fast._evi``,
``fast._pieces``, ``fast._vi``;
typed memoryviews, ``nogil``, OpenMP threads over states, see
:func:`set_num_threads`; ``OPENMP`` is False when the C compiler had no
OpenMP at build time, and the sweeps then run on one thread), gathered in the
kernel set :data:`fast.kernels.COMPILED_KERNELS`. The algorithms and argument checks are
``reference``'s kernel functions with that kernel set bound
(:class:`reference.backend.KernelSet`, ``docs/backends.md``): ``fast.evi``,
``fast.optimal``, ``fast.range_search``, ``fast.confidence``, ``fast.diameter_estimate``,
``fast.algorithms`` and ``fast.baseline`` mirror the modules of the same names,
and the modules without kernels (``lower_bound`` among them) are ``reference``'s own. Results,
result classes and errors are the very same objects in both backends.

Importing this package fails, rather than silently running the reference
code, when the compiled extensions are missing.
"""

try:
    from . import (  # noqa: F401
        _boxes, _build, _checks, _closable, _evi, _graphs, _iteration, _kl, _pieces, _poured,
        _robust, _robust_pi, _sampling, _vi,
    )
except ImportError as exc:
    raise ImportError(
        "the `fast` backend needs its compiled Cython extensions (fast._boxes, fast._build, "
        "fast._checks, fast._closable, fast._evi, fast._graphs, fast._iteration, fast._kl, "
        "fast._pieces, fast._poured, fast._robust, fast._robust_pi, fast._sampling, fast._vi), "
        "which are "
        "missing or cannot be loaded (sspgm was installed without a working C compiler, or "
        "their build failed). They are built when sspgm is installed where a C compiler works "
        "(OpenMP optional). Installed from the sdist or an index: install a C compiler, then "
        "`pip install --force-reinstall --no-deps --no-cache-dir sspgm` (or the sdist's file name "
        "instead of `sspgm`). From a checkout of the sources: `pip install -e .` or "
        "`python setup.py build_ext --inplace`, run in its top directory. Or use the `reference` "
        "backend."
    ) from exc

from reference import (
    allocation,
    backend,
    box_kinds,
    chains,
    counts,
    envs,
    errors,
    evaluation,
    generative,
    hitting,
    interop,
    lemma5,
    lower_bound,
    model,
    parallel,
    poured,
    results,
    runs,
    streams,
    threads,
)
from reference.allocation import *  # noqa: F401,F403
from reference.backend import *  # noqa: F401,F403
from reference.box_kinds import *  # noqa: F401,F403
from reference.counts import *  # noqa: F401,F403
from reference.envs import *  # noqa: F401,F403
from reference.errors import *  # noqa: F401,F403
from reference.evaluation import *  # noqa: F401,F403
from reference.generative import *  # noqa: F401,F403
from reference.hitting import *  # noqa: F401,F403
from reference.interop import *  # noqa: F401,F403
from reference.lower_bound import *  # noqa: F401,F403
from reference.model import *  # noqa: F401,F403
from reference.parallel import *  # noqa: F401,F403
from reference.poured import *  # noqa: F401,F403
from reference.results import *  # noqa: F401,F403
from reference.runs import *  # noqa: F401,F403
from reference.streams import *  # noqa: F401,F403
from reference.threads import *  # noqa: F401,F403

from . import (
    algorithms,
    baseline,
    certified,
    confidence,
    diameter_estimate,
    evi,
    kernels,
    optimal,
    range_search,
    robust,
)
from ._build import OPENMP
from .algorithms import *  # noqa: F401,F403
from .baseline import *  # noqa: F401,F403
from .certified import *  # noqa: F401,F403
from .confidence import *  # noqa: F401,F403
from .diameter_estimate import *  # noqa: F401,F403
from .evi import *  # noqa: F401,F403
from .optimal import *  # noqa: F401,F403
from .range_search import *  # noqa: F401,F403
from .robust import *  # noqa: F401,F403

_MODULES = (
    errors, results, model, envs, chains, evaluation, optimal, hitting, generative, evi,
    allocation, runs, range_search, diameter_estimate, algorithms, baseline, threads, backend,
    confidence, robust, certified, poured, counts, box_kinds, lemma5, lower_bound, parallel, streams,
    interop,
)
__all__ = [name for module in _MODULES for name in module.__all__]
