"""``seed=`` takes what numpy takes, with the same draws on both backends."""

import numpy as np
import pytest

import reference
from reference._checks import make_rng

SEEDS = {
    "int": lambda: 5,
    "SeedSequence": lambda: np.random.SeedSequence(5),
    "PCG64": lambda: np.random.PCG64(5),
    "Generator": lambda: np.random.default_rng(5),
    "numpy int": lambda: np.int64(5),
}


@pytest.mark.parametrize("kind", SEEDS)
def test_every_numpy_seed_gives_the_draws_of_default_rng(kind):
    expected = np.random.default_rng(5).random(4)
    assert np.array_equal(make_rng(SEEDS[kind]()).random(4), expected)


def test_seed_sequences_of_ints_are_taken():
    assert np.array_equal(make_rng([1, 2]).random(3), np.random.default_rng([1, 2]).random(3))


@pytest.mark.parametrize("bad", [True, -1, 1.5, "5", [-1], object()])
def test_other_seeds_are_refused_naming_the_argument(bad):
    with pytest.raises(reference.ParameterError, match="`seed`"):
        make_rng(bad)


@pytest.mark.parametrize("kind", SEEDS)
def test_solve_certified_is_the_same_for_every_seed_form(backend, kind):
    ssp = reference.chain(3)
    ours = backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=SEEDS[kind]())
    theirs = backend.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=5)
    assert np.array_equal(ours.policy, theirs.policy)
    assert np.array_equal(ours.certificate.upper, theirs.certificate.upper)
    other = reference.solve_certified(ssp, ssp.costs, 0.2, 0.1, seed=SEEDS[kind]())
    assert ours.n_calls == theirs.n_calls == other.n_calls
    assert np.array_equal(ours.calls, other.calls) and np.array_equal(ours.policy, other.policy)


def test_instances_take_a_seed_sequence():
    a = reference.garnet(6, 2, 2, seed=np.random.SeedSequence(3))
    b = reference.garnet(6, 2, 2, seed=3)
    assert np.array_equal(a.P, b.P)
