"""A budgetless ``solve_certified`` whose samples show no way to the goal warns once, goes on.

The warning claims that no observed transition leads to the goal from the states
it names; the claim is checked against simulators built so that it is true (or
false) by hand.
"""

import warnings

import numpy as np
import pytest
from scipy.sparse import csr_array

from reference.certified import INITIAL_PER_PAIR
from reference.certified_stall import STALL_GROWTH, no_way_to_goal


def _no_goal(backend):
    """Two states that loop on themselves: the goal is never reached, whatever the samples."""
    return backend.SimulatorGenerativeModel(lambda s, a, rng: s, 2, 1)


def _trap(backend):
    """States 0 and 1 reach the goal (3) half the time; state 2 never leaves itself."""
    def step(s, a, rng):
        if s == 2:
            return 2
        return 3 if rng.random() < 0.5 else s
    return backend.SimulatorGenerativeModel(step, 3, 2)


def test_no_way_to_goal_follows_paths_of_any_length_and_any_action():
    # S = 4, A = 2: 0 -a1-> 1 -a0-> 2 -a1-> goal; 3 only reaches 0..3 but never the goal.
    dense = np.zeros((8, 5), dtype=np.int64)
    dense[0 * 2 + 0, 0] = 5
    dense[0 * 2 + 1, 1] = 1
    dense[1 * 2 + 0, 2] = 2
    dense[2 * 2 + 1, 4] = 1
    dense[3 * 2 + 0, 3] = 4
    dense[3 * 2 + 1, 3] = 4
    assert no_way_to_goal(csr_array(dense), 2).tolist() == [3]
    dense[3 * 2 + 1, 0] = 1  # one sample from 3 into 0, which has a way
    assert no_way_to_goal(csr_array(dense), 2).tolist() == []


def test_a_run_that_never_reaches_the_goal_warns_once_past_the_threshold(backend):
    rounds = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", backend.StalledRunWarning)
        with pytest.raises(backend.StalledRunWarning,
                           match=r"from 2 state\(s\) \(0, 1\).*pass `budget` to cap the calls"):
            backend.solve_certified(_no_goal(backend), np.ones((2, 1)), 0.1, 0.1, seed=0,
                                    callback=rounds.append)
    threshold = STALL_GROWTH * 2 * INITIAL_PER_PAIR
    assert rounds[-1].n_calls >= threshold > rounds[-2].n_calls


def test_only_the_trapped_state_is_named(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", backend.StalledRunWarning)
        with pytest.raises(backend.StalledRunWarning, match=r"from 1 state\(s\) \(2\)"):
            backend.solve_certified(_trap(backend), np.ones((3, 2)), 0.5, 0.1, seed=1)


def test_the_warning_changes_nothing_and_comes_once(backend):
    # Without the warning as an error the run goes on; a callback stops it later.
    class Stop(Exception):
        pass

    threshold = STALL_GROWTH * 2 * INITIAL_PER_PAIR

    def stop_later(round_):
        rounds.append(round_)
        if round_.n_calls > 3 * threshold:
            raise Stop

    rounds = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Stop):
            backend.solve_certified(_no_goal(backend), np.ones((2, 1)), 0.1, 0.1, seed=0,
                                    callback=stop_later)
    stalled = [w for w in caught if issubclass(w.category, backend.StalledRunWarning)]
    assert len(stalled) == 1
    assert all(r.n_infinite == 2 for r in rounds)


def test_a_run_with_a_budget_is_not_watched(backend):
    budget = 3 * STALL_GROWTH * 2 * INITIAL_PER_PAIR
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = backend.solve_certified(_no_goal(backend), np.ones((2, 1)), 0.1, 0.1, seed=0,
                                      budget=budget)
    assert not res.certified and res.n_calls > STALL_GROWTH * 2 * INITIAL_PER_PAIR
    categories = {w.category for w in caught}
    assert backend.NotCertifiedWarning in categories
    assert backend.StalledRunWarning not in categories


@pytest.mark.parametrize("n, p", [(30, 0.2), (10, 0.02)])
def test_slow_healthy_runs_are_silent(backend, n, p):
    # The upper bound stays infinite for about 60 rounds (near or past the threshold) while
    # the samples show a way to the goal early: the runs certify without a warning.
    ssp = backend.chain(n, p)
    rounds = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", backend.StalledRunWarning)
        res = backend.solve_certified(ssp, ssp.costs, 0.5, 0.1, seed=0, callback=rounds.append)
    assert res.certified
    assert sum(r.n_infinite > 0 for r in rounds) > 50


def test_a_run_that_certifies_is_silent(backend):
    ssp = backend.tradeoff()
    with warnings.catch_warnings():
        warnings.simplefilter("error", backend.StalledRunWarning)
        res = backend.solve_certified(ssp, ssp.costs, 0.1, 0.1, seed=0)
    assert res.certified
