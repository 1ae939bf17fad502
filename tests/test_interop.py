"""Models from other tools: pymdptoolbox's layout, gymnasium environments."""

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from reference import from_mdptoolbox
from reference.errors import CostError, ParameterError, ShapeError


def _toolbox_model(seed, S=5, A=3, goal=4):
    """A random model in the (A, S, S) layout whose state ``goal`` is absorbing, reward 0."""
    rng = np.random.default_rng(seed)
    P = rng.random((A, S, S))
    P[:, :, goal] += 0.3
    P /= P.sum(axis=2, keepdims=True)
    P[:, goal, :] = 0.0
    P[:, goal, goal] = 1.0
    R = -rng.random((S, A))
    R[goal] = 0.0
    return P, R


def _total_reward(P, R, policy, goal):
    """Expected total reward of ``policy`` until ``goal``, by a linear solve on the layout."""
    S = P.shape[1]
    kept = [s for s in range(S) if s != goal]
    P_pi = np.array([P[policy[s], s] for s in range(S)])[np.ix_(kept, kept)]
    r_pi = np.array([R[s, policy[s]] for s in range(S)])[kept]
    return np.linalg.solve(np.eye(len(kept)) - P_pi, r_pi)


@pytest.mark.parametrize("seed", range(3))
def test_goal_conversion_keeps_every_policys_total_reward(seed):
    P, R = _toolbox_model(seed)
    ssp = from_mdptoolbox(P, R, goal=4)
    assert ssp.meta["mdp_states"] == [0, 1, 2, 3]
    rng = np.random.default_rng(seed)
    for _ in range(4):
        policy = rng.integers(0, 3, size=5)
        expected = -_total_reward(P, R, policy, goal=4)
        assert np.allclose(reference.policy_values(ssp, policy[:4]), expected, rtol=1e-10)


def test_goal_in_the_middle_keeps_the_order_of_the_other_states():
    P, R = _toolbox_model(0, goal=1)
    ssp = from_mdptoolbox(P, R, goal=[1])
    assert ssp.meta["mdp_states"] == [0, 2, 3, 4]
    assert np.allclose(ssp.P[1, 2, :4], P[2, 2, [0, 2, 3, 4]])
    assert np.allclose(ssp.P[:, :, 4], P[:, [0, 2, 3, 4], 1].T)


def test_every_reward_layout_gives_the_same_costs():
    P, R = _toolbox_model(1)
    by_pair = from_mdptoolbox(P, R, goal=4)
    R_transition = np.broadcast_to(R.T[:, :, None], P.shape).copy()
    assert np.allclose(from_mdptoolbox(P, R_transition, goal=4).costs, by_pair.costs, rtol=1e-14)
    R_state = R[:, 0]
    assert np.array_equal(from_mdptoolbox(P, R_state, goal=4).costs,
                          np.repeat(-R_state[:4, None], 3, axis=1))


def test_transition_rewards_are_averaged_by_the_kernel():
    P = np.array([[[0.25, 0.75], [0.0, 1.0]]])
    R = np.array([[[-1.0, -0.2], [0.0, 0.0]]])
    ssp = from_mdptoolbox(P, R, goal=1)
    assert ssp.costs[0, 0] == pytest.approx(0.25 * 1.0 + 0.75 * 0.2)


@pytest.mark.parametrize("conversion", [{"goal": 4}, {"discount": 0.9}])
def test_sparse_matrices_give_the_dense_answer_in_csr(conversion):
    P, R = _toolbox_model(2 if "goal" in conversion else 3)
    dense = from_mdptoolbox(P, R, **conversion)
    sparse = from_mdptoolbox([sp.csr_matrix(m) for m in P], R, **conversion)
    assert sparse.is_sparse
    assert np.allclose(sparse.kernel_dense(), dense.P)


def test_discount_gives_the_discounted_values():
    P, R = _toolbox_model(3)
    gamma = 0.9
    ssp = from_mdptoolbox(P, R, discount=gamma)
    policy = np.array([0, 2, 1, 1, 0])
    P_pi = np.array([P[policy[s], s] for s in range(5)])
    r_pi = np.array([R[s, policy[s]] for s in range(5)])
    expected = -np.linalg.solve(np.eye(5) - gamma * P_pi, r_pi)
    assert np.allclose(reference.policy_values(ssp, policy), expected, rtol=1e-10)


def test_positive_rewards_are_refused_with_the_convention():
    P, R = _toolbox_model(0)
    R[2, 1] = 0.5
    with pytest.raises(CostError, match=r"state 2, action 1.*\[-1, 0\]"):
        from_mdptoolbox(P, R, goal=4)


def test_a_goal_that_is_not_absorbing_is_refused():
    P, R = _toolbox_model(0)
    with pytest.raises(ParameterError, match="goal state 3 must be absorbing"):
        from_mdptoolbox(P, R, goal=3)


@pytest.mark.parametrize("options", [{}, {"goal": 4, "discount": 0.9}])
def test_goal_or_discount_exactly_one(options):
    P, R = _toolbox_model(0)
    with pytest.raises(ParameterError, match="exactly one"):
        from_mdptoolbox(P, R, **options)


@pytest.mark.parametrize("R_shape", [(4,), (5, 2), (3, 5, 4)])
def test_reward_shapes_are_checked(R_shape):
    P, _ = _toolbox_model(0)
    with pytest.raises(ShapeError, match="`R` must have shape"):
        from_mdptoolbox(P, np.zeros(R_shape), goal=4)


def test_kernel_shape_is_checked():
    with pytest.raises(ShapeError, match=r"\(A, S, S\)"):
        from_mdptoolbox(np.zeros((2, 3, 4)), np.zeros(3), goal=0)


def test_the_toolbox_layout_given_to_ssp_points_at_the_conversion():
    P, R = _toolbox_model(0)
    with pytest.raises(ShapeError, match="from_mdptoolbox"):
        reference.SSP(P, -R)
    with pytest.raises(ShapeError, match="from_mdptoolbox"):
        reference.SSP.from_discounted(P, -R, 0.9)


def test_ssp_from_table_reads_a_gymnasium_environment():
    gymnasium = pytest.importorskip("gymnasium")
    from sspgm.gym_adapter import ssp_from_table

    env = gymnasium.make("FrozenLake-v1", is_slippery=True)
    options = dict(transition_cost=lambda reward, to_goal: 1.0, start_states=[0],
                   is_goal=lambda state, reward: reward > 0, restart=0)
    from_env = ssp_from_table(env, **options)
    from_table = ssp_from_table(env.unwrapped.P, **options)
    assert np.array_equal(from_env.P, from_table.P)
    assert np.array_equal(from_env.costs, from_table.costs)


def test_ssp_from_table_refuses_an_environment_without_a_table():
    gymnasium = pytest.importorskip("gymnasium")
    from sspgm.gym_adapter import ssp_from_table

    env = gymnasium.make("CartPole-v1")
    with pytest.raises(ParameterError, match="CartPole-v1.*no transition table"):
        ssp_from_table(env, transition_cost=lambda r, g: 1.0, start_states=[0])


def test_ssp_from_table_refuses_other_objects():
    from sspgm.gym_adapter import ssp_from_table

    with pytest.raises(ParameterError, match="`table` must be a transition table"):
        ssp_from_table(42, transition_cost=lambda r, g: 1.0, start_states=[0])
