"""Small instances with closed-form values: chains, the cost/time trade-off, a zero-cost
loop, the example of Alg. 3, a trap for plug-in planning."""

import numpy as np

from .._checks import check_int, check_real
from ..model import SSP, check_dense_kernel_size

__all__ = ["chain", "tradeoff", "zero_cost_loop", "theta_example", "trap"]


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
    check_dense_kernel_size(n, n_actions)
    states = np.arange(n)
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
