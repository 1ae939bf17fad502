"""A budgetless ``solve_certified`` whose upper bound stays infinite says so, once, and goes on."""

import warnings

import numpy as np
import pytest

from reference.certified_stall import STALL_ROUNDS


def _no_goal(backend):
    """Two states that loop on themselves: the goal is never reached, whatever the samples."""
    return backend.SimulatorGenerativeModel(lambda s, a, rng: s, 2, 1)


def test_a_run_that_never_reaches_the_goal_warns_after_the_stall_rounds(backend):
    rounds = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", backend.StalledRunWarning)
        with pytest.raises(backend.StalledRunWarning, match="pass `budget` to cap the calls"):
            backend.solve_certified(_no_goal(backend), np.ones((2, 1)), 0.1, 0.1, seed=0,
                                    callback=rounds.append)
    assert len(rounds) == STALL_ROUNDS
    assert all(r.n_infinite == 2 for r in rounds)


def test_the_warning_changes_nothing_and_comes_once(backend):
    # Without the warning as an error the run goes on; a callback stops it later.
    class Stop(Exception):
        pass

    def stop_later(round_):
        if len(rounds) == STALL_ROUNDS + 10:
            raise Stop
        rounds.append(round_)

    rounds = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Stop):
            backend.solve_certified(_no_goal(backend), np.ones((2, 1)), 0.1, 0.1, seed=0,
                                    callback=stop_later)
    stalled = [w for w in caught if issubclass(w.category, backend.StalledRunWarning)]
    assert len(stalled) == 1 and len(rounds) == STALL_ROUNDS + 10


def test_a_run_with_a_budget_is_not_watched(backend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = backend.solve_certified(_no_goal(backend), np.ones((2, 1)), 0.1, 0.1, seed=0,
                                      budget=3000)
    assert not res.certified and len(res.history) > STALL_ROUNDS
    categories = {w.category for w in caught}
    assert backend.NotCertifiedWarning in categories
    assert backend.StalledRunWarning not in categories


def test_a_run_that_certifies_is_silent(backend):
    ssp = backend.tradeoff()
    with warnings.catch_warnings():
        warnings.simplefilter("error", backend.StalledRunWarning)
        res = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, seed=0)
    assert res.certified
