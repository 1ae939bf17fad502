"""One result vocabulary: shared field names, typed fields, read-only arrays, mapping access.

Every result class of the public API answers ``converged`` and ``message``;
iterative methods count their sweeps (or evaluations) in ``n_iter``; optimistic
values are ``v_tilde``, never ``values``; no field is typed ``object``. The
counts are checked against the kernels themselves: a kernel set that counts
its sweeps is bound to the same kernel functions.
"""

import dataclasses
import inspect
import typing

import numpy as np
import pytest

import reference
from reference.kernels import NUMPY_KERNELS
from reference.results import Result

RESULT_CLASSES = [
    getattr(reference, name) for name in reference.__all__
    if inspect.isclass(getattr(reference, name)) and issubclass(getattr(reference, name), Result)
    and name not in ("Result", "Round", "CertifiedRound")
]
"""The results returned by public functions (a :class:`Round` or :class:`CertifiedRound` is a
record of a run's history)."""
ITERATIVE = {"EVIResult", "ValueIterationResult", "PolicyIterationResult", "PlugInResult",
             "RobustValuesResult"}
OPTIMISTIC = {"EVIResult", "SolveResult"}
RETIRED = {"iterations", "delta_final", "d_hat", "d_listing", "v_max", "max_v", "gamma_hat",
           "evi_iterations", "kernel", "w"}
"""Field names replaced by the shared vocabulary (``docs/backends.md``, "Renamed")."""


def _fields(cls):
    return {f.name: f for f in dataclasses.fields(cls)}


def test_the_result_classes_are_found():
    names = {cls.__name__ for cls in RESULT_CLASSES}
    assert ITERATIVE | OPTIMISTIC | {"DiameterEstimate", "OptimalValuesResult"} <= names


@pytest.mark.parametrize("cls", RESULT_CLASSES + [reference.Round, reference.CertifiedRound],
                         ids=lambda c: c.__name__)
def test_no_retired_name_and_no_untyped_field(cls):
    hints = typing.get_type_hints(cls)
    assert not RETIRED & set(hints)
    assert all(hint is not object for hint in hints.values()), hints


@pytest.mark.parametrize("cls", RESULT_CLASSES, ids=lambda c: c.__name__)
def test_shared_field_names(cls):
    hints = typing.get_type_hints(cls)
    assert hints["converged"] is bool and hints["message"] is str
    if cls.__name__ in ITERATIVE:
        assert hints["n_iter"] is int
    if cls.__name__ in OPTIMISTIC:
        assert "v_tilde" in hints and "values" not in hints
    if "policy" in hints:
        assert hints["policy"] is np.ndarray


def _counting(kernels, name):
    """``kernels`` with the kernel ``name`` counting its calls; returns (kernel set, calls)."""
    calls = []
    original = getattr(kernels, name)

    def counted(*args):
        calls.append(name)
        return original(*args)

    return dataclasses.replace(kernels, **{name: counted}), calls


def test_n_iter_counts_the_sweeps():
    ssp = reference.garnet(6, 2, 3, seed=4)
    counts = np.random.default_rng(0).multinomial(40, np.full(7, 1 / 7), size=(6, 2))
    kernels, calls = _counting(NUMPY_KERNELS, "evi_sweep")
    out = kernels.bind(reference.extended_value_iteration)(counts, ssp.costs, 0.1, 1e-6)
    assert out.converged and out.n_iter == len(calls) > 1
    kernels, calls = _counting(NUMPY_KERNELS, "vi_sweep")
    out = kernels.bind(reference.value_iteration)(ssp)
    assert out.converged and out.n_iter == len(calls) > 1
    kernels, calls = _counting(NUMPY_KERNELS, "vi_sweep")
    out = kernels.bind(reference.plug_in)(ssp, ssp.costs, 20, seed=0)
    assert out.n_iter == len(calls) > 1


def test_rounds_count_the_sweeps_of_their_evi():
    ssp = reference.gridworld()
    kernels, calls = _counting(NUMPY_KERNELS, "evi_sweep")
    res = kernels.bind(reference.solve)(ssp, ssp.costs, 0.2, 0.1, alpha=10.0, seed=0)
    assert sum(r.evi_n_iter for r in res.history) == len(calls)


def test_results_are_read_only_mappings(backend):
    ssp = backend.gridworld()
    res = backend.solve(ssp, ssp.costs, 0.2, 0.1, alpha=10.0, seed=0)
    assert dict(res) == {name: getattr(res, name) for name in res.keys()}
    assert res["Delta_final"] == res.Delta_final
    with pytest.raises(KeyError):
        res["delta_final"]
    for name in ("policy", "v_tilde", "calls"):
        with pytest.raises(ValueError, match="read-only"):
            res[name][0] = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.eps = 0.5


def test_warnings_are_classes_of_our_own():
    assert issubclass(reference.NotCertifiedWarning, reference.SSPWarning)
    assert issubclass(reference.NotCertifiedWarning, RuntimeWarning)
