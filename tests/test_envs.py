"""Instance builders: structure, argument checks, and closed-form values against exact solvers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference

GRID_CELLS = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3))
"""Free non-goal cells of the default 3 x 4 grid (goal (0, 3), wall (1, 1)), row-major."""

GRID_DISTANCES = (3, 2, 1, 4, 2, 1, 5, 4, 3, 2)
"""Shortest-path distances to the goal of the cells of GRID_CELLS, counted by hand."""


@pytest.mark.shared
def test_gridworld_numbers_free_cells_row_major(backend):
    ssp = backend.gridworld()
    assert (ssp.n_states, ssp.n_actions, ssp.name) == (10, 4, "gridworld")
    assert ssp.meta["state_to_cell"] == GRID_CELLS
    assert ssp.meta["cell_to_state"] == {cell: s for s, cell in enumerate(GRID_CELLS)}
    assert (ssp.meta["rows"], ssp.meta["cols"], ssp.meta["goal"]) == (3, 4, (0, 3))
    assert ssp.meta["walls"] == ((1, 1),)
    assert np.array_equal(ssp.costs, np.ones((10, 4)))


@pytest.mark.shared
@pytest.mark.parametrize(
    ("state", "action", "expected"),
    [
        (6, 0, {3: 0.8, 7: 0.1, 6: 0.1}),
        (2, 1, {10: 0.8, 2: 0.1, 4: 0.1}),
        (3, 1, {3: 0.8, 0: 0.1, 6: 0.1}),
        (0, 3, {0: 0.9, 3: 0.1}),
        (8, 2, {8: 0.8, 9: 0.1, 7: 0.1}),
    ],
    ids=["bottom-left-up", "next-to-goal-right", "into-wall", "corner-left", "bottom-down"],
)
def test_gridworld_slip_semantics(backend, state, action, expected):
    ssp = backend.gridworld()
    row = np.zeros(11)
    for target, prob in expected.items():
        row[target] += prob
    assert np.allclose(ssp.kernel_dense()[state, action], row, rtol=0, atol=1e-15)


@pytest.mark.shared
def test_deterministic_gridworld_values_are_distances(backend):
    ssp = backend.gridworld(success=1.0, cost=0.5)
    assert ssp.branching == 1
    values = backend.optimal_values(ssp).values
    assert np.allclose(values, 0.5 * np.array(GRID_DISTANCES), rtol=1e-9)


def test_gridworld_values_agree_between_lp_policy_and_value_iteration(backend):
    ssp = backend.gridworld()
    lp = backend.optimal_values(ssp)
    pi = backend.policy_iteration(ssp)
    vi = backend.value_iteration(ssp, tol=1e-12)
    assert pi.converged and vi.converged
    assert np.allclose(lp.values, pi.values, rtol=1e-9)
    assert np.allclose(lp.values, vi.values, rtol=1e-9)
    assert np.allclose(backend.policy_values(ssp, lp.policy), lp.values, rtol=1e-9)


@pytest.mark.shared
def test_gridworld_values_satisfy_the_bellman_equation(backend):
    ssp = backend.gridworld(success=0.7, walls=((1, 1), (2, 2)))
    values = backend.optimal_values(ssp).values
    P = ssp.kernel_dense()
    q = ssp.costs + P[:, :, :-1] @ values
    assert np.allclose(q.min(axis=1), values, rtol=1e-9)
    assert (values >= 1).all()


@pytest.mark.shared
def test_gridworld_records_start(backend):
    ssp = backend.gridworld(start=(2, 0))
    assert ssp.meta["start"] == (2, 0)
    assert ssp.meta["start_state"] == 6
    assert backend.gridworld().meta["start_state"] is None


@pytest.mark.shared
def test_walled_in_cell_is_named(backend):
    with pytest.raises(backend.NoProperPolicyError, match=r"cell \(2, 2\)"):
        backend.gridworld(rows=3, cols=3, goal=(0, 0), walls=((1, 2), (2, 1)))


@pytest.mark.shared
@pytest.mark.parametrize("n_actions", [1, 2, 3])
@pytest.mark.parametrize("p", [1.0, 0.5, 0.25])
def test_chain_values_and_diameter(backend, p, n_actions):
    n = 6
    ssp = backend.chain(n=n, p=p, n_actions=n_actions)
    expected = (n - np.arange(n)) / p
    best = backend.optimal_values(ssp)
    assert np.allclose(best.values, expected, rtol=1e-9)
    assert np.array_equal(best.policy, np.zeros(n))
    assert np.allclose(backend.policy_values(ssp, np.zeros(n, dtype=int)), expected, rtol=1e-9)
    assert backend.diameter(ssp).D == pytest.approx(n / p, rel=1e-9)
    assert np.allclose(ssp.meta["V_star"], expected)
    assert ssp.meta["D"] == ssp.meta["B_star"] == n / p
    assert ssp.branching == (1 if p == 1.0 else 2)


@pytest.mark.shared
def test_chain_backward_actions_are_improper_at_the_start(backend):
    ssp = backend.chain(n=3, n_actions=2)
    assert not backend.is_proper(ssp, [1, 0, 0])
    assert np.isinf(backend.policy_values(ssp, [1, 0, 0])[0])
    assert backend.policy_values(ssp, [0, 1, 0]).tolist() == [np.inf, np.inf, 1.0]


@pytest.mark.shared
@pytest.mark.parametrize(("cost", "q"), [(0.1, 0.5), (0.8, 0.5), (0.0, 0.3), (0.5, 0.5)])
def test_tradeoff_values(backend, cost, q):
    ssp = backend.tradeoff(cost=cost, q=q)
    expected = min(1.0, cost / q)
    assert backend.optimal_values(ssp).values[0] == pytest.approx(expected, abs=1e-12)
    assert backend.b_star(ssp) == pytest.approx(expected, abs=1e-12)
    assert backend.diameter(ssp).D == pytest.approx(1.0)
    assert backend.hitting_times(ssp, [1])[0] == pytest.approx(1 / q)
    assert ssp.meta["B_star"] == pytest.approx(expected)


def test_zero_cost_loop_improper_policy_beats_every_proper_one(backend):
    ssp = backend.zero_cost_loop()
    assert not backend.is_proper(ssp, [0])
    assert backend.policy_values(ssp, [0])[0] == 0.0
    assert backend.policy_values(ssp, [1])[0] == 1.0
    best = backend.optimal_values(ssp)
    assert best.values[0] == pytest.approx(1.0)
    assert best.policy.tolist() == [1]
    assert backend.value_iteration(ssp).values[0] == 0.0
    assert ssp.meta["V_star"].tolist() == [1.0] and ssp.meta["V_improper"].tolist() == [0.0]


@pytest.mark.shared
def test_theta_example_restricted_values(backend):
    ssp = backend.theta_example()
    assert backend.diameter(ssp).D == pytest.approx(1.0)
    assert backend.hitting_times(ssp, [1])[0] == pytest.approx(20.0)
    assert backend.optimal_values(ssp).values[0] == pytest.approx(0.0, abs=1e-12)
    assert backend.restricted_optimal_values(ssp, 5.0).values[0] == pytest.approx(0.5)
    assert backend.restricted_optimal_values(ssp, 20.0).values[0] == pytest.approx(0.0, abs=1e-12)
    assert ssp.meta["V_star_theta"].tolist() == [0.5] and ssp.meta["theta"] == 5.0


def _support_sizes(ssp):
    return np.diff(ssp.kernel_csr().indptr)


@pytest.mark.shared
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_garnet_structure(backend, sparse):
    S, A, k, c_min = 30, 3, 4, 0.2
    ssp = backend.garnet(S, A, k, c_min=c_min, seed=5, sparse=sparse)
    assert ssp.is_sparse == sparse
    assert (_support_sizes(ssp) == k).all()
    assert ssp.branching == k
    assert (ssp.costs >= c_min).all() and (ssp.costs <= 1).all()
    for s in range(S):
        assert s + 1 in ssp.row(s, 0)[0]
    assert backend.is_proper(ssp, np.zeros(S, dtype=int))


@pytest.mark.shared
def test_garnet_is_deterministic_and_dense_equals_sparse(backend):
    dense = backend.garnet(40, 2, 3, seed=11)
    again = backend.garnet(40, 2, 3, seed=11)
    sparse = backend.garnet(40, 2, 3, seed=11, sparse=True)
    other = backend.garnet(40, 2, 3, seed=12)
    assert np.array_equal(dense.P, again.P) and np.array_equal(dense.costs, again.costs)
    assert np.array_equal(dense.P, sparse.kernel_dense())
    assert np.array_equal(dense.costs, sparse.costs)
    assert not np.array_equal(dense.P, other.P)


@settings(max_examples=40, deadline=None)
@given(
    S=st.integers(1, 8), A=st.integers(1, 3), data=st.data(), seed=st.integers(0, 2**32 - 1)
)
def test_garnet_supports_have_exact_size(S, A, data, seed):
    k = data.draw(st.integers(1, S + 1))
    ssp = reference.garnet(S, A, k, seed=seed, sparse=data.draw(st.booleans()))
    assert (_support_sizes(ssp) == k).all()
    assert np.allclose(ssp.kernel_csr().sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert reference.is_proper(ssp, np.zeros(S, dtype=int))


@pytest.mark.shared
def test_garnet_full_support_uses_every_next_state(backend):
    ssp = backend.garnet(5, 2, 6, seed=3)
    assert (ssp.kernel_dense() > 0).all()


@pytest.mark.shared
def test_trap_closed_form(backend):
    r, p_trap, shortcut = 0.05, 0.5, 0.5
    ssp = backend.trap(r=r, p_trap=p_trap, shortcut_cost=shortcut)
    assert ssp.c_min > 0
    best = backend.optimal_values(ssp)
    assert np.allclose(best.values, [min(1.0, shortcut + p_trap / r), 1 / r], rtol=1e-9)
    assert best.policy.tolist() == [1, 1]
    assert backend.diameter(ssp).D == pytest.approx(1 / r)
    assert not backend.is_proper(ssp, [1, 0])
    assert backend.policy_values(ssp, [1, 0]).tolist() == [1.0, np.inf]


@pytest.mark.shared
def test_trap_with_cheap_shortcut_prefers_it(backend):
    ssp = backend.trap(r=0.5, p_trap=0.1, shortcut_cost=0.2)
    best = backend.optimal_values(ssp)
    assert best.values[0] == pytest.approx(0.2 + 0.1 / 0.5)
    assert best.policy.tolist() == [0, 1]


def _empirical(ssp, n, rng, backend):
    """Plug-in model from ``n`` multinomial samples of every pair."""
    P = ssp.kernel_dense()
    counts = np.array([[rng.multinomial(n, P[s, a]) for a in range(ssp.n_actions)]
                       for s in range(ssp.n_states)])
    return backend.SSP(counts / n, ssp.costs, require_proper=False), counts


@pytest.mark.statistical
def test_plain_vi_on_few_samples_returns_an_improper_policy_for_some_seeds(backend):
    ssp = backend.trap()
    improper = 0
    for seed in range(30):
        model, counts = _empirical(ssp, 20, np.random.default_rng(seed), backend)
        vi = backend.value_iteration(model, max_iter=500)
        exit_unseen = counts[1, 1, 2] == 0
        assert (vi.policy[1] == 0) == exit_unseen
        assert backend.is_proper(ssp, vi.policy) != exit_unseen
        assert vi.converged != exit_unseen
        improper += exit_unseen
    assert 0 < improper < 30


@pytest.mark.shared
@pytest.mark.parametrize(("S", "A", "gamma"), [(4, 2, 0.9), (6, 3, 0.5)])
def test_random_discounted_values_are_discounted_values(backend, S, A, gamma):
    ssp = backend.random_discounted(S, A, gamma=gamma, seed=2)
    P = ssp.kernel_dense()[:, :, :S] / gamma
    assert np.allclose(ssp.kernel_dense()[:, :, S], 1 - gamma)
    values = np.zeros(S)
    for _ in range(3000):
        values = (ssp.costs + gamma * P @ values).min(axis=1)
    assert np.allclose(backend.optimal_values(ssp).values, values, rtol=1e-9)
    assert backend.diameter(ssp).D == pytest.approx(1 / (1 - gamma))
    assert ssp.meta["gamma"] == gamma


@pytest.mark.shared
@pytest.mark.parametrize(
    ("builder", "kwargs", "error", "pattern"),
    [
        ("gridworld", {"success": 1.5}, "ParameterError", "`success`"),
        ("gridworld", {"cost": -0.1}, "ParameterError", "`cost`"),
        ("gridworld", {"rows": 0}, "ParameterError", "`rows`"),
        ("gridworld", {"goal": (1, 1)}, "ParameterError", "`goal` .* wall"),
        ("gridworld", {"goal": (3, 0)}, "ParameterError", "`goal` must lie in the 3 x 4 grid"),
        ("gridworld", {"goal": 3}, "ParameterError", r"`goal` must be a \(row, col\) pair"),
        ("gridworld", {"walls": ((5, 5),)}, "ParameterError", "`walls` must lie in"),
        ("gridworld", {"start": (1, 1)}, "ParameterError", "`start` must be a free"),
        ("gridworld", {"rows": 1, "cols": 1, "goal": (0, 0), "walls": ()}, "ParameterError",
         "no free non-goal cell"),
        ("chain", {"p": 0.0}, "ParameterError", "`p`"),
        ("chain", {"n": 0}, "ParameterError", "`n`"),
        ("chain", {"n_actions": 1.5}, "ParameterError", "`n_actions` must be an integer"),
        ("tradeoff", {"q": 0.0}, "ParameterError", "`q`"),
        ("tradeoff", {"cost": 2.0}, "ParameterError", "`cost`"),
        ("theta_example", {"p_goal": 1.5}, "ParameterError", "`p_goal`"),
        ("theta_example", {"exit_cost": -1.0}, "ParameterError", "`exit_cost`"),
        ("garnet", {"n_states": 3, "n_actions": 2, "branching": 5}, "ParameterError",
         r"`branching` must be at most S\+1 = 4"),
        ("garnet", {"n_states": 3, "n_actions": 2, "branching": 0}, "ParameterError",
         "`branching`"),
        ("garnet", {"n_states": 3, "n_actions": 2, "branching": 2, "c_min": 1.5},
         "ParameterError", "`c_min`"),
        ("garnet", {"n_states": 3, "n_actions": 2, "branching": 2, "seed": -1},
         "ParameterError", "`seed`"),
        ("garnet", {"n_states": 3, "n_actions": 2, "branching": 2, "sparse": "yes"},
         "ParameterError", "`sparse`"),
        ("trap", {"r": 0.0}, "ParameterError", "`r`"),
        ("trap", {"shortcut_cost": 0.0}, "ParameterError", "`shortcut_cost`"),
        ("trap", {"p_trap": 1.2}, "ParameterError", "`p_trap`"),
        ("random_discounted", {"n_states": 3, "n_actions": 2, "gamma": 1.0}, "ParameterError",
         "`gamma`"),
        ("random_discounted", {"n_states": 0, "n_actions": 2}, "ParameterError", "`n_states`"),
    ],
)
def test_builder_arguments_are_checked(backend, builder, kwargs, error, pattern):
    with pytest.raises(getattr(backend, error), match=pattern):
        getattr(backend, builder)(**kwargs)


@pytest.mark.shared
@pytest.mark.parametrize(
    "builder", ["chain", "tradeoff", "zero_cost_loop", "theta_example", "trap"]
)
def test_meta_closed_forms_match_exact_solvers(backend, builder):
    ssp = getattr(backend, builder)()
    best = backend.optimal_values(ssp)
    assert np.allclose(best.values, ssp.meta["V_star"], rtol=1e-9, atol=1e-12)
    assert np.allclose(backend.policy_values(ssp, ssp.meta["optimal_policy"]),
                       ssp.meta["V_star"], rtol=1e-9, atol=1e-12)
    assert backend.b_star(ssp) == pytest.approx(ssp.meta["B_star"], abs=1e-12)
    assert backend.diameter(ssp).D == pytest.approx(ssp.meta["D"], rel=1e-9)
    assert ssp.name == builder
