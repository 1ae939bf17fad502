"""Warnings point at the caller's line, on both backends, whatever path led to them."""

import warnings

import pytest

from reference.certified import INITIAL_PER_PAIR
from reference.errors import NotCertifiedWarning


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, NotCertifiedWarning)]


def _calls(backend):
    grid = backend.gridworld()
    # At eps = 0.5 SEARCH stops at once on an uninformed policy (README, "The constant alpha").
    yield "solve", lambda: backend.solve(grid, grid.costs, eps=0.5, delta=0.1, seed=0)
    yield "search", lambda: backend.search(grid, grid.costs, eps=0.5, delta=0.1, seed=0)
    ssp = backend.tradeoff()
    budget = ssp.n_states * ssp.n_actions * INITIAL_PER_PAIR
    yield "solve_certified", lambda: backend.solve_certified(
        ssp, ssp.costs, eps=0.001, delta=0.1, seed=0, budget=budget)


@pytest.mark.parametrize("name", ["solve", "search", "solve_certified"])
def test_not_certified_points_at_the_callers_line(backend, name):
    call = dict(_calls(backend))[name]
    caught = _caught(call)
    assert len(caught) == 1
    assert caught[0].filename == __file__
    assert caught[0].lineno == call.__code__.co_firstlineno
