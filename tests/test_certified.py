"""Certificates and the certified solver: never a certified wrong answer, checked exactly."""

import numpy as np
import pytest

N_SEEDS = 6
"""Seeds per instance of the statistical test (the sweep over 100 seeds is in the note)."""


def _one_state_trap(backend):
    """One state: a cost-0.5 self-loop reaching the goal w.p. 0.01, a cost-1 exit w.p. 0.05."""
    P = np.array([[[0.99, 0.01], [0.95, 0.05]]])
    return backend.SSP(P, np.array([[0.5, 1.0]]), name="one-state trap")


def _instances(backend):
    """Small instances with an accuracy each (the one-state trap has V* = 20)."""
    return [
        (backend.tradeoff(), 0.2),
        (backend.chain(4, 0.7), 0.5),
        (backend.garnet(4, 2, 2, seed=1), 0.2),
        (backend.trap(r=0.3), 0.5),
        (_one_state_trap(backend), 1.0),
    ]


def _exact_checks(backend, ssp, res, eps):
    exact = backend.optimal_values(ssp).values
    value = backend.policy_values(ssp, res.policy)
    cert = res.certificate
    assert (cert.lower <= exact + 1e-12).all()
    assert (cert.upper >= value - 1e-12).all()
    assert np.max(value - exact) <= eps


@pytest.mark.statistical
def test_certified_runs_are_never_wrong(backend):
    for ssp, eps in _instances(backend):
        for seed in range(N_SEEDS):
            res = backend.solve_certified(ssp, ssp.costs, eps, 0.1, seed=seed)
            assert res.certified and res.certificate.gap <= eps
            _exact_checks(backend, ssp, res, eps)


def test_gridworld_certifies_with_far_fewer_calls_than_alg1(backend):
    ssp = backend.gridworld()
    res = backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=0)
    assert res.certified
    _exact_checks(backend, ssp, res, 0.5)
    alg1 = backend.solve(ssp, ssp.costs, 0.5, 0.1, alpha=10, seed=0)
    assert res.n_calls < alg1.n_calls / 5
    rounds = res.history
    assert [r.n_calls for r in rounds] == sorted(r.n_calls for r in rounds)
    assert rounds[-1].gap == res.certificate.gap and rounds[-1].n_calls == res.n_calls
    assert res.calls.sum() == res.n_calls


@pytest.mark.parametrize("sampling", ["adaptive", "uniform"])
@pytest.mark.parametrize("kind", ["kl", "bernstein"])
def test_each_kind_and_sampling_certifies(backend, kind, sampling):
    ssp = backend.chain(4, 0.7)
    res = backend.solve_certified(ssp, ssp.costs, 0.3, 0.1, kind=kind, sampling=sampling,
                                  seed=2)
    assert res.certified and res.params["kind"] == kind and res.params["sampling"] == sampling
    _exact_checks(backend, ssp, res, 0.3)
    if sampling == "uniform":
        assert res.calls.min() >= res.calls.max() - 1


def test_relative_certificate(backend):
    ssp = backend.gridworld()
    res = backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, relative=True, seed=1)
    cert = res.certificate
    assert res.certified and (cert.upper <= (1 + 0.2) * cert.lower).all()
    exact = backend.optimal_values(ssp).values
    assert (backend.policy_values(ssp, res.policy) <= 1.2 * exact).all()


@pytest.mark.statistical
def test_theta_variant_is_eps_optimal_against_restricted_policies(backend):
    ssp = backend.theta_example()
    theta, eps = 5.0, 0.2
    restricted = backend.restricted_optimal_values(ssp, theta).values
    for seed in range(5):
        res = backend.solve_certified(ssp, ssp.costs, eps, 0.1, theta=theta, seed=seed)
        assert res.certified and res.nu == pytest.approx(eps / (2 * theta * res.D_hat))
        assert res.D_hat >= backend.diameter(ssp).D - 1e-12
        assert (backend.policy_values(ssp, res.policy) <= restricted + eps).all()
    alg3 = backend.solve(ssp, ssp.costs, eps, 0.1, theta=theta, alpha=10.0, seed=0)
    perturbed = backend.SSP(ssp.P, np.maximum(ssp.costs, alg3.nu))
    assert alg3.certificate.meets(eps / 2)
    assert (alg3.certificate.upper >= backend.policy_values(perturbed, alg3.policy)).all()
    assert (alg3.certificate.lower <= backend.optimal_values(perturbed).values).all()


def test_budget_returns_the_uncertified_policy_with_its_certificate(backend):
    ssp = backend.gridworld()
    budget = ssp.n_states * ssp.n_actions * 200
    with pytest.warns(backend.NotCertifiedWarning):
        res = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, budget=budget, seed=0)
    assert not res.certified and not res.converged and res.n_calls == budget
    assert res.certificate.gap > 0.1 and "not certified" in res.message
    value = backend.policy_values(ssp, res.policy)
    assert (res.certificate.upper >= value).all()


def test_checkpoint_resume_gives_the_uninterrupted_result(backend, tmp_path):
    ssp = backend.gridworld()
    whole = backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=3)

    class Stop(Exception):
        pass

    def interrupt(round_):
        if len(round_seen) == 3:
            raise Stop
        round_seen.append(round_)

    round_seen = []
    path = tmp_path / "run.npz"
    with pytest.raises(Stop):
        backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=3, checkpoint=path,
                                callback=interrupt)
    resumed = backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=3, checkpoint=path)
    assert resumed.n_calls == whole.n_calls and np.array_equal(resumed.calls, whole.calls)
    assert np.array_equal(resumed.policy, whole.policy) and resumed.history == whole.history
    assert resumed.certificate.gap == whole.certificate.gap
    with pytest.raises(backend.ParameterError, match="another run"):
        backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=3, checkpoint=path)


def test_same_seed_same_result_on_both_backends():
    import fast
    import reference

    ssp = reference.gridworld()
    a = reference.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=7)
    b = fast.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=7)
    assert a.n_calls == b.n_calls and np.array_equal(a.policy, b.policy)
    assert np.allclose(a.certificate.upper, b.certificate.upper, rtol=1e-9)


def test_coarse_alg1_answers_are_not_certified(backend, tmp_path):
    """The coarse settings where Alg. 1 returns a wrong policy with no other warning: the
    certificate of the result, on the run's own samples, says "not certified" (and equals
    certify on the samples the run saved in its checkpoint)."""
    cases = [(backend.gridworld(), 1.0, 2.0, 0), (backend.trap(), 0.5, 1.0, 5),
             (_one_state_trap(backend), 0.3, 1.0, 0)]
    for k, (ssp, eps, alpha, seed) in enumerate(cases):
        path = tmp_path / f"run{k}.npz"
        with pytest.warns(backend.NotCertifiedWarning, match="not certified"):
            res = backend.solve(ssp, ssp.costs, eps, 0.1, alpha=alpha, seed=seed,
                                checkpoint=path)
        value = backend.policy_values(ssp, res.policy)
        error = np.max(value - backend.optimal_values(ssp).values)
        assert error > eps and not res.certificate.meets(eps), ssp.name
        assert (res.certificate.upper >= value).all() and "not certified" in res.message
        counts = backend.SampleStore.load(path)[0].counts_csr()
        again = backend.certify(counts, ssp.costs, res.policy, 0.1, kind="kl", start=res.v_tilde)
        assert again.gap == res.certificate.gap


def test_certificate_of_the_optimal_policy_with_many_samples(backend):
    ssp = backend.tradeoff()
    exact = backend.optimal_values(ssp)
    store = backend.SampleStore(ssp.n_states, ssp.n_actions)
    store.top_up(backend.TabularGenerativeModel(ssp), 200_000, np.random.default_rng(0))
    policy = backend.policy_iteration(ssp).policy
    cert = backend.certify(store.counts_csr(), ssp.costs, policy, 0.1)
    assert cert.meets(0.1) and cert.gap == pytest.approx(np.max(cert.upper - cert.lower))
    assert (cert.lower <= exact.values).all() and cert.kind == "mixture" and cert.delta == 0.1
    assert cert.meets(cert.relative_gap, relative=True)


def test_certificate_of_many_samples_keeps_compact_kernels():
    # garnet(3000, 4, 3) with 5 * 10^6 samples per pair (counts N * p, rounded): the KL
    # boxes' unseen width is so small that each pour spreads over hundreds of next states,
    # whose explicit rows (12 bytes an entry) would hold 13-20 times the boxes' stored
    # entries. The policy iterations' kernels stay a third of them, and the certificate,
    # on the fast backend (the reference's numpy pours expand those hundreds of positions
    # in every Bellman check, 30 s here), brackets the exact values of the policy.
    import fast

    ssp = fast.garnet(3000, 4, 3, seed=0, sparse=True)
    counts = ssp.kernel_csr() * 5e6
    counts.data = np.round(counts.data)
    boxes = fast.confidence_boxes(counts, 0.1)
    stored = boxes.indices.nbytes + boxes.lo.nbytes + boxes.hi.nbytes
    lower = fast.optimistic_values(counts, ssp.costs, 0.1)
    upper = fast.robust_policy_values(counts, ssp.costs, lower.policy, 0.1)
    for result in (lower, upper):
        assert isinstance(result.p_bound, fast.PouredKernel)
        assert result.p_bound.nbytes <= stored / 2
        assert result.p_bound.nnz * 12 > 10 * stored
    cert = fast.certify(counts, ssp.costs, lower.policy, 0.1, kind="kl")
    value = fast.policy_values(ssp, lower.policy)
    assert cert.converged and np.isfinite(cert.upper).all() and cert.gap < 1.0
    assert (cert.lower <= value).all() and (value <= cert.upper).all()
    np.testing.assert_allclose(cert.upper, upper.values, rtol=1e-7)
    np.testing.assert_allclose(cert.lower, lower.values, rtol=1e-7)


@pytest.mark.parametrize("seed", range(3))
def test_solve_certificate_brackets_the_exact_values(backend, tmp_path, seed):
    # solve's certificate on a garnet (its exact values by policy iteration): lower <= V*,
    # upper >= V^pi, and the adversary started from lower reaches the same upper bound as
    # robust_policy_values started from zero.
    ssp = backend.garnet(40, 3, 4, c_min=0.2, seed=seed)
    path = tmp_path / "run.npz"
    res = backend.solve(ssp, ssp.costs, 1.0, 0.1, seed=seed, checkpoint=path)
    cert = res.certificate
    exact = backend.optimal_values(ssp).values
    value = backend.policy_values(ssp, res.policy)
    assert np.isfinite(cert.upper).all() and res.certified
    assert (cert.lower <= exact).all() and (cert.upper >= value).all()
    assert np.max(value - exact) <= cert.gap <= 1.0
    counts = backend.SampleStore.load(path)[0].counts_csr()
    zero_start = backend.robust_policy_values(counts, ssp.costs, res.policy, 0.1).values
    np.testing.assert_allclose(cert.upper, zero_start, rtol=1e-9)
    again = backend.certify(counts, ssp.costs, res.policy, 0.1, kind="kl", start=res.v_tilde)
    np.testing.assert_array_equal(again.lower, cert.lower)
    np.testing.assert_array_equal(again.upper, cert.upper)
    # Started from zeros instead of EVI's values, the optimist reaches the same fixed point
    # (up to the switch tolerance and the check's slack) and its bound is as valid.
    cold = backend.certify(counts, ssp.costs, res.policy, 0.1, kind="kl")
    assert (cold.lower <= exact).all() and (cold.upper >= value).all()
    np.testing.assert_allclose(cold.lower, cert.lower, rtol=1e-7)
    with pytest.raises(backend.ShapeError, match="`start`"):
        backend.certify(counts, ssp.costs, res.policy, 0.1, start=res.v_tilde[:-1])
    with pytest.raises(backend.NotFiniteError, match="`start`"):
        backend.certify(counts, ssp.costs, res.policy, 0.1, start=np.full(ssp.n_states, np.nan))


def test_solve_certificate_is_the_same_on_both_backends():
    import fast
    import reference

    ssp = reference.garnet(60, 4, 5, c_min=0.2, seed=0)
    a = reference.solve(ssp, ssp.costs, 1.0, 0.1, seed=0).certificate
    b = fast.solve(ssp, ssp.costs, 1.0, 0.1, seed=0).certificate
    np.testing.assert_allclose(a.lower, b.lower, rtol=1e-9)
    np.testing.assert_allclose(a.upper, b.upper, rtol=1e-9)


def test_bad_arguments_are_named(backend):
    ssp = backend.gridworld()
    with pytest.raises(backend.ParameterError, match="`kind`"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, kind="paper")
    with pytest.raises(backend.ParameterError, match="`sampling`"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, sampling="greedy")
    with pytest.raises(backend.ParameterError, match="`budget`"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, budget=10)
    zero = ssp.costs.copy()
    zero[0, 0] = 0.0
    with pytest.raises(backend.ParameterError, match="`theta`"):
        backend.solve_certified(ssp, zero, 0.1, 0.1)
    with pytest.raises(backend.ParameterError, match="`eps`"):
        backend.solve_certified(ssp, ssp.costs, 0.0, 0.1)
