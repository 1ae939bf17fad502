"""Gymnasium toy-text environments as stochastic shortest path problems.

Gymnasium's toy-text environments publish their dynamics as a table
``P[s][a] = [(prob, next_state, reward, terminated), ...]``. This module turns
such a table into an :class:`reference.SSP`, so that instances nobody on this
project wrote can be fed to the algorithms and checked exactly.

The mapping (every piece configurable through :func:`ssp_from_table`):

* **Goal.** A transition that is ``terminated`` and accepted by ``is_goal``
  leads to the SSP goal ``g`` (index ``S``).
* **Other terminations.** A transition that is ``terminated`` but not a goal
  (a FrozenLake hole) leads to the state ``restart`` instead, so the episode
  goes on from there. Without ``restart`` such a transition is refused.
* **Costs.** Each transition gets the cost ``transition_cost(reward,
  to_goal)``, which must lie in ``[0, 1]``; the SSP cost of a pair is its
  expectation,

  .. math::

      c(s, a) = \\sum_{(p, s', r, d) \\in P[s][a]} p \\cdot
      \\mathrm{cost}(r, [s' \\text{ is the goal}]).

  The expected cost gives the same values as the per-transition costs,
  because only expectations of sums of costs enter ``V^pi``.
* **States.** The SSP keeps the states reachable from the start states
  through the mapped transitions, in ascending order of their gymnasium
  index; gymnasium's terminal cells, cliff cells and holes are not reachable
  and disappear. ``meta["gym_states"]`` maps SSP indices back, and
  ``meta["start"]`` is the SSP index of the first start state.

The presets :func:`cliff_walking`, :func:`frozen_lake` and :func:`taxi` fix
these choices for the three toy-text grid environments. gymnasium is an
optional dependency (``pip install 'sspgm[gym]'``), imported only when a
preset is built.
"""

import importlib
import inspect

import numpy as np

from reference._checks import check_real
from reference.errors import CostError, ParameterError, ShapeError
from reference.model import SSP

__all__ = [
    "GYM_INSTANCES",
    "ssp_from_table",
    "cliff_walking",
    "frozen_lake",
    "taxi",
]

INSTALL_HINT = "pip install 'sspgm[gym]'"


def _toy_text_env(class_name, **options):
    """Instantiate ``gymnasium.envs.toy_text.<class_name>`` with the options it supports.

    Raises
    ------
    ImportError
        If gymnasium is not installed; the message names the extra to install.
    ParameterError
        If the installed gymnasium's environment does not take one of ``options``.
    """
    try:
        gymnasium = importlib.import_module("gymnasium")
        toy_text = importlib.import_module("gymnasium.envs.toy_text")
    except ImportError:
        raise ImportError(
            f"the gymnasium instances need the optional dependency gymnasium; install it "
            f"with `{INSTALL_HINT}`."
        ) from None
    cls = getattr(toy_text, class_name)
    accepted = inspect.signature(cls.__init__).parameters
    for key in options:
        if key not in accepted:
            raise ParameterError(
                f"`{key}` is not an option of {class_name} in the installed gymnasium "
                f"{gymnasium.__version__}; it takes {sorted(k for k in accepted if k != 'self')}."
            )
    return cls(**options), gymnasium.__version__


def _transition_table(table):
    """``table``, or the table ``env.unwrapped.P`` of a gymnasium environment given instead."""
    if hasattr(table, "unwrapped") or (hasattr(table, "step") and hasattr(table, "reset")):
        env = getattr(table, "unwrapped", table)
        spec = getattr(table, "spec", None)
        what = getattr(spec, "id", None) or type(env).__name__
        if not hasattr(env, "P"):
            raise ParameterError(
                f"`table` is a gymnasium environment ({what}) that publishes no transition "
                "table `env.unwrapped.P`; ssp_from_table needs a tabular model, such as the "
                "toy-text environments. For a simulator, use "
                "SimulatorGenerativeModel(step, S, A) instead."
            )
        return env.P
    if not (hasattr(table, "__len__") and hasattr(table, "__getitem__")):
        raise ParameterError(
            "`table` must be a transition table P[s][a] = [(prob, next_state, reward, "
            "terminated), ...] or a gymnasium environment publishing one (env.unwrapped.P); "
            f"got {type(table).__name__}."
        )
    return table


def _table_shape(table):
    """Return ``(n_states, n_actions)`` of a table ``P[s][a]``, checking it is rectangular."""
    n_states = len(table)
    if n_states == 0:
        raise ShapeError("`P` must list at least one state; got an empty table.")
    n_actions = len(table[0])
    for s in range(n_states):
        if len(table[s]) != n_actions:
            raise ShapeError(
                f"`P` must give every state the same number of actions; state 0 has "
                f"{n_actions}, state {s} has {len(table[s])}."
            )
    return n_states, n_actions


def _map_transitions(table, n_states, n_actions, transition_cost, is_goal, restart):
    """Map every transition to ``(s, a, target, prob, cost)``; ``target = -1`` is the goal."""
    mapped = []
    for s in range(n_states):
        for a in range(n_actions):
            for entry in table[s][a]:
                if len(entry) != 4:
                    raise ShapeError(
                        f"`P[{s}][{a}]` must hold (prob, next_state, reward, terminated) "
                        f"tuples; got {entry!r}."
                    )
                prob, nxt, reward, terminated = entry
                if not 0 <= nxt < n_states:
                    raise ShapeError(
                        f"`P[{s}][{a}]` names next state {nxt!r}, outside 0..{n_states - 1}."
                    )
                to_goal = bool(terminated) and bool(is_goal(int(nxt), reward))
                if to_goal:
                    target = -1
                elif terminated:
                    if restart is None:
                        raise ParameterError(
                            f"`P[{s}][{a}]` terminates in state {nxt} which `is_goal` rejects; "
                            "pass `restart` (the state such episodes continue from)."
                        )
                    target = restart
                else:
                    target = int(nxt)
                cost = float(transition_cost(reward, to_goal))
                if not 0.0 <= cost <= 1.0:
                    raise CostError(
                        f"`transition_cost` must map every reward into [0, 1]; reward "
                        f"{reward!r} of `P[{s}][{a}]` gives {cost!r}."
                    )
                mapped.append((s, a, target, float(prob), cost))
    return mapped


def _reachable(mapped, n_states, start_states):
    """Sorted array of the states reachable from ``start_states`` by positive-probability moves."""
    successors = [set() for _ in range(n_states)]
    for s, _, target, prob, _ in mapped:
        if prob > 0 and target >= 0:
            successors[s].add(target)
    seen = set(start_states)
    frontier = list(start_states)
    while frontier:
        s = frontier.pop()
        for t in successors[s] - seen:
            seen.add(t)
            frontier.append(t)
    return np.array(sorted(seen), dtype=np.int64)


def ssp_from_table(
    table,
    *,
    transition_cost,
    start_states,
    is_goal=lambda next_state, reward: True,
    restart=None,
    name="gym",
    meta=None,
):
    """Build an SSP from a gymnasium-style transition table.

    Parameters
    ----------
    table : mapping or sequence of ``n`` mappings or sequences of ``m`` lists, or gymnasium.Env
        ``table[s][a]`` lists the transitions ``(prob, next_state, reward,
        terminated)`` of pair ``(s, a)``, as in ``env.unwrapped.P`` of a
        toy-text environment with ``n`` states and ``m`` actions. A gymnasium
        environment is read through its ``env.unwrapped.P``; one without a
        table is refused (a simulator goes to
        :class:`~reference.SimulatorGenerativeModel` instead).
    transition_cost : callable ``(reward, to_goal) -> float``
        Cost in ``[0, 1]`` of a transition with this reward; ``to_goal`` tells
        whether the transition ends at the SSP goal.
    start_states : sequence of int
        Gymnasium states the episodes start from; the SSP keeps the states
        reachable from them.
    is_goal : callable ``(next_state, reward) -> bool``, default: every termination
        Which terminated transitions reach the goal.
    restart : int, optional
        Gymnasium state that the other terminated transitions lead to.
    name : str
        Name of the SSP.
    meta : dict, optional
        Extra entries for ``SSP.meta``.

    Returns
    -------
    SSP
        Dense kernel of shape ``(S, A, S+1)`` with ``S`` the number of
        reachable states and ``A = m``; ``meta["gym_states"]`` (list of
        ``S`` ints) gives each state's gymnasium index and ``meta["start"]``
        the SSP index of ``start_states[0]``. The pair costs are the expected
        transition costs (module notes).

    Raises
    ------
    ShapeError, CostError, ParameterError, NoProperPolicyError
        On a malformed table, a cost outside ``[0, 1]``, a non-goal
        termination without ``restart``, or no proper policy; a
        :class:`ParameterError` for an environment without a table, or for
        an object that is neither.

    See Also
    --------
    cliff_walking, frozen_lake, taxi : gymnasium's toy-text environments built with it.
    reference.SSP : the model it returns.

    Examples
    --------
    A table of three gymnasium states and one action: state 0 moves to state 1
    (reward -1); state 1 stays (reward -1) or terminates (reward 0), half and
    half; state 2 is the terminal one. With the cost ``-reward / 2``, the values
    are ``0.5 + 0.5 = 1`` and ``0.25 / 0.5 = 0.5``:

    >>> from reference import policy_values
    >>> table = {0: {0: [(1.0, 1, -1.0, False)]},
    ...          1: {0: [(0.5, 1, -1.0, False), (0.5, 2, 0.0, True)]},
    ...          2: {0: [(1.0, 2, 0.0, True)]}}
    >>> ssp = ssp_from_table(table, transition_cost=lambda reward, to_goal: -reward / 2,
    ...                      start_states=[0])
    >>> ssp.n_states, ssp.n_actions, policy_values(ssp, [0, 0])
    (2, 1, array([1. , 0.5]))
    """
    table = _transition_table(table)
    n_states, n_actions = _table_shape(table)
    start_states = [int(s) for s in start_states]
    for s in start_states + ([] if restart is None else [restart]):
        if not 0 <= s < n_states:
            raise ParameterError(
                f"`start_states` and `restart` must be states in 0..{n_states - 1}; got {s}."
            )
    if not start_states:
        raise ParameterError("`start_states` must name at least one state; got none.")
    mapped = _map_transitions(table, n_states, n_actions, transition_cost, is_goal, restart)
    kept = _reachable(mapped, n_states, start_states)
    index = np.full(n_states, -1, dtype=np.int64)
    index[kept] = np.arange(kept.size)
    S = int(kept.size)
    P = np.zeros((S, n_actions, S + 1))
    c = np.zeros((S, n_actions))
    for s, a, target, prob, cost in mapped:
        i = index[s]
        if i < 0:
            continue
        P[i, a, S if target < 0 else index[target]] += prob
        c[i, a] += prob * cost
    np.clip(c, 0.0, 1.0, out=c)
    info = {
        "gym_states": kept.tolist(),
        "start": int(index[start_states[0]]),
        "start_states": [int(index[s]) for s in start_states],
        **(meta or {}),
    }
    return SSP(P, c, name=name, meta=info)


def cliff_walking(slippery=False, cost_scale=100.0):
    """Gymnasium's CliffWalking (4 x 12 grid) as an SSP.

    Each step earns reward -1 and stepping into the cliff -100 (and sends the
    agent back to the start); the goal is the bottom-right cell. The cost of a
    transition is ``-reward / cost_scale``, so by default a step costs 0.01
    and the cliff 1, and the shortest path (13 steps) costs 0.13.

    Parameters
    ----------
    slippery : bool, default False
        Gymnasium's slippery variant (each move goes to the intended or a
        perpendicular direction with probability 1/3 each); needs a gymnasium
        whose CliffWalking takes ``is_slippery`` (1.1 and later).
    cost_scale : float >= 100
        Divides the negated rewards.

    Returns
    -------
    SSP
        37 states (the 36 non-cliff, non-goal cells plus the start), 4 actions.

    See Also
    --------
    ssp_from_table : builds it from gymnasium's table.

    Examples
    --------
    The shortest path along the cliff takes 13 steps of cost 0.01:

    >>> from reference import optimal_values
    >>> ssp = cliff_walking()
    >>> ssp.n_states, ssp.n_actions, round(float(optimal_values(ssp).values[ssp.meta["start"]]), 6)
    (37, 4, 0.13)
    """
    cost_scale = check_real("cost_scale", cost_scale, 100.0)
    options = {"is_slippery": True} if slippery else {}
    env, version = _toy_text_env("CliffWalkingEnv", **options)
    return ssp_from_table(
        env.P,
        transition_cost=lambda reward, to_goal: -reward / cost_scale,
        start_states=[int(env.start_state_index)],
        name="cliffwalking-slippery" if slippery else "cliffwalking",
        meta={
            "source": f"gymnasium {version} CliffWalkingEnv",
            "slippery": bool(slippery),
            "cost_scale": cost_scale,
            "shape": tuple(int(n) for n in env.shape),
        },
    )


def frozen_lake(size=4, slippery=True, step_cost=1.0):
    """Gymnasium's FrozenLake as an SSP: reach the gift, falling in a hole restarts.

    Every transition costs ``step_cost`` (gymnasium's rewards only mark the
    gift), so with the default unit cost ``V^pi`` is the expected number of
    steps to reach the gift. Terminating in a hole (``H``) continues from the
    start cell instead of ending the episode; terminating on the gift (``G``)
    reaches the goal.

    Parameters
    ----------
    size : {4, 8}
        Gymnasium's built-in ``"4x4"`` or ``"8x8"`` map.
    slippery : bool, default True
        Gymnasium's slippery dynamics (intended or either perpendicular
        direction, 1/3 each).
    step_cost : float in (0, 1]
        Cost of every step.

    Returns
    -------
    SSP
        One state per frozen or start cell, 4 actions.

    See Also
    --------
    ssp_from_table : builds it from gymnasium's table.

    Examples
    --------
    On the slippery 4 x 4 map, the best policy needs about 56 steps on average
    to reach the gift from the start:

    >>> from reference import optimal_values
    >>> ssp = frozen_lake()
    >>> ssp.n_states, ssp.n_actions, round(float(optimal_values(ssp).values[ssp.meta["start"]]), 2)
    (11, 4, 55.64)
    """
    step_cost = check_real("step_cost", step_cost, 0.0, 1.0, low_open=True)
    if size not in (4, 8):
        raise ParameterError(f"`size` must be 4 or 8 (gymnasium's maps); got {size!r}.")
    map_name = f"{size}x{size}"
    env, version = _toy_text_env("FrozenLakeEnv", map_name=map_name, is_slippery=bool(slippery))
    tiles = np.asarray(env.desc).ravel()
    start = int(np.flatnonzero(tiles == b"S")[0])
    return ssp_from_table(
        env.P,
        transition_cost=lambda reward, to_goal: step_cost,
        start_states=[start],
        is_goal=lambda next_state, reward: tiles[next_state] == b"G",
        restart=start,
        name=f"frozenlake{map_name}" + ("" if slippery else "-dry"),
        meta={
            "source": f"gymnasium {version} FrozenLakeEnv",
            "map_name": map_name,
            "slippery": bool(slippery),
            "step_cost": step_cost,
        },
    )


def taxi(cost_scale=10.0, rainy=False):
    """Gymnasium's Taxi as an SSP: the successful drop-off is the goal.

    Rewards are -1 per step and -10 for an illegal pick-up or drop-off; a
    transition costs ``-reward / cost_scale`` (0.1 and 1 by default). The
    successful drop-off (reward +20, terminated) reaches the goal and costs
    one ordinary step, ``1 / cost_scale``, so that ``c_min > 0``. The start
    states are the support of gymnasium's initial distribution.

    Parameters
    ----------
    cost_scale : float >= 10
        Divides the negated rewards.
    rainy : bool, default False
        Gymnasium's rainy variant (moves drift sideways); needs a gymnasium
        whose Taxi takes ``is_rainy``. The fickle passenger is not part of
        the transition table and is not offered.

    Returns
    -------
    SSP
        400 states (the 500 gymnasium states minus those with the passenger
        already at the destination), 6 actions.

    See Also
    --------
    ssp_from_table : builds it from gymnasium's table.

    Examples
    --------
    >>> ssp = taxi()
    >>> ssp.n_states, ssp.n_actions, float(ssp.costs.min())
    (400, 6, 0.1)
    """
    cost_scale = check_real("cost_scale", cost_scale, 10.0)
    options = {"is_rainy": True} if rainy else {}
    env, version = _toy_text_env("TaxiEnv", **options)
    step = 1.0 / cost_scale
    return ssp_from_table(
        env.P,
        transition_cost=lambda reward, to_goal: step if to_goal else -reward / cost_scale,
        start_states=np.flatnonzero(env.initial_state_distrib).tolist(),
        name="taxi-rainy" if rainy else "taxi",
        meta={
            "source": f"gymnasium {version} TaxiEnv",
            "rainy": bool(rainy),
            "cost_scale": cost_scale,
        },
    )


GYM_INSTANCES = {
    "cliffwalking": cliff_walking,
    "frozenlake": frozen_lake,
    "taxi": taxi,
}
"""Builders of the gymnasium instances by registry name; each takes keyword options only."""
