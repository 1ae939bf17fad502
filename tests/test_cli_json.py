"""``--json`` on ``solve``, ``info`` and ``bounds``: one document, checked against the API."""

import json
import os
import sys

import numpy as np
import pytest

import bounds
from sspgm._json import SCHEMA_VERSIONS
from sspgm.cli import main


def _document(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, json.loads(captured.out), captured.err


def _envelope(document, command):
    # solve, info and bounds are at version 1; validate's summary has its own (2).
    assert document["schema_version"] == SCHEMA_VERSIONS[command] == 1
    assert document["command"] == command
    assert isinstance(document["sspgm_version"], str)


def test_solve_document_matches_the_api(backend, capsys):
    status, doc, err = _document(capsys, "solve", "chain", "--n", "3", "--eps", "0.3",
                                 "--alpha", "10", "--seed", "2", "--json",
                                 "--backend", backend.__name__)
    assert status == 0 and err == ""
    _envelope(doc, "solve")
    ssp = backend.chain(3)
    res = backend.solve(ssp, ssp.costs, 0.3, 0.1, alpha=10.0, seed=2)
    assert doc["instance"]["params"]["n"] == 3 and doc["instance"]["S"] == 3
    assert doc["run"] == {"eps": 0.3, "delta": 0.1, "theta": None, "seed": 2,
                          "checkpoint": None, "alpha": 10.0, "max_iter": None}
    assert doc["policy"] == res.policy.tolist() and doc["n_calls"] == res.n_calls
    assert len(doc["rounds"]) == len(res.history)
    assert [r["n_calls"] for r in doc["rounds"]] == [r.n_calls for r in res.history]
    assert doc["certificate"]["gap"] == pytest.approx(res.certificate.gap, rel=1e-12)
    assert doc["certificate"]["upper"] == pytest.approx(res.certificate.upper.tolist())
    exact = np.abs(backend.policy_values(ssp, res.policy) - backend.optimal_values(ssp).values)
    assert doc["exact"]["error"] == pytest.approx(float(exact.max()), abs=1e-12)
    assert doc["checks"] == {"certified": True, "exact error within eps": True}
    assert doc["certified"] is True and doc["exit_status"] == 0 and doc["resumed"] is False


def test_certified_document_has_its_own_run_fields(backend, capsys):
    status, doc, _ = _document(capsys, "solve", "tradeoff", "--method", "certified", "--eps",
                               "0.1", "--json", "--backend", backend.__name__)
    ssp = backend.tradeoff()
    res = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, seed=0)
    assert status == 0 and doc["method"] == "certified" and doc["algorithm"] == "certified"
    assert "alpha" not in doc["run"] and doc["run"]["kind"] == "mixture"
    assert doc["n_calls"] == res.n_calls and len(doc["rounds"]) == len(res.history)
    assert doc["rounds"][-1]["gap"] == pytest.approx(res.history[-1].gap, rel=1e-12)


def test_a_failed_answer_still_prints_its_document_and_exits_1(capsys):
    status, doc, err = _document(capsys, "solve", "--eps", "1", "--alpha", "2", "--json",
                                 "--backend", "fast")
    assert status == 1 and doc["exit_status"] == 1
    assert doc["checks"]["certified"] is False and doc["certified"] is False
    assert doc["certificate"]["gap"] > 1
    assert err == "sspgm solve: checks that failed: certified, exact error within eps\n"


def test_infinite_values_are_strings(capsys):
    status, doc, _ = _document(capsys, "solve", "--eps", "1", "--alpha", "0.1", "--json",
                               "--backend", "fast")
    assert status == 1 and doc["certificate"]["gap"] == "inf"
    assert "inf" in doc["certificate"]["upper"]


def test_an_argument_error_prints_no_document(capsys):
    status = main(["solve", "--json", "--eps", "2"])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and "`eps`" in captured.err


def test_info_document_matches_the_api(backend, capsys):
    status, doc, _ = _document(capsys, "info", "garnet:n_states=6,n_actions=2,branching=2",
                               "--instance-seed", "4", "--json", "--backend", backend.__name__)
    assert status == 0
    _envelope(doc, "info")
    ssp = backend.garnet(6, 2, 2, seed=4)
    best = backend.optimal_values(ssp)
    assert doc["instance"]["params"] == {"n_states": 6, "n_actions": 2, "branching": 2,
                                         "c_min": 0.1, "seed": 4, "sparse": False}
    assert doc["instance"]["given"]["seed"] == 4 and doc["instance"]["Gamma"] == 2
    assert doc["V_star"] == pytest.approx(best.values.tolist(), rel=1e-12)
    assert doc["policy"] == best.policy.tolist()
    assert doc["B_star"] == pytest.approx(float(best.values.max()), rel=1e-12)
    assert doc["D"] == pytest.approx(backend.diameter(ssp).D, rel=1e-12)


def test_bounds_document_matches_the_calculator(capsys):
    status, doc, _ = _document(capsys, "bounds", "--eps", "0.1", "--B", "10", "--cmin", "0.5",
                               "--S", "20", "--A", "4", "--Gamma", "3", "--json")
    assert status == 0
    _envelope(doc, "bounds")
    found = {b["key"]: b for b in doc["bounds"]}
    assert found["thm1"]["total"] == pytest.approx(
        bounds.samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3), rel=1e-12)
    terms = bounds.samp_comp(0.1, 10, 0.5, S=20, A=4, Gamma=3, terms=True)
    assert [t["value"] for t in found["thm1"]["terms"]] == pytest.approx(terms, rel=1e-12)
    assert doc["params"]["S"] == 20 and doc["params"]["theta"] is None


def test_bounds_document_writes_symbolic_values_as_text(capsys):
    status, doc, _ = _document(capsys, "bounds", "--eps", "0.1", "--B", "10", "--cmin", "0.5",
                               "--json")
    total = doc["bounds"][0]["total"]
    assert status == 0 and isinstance(total, str) and "S" in total


def test_latex_and_json_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bounds", "--eps", "0.1", "--B", "10", "--cmin", "0.5", "--json", "--latex"])
    assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_simulator_document_has_no_instance(capsys, monkeypatch):
    monkeypatch.chdir(os.path.join(os.path.dirname(__file__), os.pardir, "docs", "examples"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    status, doc, _ = _document(capsys, "solve", "--simulator", "corridor:step_batch",
                               "--batched", "--states", "8", "--actions", "2", "--eps", "0.3",
                               "--json", "--backend", "fast")
    assert status == 0 and doc["instance"] is None and doc["exact"] is None
    assert doc["simulator"] == {"target": "corridor:step_batch", "S": 8, "A": 2}
    assert doc["checks"] == {"certified": True} and len(doc["policy"]) == 8
