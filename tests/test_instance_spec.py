"""One instance spec language for ``solve``, ``info`` and ``validate``; the two seeds apart."""

import json

import numpy as np
import pytest

from sspgm.cli import main
from sspgm.instance_spec import parse_spec, split_instance_args
from sspgm.instances import build_instance
from sspgm.validation.spec import check_runs, parse_instance, RunSpec

GARNET = "garnet:n_states=6,n_actions=2,branching=2"


def _json(capsys, *argv):
    status = main(list(argv) + ["--json"])
    captured = capsys.readouterr()
    return status, (json.loads(captured.out) if captured.out else None), captured.err


def test_spec_and_options_name_the_same_instance():
    a = build_instance(*split_instance_args([GARNET + ",seed=3"]))[0]
    b = build_instance(*split_instance_args(
        ["garnet", "--n-states", "6", "--n_actions", "2", "--branching", "2",
         "--instance-seed", "3"]))[0]
    c = build_instance(*split_instance_args([GARNET, "--instance-seed=3"]))[0]
    assert np.array_equal(a.P, b.P) and np.array_equal(a.P, c.P)
    assert np.array_equal(a.costs, b.costs)


def test_validate_reads_specs_with_the_same_parser():
    assert parse_instance(GARNET + ",seed=3") == parse_spec(GARNET + ",seed=3")
    assert parse_spec("garnet:seed=3") == ("garnet", ["--instance-seed", "3"])
    (run,) = check_runs([RunSpec(GARNET + ",seed=3", 0.1, 0.1, 0)])
    assert run.seed == 0


def test_solve_separates_the_instance_seed_from_the_run_seed(backend, capsys):
    status, doc, _ = _json(capsys, "solve", GARNET, "--instance-seed", "3", "--seed", "5",
                           "--eps", "0.5", "--alpha", "10", "--backend", backend.__name__)
    ssp = backend.garnet(6, 2, 2, seed=3)
    res = backend.solve(ssp, ssp.costs, 0.5, 0.1, alpha=10.0, seed=5)
    assert status == 0
    assert doc["instance"]["params"]["seed"] == 3 and doc["run"]["seed"] == 5
    assert doc["n_calls"] == res.n_calls and doc["policy"] == res.policy.tolist()
    assert doc["instance"]["c_min"] == ssp.c_min
    assert backend.garnet(6, 2, 2, seed=0).c_min != ssp.c_min


def test_info_and_solve_describe_the_same_instance(capsys):
    _, info, _ = _json(capsys, "info", GARNET + ",seed=7")
    _, solved, _ = _json(capsys, "solve", GARNET, "--instance-seed", "7", "--seed", "7",
                         "--eps", "0.5", "--alpha", "10")
    assert info["instance"] == solved["instance"]


def test_the_default_instance_seed_is_shown(capsys):
    main(["info", GARNET])
    assert capsys.readouterr().out.splitlines()[0] == (
        "instance: garnet(n_states=6, n_actions=2, branching=2, seed=0)")


@pytest.mark.parametrize(("argv", "message"), [
    (["info", GARNET, "--seed", "3"],
     "--seed is the seed of a run (`sspgm solve`), not of the instance: write the seed of "
     "instance 'garnet' as --instance-seed N (or garnet:seed=N)."),
    (["solve", "gridworld", "--instance-seed", "1"],
     "instance 'gridworld' takes no seed (--instance-seed chooses a random instance: garnet, "
     "random_discounted)."),
    (["info", GARNET + ",seed=3", "--instance-seed", "4"],
     "--instance-seed of 'garnet' given twice."),
    (["info", "garnet:n_states"], "instance parameters must read key=value; got 'n_states'"),
])
def test_seed_mistakes_are_one_line_errors(capsys, argv, message):
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err
