"""Parametrised SSP instances with known structure, for tests, examples and the CLI.

Every builder returns an :class:`~reference.model.SSP` whose ``name`` is the
builder's name and whose ``meta`` holds the builder's parameters under their
own names, plus the closed-form quantities the docstring derives, under
these keys when they exist:

``V_star`` : ndarray of shape (S,)
    Optimal value over proper policies (the LP value of docs/semantics.md,
    "Model"; it equals ``V*`` whenever no zero-cost cycle beats it).
``optimal_policy`` : ndarray of int64, shape (S,)
    A deterministic policy attaining ``V_star`` (ties to the lowest action).
``D`` : float
    Diameter ``D = max_s min_pi E[tau_pi(s)]``.
``B_star`` : float
    ``B* = max_s V_star(s)``.

Builders that only make sense with a layout (the grid world) also store it.
"""

from .grid import (
    GRID_ACTIONS,
    gridworld,
)
from .exits import exit_grid
from .small import (
    chain,
    tradeoff,
    zero_cost_loop,
    theta_example,
    trap,
)
from .randomized import (
    garnet,
    random_discounted,
)

__all__ = [
    "GRID_ACTIONS",
    "gridworld",
    "exit_grid",
    "chain",
    "tradeoff",
    "zero_cost_loop",
    "theta_example",
    "garnet",
    "trap",
    "random_discounted",
]
