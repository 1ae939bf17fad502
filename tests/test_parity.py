"""The ``fast`` backend has exactly the public API of ``reference``, through the seam.

Same names, in the same order, in the same modules; every public function with
the same signature and the same docstring; every class, exception and constant
the very same object (results and errors are shared, so ``isinstance`` and
``except`` work across backends); the compiled functions raise the
reference's error class with the reference's message on bad input. Every
function running on kernels is the reference's kernel function bound to the
compiled kernel set (written once), and ``fast`` imports no private name of
``reference``.
"""

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fast
import reference
from fast.kernels import COMPILED_KERNELS
from reference.backend import KernelSet
from reference.kernels import NUMPY_KERNELS

NAMES = list(reference.__all__)
FAST_DIR = Path(fast.__file__).parent
PUBLIC_MODULES = {
    name: module for name, module in vars(reference).items()
    if inspect.ismodule(module) and hasattr(module, "__all__")
    and module.__name__ == f"reference.{name}" and name != "kernels"
}
"""The modules of ``reference`` whose ``__all__`` make up the package's."""
KERNEL_MODULES = {
    name for name, module in PUBLIC_MODULES.items()
    if any(hasattr(getattr(module, n), "__wrapped__") for n in module.__all__)
}
"""The modules holding kernel functions, mirrored by modules of ``fast``."""


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


def _module_of(name):
    """The module of ``reference`` whose ``__all__`` lists ``name``."""
    (module_name,) = [m for m, module in PUBLIC_MODULES.items() if name in module.__all__]
    return module_name


@pytest.mark.parametrize("backend", [reference, fast], ids=["reference", "fast"])
def test_every_module_name_binds_the_module(backend):
    for path in sorted(Path(reference.__file__).parent.glob("[a-z]*.py")):
        own = backend is fast and (path.stem in KERNEL_MODULES or path.stem == "kernels")
        module = importlib.import_module(f"{backend.__name__ if own else 'reference'}.{path.stem}")
        if hasattr(backend, path.stem):
            assert getattr(backend, path.stem) is module


def test_the_package_is_the_union_of_its_modules():
    assert sorted(NAMES) == sorted(n for m in PUBLIC_MODULES.values() for n in m.__all__)
    assert {"evi", "optimal", "range_search", "diameter_estimate", "algorithms",
            "baseline"} <= KERNEL_MODULES


@pytest.mark.parametrize("name", NAMES)
def test_every_name_lives_in_the_same_module(name):
    module_name = _module_of(name)
    module = getattr(fast, module_name)
    if module_name in KERNEL_MODULES:
        assert module.__name__ == f"fast.{module_name}"
        assert module.__all__ == PUBLIC_MODULES[module_name].__all__
    assert getattr(module, name) is getattr(fast, name)


@pytest.mark.parametrize(
    "name", [n for n in NAMES if hasattr(getattr(reference, n), "__wrapped__")]
)
def test_kernel_functions_are_written_once(name):
    ours, theirs = getattr(fast, name), getattr(reference, name)
    assert ours is not theirs
    assert ours.__wrapped__ is theirs.__wrapped__
    assert ours.__module__ == f"fast.{_module_of(name)}"


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(source):
    """The private names of ``reference`` a source uses: by import, by attribute of a name
    bound to ``reference`` (a module or a class), by ``super()`` in a subclass of a class of
    ``reference``, or by overriding a private method of one."""
    tree = ast.parse(source)
    bound, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reference"):
            parts = node.module.split(".") + [alias.name for alias in node.names]
            bound.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            parts = [p for alias in node.names if alias.name.startswith("reference")
                     for p in alias.name.split(".")]
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                         if alias.name.startswith("reference"))
        else:
            continue
        found += [part for part in parts if _private(part)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if ((isinstance(owner, ast.Name) and owner.id in bound)
                    or (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)
                        and owner.func.id == "super")):
                found.append(node.attr)
        if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id in bound for base in node.bases):
            found += [item.name for item in node.body
                      if isinstance(item, ast.FunctionDef) and _private(item.name)]
    return found


def test_fast_uses_no_private_name_of_reference():
    for path in sorted(FAST_DIR.glob("*.py")):
        assert _private_uses(path.read_text()) == [], path.name


def test_the_private_name_check_sees_every_way_in():
    source = (
        "from reference import chains\n"
        "from reference._checks import count_table\n"
        "from reference.poured import PouredKernel as Kernel\n"
        "chains._splits(1)\n"
        "class Mine(Kernel):\n"
        "    def _apply(self):\n"
        "        return super()._rows()\n"
    )
    assert sorted(_private_uses(source)) == ["_apply", "_checks", "_rows", "_splits"]


def test_the_kernel_sets_are_complete_and_distinct():
    fields = [f.name for f in dataclasses.fields(KernelSet) if f.name != "name"]
    assert fields
    for field in fields:
        assert callable(getattr(NUMPY_KERNELS, field))
        assert getattr(COMPILED_KERNELS, field) is not getattr(NUMPY_KERNELS, field)


def _kernel_function(kernels, x, y=2, *, z=3):
    """Doc of the kernel function."""
    return kernels, x, y, z


def test_bind_gives_the_public_signature_and_forwards_by_keyword():
    bound = NUMPY_KERNELS.bind(_kernel_function)
    assert inspect.isfunction(bound)
    assert str(inspect.signature(bound)) == "(x, y=2, *, z=3)"
    assert bound.__name__ == "_kernel_function" and bound.__doc__ == _kernel_function.__doc__
    assert bound(1) == (NUMPY_KERNELS, 1, 2, 3)
    assert bound(x=1, z=5, y=4) == (NUMPY_KERNELS, 1, 4, 5)
    rebound = COMPILED_KERNELS.bind(bound, module="elsewhere")
    assert rebound(0) == (COMPILED_KERNELS, 0, 2, 3) and rebound.__module__ == "elsewhere"
    assert NUMPY_KERNELS.call(rebound, 7, z=1) == (NUMPY_KERNELS, 7, 2, 1)
    with pytest.raises(TypeError, match="positional argument"):
        bound(1, 2, 3)
    with pytest.raises(TypeError, match="kernel function"):
        NUMPY_KERNELS.bind(lambda x, kernels: x)
    with pytest.raises(TypeError, match="kernel function"):
        NUMPY_KERNELS.bind(lambda kernels, *args: args)
