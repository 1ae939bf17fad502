"""Generative models and the store of the samples drawn from them.

A generative model answers "sample a next state of the pair ``(s, a)``" for
any pair, as often as asked (Sec. 2 of the paper). The sample complexity of
every algorithm is the number of such calls, counted exactly (docs/semantics.md,
"Algorithms"): a model that draws ``n`` samples of a pair at once still counts
``n`` calls.
"""

from .checkpoint import CHECKPOINT_FORMAT, load_rng_state
from .fingerprint import compare_fingerprints, model_fingerprint
from .models import GenerativeModel, SimulatorGenerativeModel, TabularGenerativeModel
from .samples import SampleStore

__all__ = [
    "GenerativeModel",
    "TabularGenerativeModel",
    "SimulatorGenerativeModel",
    "SampleStore",
    "load_rng_state",
    "model_fingerprint",
    "compare_fingerprints",
    "CHECKPOINT_FORMAT",
]
