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

import numbers

import numpy as np
import scipy.sparse as sp

from ._checks import check_int, check_real, make_rng
from .errors import NoProperPolicyError, ParameterError
from .model import SSP, check_dense_kernel_size

__all__ = [
    "GRID_ACTIONS",
    "gridworld",
    "chain",
    "tradeoff",
    "zero_cost_loop",
    "theta_example",
    "garnet",
    "trap",
    "random_discounted",
]

GRID_ACTIONS = ("up", "right", "down", "left")
"""Names of the grid-world actions, in index order."""

_GRID_MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))


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
    check_dense_kernel_size(n_states, len(GRID_ACTIONS))
    P = np.zeros((n_states, len(GRID_ACTIONS), n_states + 1))
    for s, (r, c) in enumerate(cells):
        for a in range(len(GRID_ACTIONS)):
            for d, w in ((a, success), ((a + 1) % 4, slip), ((a + 3) % 4, slip)):
                target = (r + _GRID_MOVES[d][0], c + _GRID_MOVES[d][1])
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


def chain(n=10, p=1.0, n_actions=2):
    """A chain of ``n`` states where only action 0 makes progress.

    Parameters
    ----------
    n : int >= 1, default 10
        Number of non-goal states ``0..n-1``.
    p : float in (0, 1], default 1.0
        Probability that action 0 moves forward (else the agent stays).
    n_actions : int >= 1, default 2
        Number of actions.

    Returns
    -------
    SSP
        Action 0 in ``s`` moves to ``s + 1`` (the goal from ``n - 1``) with
        probability ``p`` and stays otherwise; action ``a >= 1`` moves back
        deterministically to ``max(s - a, 0)``. Every cost is 1.
        Deterministic when ``p = 1``.

    Notes
    -----
    Action 0 everywhere is optimal: its values solve
    ``V(s) = 1 + p V(s+1) + (1 - p) V(s)``, which increase as ``s``
    decreases, so moving back never helps. With unit costs values are
    expected hitting times, hence

    .. math::

        V^*(s) = \\frac{n - s}{p}, \\qquad D = B^* = \\frac{n}{p}.

    Examples
    --------
    With ``p = 1/2`` each step forward takes 2 tries in expectation, so the
    state ``s`` of a 3-chain is ``2 (3 - s)`` away from the goal:

    >>> from reference import chain, optimal_values
    >>> ssp = chain(3, p=0.5)
    >>> optimal_values(ssp).values
    array([6., 4., 2.])
    >>> ssp.meta["D"], ssp.meta["B_star"]
    (6.0, 6.0)
    """
    n = check_int("n", n, 1)
    p = check_real("p", p, 0.0, 1.0, low_open=True)
    n_actions = check_int("n_actions", n_actions, 1)
    states = np.arange(n)
    check_dense_kernel_size(n, n_actions)
    P = np.zeros((n, n_actions, n + 1))
    P[states, 0, states + 1] += p
    P[states, 0, states] += 1.0 - p
    for a in range(1, n_actions):
        P[states, a, np.maximum(states - a, 0)] = 1.0
    meta = {
        "n": n,
        "p": p,
        "n_actions": n_actions,
        "V_star": (n - states) / p,
        "optimal_policy": np.zeros(n, dtype=np.int64),
        "D": n / p,
        "B_star": n / p,
    }
    return SSP(P, np.ones((n, n_actions)), name="chain", meta=meta)


def _one_state(rows, costs, name, meta):
    """A one-state SSP from its kernel rows ``[p(stay), p(goal)]`` per action."""
    P = np.asarray(rows, dtype=np.float64).reshape(1, len(rows), 2)
    return SSP(P, np.asarray(costs, dtype=np.float64).reshape(1, -1), name=name, meta=meta)


def tradeoff(cost=0.1, q=0.5):
    """One state with a fast expensive action and a slow cheap one.

    Parameters
    ----------
    cost : float in [0, 1], default 0.1
        Cost of the slow action 1.
    q : float in (0, 1], default 0.5
        Probability that the slow action reaches the goal (else it stays).

    Returns
    -------
    SSP
        ``S = 1``, ``A = 2``: action 0 costs 1 and reaches the goal surely;
        action 1 costs ``cost`` and reaches the goal with probability ``q``.

    Notes
    -----
    The slow action's value is ``cost / q`` and its hitting time ``1 / q``, so

    .. math::

        V^*(0) = B^* = \\min\\Big(1, \\frac{\\mathrm{cost}}{q}\\Big), \\qquad D = 1,

    and ``B* < D`` exactly when ``cost < q``: the bounds in ``B*`` and in
    ``D`` then differ. ``meta["slow_hitting_time"] = 1 / q``.

    Examples
    --------
    The slow action costs :math:`0.1 / 0.5 = 0.2` in expectation, less than the
    fast one:

    >>> from reference import optimal_values, tradeoff
    >>> best = optimal_values(tradeoff())
    >>> best.values, best.policy
    (array([0.2]), array([1]))
    """
    cost = check_real("cost", cost, 0.0, 1.0)
    q = check_real("q", q, 0.0, 1.0, low_open=True)
    value = min(1.0, cost / q)
    meta = {
        "cost": cost,
        "q": q,
        "V_star": np.array([value]),
        "optimal_policy": np.array([1 if cost / q < 1.0 else 0], dtype=np.int64),
        "D": 1.0,
        "B_star": value,
        "slow_hitting_time": 1.0 / q,
    }
    return _one_state([[0.0, 1.0], [1.0 - q, q]], [1.0, cost], "tradeoff", meta)


def zero_cost_loop():
    """One state where a free improper loop beats every proper policy.

    Returns
    -------
    SSP
        ``S = 1``, ``A = 2``: action 0 stays with cost 0 (improper, total
        cost 0); action 1 costs 1 and reaches the goal.

    Notes
    -----
    docs/semantics.md, "Model" (zero-cost cycles): the LP gives the best value
    over proper policies, ``V_star = [1]`` (``optimal_policy = [1]``,
    ``D = B* = 1``), while the improper policy ``meta["improper_policy"] =
    [0]`` has value ``meta["V_improper"] = [0]``: with ``c_min = 0`` the
    infimum over all policies is not attained by a proper one.

    Examples
    --------
    The free loop (action 0) never reaches the goal, yet costs 0:

    >>> from reference import policy_values, zero_cost_loop
    >>> ssp = zero_cost_loop()
    >>> ssp.c_min, policy_values(ssp, [0]), policy_values(ssp, [1])
    (0.0, array([0.]), array([1.]))
    """
    meta = {
        "V_star": np.array([1.0]),
        "optimal_policy": np.array([1], dtype=np.int64),
        "D": 1.0,
        "B_star": 1.0,
        "improper_policy": np.array([0], dtype=np.int64),
        "V_improper": np.array([0.0]),
    }
    return _one_state([[1.0, 0.0], [0.0, 1.0]], [0.0, 1.0], "zero_cost_loop", meta)


def theta_example(p_goal=0.05, exit_cost=0.5):
    """One state where the best policy is slow and ``Pi_theta`` excludes it.

    Parameters
    ----------
    p_goal : float in (0, 1], default 0.05
        Probability that the free action 1 reaches the goal (else it stays).
    exit_cost : float in [0, 1], default 0.5
        Cost of action 0, which reaches the goal surely.

    Returns
    -------
    SSP
        ``S = 1``, ``A = 2``, ``c_min = 0``.

    Notes
    -----
    docs/semantics.md, "Guarantees and their exact form" (Thm. 2 is one-sided). Action 1 is
    proper, free and takes ``E[tau] = 1 / p_goal`` steps (20 by default);
    action 0 takes one step, so ``D = 1``, ``V* = [0]`` (action 1) and

    .. math::

        V^*_\\theta(0) = \\begin{cases} 0 & \\theta \\ge 1 / p_{goal} \\\\
        \\mathrm{exit\\_cost} & \\text{otherwise,} \\end{cases}

    e.g. ``V*_theta = 0.5`` for ``theta = 5`` with the defaults, while the
    free action (outside ``Pi_5``) has value 0. ``meta`` records
    ``theta = 5`` and ``V_star_theta`` for it, and ``free_hitting_time``.

    Examples
    --------
    >>> from reference import theta_example
    >>> ssp = theta_example()
    >>> ssp.meta["V_star"], ssp.meta["V_star_theta"], ssp.meta["theta"]
    (array([0.]), array([0.5]), 5.0)
    """
    p_goal = check_real("p_goal", p_goal, 0.0, 1.0, low_open=True)
    exit_cost = check_real("exit_cost", exit_cost, 0.0, 1.0)
    theta = 5.0
    meta = {
        "p_goal": p_goal,
        "exit_cost": exit_cost,
        "V_star": np.array([0.0]),
        "optimal_policy": np.array([1], dtype=np.int64),
        "D": 1.0,
        "B_star": 0.0,
        "free_hitting_time": 1.0 / p_goal,
        "theta": theta,
        "V_star_theta": np.array([0.0 if 1.0 / p_goal <= theta else exit_cost]),
    }
    return _one_state(
        [[0.0, 1.0], [1.0 - p_goal, p_goal]], [exit_cost, 0.0], "theta_example", meta
    )


def _random_simplex_rows(rng, n_rows, k):
    """``n_rows`` probability vectors of length ``k``, Dirichlet(1, ..., 1), all entries > 0."""
    w = np.maximum(rng.standard_exponential((n_rows, k)), 1e-12)
    return w / w.sum(axis=1, keepdims=True)


def _random_subsets(rng, n_rows, n_values, k):
    """One uniform random ``k``-subset of ``0..n_values-1`` per row (Floyd's algorithm).

    Returns an int64 array of shape ``(n_rows, k)``; the loop runs over the
    ``k`` positions, each step vectorised over the rows.
    """
    chosen = np.empty((n_rows, k), dtype=np.int64)
    for i, j in enumerate(range(n_values - k, n_values)):
        t = rng.integers(0, j + 1, size=n_rows)
        taken = (chosen[:, :i] == t[:, None]).any(axis=1)
        chosen[:, i] = np.where(taken, j, t)
    return chosen


def garnet(n_states, n_actions, branching, c_min=0.1, seed=0, sparse=False):
    """A random SSP ("garnet") with exactly ``branching`` next states per pair.

    Parameters
    ----------
    n_states : int >= 1
        Number ``S`` of non-goal states.
    n_actions : int >= 1
        Number ``A`` of actions.
    branching : int in [1, S+1]
        Support size of every ``p(.|s, a)`` over ``S'`` (goal included), so
        ``Gamma = branching``.
    c_min : float in [0, 1], default 0.1
        Costs are drawn uniformly in ``[c_min, 1]``.
    seed : int, Generator or None, default 0
        Randomness; the same seed gives the same instance.
    sparse : bool, default False
        Store the kernel as CSR ``(S*A, S+1)``, built directly (never dense).
        The dense and sparse variants of a seed are the same instance.

    Returns
    -------
    SSP

    Notes
    -----
    Each support is a uniform random ``branching``-subset of ``S'`` and its
    probabilities are Dirichlet(1, ..., 1). Assumption 1 holds by
    construction: the support of ``(s, 0)`` always contains ``s + 1`` (the
    goal for ``s = S - 1``; if the random subset misses it, a uniformly
    chosen member is replaced by it), so under "action 0 everywhere" the goal
    is reachable from every state and, the chain being finite, reached
    almost surely. No closed-form values.

    Examples
    --------
    >>> from reference import garnet
    >>> ssp = garnet(100, 4, 3, seed=0, sparse=True)
    >>> ssp.is_sparse, ssp.n_states, ssp.branching
    (True, 100, 3)
    >>> ssp.c_min >= 0.1
    True
    """
    n_states = check_int("n_states", n_states, 1)
    n_actions = check_int("n_actions", n_actions, 1)
    branching = check_int("branching", branching, 1)
    if branching > n_states + 1:
        raise ParameterError(
            f"`branching` must be at most S+1 = {n_states + 1} (the number of next "
            f"states, goal included); got {branching}."
        )
    c_min = check_real("c_min", c_min, 0.0, 1.0)
    if not isinstance(sparse, (bool, np.bool_)):
        raise ParameterError(f"`sparse` must be a bool; got {sparse!r}.")
    rng = make_rng(seed)
    n_rows = n_states * n_actions
    support = _random_subsets(rng, n_rows, n_states + 1, branching)
    forward = np.arange(n_states) + 1
    first = support[::n_actions]
    missing = ~(first == forward[:, None]).any(axis=1)
    slot = rng.integers(0, branching, size=n_states)
    first[missing, slot[missing]] = forward[missing]
    support.sort(axis=1)
    probs = _random_simplex_rows(rng, n_rows, branching)
    costs = rng.uniform(c_min, 1.0, size=(n_states, n_actions))
    meta = {
        "n_states": n_states,
        "n_actions": n_actions,
        "branching": branching,
        "c_min": c_min,
        "seed": seed if not isinstance(seed, np.random.Generator) else None,
        "sparse": bool(sparse),
    }
    if sparse:
        indptr = np.arange(0, n_rows * branching + 1, branching, dtype=np.int64)
        P = sp.csr_array(
            (probs.ravel(), support.ravel(), indptr), shape=(n_rows, n_states + 1)
        )
    else:
        check_dense_kernel_size(n_states, n_actions)
        P = np.zeros((n_rows, n_states + 1))
        np.put_along_axis(P, support, probs, axis=1)
        P = P.reshape(n_states, n_actions, n_states + 1)
    return SSP(P, costs, name="garnet", meta=meta)


def trap(r=0.01, p_trap=0.5, shortcut_cost=0.5):
    """An entry state and a trap whose only way out is rare: plain VI on few samples fails.

    Parameters
    ----------
    r : float in (0, 1], default 0.01
        Probability that the trap's action 1 exits to the goal.
    p_trap : float in [0, 1], default 0.5
        Probability that the entry state's shortcut leads into the trap.
    shortcut_cost : float in (0, 1], default 0.5
        Cost of the shortcut.

    Returns
    -------
    SSP
        ``S = 2``, ``A = 2``, every cost positive. State 0 (entry): action 0
        (shortcut, cost ``shortcut_cost``) reaches the goal w.p.
        ``1 - p_trap`` and the trap w.p. ``p_trap``; action 1 (cost 1) reaches
        the goal surely. State 1 (trap): action 0 (cost 1) stays forever
        (improper); action 1 (cost 1) exits to the goal w.p. ``r`` and stays
        otherwise.

    Notes
    -----
    Closed form (unit costs in the trap, values are hitting times there):

    .. math::

        V^*(1) = \\frac{1}{r}, \\qquad
        V^*(0) = \\min\\Big(1, \\mathrm{shortcut\\_cost} + \\frac{p_{trap}}{r}\\Big),
        \\qquad D = B^* = \\frac{1}{r},

    and the optimal policy takes action 1 in the trap.

    Mechanism (docs/semantics.md, EVI): with ``n`` samples of ``(1, 1)`` the exit
    is unseen with probability ``(1 - r)^n`` (0.904 for ``n = 10``, 0.366 for
    ``n = 100`` with ``r = 0.01``). Then both trap actions are empirical
    self-loops with cost 1: the empirical model has no proper policy at the
    trap, value iteration on it diverges (``v_k(1) = k``), and its greedy
    choice ties to action 0, which is improper in the true model. EVI gives
    the goal positive optimistic mass (``beta = 28 L / N`` when unseen), so
    the trap's optimistic value is finite but large, of order ``N / (28 L)``,
    and SEARCH keeps doubling ``Delta`` and sampling while it exceeds
    ``Delta``.

    Examples
    --------
    >>> from reference import trap
    >>> ssp = trap()
    >>> ssp.meta["V_star"], ssp.meta["optimal_policy"]
    (array([  1., 100.]), array([1, 1]))
    """
    r = check_real("r", r, 0.0, 1.0, low_open=True)
    p_trap = check_real("p_trap", p_trap, 0.0, 1.0)
    shortcut_cost = check_real("shortcut_cost", shortcut_cost, 0.0, 1.0, low_open=True)
    P = np.array(
        [
            [[0.0, p_trap, 1.0 - p_trap], [0.0, 0.0, 1.0]],
            [[0.0, 1.0, 0.0], [0.0, 1.0 - r, r]],
        ]
    )
    shortcut = shortcut_cost + p_trap / r
    meta = {
        "r": r,
        "p_trap": p_trap,
        "shortcut_cost": shortcut_cost,
        "V_star": np.array([min(1.0, shortcut), 1.0 / r]),
        "optimal_policy": np.array([0 if shortcut < 1.0 else 1, 1], dtype=np.int64),
        "D": 1.0 / r,
        "B_star": 1.0 / r,
    }
    return SSP(P, [[shortcut_cost, 1.0], [1.0, 1.0]], name="trap", meta=meta)


def random_discounted(n_states, n_actions, gamma=0.9, seed=0):
    """A random discounted MDP turned into an SSP (footnote 1 of the paper).

    Parameters
    ----------
    n_states : int >= 1
        Number ``S`` of states of the discounted MDP (non-goal states of the SSP).
    n_actions : int >= 1
        Number ``A`` of actions.
    gamma : float in (0, 1), default 0.9
        Discount factor.
    seed : int, Generator or None, default 0
        Randomness; the same seed gives the same instance.

    Returns
    -------
    SSP
        Built by :meth:`SSP.from_discounted` from full-support Dirichlet(1, ..., 1)
        rows and costs uniform in ``[0, 1]``.

    Notes
    -----
    Every step reaches the goal with probability ``1 - gamma`` whatever the
    action, so every policy has ``E[tau] = 1 / (1 - gamma)``:

    .. math::

        D = \\frac{1}{1 - \\gamma}, \\qquad V_{ssp} = (I - \\gamma P_\\pi)^{-1} c_\\pi.

    Examples
    --------
    Every pair reaches the goal with probability :math:`1 - \\gamma`:

    >>> from reference import random_discounted
    >>> ssp = random_discounted(5, 2, gamma=0.9, seed=0)
    >>> bool((abs(ssp.P[:, :, -1] - 0.1) < 1e-12).all())
    True
    """
    n_states = check_int("n_states", n_states, 1)
    n_actions = check_int("n_actions", n_actions, 1)
    gamma = check_real("gamma", gamma, 0.0, 1.0, low_open=True, high_open=True)
    check_dense_kernel_size(n_states, n_actions)
    rng = make_rng(seed)
    P = _random_simplex_rows(rng, n_states * n_actions, n_states)
    costs = rng.uniform(0.0, 1.0, size=(n_states, n_actions))
    meta = {
        "n_states": n_states,
        "n_actions": n_actions,
        "seed": seed if not isinstance(seed, np.random.Generator) else None,
        "D": 1.0 / (1.0 - gamma),
    }
    return SSP.from_discounted(
        P.reshape(n_states, n_actions, n_states),
        costs,
        gamma,
        name="random_discounted",
        meta=meta,
    )
