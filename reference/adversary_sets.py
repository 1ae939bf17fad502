r"""The first step of the adversary's infinity decision, in numpy: the kernel ``closable`` of
``docs/backends.md``.

The adversary can make a policy's cost infinite only inside a set of states whose rows can
all keep the chain in it (:func:`reference.robust.pessimistic._infinite_states`). This
module finds the largest such set, judged by sums of the box ends; on most policies it is
empty and the decision ends there. The compiled kernel set runs the same tests in one call
(``fast/_closable.pyx``), with the same floats.
"""

import numpy as np

from .box_kinds import SIMPLEX_SLACK
from .poured import segment_positions

__all__ = []


def stays(state, n, into, must, hi, size, h):
    r"""Whether each of ``n`` states can keep the chain in its set, by sums: bool ``(n,)``.

    The stored entries of the states (``state``, their states, in the order of
    the stored entries) tell whether they lie in the state's set (``into``),
    have a positive lower end (``must``) and their upper end (``hi``); a
    state stays when none of its entries with ``must`` lies outside its set
    and its upper ends inside it plus ``h`` (its row's unseen upper end, shape
    ``(n,)``) for each unseen state of it (``size``, its set's size, less its
    entries inside) sum, from 0, to at least ``1 - SIMPLEX_SLACK``.
    """
    leaks = np.bincount(state, weights=must & ~into, minlength=n) > 0
    room = (np.bincount(state, weights=np.where(into, hi, 0.0), minlength=n)
            + (size - np.bincount(state, weights=into, minlength=n)) * h)
    return ~leaks & (room >= 1.0 - SIMPLEX_SLACK)


def closable(reaching, boxes, rows):
    r"""The largest set ``X`` of states that every state of it can keep the chain in, by sums.

    A state stays in ``X`` when none of its lower ends lies outside ``X`` (the
    goal is outside) and its upper ends inside ``X`` (``h``, the row's unseen
    upper end, for each unseen state of ``X``) sum to at least
    ``1 - SIMPLEX_SLACK``:

    .. math::

        \sum_{s' \in X,\ \text{stored}} \mathrm{hi}(s') + (|X| - n_X)\, h
        \ge 1 - \mathrm{SIMPLEX\_SLACK}

    with ``n_X`` the stored next states in ``X`` (the sum in the order of the
    stored entries, from 0). States that do not stay are removed until none
    is. The rounded sums of non-negative terms only grow with the set, so
    every set whose states all stay in it lies in the result.

    The removal starts from the states with no path of positive lower ends
    to the goal, found by one search (``reaching``, the kernel of that name):
    the others are removed anyway (the last state of such a path has a lower
    end on the goal, each state before it one on a removed state), and the
    removal, monotone in the set, reaches the same largest set from any start
    that contains it.

    Parameters
    ----------
    reaching : callable
        The kernel ``reaching``.
    boxes : ConfidenceBoxes
        The boxes (:func:`reference.confidence.confidence_boxes`).
    rows : ndarray of int64, shape (S,)
        The policy's rows, ``s*A + policy[s]``.

    Returns
    -------
    ndarray of bool, shape (S,)
        The set ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from reference.chains.explicit import _reaching
    >>> from reference.confidence import confidence_boxes
    >>> counts = np.zeros((2, 1, 3)); counts[0, 0] = [0, 900, 0]; counts[1, 0] = [900, 0, 0]
    >>> closable(_reaching, confidence_boxes(counts, 0.1), np.array([0, 1])).tolist()
    [True, True]
    >>> counts[1, 0] = [0, 0, 900]
    >>> closable(_reaching, confidence_boxes(counts, 0.1), np.array([0, 1])).tolist()
    [False, False]
    """
    S = boxes.n_states
    stored = boxes.indptr[rows + 1] - boxes.indptr[rows]
    state = np.repeat(np.arange(S), stored)
    entry = np.repeat(boxes.indptr[rows], stored) + segment_positions(stored)
    col, must = boxes.indices[entry], boxes.lo[entry] > 0
    goal = np.append(np.zeros(S, dtype=bool), True)
    alive = ~reaching(state[must], col[must], goal)[:S]
    h = boxes.hi_unseen[rows]
    while alive.any():
        keep = alive & stays(state, S, np.append(alive, False)[col], must, boxes.hi[entry],
                             int(alive.sum()), h)
        if np.array_equal(keep, alive):
            break
        alive = keep
    return alive
