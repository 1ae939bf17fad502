"""Small instances of the soundness checks, built on either backend.

Shared by ``certified_soundness.py`` and ``tests/test_certified_soundness.py``; each function
takes the backend module (``reference`` or ``fast``) whose ``SSP`` it builds.
"""

import numpy as np


def exit_or_chain(backend, n=10, exit_cost=0.001):
    """State 0: an exit to the goal at ``exit_cost``, or a free chain of ``n`` states to the goal.

    ``D_0 = 1`` and the chain takes ``n + 1`` steps from state 0, so for
    ``theta >= n + 1`` the chain is in ``Pi_theta`` and ``V*_theta(0) = 0``: a relative
    accuracy with ``theta`` is met by the chain only.

    Parameters
    ----------
    backend : module
        ``reference`` or ``fast``.
    n : int, default 10
        Length of the chain; the instance has ``n + 1`` states and 2 actions.
    exit_cost : float, default 0.001
        Cost of the exit (action 0 in state 0); every other cost is 0.

    Returns
    -------
    SSP
    """
    S = n + 1
    P = np.zeros((S, 2, S + 1))
    costs = np.zeros((S, 2))
    P[0, 0, S], costs[0, 0] = 1.0, exit_cost
    P[0, 1, 1] = 1.0
    for s in range(1, S):
        P[s, :, s + 1] = 1.0
    return backend.SSP(P, costs, name="exit or chain")


def one_state_trap(backend):
    """One state: a cost-0.5 self-loop reaching the goal w.p. 0.01, a cost-1 exit w.p. 0.05.

    Parameters
    ----------
    backend : module
        ``reference`` or ``fast``.

    Returns
    -------
    SSP
    """
    return backend.SSP(np.array([[[0.99, 0.01], [0.95, 0.05]]]), np.array([[0.5, 1.0]]),
                       name="one-state trap")
