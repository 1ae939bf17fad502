"""Exceptions raised by sspgm.

Every error about what a caller passed in is a :class:`ValueError` subclass,
so ``except ValueError`` keeps working; the subclasses let callers (and tests)
tell the failures apart. Each message names the argument, the expected form
and what was given. Warnings are subclasses of :class:`SSPWarning`, to be
filtered by class, never by message text.
"""

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
    "VacuousSetsWarning",
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


class VacuousSetsWarning(SSPWarning, RuntimeWarning):
    """The confidence sets said nothing about the dynamics where the answer was decided.

    Emitted by :func:`solve` and :func:`search` when the last EVI sent every
    state straight to the goal against the returned policy's samples (the
    result's ``vacuous`` field): the stopping test then passed whatever the
    dynamics are, and the policy carries no guarantee.
    """
