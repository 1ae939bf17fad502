"""The certificate on the policy: ``policy_gap`` bounds ``V^pi - V*`` and never exceeds ``gap``.

The bound holds whenever the true kernel lies in the boxes (docs/certificates.md), so it is
checked here deterministically: every kernel inside the boxes (the empirical one, and kernels
pushed to the boxes' corners) is a possible truth, and the exact error of the policy in it must
be at most ``policy_gap``.
"""

import numpy as np
import pytest


def _random_counts(rng, S, A, n_max):
    """Counts of a random SSP with every pair reaching the goal (so every policy is proper)."""
    counts = rng.integers(0, n_max, size=(S, A, S + 1)).astype(float)
    counts[:, :, S] += rng.integers(1, n_max, size=(S, A))
    return counts


def _kernels_in_boxes(backend, counts, delta, rng):
    """The empirical kernel and kernels moved towards random corners of the boxes."""
    lo, hi = backend.confidence_boxes(counts, delta).to_dense()
    p_hat = counts / counts.sum(axis=2, keepdims=True)
    yield p_hat
    for _ in range(3):
        # Pour the free mass 1 - sum lo in a random order: a vertex of each box.
        P = lo.copy()
        S, A, _ = lo.shape
        for s in range(S):
            for a in range(A):
                free = 1.0 - P[s, a].sum()
                for t in rng.permutation(S + 1):
                    add = min(hi[s, a, t] - P[s, a, t], free)
                    P[s, a, t] += add
                    free -= add
        yield P


@pytest.mark.parametrize("seed", range(8))
def test_policy_gap_bounds_the_error_in_every_kernel_of_the_boxes(backend, seed):
    rng = np.random.default_rng(seed)
    S, A, delta = 4, 3, 0.1
    counts = _random_counts(rng, S, A, 200 * (seed + 1))
    costs = rng.uniform(0.1, 1.0, size=(S, A))
    for policy in (rng.integers(0, A, size=S), rng.integers(0, A, size=S)):
        cert = backend.certify(counts, costs, policy, delta)
        assert cert.policy_gap <= cert.gap
        for P in _kernels_in_boxes(backend, counts, delta, rng):
            P = P / P.sum(axis=2, keepdims=True)
            ssp = backend.SSP(P, costs)
            error = backend.policy_values(ssp, policy) - backend.optimal_values(ssp).values
            assert error.max() <= cert.policy_gap * (1 + 1e-9) + 1e-12


def test_policy_gap_sees_separated_actions_before_the_values_are_pinned(backend):
    # One state: action 0 costs 0.1 and loops half the time (value 0.2), action 1 costs 1 and
    # reaches the goal. With 300 samples the value of action 0 is known to about 0.1 only, but
    # its pessimistic value stays far below the other action's cost.
    counts = np.zeros((1, 2, 2))
    counts[0, 0] = [150, 150]
    counts[0, 1] = [0, 300]
    costs = np.array([[0.1, 1.0]])
    cert = backend.certify(counts, costs, [0], 0.1)
    assert cert.gap > 0.01 and cert.policy_gap < 1e-6
    wrong = backend.certify(counts, costs, [1], 0.1)
    assert wrong.policy_gap == wrong.gap and wrong.policy_gap > 0.5
    assert cert.meets(0.001, target="policy") and not cert.meets(0.001)


def test_one_action_has_no_policy_error(backend):
    counts = np.zeros((2, 1, 3))
    counts[0, 0] = [0, 40, 60]
    counts[1, 0] = [30, 0, 70]
    cert = backend.certify(counts, np.full((2, 1), 0.5), [0, 0], 0.1)
    assert cert.gap > 0.1 and cert.policy_gap < 1e-6
    assert cert.policy_relative_gap <= cert.relative_gap


def test_certified_rejects_an_unknown_target(backend):
    counts = np.zeros((1, 1, 2))
    counts[0, 0] = [0, 10]
    cert = backend.certify(counts, np.ones((1, 1)), [0], 0.1)
    with pytest.raises(ValueError, match="target"):
        cert.meets(0.1, target="values")
    ssp = backend.tradeoff()
    with pytest.raises(ValueError, match="target"):
        backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, target="both")


def _policy_instances(backend):
    return [
        (backend.tradeoff(), 0.2, False),
        (backend.chain(4, 0.7), 0.5, False),
        (backend.garnet(4, 2, 2, seed=1), 0.2, False),
        (backend.trap(r=0.3), 0.5, False),
        (backend.gridworld(), 0.3, True),
    ]


def test_policy_target_is_never_wrong_and_never_later(backend):
    for ssp, eps, relative in _policy_instances(backend):
        exact = backend.optimal_values(ssp).values
        for seed in range(3):
            res = backend.solve_certified(ssp, ssp.costs, eps, 0.1, relative=relative,
                                          seed=seed, target="policy")
            value = backend.policy_values(ssp, res.policy)
            cert = res.certificate
            assert res.certified and res.params["target"] == "policy"
            assert cert.meets(eps, relative, target="policy")
            if relative:
                assert (value <= (1 + eps) * exact * (1 + 1e-12)).all()
            else:
                assert (value - exact).max() <= eps
            assert cert.policy_gap <= cert.gap
            assert (cert.lower <= exact + 1e-12).all() and (cert.upper >= value - 1e-12).all()


def test_policy_target_saves_calls_on_the_chain(backend):
    ssp = backend.chain()
    value = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, seed=0)
    policy = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, seed=0, target="policy")
    assert policy.n_calls < value.n_calls / 3
