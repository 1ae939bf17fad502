"""sspgm reference backend: readable numpy/scipy implementations, to be read next to the paper.

Tarbouriech, Pirotta, Valko and Lazaric, "Sample Complexity Bounds for
Stochastic Shortest Path with a Generative Model", ALT 2021. Where the paper
and ``docs/semantics.md`` differ, that document is implemented (and the docstrings
say so).
"""

from . import (
    algorithms,
    allocation,
    backend,
    baseline,
    box_kinds,
    certified,
    chains,
    confidence,
    counts,
    diameter_estimate,
    envs,
    errors,
    evaluation,
    evi,
    generative,
    hitting,
    interop,
    kernels,
    lemma5,
    lower_bound,
    model,
    optimal,
    parallel,
    poured,
    range_search,
    results,
    robust,
    runs,
    streams,
    threads,
)
from .algorithms import *  # noqa: F401,F403
from .allocation import *  # noqa: F401,F403
from .backend import *  # noqa: F401,F403
from .baseline import *  # noqa: F401,F403
from .box_kinds import *  # noqa: F401,F403
from .certified import *  # noqa: F401,F403
from .confidence import *  # noqa: F401,F403
from .counts import *  # noqa: F401,F403
from .diameter_estimate import *  # noqa: F401,F403
from .envs import *  # noqa: F401,F403
from .errors import *  # noqa: F401,F403
from .evaluation import *  # noqa: F401,F403
from .evi import *  # noqa: F401,F403
from .generative import *  # noqa: F401,F403
from .hitting import *  # noqa: F401,F403
from .interop import *  # noqa: F401,F403
from .lower_bound import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .optimal import *  # noqa: F401,F403
from .parallel import *  # noqa: F401,F403
from .poured import *  # noqa: F401,F403
from .range_search import *  # noqa: F401,F403
from .results import *  # noqa: F401,F403
from .robust import *  # noqa: F401,F403
from .runs import *  # noqa: F401,F403
from .streams import *  # noqa: F401,F403
from .threads import *  # noqa: F401,F403

_MODULES = (
    errors, results, model, envs, chains, evaluation, optimal, hitting, generative, evi,
    allocation, runs, range_search, diameter_estimate, algorithms, baseline, threads, backend,
    confidence, robust, certified, poured, counts, box_kinds, lemma5, lower_bound, parallel, streams,
    interop,
)
__all__ = [name for module in _MODULES for name in module.__all__]
