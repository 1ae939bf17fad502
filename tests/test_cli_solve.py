"""``sspgm solve``: progress per round, calls, policy, certificate and exact error against eps."""

import re

import numpy as np
import pytest

from sspgm.cli import main


def _number(pattern, text):
    return float(re.search(pattern, text).group(1))


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
def test_solve_reports_calls_policy_and_exact_error(backend, capsys):
    status = main(["solve", "chain", "--n", "3", "--p", "0.8", "--eps", "0.5", "--seed", "4",
                   "--backend", backend.__name__])
    out = capsys.readouterr().out
    ssp = backend.chain(3, 0.8)
    res = backend.solve(ssp, ssp.costs, 0.5, 0.1, seed=4)
    assert status == (0 if res.certificate.meets(0.5) else 1)
    assert _number(r", gap = (\S+),", out) == pytest.approx(res.certificate.gap, rel=1e-5)
    assert out.count("SEARCH Delta =") == len(res.history)
    assert _number(r"calls used: (\d+)", out) == res.n_calls
    policy = " ".join(f"{s}:{a}" for s, a in enumerate(res.policy))
    assert f"policy: {policy}" in out
    error = np.max(np.abs(backend.policy_values(ssp, res.policy)
                          - backend.optimal_values(ssp).values))
    assert _number(r"V\*\(s\)\| = (\S+) \(", out) == pytest.approx(error, abs=1e-5)


def test_solve_default_instance_draws_the_grid(backend, capsys):
    assert main(["solve", "--eps", "0.5", "--alpha", "10", "--backend", backend.__name__]) == 0
    out = capsys.readouterr().out
    assert out.startswith("instance: gridworld")
    assert "policy on the grid" in out and "G" in out
    assert "within eps" in out


def test_solve_theta_reports_the_one_sided_error(backend, capsys):
    status = main(["solve", "theta_example", "--theta", "5", "--eps", "0.5",
                   "--backend", backend.__name__])
    out = capsys.readouterr().out
    assert "Alg. 4 W =" in out and "D_hat =" in out
    ssp = backend.theta_example()
    res = backend.solve(ssp, ssp.costs, 0.5, 0.1, theta=5.0, seed=0)
    assert status == (0 if res.certificate.meets(0.25) else 1)
    gap = np.max(backend.policy_values(ssp, res.policy)
                 - backend.restricted_optimal_values(ssp, 5.0).values)
    assert _number(r"one-sided \(Thm\. 2\) = (\S+) \(", out) == pytest.approx(gap, abs=1e-5)


def test_solve_refuses_zero_cost_without_theta(backend, capsys):
    assert main(["solve", "zero_cost_loop", "--backend", backend.__name__]) == 2
    assert "theta" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--eps", "1.5"), ("--delta", "1"), ("--alpha", "0"),
                                         ("--theta", "0.5")])
def test_solve_bad_parameters_exit_2(backend, capsys, flag, value):
    assert main(["solve", "tradeoff", flag, value, "--backend", backend.__name__]) == 2
    assert flag.lstrip("-") in capsys.readouterr().err


def test_solve_resumes_from_a_checkpoint(backend, capsys, tmp_path):
    path = str(tmp_path / "run.ckpt")
    args = ["solve", "trap", "--r", "0.3", "--eps", "0.5", "--alpha", "10", "--checkpoint", path,
            "--backend", backend.__name__]
    status = main(args)
    first = capsys.readouterr().out
    assert main(args) == status
    second = capsys.readouterr().out
    assert "SEARCH Delta =" in first and "SEARCH Delta =" not in second

    def report(text):
        return re.sub(r" in \S+ s", "", text.split("SEARCH stopped", 1)[1])

    assert report(first) == report(second)


def test_coarse_alg1_answer_is_not_certified_and_exits_1(backend, capsys):
    """gridworld at eps = 1, alpha = 2: SEARCH stops at once on a policy 56 above V*."""
    status = main(["solve", "--eps", "1", "--alpha", "2", "--backend", backend.__name__])
    out = capsys.readouterr().out
    assert status == 1
    ssp = backend.gridworld()
    with pytest.warns(backend.NotCertifiedWarning):
        res = backend.solve(ssp, ssp.costs, 1.0, 0.1, alpha=2.0, seed=0)
    assert res.certificate.gap > 1
    assert f"NOT certified: gap {res.certificate.gap:,.6g} > 1)" in out and "ABOVE eps" in out


def test_certified_method_prints_rounds_and_its_certificate(backend, capsys):
    status = main(["solve", "tradeoff", "--method", "certified", "--eps", "0.1", "--kind",
                   "bernstein", "--backend", backend.__name__])
    out = capsys.readouterr().out
    assert status == 0
    ssp = backend.tradeoff()
    res = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, kind="bernstein", seed=0)
    assert out.count("  round: calls =") == len(res.history)
    assert _number(r"calls used: (\d+)", out) == res.n_calls
    assert f"(certified: gap {res.certificate.gap:,.6g} <= 0.1)" in out
    assert "bernstein boxes" in out


def test_certified_method_with_a_budget_exits_1(backend, capsys):
    status = main(["solve", "--method", "certified", "--eps", "0.1", "--budget", "10000",
                   "--backend", backend.__name__])
    out = capsys.readouterr().out
    assert status == 1
    assert "not certified: the budget of 10000 calls is spent" in out
    assert _number(r"calls used: (\d+)", out) == 10000
