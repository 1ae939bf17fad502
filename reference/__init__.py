"""sspgm reference backend: readable numpy/scipy implementations, to be read next to the paper.

Tarbouriech, Pirotta, Valko and Lazaric, "Sample Complexity Bounds for
Stochastic Shortest Path with a Generative Model", ALT 2021. Where the paper
and ``READING-NOTES.md`` differ, the notes are implemented (and the docstrings
say so).
"""

from . import errors, model, results
from .errors import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .results import *  # noqa: F401,F403

__all__ = [*errors.__all__, *model.__all__, *results.__all__]
