"""Allocation (eq. 6), SEARCH (Alg. 2), Algs. 1 and 3, the diameter estimate (Alg. 4), plug-in."""

import math
import warnings

import numpy as np
import pytest

from reference.errors import NotCertifiedWarning


def _same_result(a, b):
    assert np.array_equal(a.policy, b.policy)
    assert np.array_equal(a.v_tilde, b.v_tilde)
    assert np.array_equal(a.calls, b.calls)
    assert a.n_calls == b.n_calls
    assert a.history == b.history
    assert a.Delta_final == b.Delta_final and a.D_hat == b.D_hat and a.nu == b.nu


@pytest.mark.shared
def test_allocation_is_eq_6(backend):
    X, y, eps, delta, S, A, G = 4.0, 0.5, 0.25, 0.1, 3, 2, 2
    l1 = math.log(X * S * A / (y * eps * delta))
    l2 = math.log(X * S * A / (y * delta))
    expected = X**3 * G / (y * eps**2) * l1 + X**2 * S / (y * eps) * l1 + X**2 * G / y**2 * l2**2
    phi = backend.allocation_function
    assert phi(X, y, eps, delta, S, A, G) == pytest.approx(expected, rel=1e-12)
    assert phi(X, y, eps, delta, S, A, G, alpha=3.0) == pytest.approx(3 * expected)
    assert phi(2 * X, y, eps, delta, S, A, G) > expected


@pytest.mark.shared
def test_top_up_reaches_the_Gamma_hat_fixpoint(backend):
    ssp = backend.garnet(6, 2, 4, seed=3)
    store = backend.SampleStore(6, 2)
    model = backend.TabularGenerativeModel(ssp)
    target, Gamma_hat = backend.top_up_to_fixpoint(
        model, store, np.random.default_rng(0), 1.0, 0.5, 1.0, 0.1
    )
    assert Gamma_hat == store.Gamma_hat
    assert target == math.ceil(backend.allocation_function(1.0, 0.5, 1.0, 0.1, 6, 2, Gamma_hat))
    assert store.n_pair.min() >= target
    assert model.n_calls == store.n_samples


@pytest.mark.statistical
def test_trap_plug_in_fails_where_solve_does_not(backend):
    ssp = backend.trap(r=0.3)
    plug = [backend.plug_in(ssp, ssp.costs, 5, seed=seed) for seed in range(20)]
    improper = [not backend.is_proper(ssp, out.policy) for out in plug]
    assert any(improper)
    assert all(not out.converged for out, bad in zip(plug, improper) if bad)
    for seed in range(30):
        res = backend.solve(ssp, ssp.costs, 0.5, 0.1, alpha=10.0, seed=seed)
        assert backend.is_proper(ssp, res.policy)


def _alg1_cases(backend):
    return [
        (backend.chain(5, 0.8), 1.0),
        (backend.tradeoff(), 1.0),
        (backend.garnet(5, 2, 3, seed=1), 1.0),
        (backend.trap(r=0.3), 10.0),
    ]


@pytest.mark.statistical
def test_alg1_success_rate_over_seeds(backend):
    """Thm. 1 over 50 seeds per instance, at an eps where every run is certified on its own
    samples (an uninformed run can succeed by the tie-break alone, proving nothing)."""
    eps, delta, n_seeds = 0.2, 0.1, 50
    for ssp, alpha in _alg1_cases(backend):
        v_star = backend.optimal_values(ssp).values
        successes = 0
        for seed in range(n_seeds):
            res = backend.solve(ssp, ssp.costs, eps, delta, alpha=alpha, seed=seed)
            assert res.certificate.meets(eps), (ssp.name, seed)
            error = np.max(np.abs(backend.policy_values(ssp, res.policy) - v_star))
            successes += error <= eps
        assert successes / n_seeds >= 1 - delta, (ssp.name, successes)


@pytest.mark.statistical
def test_alg3_one_sided_guarantee_on_zero_cost_instances(backend):
    eps, delta, theta = 0.5, 0.1, 5.0
    for ssp in [backend.theta_example(), backend.zero_cost_loop()]:
        v_theta = backend.restricted_optimal_values(ssp, theta).values
        good = 0
        for seed in range(20):
            res = backend.solve(ssp, ssp.costs, eps, delta, theta=theta, alpha=10.0, seed=seed)
            assert res.nu == pytest.approx(eps / (2 * theta * res.D_hat))
            good += np.all(backend.policy_values(ssp, res.policy) <= v_theta + eps)
        assert good / 20 >= 1 - delta


@pytest.mark.statistical
def test_diameter_estimate_within_lemma_9(backend):
    eps = 0.5
    factor = (1 + 2 * eps * (1 + eps)) * (1 + eps)
    for ssp in [backend.chain(4, 0.7), backend.tradeoff(), backend.garnet(5, 2, 3, seed=4),
                backend.trap(r=0.3), backend.zero_cost_loop()]:
        D = backend.diameter(ssp).D
        for seed in range(5):
            est = backend.estimate_diameter(ssp, eps, 0.1, seed=seed)
            assert D <= est.D_hat <= factor * D * (1 + 1e-12)
            assert est.D_hat >= est.D_listing
            assert est.n_calls == int(est.calls.sum())


def test_same_seed_same_result(backend):
    ssp = backend.garnet(5, 2, 3, seed=0)
    a = backend.solve(ssp, ssp.costs, 0.5, 0.1, theta=2.0, seed=7)
    b = backend.solve(ssp, ssp.costs, 0.5, 0.1, theta=2.0, seed=7)
    _same_result(a, b)
    c = backend.solve(ssp, ssp.costs, 0.5, 0.1, theta=2.0, seed=8)
    assert not np.array_equal(a.calls, c.calls) or not np.array_equal(a.v_tilde, c.v_tilde)


class _Stop(Exception):
    pass


def _stop_after(k):
    seen = []

    def callback(round_):
        seen.append(round_)
        if len(seen) == k:
            raise _Stop

    return callback


@pytest.mark.parametrize("theta", [None, 2.0])
def test_resume_equals_uninterrupted(backend, tmp_path, theta):
    ssp = backend.trap(r=0.3)
    kwargs = dict(theta=theta, alpha=10.0, seed=3)
    full = backend.solve(ssp, ssp.costs, 0.5, 0.1, **kwargs)
    assert len(full.history) >= 3
    for k in range(1, len(full.history) + 1):
        path = tmp_path / f"run-{k}.ckpt"
        with pytest.raises(_Stop):
            backend.solve(ssp, ssp.costs, 0.5, 0.1, callback=_stop_after(k), checkpoint=path,
                          **kwargs)
        resumed = backend.solve(ssp, ssp.costs, 0.5, 0.1, checkpoint=path, **kwargs)
        _same_result(resumed, full)


def test_checkpoint_of_another_run_is_refused(backend, tmp_path):
    ssp = backend.tradeoff()
    path = tmp_path / "run.ckpt"
    backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=0, checkpoint=path)
    with pytest.raises(backend.ParameterError, match="eps = 0.5, this call has eps = 0.25"):
        backend.solve(ssp, ssp.costs, 0.25, 0.1, seed=0, checkpoint=path)
    with pytest.raises(backend.ParameterError, match="seed = 0, this call has seed = 1"):
        backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=np.int64(1), checkpoint=path)
    resumed = backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=np.int64(0), checkpoint=path)
    _same_result(resumed, backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=0))


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
def test_simulator_model_counts_every_call(backend):
    ssp = backend.chain(3, 0.8)

    def step(s, a, rng):
        support, probs = ssp.row(s, a)
        return int(rng.choice(support, p=probs))

    model = backend.SimulatorGenerativeModel(step, ssp.n_states, ssp.n_actions)
    res = backend.solve(model, ssp.costs, 1.0, 0.1, seed=0)
    assert model.n_calls == res.n_calls == int(res.calls.sum())
    assert np.array_equal(model.calls, res.calls)
    assert backend.is_proper(ssp, res.policy)


def test_history_records_each_round(backend):
    ssp = backend.trap(r=0.3)
    res = backend.solve(ssp, ssp.costs, 0.5, 0.1, alpha=10.0, seed=1)
    scales = [r.scale for r in res.history]
    assert scales == [2.0**i for i in range(len(scales))]
    assert res.Delta_final == scales[-1]
    assert all(r.v_tilde_max > r.scale for r in res.history[:-1])
    assert res.history[-1].v_tilde_max <= res.Delta_final
    assert np.max(res.v_tilde) == res.history[-1].v_tilde_max
    assert [r.n_calls for r in res.history] == sorted(r.n_calls for r in res.history)
    assert res.history[-1].n_calls == res.n_calls
    for r in res.history:
        phi = backend.allocation_function(r.scale, ssp.c_min, 0.5, 0.1, 2, 2, r.Gamma_hat, 10.0)
        assert r.target == math.ceil(phi)


def test_alg1_refuses_zero_cost_and_points_to_theta(backend):
    ssp = backend.zero_cost_loop()
    with pytest.raises(backend.ParameterError, match="theta"):
        backend.solve(ssp, ssp.costs, 0.5, 0.1)


def test_non_converged_evi_raises(backend):
    ssp = backend.trap(r=0.3)
    with pytest.raises(backend.ConvergenceError, match="max_iter"):
        backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=0, max_iter=1)


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        (dict(eps=0.0), "ParameterError", r"`eps` must lie in \(0, 1\]; got 0\.0"),
        (dict(eps=1.5), "ParameterError", r"`eps` must lie in \(0, 1\]; got 1\.5"),
        (dict(eps=np.nan), "ParameterError", r"`eps` must lie in \(0, 1\]; got nan"),
        (dict(eps="0.1"), "ParameterError", r"`eps` must be a real number; got '0\.1'"),
        (dict(delta=0.0), "ParameterError", r"`delta` must lie in \(0, 1\); got 0\.0"),
        (dict(delta=1.0), "ParameterError", r"`delta` must lie in \(0, 1\); got 1\.0"),
        (dict(theta=0.5), "ParameterError", r"`theta` must lie in \[1, inf\); got 0\.5"),
        (dict(theta=np.nan), "ParameterError", r"`theta` must lie in \[1, inf\); got nan"),
        (dict(theta=np.inf), "ParameterError", r"`theta` must lie in \[1, inf\); got inf"),
        (dict(alpha=0.0), "ParameterError", r"`alpha` must lie in \(0, inf\); got 0\.0"),
        (dict(alpha=-1.0), "ParameterError", r"`alpha` must lie in \(0, inf\); got -1\.0"),
        (dict(alpha=np.inf), "ParameterError", r"`alpha` must lie in \(0, inf\); got inf"),
        (dict(max_iter=0), "ParameterError", r"`max_iter` must be an integer >= 1; got 0"),
        (dict(seed=-3), "ParameterError", r"`seed` must be a non-negative integer; got -3"),
        (dict(costs=np.ones((2, 3))), "ShapeError",
         r"`costs` must have shape \(S, A\) = \(2, 2\), the sizes of `model`; got \(2, 3\)"),
        (dict(costs=np.full((2, 2), 2.0)), "CostError",
         r"`costs` must lie in \[0, 1\]; got costs\[0, 0\] = 2\.0"),
        (dict(costs=[[0.5, 1.0], [np.inf, 1.0]]), "NotFiniteError",
         r"`costs` must be finite; got inf at index \(1, 0\)"),
    ],
)
def test_bad_input(backend, kwargs, error, pattern):
    ssp = backend.trap(r=0.3)
    args = dict(costs=ssp.costs, eps=0.5, delta=0.1)
    args.update(kwargs)
    with pytest.raises(getattr(backend, error), match=pattern) as info:
        backend.solve(ssp, **args)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda b, m: b.search(m, m.costs, 1.5, 0.1), r"`eps` must lie in \(0, 1\]"),
        (lambda b, m: b.search(m, np.zeros((2, 2)), 0.5, 0.1),
         r"`costs` must be positive for SEARCH \(iota = min c' > 0\); got min 0\.0"),
        (lambda b, m: b.estimate_diameter(m, 0.5, 1.5), r"`delta` must lie in \(0, 1\)"),
        (lambda b, m: b.plug_in(m, m.costs, 0), r"`n_per_pair` must be an integer >= 1; got 0"),
        (lambda b, m: b.plug_in(m, m.costs, 5, tol=0.0), r"`tol` must lie in \(0, inf\)"),
    ],
)
def test_bad_input_of_the_other_entry_points(backend, call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(backend, backend.trap(r=0.3))


def test_model_sizes_must_match_costs(backend):
    ssp = backend.chain(3, 0.8)
    model = backend.TabularGenerativeModel(backend.trap(r=0.3))
    pattern = r"`costs` must have shape \(S, A\) = \(2, 2\), the sizes of `model`; got \(3, 2\)"
    with pytest.raises(backend.ShapeError, match=pattern):
        backend.solve(model, ssp.costs, 0.5, 0.1)
    with pytest.raises(backend.ParameterError, match="`model` must be an SSP or a generative"):
        backend.solve(object(), ssp.costs, 0.5, 0.1)


def test_uninformed_stops_are_not_certified(backend):
    """With alpha = 1 and eps = 0.5 the first round's boxes all cover [0, 1] on the gridworld:
    SEARCH stops at once on an uninformed policy, and its certificate, computed on the run's
    own samples, says so; with alpha = 10 the run is certified."""
    ssp = backend.gridworld()
    with pytest.warns(NotCertifiedWarning, match="not certified"):
        coarse = backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=0)
    assert "not certified" in coarse.message and coarse.Delta_final == 1.0
    assert not coarse.certificate.meets(0.5) and coarse.certified is False
    value = backend.policy_values(ssp, coarse.policy)
    assert (coarse.certificate.upper >= value).all()
    informed = backend.solve(ssp, ssp.costs, 0.5, 0.1, alpha=10.0, seed=0)
    assert informed.certificate.meets(0.5) and "not certified" not in informed.message
    assert informed.certified is True
    exact = backend.optimal_values(ssp).values
    error = np.abs(backend.policy_values(ssp, informed.policy) - exact)
    assert error.max() <= informed.certificate.gap <= 0.5


def test_certificate_separates_uninformed_stops_from_true_one_step_exits(backend):
    """On `tradeoff(cost=0.9)` the fast action (cost 1) truly reaches the goal in one step and
    is optimal; the slow one (cost 0.9, goal w.p. 1/2) costs 1.8. With alpha = 1 and eps = 0.2
    SEARCH stops on the slow action, uninformed (Thm. 1 fails, and the certificate says so).
    With alpha = 10 the fast action is returned and certified."""
    ssp = backend.tradeoff(cost=0.9, q=0.5)
    v_star = backend.optimal_values(ssp).values
    with pytest.warns(NotCertifiedWarning, match="not certified"):
        coarse = backend.solve(ssp, ssp.costs, 0.2, 0.1, seed=0)
    assert coarse.policy[0] == 1 and not coarse.certificate.meets(0.2)
    assert backend.policy_values(ssp, coarse.policy)[0] - v_star[0] > 0.2
    informed = backend.solve(ssp, ssp.costs, 0.2, 0.1, alpha=10.0, seed=0)
    assert informed.policy[0] == 0 and informed.certificate.meets(0.2)
    assert informed.certificate.lower[0] <= v_star[0] <= informed.certificate.upper[0]


def test_one_true_exit_does_not_hide_an_uninformed_stop(backend):
    """On the deterministic chain only the last state truly reaches the goal in one step; when
    EVI sends every state there at Delta = 1 the run is not certified."""
    ssp = backend.chain(4)
    with pytest.warns(NotCertifiedWarning, match="not certified"):
        res = backend.solve(ssp, ssp.costs, 0.2, 0.2, seed=0)
    kernel = res.p_tilde.toarray()
    assert np.all(kernel[:, -1] == 1.0) and res.Delta_final == 1.0
    assert not res.certificate.meets(0.2)


def test_alg3_is_certified_at_half_eps_on_the_perturbed_costs(backend):
    """Alg. 3 runs SEARCH at eps / 2 on max(c, nu) (App. E): ``certified`` tests the
    certificate of those costs at eps / 2, and says the same as the warning."""
    ssp = backend.theta_example()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = backend.solve(ssp, ssp.costs, 0.5, 0.1, theta=5.0, seed=0)
    warned = any(issubclass(w.category, NotCertifiedWarning) for w in caught)
    assert res.certified is res.certificate.meets(0.25) is (not warned)
