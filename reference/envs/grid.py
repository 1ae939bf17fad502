"""The grid world of the paper's experiments."""

import numbers

import numpy as np

from .._checks import check_int, check_real
from ..errors import NoProperPolicyError, ParameterError
from ..model import SSP, check_dense_kernel_size

__all__ = ["GRID_ACTIONS", "GRID_MOVES", "gridworld"]


GRID_ACTIONS = ("up", "right", "down", "left")
"""Names of the grid-world actions, in index order."""

GRID_MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))
"""The ``(row, column)`` step of each action of :data:`GRID_ACTIONS`, in index order."""


def _check_cell(name, cell, rows, cols):
    """Return ``cell`` as a ``(row, col)`` tuple of ints inside a ``rows x cols`` grid."""
    try:
        r, c = cell
    except (TypeError, ValueError):
        raise ParameterError(
            f"`{name}` must be a (row, col) pair; got {cell!r}."
        ) from None
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in (r, c)):
        raise ParameterError(f"`{name}` must be a pair of integers; got {cell!r}.")
    if not (0 <= r < rows and 0 <= c < cols):
        raise ParameterError(
            f"`{name}` must lie in the {rows} x {cols} grid (rows 0..{rows - 1}, "
            f"columns 0..{cols - 1}); got {(int(r), int(c))}."
        )
    return int(r), int(c)


def _grid_cells(rows, cols, goal, walls, start):
    """Validate a grid layout; return ``(goal, walls, start, state_to_cell)``."""
    goal = _check_cell("goal", goal, rows, cols)
    try:
        wall_list = list(walls)
    except TypeError:
        raise ParameterError(
            f"`walls` must be a sequence of (row, col) pairs; got {walls!r}."
        ) from None
    walls = tuple(sorted({_check_cell("walls", w, rows, cols) for w in wall_list}))
    if goal in walls:
        raise ParameterError(f"`goal` {goal} lies inside a wall; `walls` = {walls}.")
    if start is not None:
        start = _check_cell("start", start, rows, cols)
        if start in walls or start == goal:
            raise ParameterError(
                f"`start` must be a free non-goal cell; got {start} (goal {goal}, "
                f"walls {walls})."
            )
    check_dense_kernel_size(max(1, rows * cols - 1 - len(walls)), len(GRID_ACTIONS))
    cells = tuple(
        (r, c)
        for r in range(rows)
        for c in range(cols)
        if (r, c) != goal and (r, c) not in walls
    )
    if not cells:
        raise ParameterError(
            f"the grid has no free non-goal cell: {rows} x {cols} with goal {goal} and "
            f"walls {walls}."
        )
    return goal, walls, start, cells


def gridworld(rows=3, cols=4, success=0.8, goal=(0, 3), walls=((1, 1),), cost=1.0, start=None):
    """A grid world with slippery moves, a goal cell and walls.

    Parameters
    ----------
    rows, cols : int, default 3, 4
        Grid size.
    success : float in [0, 1], default 0.8
        Probability that the intended move is the one attempted.
    goal : (int, int), default (0, 3)
        Goal cell ``(row, col)``.
    walls : sequence of (int, int), default ((1, 1),)
        Blocked cells.
    cost : float in [0, 1], default 1.0
        Cost of every action in every non-goal cell.
    start : (int, int) or None, default None
        Designated start cell (recorded in ``meta``; it does not change the
        model).

    Returns
    -------
    SSP
        ``S`` = number of free non-goal cells, numbered row-major (walls and
        the goal skipped), ``A = 4`` actions ``up, right, down, left``
        (:data:`GRID_ACTIONS`). ``meta`` holds the parameters and the layout:
        ``rows``, ``cols``, ``goal``, ``walls``, ``start``, ``start_state``
        (``None`` without a start), ``cell_to_state`` (dict ``(row, col) ->
        s``) and ``state_to_cell`` (tuple of cells indexed by state).

    Raises
    ------
    ParameterError
        On a size below 1, ``success`` or ``cost`` outside ``[0, 1]``, a cell
        outside the grid, the goal or the start inside a wall, or a grid
        without a free non-goal cell.
    NoProperPolicyError
        If some free cell cannot reach the goal (walled in); the message names
        the cell.

    Notes
    -----
    Slip semantics: in cell ``x`` with action ``a`` the attempted direction is
    ``a`` with probability ``success`` and each of the two perpendicular
    directions ``a ± 1 (mod 4)`` with probability ``(1 - success) / 2``; the
    agent never attempts the opposite direction. An attempted move that would
    leave the grid or enter a wall leaves the agent in ``x``; probabilities
    of attempts leading to the same cell add up. Entering the goal ends the
    episode.

    .. math::

        p(y | x, a) = \\sum_{d \\in \\{a, a+1, a-1\\}} w_d\\,
        \\mathbb{1}[\\mathrm{move}(x, d) = y], \\qquad
        w_a = \\mathrm{success},\\ w_{a \\pm 1} = \\frac{1 - \\mathrm{success}}{2}.

    No closed form exists in general. With ``success = 1`` the model is
    deterministic and ``V*(x) = cost * dist(x, goal)``, the shortest-path
    distance in the grid graph (in the default 3 x 4 layout: 3, 2, 1 on the
    top row, 4, 2, 1 on the middle row, 5, 4, 3, 2 on the bottom row).

    Examples
    --------
    The default 3 x 4 grid has 12 cells, one wall and the goal: 10 states.

    >>> from reference import gridworld
    >>> ssp = gridworld()
    >>> ssp.n_states, ssp.n_actions, ssp.branching
    (10, 4, 3)
    >>> ssp.meta["state_to_cell"][:3]
    ((0, 0), (0, 1), (0, 2))
    """
    rows = check_int("rows", rows, 1)
    cols = check_int("cols", cols, 1)
    success = check_real("success", success, 0.0, 1.0)
    cost = check_real("cost", cost, 0.0, 1.0)
    goal, walls, start, cells = _grid_cells(rows, cols, goal, walls, start)
    index = {cell: s for s, cell in enumerate(cells)}
    n_states = len(cells)
    index[goal] = n_states
    slip = (1.0 - success) / 2.0
    P = np.zeros((n_states, len(GRID_ACTIONS), n_states + 1))
    for s, (r, c) in enumerate(cells):
        for a in range(len(GRID_ACTIONS)):
            for d, w in ((a, success), ((a + 1) % 4, slip), ((a + 3) % 4, slip)):
                target = (r + GRID_MOVES[d][0], c + GRID_MOVES[d][1])
                P[s, a, index.get(target, s)] += w
    meta = {
        "rows": rows,
        "cols": cols,
        "success": success,
        "goal": goal,
        "walls": walls,
        "cost": cost,
        "start": start,
        "start_state": None if start is None else index[start],
        "cell_to_state": {cell: s for s, cell in enumerate(cells)},
        "state_to_cell": cells,
    }
    costs = np.full((n_states, len(GRID_ACTIONS)), cost)
    ssp = SSP(P, costs, require_proper=False, name="gridworld", meta=meta)
    stuck = np.flatnonzero(~ssp.proper_states())
    if stuck.size:
        raise NoProperPolicyError(
            f"no policy reaches the goal {goal} with probability 1 from cell "
            f"{cells[stuck[0]]} (state {int(stuck[0])}); {stuck.size} such cell(s) in all."
        )
    return ssp
