"""The gymnasium toy-text adapter: a hand-written table, then the real environments.

Ground truth: the hand table's kernel and costs written out by hand; the
shortest paths of the real grids counted on their maps.
"""

import sys

import numpy as np
import pytest

from reference.errors import CostError, ParameterError, ShapeError
from sspgm import gym_adapter
from sspgm.gym_adapter import ssp_from_table

# Gymnasium states: 0 start, 1 corridor, 2 gift (terminal), 3 hole (terminal),
# 4 never reached. Action 0 of state 0 is risky: half the time it falls in the hole.
TABLE = {
    0: {
        0: [(1.0, 1, -1, False)],
        1: [(0.5, 3, -2, True), (0.5, 1, -1, False)],
    },
    1: {
        0: [(1.0, 2, -1, True)],
        1: [(0.25, 0, -2, False), (0.75, 1, -1, False)],
    },
    2: {0: [(1.0, 2, 0, True)], 1: [(1.0, 2, 0, True)]},
    3: {0: [(1.0, 3, 0, True)], 1: [(1.0, 3, 0, True)]},
    4: {0: [(1.0, 0, -1, False)], 1: [(1.0, 4, -1, False)]},
}


def _hand_ssp():
    return ssp_from_table(
        TABLE,
        transition_cost=lambda reward, to_goal: -reward / 2,
        start_states=[0],
        is_goal=lambda next_state, reward: next_state == 2,
        restart=0,
    )


def test_hand_table_kernel_and_costs():
    ssp = _hand_ssp()
    # Reachable from 0: {0, 1}; the gift becomes the goal (index 2), the hole restarts at 0.
    assert ssp.meta["gym_states"] == [0, 1]
    assert ssp.meta["start"] == 0
    expected_P = np.array(
        [
            [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]],
            [[0.0, 0.0, 1.0], [0.25, 0.75, 0.0]],
        ]
    )
    np.testing.assert_allclose(ssp.kernel_dense(), expected_P)
    # c(0,1) = 0.5 * 2/2 + 0.5 * 1/2 = 0.75; c(1,1) = 0.25 * 1 + 0.75 * 0.5 = 0.625.
    np.testing.assert_allclose(ssp.costs, [[0.5, 0.75], [0.5, 0.625]])


@pytest.mark.shared
def test_hand_table_values(backend):
    ssp = backend.SSP(_hand_ssp().P, _hand_ssp().costs)
    # Optimal: action 0 twice, 0.5 + 0.5; from the corridor 0.5.
    np.testing.assert_allclose(backend.optimal_values(ssp).values, [1.0, 0.5], atol=1e-9)


def test_hand_table_every_termination_is_the_goal_by_default():
    table = {0: {0: [(0.5, 1, -1, True), (0.5, 0, -1, False)]}, 1: {0: [(1.0, 1, 0, True)]}}
    ssp = ssp_from_table(table, transition_cost=lambda r, g: -r, start_states=[0])
    np.testing.assert_allclose(ssp.kernel_dense(), [[[0.5, 0.5]]])


def test_termination_outside_the_goal_needs_restart():
    with pytest.raises(ParameterError, match="restart"):
        ssp_from_table(
            TABLE,
            transition_cost=lambda reward, to_goal: -reward / 2,
            start_states=[0],
            is_goal=lambda next_state, reward: next_state == 2,
        )


def test_cost_outside_unit_interval_is_refused():
    with pytest.raises(CostError, match="reward -2"):
        ssp_from_table(
            TABLE,
            transition_cost=lambda reward, to_goal: -reward,
            start_states=[0],
            is_goal=lambda next_state, reward: next_state == 2,
            restart=0,
        )


@pytest.mark.parametrize(
    "table, match",
    [
        ({0: {0: [(1.0, 0, 0, True)]}, 1: {}}, "same number of actions"),
        ({0: {0: [(1.0, 5, 0, True)]}}, "next state 5"),
        ({0: {0: [(1.0, 0, 0)]}}, "tuples"),
    ],
)
def test_malformed_tables(table, match):
    with pytest.raises(ShapeError, match=match):
        ssp_from_table(table, transition_cost=lambda r, g: 0.5, start_states=[0])


def test_start_state_out_of_range():
    with pytest.raises(ParameterError, match="start_states"):
        ssp_from_table(TABLE, transition_cost=lambda r, g: 0.5, start_states=[9], restart=0)


def test_missing_gymnasium_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(ImportError, match=r"sspgm\[gym\]"):
        gym_adapter.cliff_walking()


def test_option_the_installed_gymnasium_lacks():
    pytest.importorskip("gymnasium")
    with pytest.raises(ParameterError, match="not an option of CliffWalkingEnv"):
        gym_adapter._toy_text_env("CliffWalkingEnv", is_rainy=True)


@pytest.mark.shared
def test_cliff_walking_sizes_and_shortest_path(backend):
    pytest.importorskip("gymnasium")
    built = gym_adapter.cliff_walking()
    # 48 cells minus 10 cliff cells minus the goal cell.
    assert (built.n_states, built.n_actions) == (37, 4)
    ssp = backend.SSP(built.P, built.costs)
    values = backend.optimal_values(ssp).values
    # Up, 11 steps right, down: 13 steps of cost 1/100 from the start cell.
    assert values[built.meta["start"]] == pytest.approx(13 * 0.01, abs=1e-9)
    assert ssp.c_min == pytest.approx(0.01)
    assert ssp.costs.max() == pytest.approx(1.0)


@pytest.mark.shared
def test_cliff_walking_cost_scale(backend):
    pytest.importorskip("gymnasium")
    built = gym_adapter.cliff_walking(cost_scale=200.0)
    values = backend.optimal_values(backend.SSP(built.P, built.costs)).values
    assert values[built.meta["start"]] == pytest.approx(13 / 200, abs=1e-9)
    with pytest.raises(ParameterError, match="cost_scale"):
        gym_adapter.cliff_walking(cost_scale=50.0)


def test_cliff_walking_slippery_when_available():
    gymnasium = pytest.importorskip("gymnasium")
    from gymnasium.envs.toy_text import CliffWalkingEnv
    import inspect

    if "is_slippery" not in inspect.signature(CliffWalkingEnv.__init__).parameters:
        with pytest.raises(ParameterError, match=gymnasium.__version__):
            gym_adapter.cliff_walking(slippery=True)
        return
    ssp = gym_adapter.cliff_walking(slippery=True)
    assert ssp.branching == 3
    assert ssp.n_states == 37


@pytest.mark.shared
def test_frozen_lake_dry_shortest_path(backend):
    pytest.importorskip("gymnasium")
    built = gym_adapter.frozen_lake(slippery=False)
    # 16 cells minus 4 holes minus the gift.
    assert (built.n_states, built.n_actions) == (11, 4)
    values = backend.optimal_values(backend.SSP(built.P, built.costs)).values
    # SFFF / FHFH / FFFH / HFFG: 6 moves from S to G, unit cost.
    assert values[built.meta["start"]] == pytest.approx(6.0, abs=1e-9)


def test_frozen_lake_holes_restart():
    pytest.importorskip("gymnasium")
    ssp = gym_adapter.frozen_lake()
    # Cell 4 (row 1, col 0) moving right: w.p. 1/3 into the hole at (1, 1), which
    # restarts at the start cell (gym state 0), and w.p. 1/3 up onto the start
    # cell itself; w.p. 1/3 down to cell 8.
    s = ssp.meta["gym_states"].index(4)
    right = 2
    row = ssp.kernel_dense()[s, right]
    assert row[ssp.meta["start"]] == pytest.approx(2 / 3)
    assert row[ssp.meta["gym_states"].index(8)] == pytest.approx(1 / 3)
    assert ssp.branching == 3


@pytest.mark.shared
def test_taxi_pickup_and_dropoff(backend):
    pytest.importorskip("gymnasium")
    built = gym_adapter.taxi()
    assert (built.n_states, built.n_actions) == (400, 6)
    assert built.c_min == pytest.approx(0.1)
    values = backend.optimal_values(backend.SSP(built.P, built.costs)).values
    # Taxi at R = (0, 0) with the passenger there, destination G = (0, 4):
    # pick up, 2 down, 4 right, 2 up (the wall next to R blocks row 0-1), drop off.
    gym_state = ((0 * 5 + 0) * 5 + 0) * 4 + 1
    s = built.meta["gym_states"].index(gym_state)
    assert values[s] == pytest.approx(10 * 0.1, abs=1e-9)
