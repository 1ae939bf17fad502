"""One result vocabulary: shared field names, typed fields, read-only arrays, mapping access,
and ``params``, the caller's settings, on every result of a public function.

Every result class of the public API answers ``converged`` and ``message``;
iterative methods count their sweeps (or evaluations) in ``n_iter``; optimistic
values are ``v_tilde``, never ``values``; no field is typed ``object``. The
counts are checked against the kernels themselves: a kernel set that counts
its sweeps is bound to the same kernel functions.
"""

import dataclasses
import inspect
import re
import typing

import numpy as np
import pytest

import reference
from reference.kernels import NUMPY_KERNELS
from reference.results import NOT_ECHOED, Params, Result

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


def _public_calls(b):
    """One cheap call of every public function returning a :class:`Result`: name -> (f, args,
    kwargs), some arguments left to their defaults and some given."""
    ssp = b.tradeoff()
    counts = np.zeros((1, 2, 2))
    counts[0, 0] = [200, 200]
    counts[0, 1] = [10, 390]
    return {
        "certify": (b.certify, (counts, ssp.costs, [1], 0.1), {"kind": "kl"}),
        "diameter": (b.diameter, (ssp,), {}),
        "estimate_diameter": (b.estimate_diameter, (ssp, 0.5, 0.1), {"seed": 3}),
        "extended_value_iteration": (b.extended_value_iteration, (counts, ssp.costs, 0.1, 1e-3),
                                     {}),
        "instance_lower_bound": (b.instance_lower_bound, (ssp, 0.5, 0.1), {"moves": ("goal",)}),
        "optimal_values": (b.optimal_values, (ssp,), {}),
        "optimistic_values": (b.optimistic_values, (counts, ssp.costs, 0.1), {}),
        "plug_in": (b.plug_in, (ssp, ssp.costs, 20), {"seed": np.int64(4)}),
        "policy_iteration": (b.policy_iteration, (ssp,), {"max_iter": 50}),
        "restricted_optimal_values": (b.restricted_optimal_values, (b.theta_example(), 5), {}),
        "robust_optimal_values": (b.robust_optimal_values, (counts, ssp.costs, 0.1),
                                  {"kind": "bernstein"}),
        "robust_policy_values": (b.robust_policy_values, (counts, ssp.costs, [1], 0.1), {}),
        "search": (b.search, (ssp, ssp.costs, 0.5, 0.1), {"alpha": 2.0, "seed": 1}),
        "solve": (b.solve, (ssp, ssp.costs, 0.5, 0.1), {"seed": 1}),
        "solve_certified": (b.solve_certified, (ssp, ssp.costs, 0.3, 0.1),
                            {"sampling": "uniform", "seed": 2, "budget": 10**6}),
        "value_iteration": (b.value_iteration, (ssp,), {"tol": 1e-6}),
    }


def _returns_a_result(function):
    """Whether the numpydoc ``Returns`` section of ``function`` names a :class:`Result` class."""
    returned = re.search(r"^Returns\n-+\n(\w+)", inspect.getdoc(function) or "", re.MULTILINE)
    return returned is not None and returned[1] in {cls.__name__ for cls in RESULT_CLASSES}


def test_every_public_function_returning_a_result_is_called():
    found = {name for name in reference.__all__
             if inspect.isfunction(getattr(reference, name))
             and _returns_a_result(getattr(reference, name))}
    assert found == set(_public_calls(reference))


@pytest.mark.filterwarnings("ignore::reference.errors.NotCertifiedWarning")
@pytest.mark.parametrize("name", sorted(_public_calls(reference)))
def test_params_echo_the_callers_settings(backend, name):
    function, args, kwargs = _public_calls(backend)[name]
    res = function(*args, **kwargs)
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    expected = {k: v for k, v in bound.arguments.items() if k not in NOT_ECHOED}
    assert isinstance(res, Result) and isinstance(res.params, Params)
    assert list(res.params) == list(expected)
    for key, value in expected.items():
        assert res.params[key] is value, key
    with pytest.raises(TypeError):
        res.params["seed"] = 5


def test_a_result_inside_another_echoes_what_it_was_computed_with(backend):
    ssp = backend.tradeoff()
    res = backend.solve(ssp, ssp.costs, 0.5, 0.05, seed=0)
    assert dict(res.certificate.params) == {"delta": 0.05, "kind": "kl"}
    res = backend.solve_certified(ssp, ssp.costs, 0.3, 0.05, kind="bernstein", seed=0)
    assert dict(res.certificate.params) == {"delta": 0.05, "kind": "bernstein"}
    assert res.history and all("params" not in r.keys() for r in res.history)
