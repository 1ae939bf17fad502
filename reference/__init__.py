"""sspgm reference backend: readable numpy/scipy implementations, to be read next to the paper.

Tarbouriech, Pirotta, Valko and Lazaric, "Sample Complexity Bounds for
Stochastic Shortest Path with a Generative Model", ALT 2021. Where the paper
and ``READING-NOTES.md`` differ, the notes are implemented (and the docstrings
say so).
"""

from . import algorithms, envs, errors, evaluation, evi, generative, model, results, threads
from .algorithms import *  # noqa: F401,F403
from . import allocation as _allocation_module
from .allocation import *  # noqa: F401,F403
from .envs import *  # noqa: F401,F403
from .errors import *  # noqa: F401,F403
from .evaluation import *  # noqa: F401,F403
from .evi import *  # noqa: F401,F403
from .generative import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .results import *  # noqa: F401,F403
from .threads import *  # noqa: F401,F403

__all__ = [*algorithms.__all__, *_allocation_module.__all__, *evi.__all__, *generative.__all__, *envs.__all__, *errors.__all__, *evaluation.__all__, *model.__all__, *results.__all__, *threads.__all__]
