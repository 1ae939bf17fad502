"""The ``fast`` backend has exactly the public API of ``reference``.

Same names, in the same order; every public function with the same signature
and the same docstring; every class, exception and constant the very same
object (results and errors are shared, so ``isinstance`` and ``except`` work
across backends); and the compiled functions raise the reference's error
class with the reference's message on bad input.
"""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp

import fast
import reference

NAMES = list(reference.__all__)


def test_same_public_names():
    assert list(fast.__all__) == NAMES
    assert all(hasattr(fast, name) for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_same_signature_and_docstring(name):
    ours, theirs = getattr(fast, name), getattr(reference, name)
    assert inspect.getdoc(ours) == inspect.getdoc(theirs)
    if inspect.isfunction(theirs):
        assert inspect.isfunction(ours)
        assert inspect.signature(ours) == inspect.signature(theirs)
        assert ours.__name__ == theirs.__name__


@pytest.mark.parametrize(
    "name", [n for n in NAMES if inspect.isclass(getattr(reference, n))]
)
def test_classes_and_errors_are_the_same_objects(name):
    assert getattr(fast, name) is getattr(reference, name)


@pytest.mark.parametrize(
    "name",
    [n for n in NAMES if not callable(getattr(reference, n))],
)
def test_constants_are_equal(name):
    assert getattr(fast, name) == getattr(reference, name)


def test_every_public_function_has_a_docstring():
    for name in NAMES:
        obj = getattr(fast, name)
        if inspect.isfunction(obj):
            assert obj.__doc__ and obj.__doc__.strip(), name


def _bad_evi_calls():
    """Invalid calls of the compiled EVI and radius, dense and CSR, one defect each."""
    counts = np.ones((2, 2, 3))
    negative = counts.copy()
    negative[1, 0, 2] = -1.0
    nan = counts.copy()
    nan[0, 1, 1] = np.nan
    costs = np.full((2, 2), 0.5)
    csr = sp.csr_array(counts.reshape(4, 3))
    calls = {
        "shape": ("extended_value_iteration", (np.ones((2, 2, 2)), costs, 0.1, 0.01)),
        "csr-shape": ("extended_value_iteration", (sp.csr_array(np.ones((5, 3))), costs, 0.1,
                                                   0.01)),
        "negative": ("extended_value_iteration", (negative, costs, 0.1, 0.01)),
        "csr-negative": ("extended_value_iteration", (sp.csr_array(negative.reshape(4, 3)),
                                                      costs, 0.1, 0.01)),
        "nan": ("extended_value_iteration", (nan, costs, 0.1, 0.01)),
        "csr-nan": ("extended_value_iteration", (sp.csr_array(nan.reshape(4, 3)), costs, 0.1,
                                                 0.01)),
        "costs": ("extended_value_iteration", (csr, np.ones((3, 2)), 0.1, 0.01)),
        "delta": ("extended_value_iteration", (csr, costs, 1.5, 0.01)),
        "mu": ("extended_value_iteration", (csr, costs, 0.1, 0.0)),
        "max_iter": ("extended_value_iteration", (csr, costs, 0.1, 0.01, 0)),
        "simplex": ("extended_value_iteration", (np.zeros((1, 1, 2)), [[0.5]], 1 - 1e-12,
                                                 0.01)),
        "csr-simplex": ("extended_value_iteration", (sp.csr_array((1, 2)), [[0.5]],
                                                     1 - 1e-12, 0.01)),
        "radius-delta": ("bernstein_radius", (counts, 0.0)),
        "radius-shape": ("bernstein_radius", (np.ones((2, 3)), 0.1)),
    }
    return list(calls.items())


@pytest.mark.parametrize("call", [call for _, call in _bad_evi_calls()],
                         ids=[case for case, _ in _bad_evi_calls()])
def test_compiled_functions_raise_the_reference_errors(call):
    name, args = call
    raised = []
    for backend in (reference, fast):
        with pytest.raises(ValueError) as info:
            getattr(backend, name)(*args)
        raised.append(info.value)
    assert type(raised[0]) is type(raised[1])
    assert str(raised[0]) == str(raised[1])
