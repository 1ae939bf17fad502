"""``sspgm solve --workers / --simulator``, and the example of docs/cluster.md run as a script."""

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import reference
from reference.errors import NotCertifiedWarning
from sspgm.cli import main

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "examples")


def _corridor(backend):
    """The corridor of docs/examples/corridor.py written as a known SSP (by hand)."""
    P = np.zeros((8, 2, 9))
    for s in range(8):
        P[s, 0, s + 1] += 0.9
        P[s, 0, s] += 0.1
        P[s, 1, min(s + 2, 8)] += 0.6
        P[s, 1, 0] += 0.4
    return backend.SSP(P, np.ones((8, 2)))


def _answer(out):
    """The lines of a run that do not depend on where it sampled."""
    return [re.sub(r" in \S+ s$", "", line) for line in out.splitlines()
            if line.startswith(("calls used", "policy", "certificate", "exact error"))]


def test_workers_give_the_answer_of_the_model_in_this_process(capsys):
    ssp = reference.chain(3, 0.8)
    model = reference.ParallelGenerativeModel(None, 3, 2, step_batch=reference.KernelSimulator(ssp))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        res = reference.solve(model, ssp.costs, 0.2, 0.1, seed=0)
    status = 0 if res.certified else 1
    args = ["solve", "chain", "--n", "3", "--p", "0.8", "--eps", "0.2", "--chunk", "5000"]
    assert main(args + ["--workers", "2"]) == status
    out = capsys.readouterr().out
    assert "sampling: 2 local worker process(es), chunks of 5000 samples" in out
    assert f"calls used: {res.n_calls} " in out
    assert "policy: " + " ".join(f"{s}:{a}" for s, a in enumerate(res.policy)) in out
    assert main(args + ["--workers", "1", "--chunk", "100000"]) == status
    assert _answer(capsys.readouterr().out) == _answer(out)


def test_a_simulator_named_module_function_is_solved(backend, capsys, monkeypatch):
    from sspgm.commands import sampling

    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "path", list(sys.path))
    loaded = []
    load = sampling.load_simulator
    monkeypatch.setattr(sampling, "load_simulator", lambda spec: loaded.append(spec) or load(spec))
    status = main(["solve", "--simulator", "corridor:step_batch", "--batched", "--states", "8",
                   "--actions", "2", "--eps", "0.3", "--backend", backend.__name__])
    out = capsys.readouterr().out
    assert status == 0 and re.search(r"\(certified: gap [0-9.e-]+ <= 0\.3\)", out)
    assert out.startswith("simulator: corridor:step_batch  S = 8, A = 2; sampling in this process")
    assert loaded == ["corridor:step_batch"]
    optimal = backend.optimal_values(_corridor(backend)).policy
    assert "policy: " + " ".join(f"{s}:{a}" for s, a in enumerate(optimal)) in out


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--simulator", "no_such_module:step", "--states", "2", "--actions", "1"],
         "cannot import 'no_such_module'"),
        (["--simulator", "corridor:nothing", "--states", "2", "--actions", "1"],
         "'corridor' has no callable 'nothing'"),
        (["--simulator", "corridor", "--states", "2", "--actions", "1"], "MODULE:FUNCTION"),
        (["--simulator", "corridor:step"], "needs `--states S` and `--actions A`"),
        (["--simulator", "corridor:step", "--states", "8", "--actions", "2", "chain"],
         "replaces the instance"),
        (["chain", "--workers", "0"], "`--workers` must be an integer >= 1; got 0"),
        (["chain", "--workers", "2", "--chunk", "0"], "`--chunk` must be an integer >= 1"),
    ],
)
def test_bad_sampling_options_exit_2_with_one_line(capsys, monkeypatch, args, expected):
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["solve"] + args) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1


def test_workers_and_scheduler_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as info:
        main(["solve", "--workers", "2", "--scheduler", "tcp://localhost:1"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_docs_example_runs_on_two_processes_as_in_one():
    done = subprocess.run([sys.executable, "corridor.py"], cwd=EXAMPLES, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "certified: True" in done.stdout and "same as in this process: True" in done.stdout


def test_a_raising_simulator_prints_its_traceback_and_exits_2(capsys, monkeypatch, tmp_path):
    (tmp_path / "broken_sim.py").write_text(
        "def step(s, a, rng):\n    raise RuntimeError(f'boom at {s}, {a}')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["solve", "--simulator", "broken_sim:step", "--states", "2", "--actions", "1",
                 "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "the simulator's traceback on its worker:" in err
    assert 'broken_sim.py", line 2, in step' in err and "RuntimeError: boom at 0, 0" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("sspgm solve: error: `step` raised RuntimeError: boom at 0, 0 for the "
                           "pair (s, a) = (0, 0)") and "SEARCH round 1" in last


LATE_EXIT = '''
calls = [0]


def step(s, a, rng):
    """State 2 is a trap for the first 12000 calls; then every state steps to the goal."""
    calls[0] += 1
    if calls[0] > 12000:
        return 3
    if s == 2:
        return 2
    return 3 if rng.random() < 0.5 else s
'''


def test_a_stalled_run_is_warned_about_in_one_line_and_goes_on(backend, capsys, monkeypatch,
                                                               tmp_path):
    # 20 times the first round's 3 * 2 * 64 calls is 7680: the warning comes before the trap
    # opens, names state 2, and the run then certifies.
    name = f"late_exit_{backend.__name__}"  # a fresh module, so a fresh count of calls
    (tmp_path / f"{name}.py").write_text(LATE_EXIT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    status = main(["solve", "--simulator", f"{name}:step", "--states", "3", "--actions", "2",
                   "--method", "certified", "--eps", "0.5", "--backend", backend.__name__])
    captured = capsys.readouterr()
    warned = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith("sspgm solve: warning: after ")
    assert "from 1 state(s) (2)" in warned[0]
    assert warned[0].endswith("give --budget N to cap the calls.")
    assert status == 0 and "certified" in captured.out


def test_sampling_model_without_an_instance_or_a_simulator_is_a_clear_error():
    import argparse

    from sspgm.commands.sampling import sampling_model

    args = argparse.Namespace(workers=None, chunk=16384, scheduler=None, batched=False,
                              simulator=None)
    with pytest.raises(reference.ParameterError, match="needs `ssp`.*or `simulator`.*neither"):
        with sampling_model(args):
            pass
