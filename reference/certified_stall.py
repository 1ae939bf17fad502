"""The warning of a budgetless certified run whose upper bound stays infinite.

:func:`reference.certified.solve_certified` with ``budget=None`` samples until
its certificate holds. A state from which the goal cannot be reached keeps an
infinite upper bound whatever the samples, so such a run never ends; this
module only says so, once, and changes nothing in the run.
"""

import numpy as np

from .errors import StalledRunWarning, warn_at_caller

__all__ = []

STALL_ROUNDS = 50
"""Consecutive rounds with an infinite upper bound after which a budgetless run warns.

Each round grows the calls by :data:`~reference.certified_sampling.GROWTH`, so
a run that warns has multiplied its calls by about 11.5 without finding a way
to the goal from some state.
"""


class StallWatch:
    """Counts a run's consecutive rounds with an infinite upper bound; warns once at
    :data:`STALL_ROUNDS` when the run has no budget (:class:`~reference.errors.StalledRunWarning`).

    Parameters
    ----------
    budget : int or None
        The run's budget: a run with one stops at it, and is not watched.

    Examples
    --------
    >>> import warnings
    >>> watch = StallWatch(None)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     for n_calls in range(STALL_ROUNDS + 5):
    ...         watch.round(np.array([1.0, np.inf]), n_calls)
    >>> len(caught), caught[0].category.__name__
    (1, 'StalledRunWarning')
    """

    def __init__(self, budget):
        self.watching = budget is None
        self.rounds = 0

    def round(self, upper, n_calls):
        """Record a round whose upper bound is ``upper`` (shape ``(S,)``), ``n_calls`` calls in."""
        if not self.watching:
            return
        infinite = int(np.isinf(upper).sum())
        self.rounds = self.rounds + 1 if infinite else 0
        if self.rounds == STALL_ROUNDS:
            self.watching = False
            warn_at_caller(
                f"after {STALL_ROUNDS} rounds in a row and {n_calls} calls, the upper bound is "
                f"still infinite in {infinite} state(s): the samples show no way to the goal "
                "from them yet. Without a budget the run samples until they do, and never "
                "ends if the goal cannot be reached from them; pass `budget` to cap the calls.",
                StalledRunWarning,
            )
