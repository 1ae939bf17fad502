r"""A slippery grid of any size with exits on a lattice: a sparse instance that scales."""

import numpy as np
import scipy.sparse as sp

from .._checks import check_int, check_real
from ..errors import ParameterError
from ..model import SSP
from .grid import GRID_ACTIONS, GRID_MOVES

__all__ = ["exit_grid"]


def exit_grid(rows=64, cols=64, spacing=8, success=0.8, cost=1.0):
    r"""A slippery ``rows x cols`` grid whose cells on a lattice of step ``spacing`` are exits.

    Parameters
    ----------
    rows, cols : int >= 1, default 64, 64
        Grid size.
    spacing : int >= 1, default 8
        The exits are the cells ``(r, c)`` with ``r`` and ``c`` multiples of
        ``spacing``; all of them are the goal.
    success : float in (0, 1], default 0.8
        Probability that the intended move is the one attempted.
    cost : float in (0, 1], default 1.0
        Cost of every action in every cell.

    Returns
    -------
    SSP
        ``S`` = the number of cells that are not exits, numbered row-major
        (exits skipped), ``A = 4`` actions ``up, right, down, left``
        (:data:`~reference.envs.GRID_ACTIONS`), the kernel stored as CSR
        ``(S*A, S+1)`` with at most 3 entries a row (built directly, never
        dense). ``meta`` holds the parameters, ``state_to_cell`` (int64
        array of shape ``(S, 2)``) and, when ``success = 1``, the closed
        forms ``V_star`` (shape ``(S,)``), ``D`` and ``B_star``.

    Raises
    ------
    ParameterError
        On a size or spacing below 1, ``success`` or ``cost`` outside
        ``(0, 1]``, or a grid whose every cell is an exit.

    Notes
    -----
    The moves are those of :func:`~reference.envs.gridworld`: action ``a`` is
    attempted with probability ``success`` and each perpendicular direction
    with ``(1 - success) / 2``; an attempt that leaves the grid stays, and
    probabilities of attempts reaching the same cell add up. Entering an
    exit ends the episode. Every policy that moves towards its nearest exit
    reaches it with probability 1, so every state is proper.

    With ``success = 1`` the model is deterministic and the optimal value is
    ``cost`` times the distance to the nearest exit. The exits form a product
    lattice, so that distance is the sum of the distances of ``r`` to the
    nearest multiple of ``spacing`` below ``rows`` and of ``c`` to the
    nearest below ``cols``:

    .. math::

        V^*(r, c) = \mathrm{cost}\,\big(\min_{R} |r - R| + \min_{C} |c - C|\big),
        \qquad D = \max_s V^*(s) / \mathrm{cost}.

    Examples
    --------
    A 3 x 3 grid with exits at its corners: 5 states, the centre 2 moves away.

    >>> from reference import exit_grid
    >>> ssp = exit_grid(3, 3, spacing=2, success=1.0)
    >>> ssp.n_states, ssp.n_actions, ssp.meta["V_star"].tolist()
    (5, 4, [1.0, 1.0, 2.0, 1.0, 1.0])
    """
    rows = check_int("rows", rows, 1)
    cols = check_int("cols", cols, 1)
    spacing = check_int("spacing", spacing, 1)
    success = check_real("success", success, 0.0, 1.0, low_open=True)
    cost = check_real("cost", cost, 0.0, 1.0, low_open=True)
    r, c = np.divmod(np.arange(rows * cols), cols)
    exit_cell = (r % spacing == 0) & (c % spacing == 0)
    n_states = int((~exit_cell).sum())
    if n_states == 0:
        raise ParameterError(
            f"`exit_grid` needs a cell that is not an exit; every cell of the {rows} x {cols} "
            f"grid is one with `spacing` = {spacing}."
        )
    state = np.full(rows * cols, n_states, dtype=np.int64)
    state[~exit_cell] = np.arange(n_states)
    cells = np.stack([r[~exit_cell], c[~exit_cell]], axis=1)
    A = len(GRID_ACTIONS)
    moves = np.array(GRID_MOVES)
    slip = (1.0 - success) / 2.0
    row_ids, col_ids, weights = [], [], []
    for a in range(A):
        for d, w in ((a, success), ((a + 1) % 4, slip), ((a + 3) % 4, slip)):
            target = cells + moves[d]
            inside = ((target >= 0) & (target < (rows, cols))).all(axis=1)
            target = np.where(inside[:, None], target, cells)
            row_ids.append(np.arange(n_states) * A + a)
            col_ids.append(state[target[:, 0] * cols + target[:, 1]])
            weights.append(np.full(n_states, w))
    P = sp.coo_array((np.concatenate(weights), (np.concatenate(row_ids), np.concatenate(col_ids))),
                     shape=(n_states * A, n_states + 1)).tocsr()
    P.sum_duplicates()
    P.eliminate_zeros()
    P.sort_indices()
    meta = {"rows": rows, "cols": cols, "spacing": spacing, "success": success, "cost": cost,
            "state_to_cell": cells}
    if success == 1.0:
        def to_lattice(x, size):
            below = x % spacing
            above = np.where(x - below + spacing < size, spacing - below, below)
            return np.minimum(below, above)

        distance = (to_lattice(cells[:, 0], rows) + to_lattice(cells[:, 1], cols)).astype(float)
        meta.update(V_star=cost * distance, D=float(distance.max()),
                    B_star=cost * float(distance.max()))
    return SSP(P, np.full((n_states, A), cost), name="exit_grid", meta=meta)
