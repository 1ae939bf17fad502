"""Exceptions raised by sspgm.

Every error about what a caller passed in is a :class:`ValueError` subclass,
so ``except ValueError`` keeps working; the subclasses let callers (and tests)
tell the failures apart. Each message names the argument, the expected form
and what was given. Warnings are subclasses of :class:`SSPWarning`, to be
filtered by class, never by message text.
"""

import sys
import warnings

__all__ = [
    "SSPValueError",
    "ShapeError",
    "NotFiniteError",
    "ProbabilityError",
    "CostError",
    "NoProperPolicyError",
    "ParameterError",
    "TooLargeError",
    "ConvergenceError",
    "SSPWarning",
    "SparseFormatError",
    "NumericRangeError",
    "GenerativeModelError",
    "CheckpointError",
    "UnfingerprintedModelWarning",
    "NotCertifiedWarning",
    "StalledRunWarning",
]


class SSPValueError(ValueError):
    """Base class of every invalid-input error raised by sspgm."""


class ShapeError(SSPValueError):
    """An array has the wrong number of dimensions or the wrong shape."""


class NotFiniteError(SSPValueError):
    """An array holds NaN or an infinity where finite numbers are required."""


class ProbabilityError(SSPValueError):
    """A transition kernel has a negative entry or a row not summing to 1."""


class CostError(SSPValueError):
    """A cost lies outside ``[0, 1]``."""


class NoProperPolicyError(SSPValueError):
    """Assumption 1 fails: from some state no policy reaches the goal almost surely."""


class ParameterError(SSPValueError):
    """A scalar parameter (eps, delta, gamma, theta, tolerance, ...) is out of range."""


class TooLargeError(SSPValueError):
    """A computation was refused because its size exceeds a stated limit."""


class ConvergenceError(RuntimeError):
    """An iterative method stopped before converging where returning would be wrong."""


class SSPWarning(UserWarning):
    """Base class of every warning emitted by sspgm; filter sspgm's warnings by this class."""


class SparseFormatError(SSPValueError):
    """A sparse matrix has a malformed structure: ``indptr`` not starting at 0 or decreasing,
    indices out of range, index arrays of a non-integer dtype or of inconsistent lengths; or
    CSR counts not canonical (columns unsorted or repeated within a row)."""


class NumericRangeError(SSPValueError):
    """A computation would leave the range of float64: a confidence logarithm
    ``log(S A N / delta)`` or a count total that overflows."""


class GenerativeModelError(SSPValueError):
    """A generative model raised, or broke its contract (counts not summing to the number
    asked, wrong shapes or dtypes); the message names the pair and the round.

    Parameters
    ----------
    message : str
    pair : (int, int), optional
        The pair ``(s, a)`` that ``message`` names already, when a model names it itself;
        the sample store then adds only the round to it.
    """

    def __init__(self, message, pair=None):
        super().__init__(message)
        self.pair = pair


class CheckpointError(SSPValueError):
    """A checkpoint file is malformed, or was written by a run on another model."""


class UnfingerprintedModelWarning(SSPWarning):
    """A checkpoint is resumed with a model that declares no identity, so it cannot be
    checked against the model whose samples it holds."""


class NotCertifiedWarning(SSPWarning, RuntimeWarning):
    """A returned policy is not certified at the accuracy asked for.

    Its certificate (``result.certificate``) gives the bounds and the gap;
    the result's ``message`` says so too.
    """


class StalledRunWarning(SSPWarning, RuntimeWarning):
    """A run without a budget has sampled long and still sees no way to the goal from some states.

    No chain of sampled transitions leads from them to the goal. If the goal
    cannot be reached from them, no number of samples will show one and the
    run never ends; give a budget to cap it. The run itself goes on
    unchanged: it may still certify.
    """


def warn_at_caller(message, category):
    """Emit ``message`` as a ``category`` warning that points at the caller's line.

    The warning names the first frame outside ``reference`` and ``fast`` (the
    user's code, or the command line's), whatever path led to it inside: a
    public function bound to a kernel set, a kernel function calling another.

    Parameters
    ----------
    message : str
    category : type
        A subclass of :class:`SSPWarning`.
    """
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in (
            "reference", "fast"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
