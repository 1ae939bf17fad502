"""The warning of a budgetless certified run whose samples show no way to the goal.

:func:`reference.certified.solve_certified` with ``budget=None`` samples until
its certificate holds. A state from which no observed transition leads, in any
number of steps, to the goal keeps an infinite upper bound whatever the
confidence sets, so if the goal truly cannot be reached from it such a run
never ends. A slow but healthy run has an infinite upper bound for many rounds
too (its confidence sets are still too wide to force mass towards the goal),
while its samples already show a way; so the warning looks at the samples, not
at the bound: it names the states without an observed way to the goal, once,
and changes nothing in the run.
"""

import numpy as np

from .chains.explicit import _reaching
from .errors import StalledRunWarning, warn_at_caller

__all__ = []

STALL_GROWTH = 20
"""How many times the first round's calls a budgetless run makes before it may warn.

Each round grows the calls by :data:`~reference.certified_sampling.GROWTH`
(5 %), so this is about 62 rounds: every pair has then been sampled about 20
times as often as in the first round, unless the sampling aims elsewhere.
"""

NAMED_STATES = 5
"""How many of the states without a way to the goal the warning names."""


def no_way_to_goal(counts, n_actions):
    """The states with no path to the goal in the graph of observed transitions.

    Parameters
    ----------
    counts : scipy.sparse CSR array of shape (S*A, S+1)
        Counts of the next states of each pair, row ``s*A + a``; column ``S``
        is the goal.
    n_actions : int
        ``A``.

    Returns
    -------
    ndarray of int64, shape (k,)
        Ascending indices of the states from which no chain of transitions
        observed at least once (any action) leads to the goal.

    Examples
    --------
    >>> from scipy.sparse import csr_array
    >>> counts = csr_array(np.array([[0, 3, 1], [0, 2, 0]]))  # S = 2, A = 1
    >>> no_way_to_goal(counts, 1)
    array([1])
    """
    S = counts.shape[1] - 1
    rows = np.repeat(np.arange(counts.shape[0]) // n_actions, np.diff(counts.indptr))
    seen = counts.data > 0
    goal = np.zeros(S + 1, dtype=bool)
    goal[S] = True
    reached = _reaching(rows[seen], counts.indices[seen].astype(np.int64), goal)
    return np.flatnonzero(~reached[:S]).astype(np.int64)


class StallWatch:
    """Warns once (:class:`~reference.errors.StalledRunWarning`) when a budgetless run has
    made :data:`STALL_GROWTH` times its first round's calls and its samples still show no
    way to the goal from some states.

    Parameters
    ----------
    budget : int or None
        The run's budget: a run with one stops at it, and is not watched.
    first_calls : int
        The calls of the run's first round.

    Examples
    --------
    >>> import warnings
    >>> from scipy.sparse import csr_array
    >>> counts = csr_array(np.array([[0, 3, 1], [0, 2, 0]]))  # state 1 loops on itself
    >>> watch = StallWatch(None, 5)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     for n_calls in range(5, 200, 5):
    ...         watch.round(np.array([2.0, np.inf]), counts, n_calls)
    >>> len(caught), caught[0].category.__name__
    (1, 'StalledRunWarning')
    """

    def __init__(self, budget, first_calls):
        self.watching = budget is None
        self.threshold = STALL_GROWTH * first_calls

    def round(self, upper, counts, n_calls):
        """Record a round: its upper bound ``upper`` (shape ``(S,)``), its counts ``counts``
        (shape ``(S*A, S+1)``, as :func:`no_way_to_goal` takes them), ``n_calls`` calls in."""
        if not self.watching or n_calls < self.threshold or not np.isinf(upper).any():
            return
        stuck = no_way_to_goal(counts, counts.shape[0] // upper.shape[0])
        if stuck.size:
            self.watching = False
            named = ", ".join(str(s) for s in stuck[:NAMED_STATES])
            more = ", ..." if stuck.size > NAMED_STATES else ""
            warn_at_caller(
                f"after {n_calls} calls, no sampled transition leads, in any number of steps, "
                f"to the goal from {stuck.size} state(s) ({named}{more}). Without a budget the "
                "run samples until one does, and never ends if the goal cannot be reached "
                "from them; pass `budget` to cap the calls.",
                StalledRunWarning,
            )
