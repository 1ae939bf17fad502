"""The parallel generative model on a real Dask cluster: a ``LocalCluster`` of 2 worker
processes, started once for this module.

The results must be bit-identical serially, on one worker, on two, after a worker is killed
mid-round, and when a run checkpointed on one worker is resumed on two.
"""

import os
import warnings

import numpy as np
import pytest
import simulators

import reference
from reference.errors import GenerativeModelError, NotCertifiedWarning

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        with cluster, distributed.Client(cluster) as client:
            yield client


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotCertifiedWarning)
        yield


def _executors(client):
    """Executors on one worker of the cluster, and on both."""
    client.wait_for_workers(2)
    first = sorted(client.scheduler_info()["workers"])[0]
    return client.get_executor(workers=[first]), client.get_executor()


def _model(backend, executor, chunk, step_batch=None):
    simulator, ssp = simulators.chain_simulator()
    return backend.ParallelGenerativeModel(None, ssp.n_states, ssp.n_actions, executor=executor,
                                           chunk=chunk, step_batch=step_batch or simulator,
                                           identity="chain")


@pytest.mark.parametrize("algorithm", ["solve", "solve_certified"])
def test_serial_one_worker_and_two_workers_agree(backend, client, algorithm):
    run, ssp = simulators.ALGORITHMS[algorithm], simulators.chain_simulator()[1]
    one, two = _executors(client)
    serial = run(backend, _model(backend, None, 10**9), ssp)
    simulators.same(run(backend, _model(backend, one, 5000), ssp), serial)
    simulators.same(run(backend, _model(backend, two, 3000), ssp), serial)


def test_a_worker_killed_mid_round_changes_nothing(client, tmp_path):
    simulator, ssp = simulators.chain_simulator()
    serial = reference.solve(_model(reference, None, 10**9), ssp.costs, 0.2, 0.1, seed=0)
    dying = simulators.DieOnce(simulator, tmp_path / "died")
    model = _model(reference, _executors(client)[1], 4096, step_batch=dying)
    simulators.same(reference.solve(model, ssp.costs, 0.2, 0.1, seed=0), serial)
    assert (tmp_path / "died").exists()
    assert np.array_equal(model.calls, serial.calls)


def test_resume_on_two_workers_from_a_checkpoint_made_on_one(client, tmp_path):
    ssp = simulators.chain_simulator()[1]
    one, two = _executors(client)
    full = reference.solve(_model(reference, None, 10**9), ssp.costs, 0.2, 0.1, seed=0)
    path = tmp_path / "run.ckpt"
    with pytest.raises(simulators.Stop):
        reference.solve(_model(reference, one, 4096), ssp.costs, 0.2, 0.1, seed=0,
                        checkpoint=path, callback=simulators.stop_after(2))
    resumed = reference.solve(_model(reference, two, 2500), ssp.costs, 0.2, 0.1, seed=0,
                              checkpoint=path)
    simulators.same(resumed, full)


def test_a_simulator_raising_on_a_worker_sends_its_traceback(client):
    simulator, ssp = simulators.chain_simulator()
    model = _model(reference, _executors(client)[1], 4096,
                   step_batch=simulators.RaiseAt(simulator, 2, 1))
    expected = r"raised ValueError.*\(s, a\) = \(2, 1\)"
    with pytest.raises(GenerativeModelError, match=expected) as info:
        reference.solve(model, ssp.costs, 0.2, 0.1, seed=0)
    assert "SEARCH round 1" in str(info.value) and f":{os.getpid()} " not in str(info.value)
    assert "no dynamics at (2, 1)" in str(info.value.__cause__.__cause__)


def test_the_command_line_samples_on_the_scheduler(client, capsys):
    from sspgm.cli import main

    args = ["solve", "chain", "--n", "3", "--p", "0.8", "--eps", "0.2"]
    status = main(args + ["--scheduler", client.scheduler.address])
    out = capsys.readouterr().out
    assert f"sampling: the Dask cluster at {client.scheduler.address} (2 workers)" in out
    assert main(args + ["--workers", "1"]) == status

    def answer(text):
        return [line.split(" in ")[0] for line in text.splitlines()
                if line.startswith(("calls used", "policy", "certificate", "exact error"))]

    assert len(answer(out)) == 4 and answer(capsys.readouterr().out) == answer(out)
