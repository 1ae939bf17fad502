"""The theta and relative paths of the certificates: no certified wrong answer, checked exactly.

Each test here failed before docs/certified-soundness.md's fixes: a relative run with ``theta``
certified a policy costing more than ``(1 + eps) V*_theta``; ``certify`` certified a policy that
never reaches the goal; Alg. 3 certified whatever its diameter estimate was; the command line
compared a relative run's error with ``eps`` as an absolute error.
"""

import re
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest

from sspgm.cli import main

INSTANCES = Path(__file__).resolve().parent.parent / "benchmarks" / "soundness_instances.py"

exit_or_chain = runpy.run_path(str(INSTANCES))["exit_or_chain"]
"""State 0: an exit to the goal or a free chain to it, whose ``V*_theta(0) = 0`` for large
``theta`` (``benchmarks/soundness_instances.py``, shared with the soundness sweep)."""


def _excess(value, best, relative):
    """``max (V^pi - V) / V`` (relative; ``inf`` where only ``V`` is 0) or ``max (V^pi - V)``."""
    excess = value - best
    if not relative:
        return float(excess.max())
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.where(excess <= 1e-12, 0.0,
                              np.where(best > 0, excess / best, np.inf)).max())


@pytest.mark.parametrize("theta", [12.0, 20.0])
@pytest.mark.parametrize("eps", [0.5, 0.2])
def test_relative_theta_certifies_only_right_answers(backend, theta, eps):
    ssp = exit_or_chain(backend)
    v_theta = backend.restricted_optimal_values(ssp, theta).values
    assert v_theta[0] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", backend.NotCertifiedWarning)
        res = backend.solve_certified(ssp, ssp.costs, eps, 0.1, relative=True, theta=theta,
                                      seed=0, budget=400_000)
    value = backend.policy_values(ssp, res.policy)
    cert = res.certificate
    assert (cert.lower <= v_theta + 1e-12).all() and (cert.upper >= value - 1e-12).all()
    if res.certified:
        assert (value <= (1 + eps) * v_theta).all()


def test_relative_theta_reaches_the_zero_cost_chain(backend):
    """Halving ``nu`` lets the relative run certify the chain, the only right answer at 0."""
    ssp = exit_or_chain(backend)
    res = backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, relative=True, theta=12.0, seed=1,
                                  budget=400_000)
    assert res.certified and res.policy[0] == 1
    assert res.nu < 0.001 / 11 and backend.policy_values(ssp, res.policy)[0] == 0.0


def test_theta_certificate_bounds_v_theta_and_the_policy(backend):
    ssp = backend.theta_example()
    theta, eps = 5.0, 0.2
    v_theta = backend.restricted_optimal_values(ssp, theta).values
    for seed in range(3):
        res = backend.solve_certified(ssp, ssp.costs, eps, 0.1, theta=theta, seed=seed)
        value = backend.policy_values(ssp, res.policy)
        assert res.certified and res.certificate.gap <= eps
        assert (res.certificate.lower <= v_theta + 1e-12).all()
        assert (res.certificate.upper >= value - 1e-12).all()
        assert (value <= v_theta + eps).all()


def _loop_or_exit(backend, exit_cost):
    """Counts of one state: action 0 a free self-loop, action 1 an exit to the goal."""
    counts = np.zeros((1, 2, 2))
    counts[0, 0], counts[0, 1] = [1000, 0], [0, 1000]
    return counts, np.array([[0.0, exit_cost]])


@pytest.mark.parametrize("exit_cost", [0.0, 1.0])
def test_certify_never_certifies_a_policy_that_never_reaches_the_goal(backend, exit_cost):
    counts, costs = _loop_or_exit(backend, exit_cost)
    loop = backend.certify(counts, costs, [0], delta=0.1)
    assert not loop.proper and not loop.meets(10.0) and not loop.meets(10.0, True)
    exit_ = backend.certify(counts, costs, [1], delta=0.1)
    assert exit_.proper
    if exit_cost == 0.0:
        assert exit_.gap == 0.0 and exit_.meets(0.1)


def test_certify_sees_an_improper_policy_behind_a_proper_state(backend):
    """State 0 exits for free; state 1 loops for free: not proper, though state 0 is."""
    counts = np.zeros((2, 1, 3))
    counts[0, 0, 2] = 500
    counts[1, 0, 1] = 500
    cert = backend.certify(counts, np.zeros((2, 1)), [0, 0], delta=0.1)
    assert not cert.proper and not cert.meets(1.0)


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
def test_alg3_is_not_certified_when_its_diameter_estimate_is_below_the_boxes_bound(
        backend, monkeypatch):
    import reference.algorithms

    ssp = backend.theta_example()
    theta, eps = 5.0, 0.2
    honest = backend.solve(ssp, ssp.costs, eps, 0.1, theta=theta, alpha=10.0, seed=0)
    assert honest.certified
    rounds = reference.algorithms.diameter_rounds

    def too_small(*args, **kwargs):
        out = rounds(*args, **kwargs)
        return (out[0] / 8.0, *out[1:])

    monkeypatch.setattr(reference.algorithms, "diameter_rounds", too_small)
    low = backend.solve(ssp, ssp.costs, eps, 0.1, theta=theta, alpha=10.0, seed=0)
    assert low.D_hat == pytest.approx(honest.D_hat / 8.0)
    assert low.D_hat < backend.diameter(ssp).D
    assert not low.certified and "exceeds D_hat" in low.message


def test_cli_reports_the_relative_error_of_a_relative_run(backend, capsys):
    status = main(["solve", "chain", "--n", "3", "--p", "0.5", "--method", "certified",
                   "--relative", "--eps", "0.3", "--seed", "2", "--backend", backend.__name__])
    out = capsys.readouterr().out
    ssp = backend.chain(3, 0.5)
    res = backend.solve_certified(ssp, ssp.costs, 0.3, 0.1, relative=True, seed=2)
    value = backend.policy_values(ssp, res.policy)
    error = _excess(value, backend.optimal_values(ssp).values, relative=True)
    printed = float(re.search(r"/ V\*\(s\), relative = (\S+) \(", out).group(1))
    assert printed == pytest.approx(error, abs=1e-5)
    assert status == (0 if res.certified and error <= 0.3 else 1)


def _sweep_instances(fast):
    """``(ssp, eps, options)``: small instances of every path, the relative+theta one included."""
    return [
        (fast.tradeoff(), 0.2, {}),
        (fast.chain(4, 0.7), 0.3, {"relative": True}),
        (fast.garnet(4, 2, 2, seed=1), 0.2, {}),
        (fast.trap(r=0.3), 0.5, {}),
        (fast.theta_example(), 0.2, {"theta": 5.0}),
        (fast.zero_cost_loop(), 0.5, {"theta": 5.0}),
        (exit_or_chain(fast), 0.5, {"theta": 12.0, "relative": True, "budget": 400_000}),
    ]


@pytest.mark.slow
def test_no_certified_wrong_answer_over_seeds():
    """Every certified answer checked exactly, at delta = 0.5 where the boxes are narrowest."""
    import fast

    for ssp, eps, options in _sweep_instances(fast):
        theta, relative = options.get("theta"), options.get("relative", False)
        best = (fast.optimal_values(ssp).values if theta is None
                else fast.restricted_optimal_values(ssp, theta).values)
        for seed in range(12):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", fast.NotCertifiedWarning)
                res = fast.solve_certified(ssp, ssp.costs, eps, 0.5, seed=seed, **options)
            if not res.certified:
                continue
            value = fast.policy_values(ssp, res.policy)
            assert np.isfinite(value).all()
            assert _excess(value, best, relative) <= eps + 1e-12, (ssp.name, seed)


def test_the_policy_target_is_refused_with_theta(backend):
    ssp = exit_or_chain(backend)
    with pytest.raises(backend.ParameterError, match="`target` must be 'value' with `theta`"):
        backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, theta=12, target="policy", seed=0)
