"""``import sspgm``: the whole API on the best available backend, and why it was chosen."""

import subprocess
import sys

import pytest

import sspgm

NAMES = ("solve", "solve_certified", "certify", "SSP", "gridworld", "garnet", "chain",
         "optimal_values", "policy_values", "Counts", "instance_lower_bound", "from_mdptoolbox",
         "ParameterError", "Certificate")


def _python(code):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_backend_is_fast_when_built():
    pytest.importorskip("fast")
    assert sspgm.backend == "fast" and isinstance(sspgm.backend, str)
    assert "built" in sspgm.backend.reason


@pytest.mark.parametrize("name", NAMES)
def test_names_resolve_to_the_chosen_backend(name):
    module = sspgm.load_backend(sspgm.backend)
    assert getattr(sspgm, name) is getattr(module, name)
    assert name in dir(sspgm)


def test_fast_unimportable_falls_back_to_reference_and_says_so():
    lines = _python(
        "import sys\n"
        "sys.modules['fast'] = None\n"
        "import sspgm, reference\n"
        "print(sspgm.backend)\n"
        "print(sspgm.backend.reason)\n"
        "print(all(getattr(sspgm, n) is getattr(reference, n) for n in "
        f"{NAMES!r}))\n"
    )
    assert lines[0] == "reference"
    assert "`fast` does not import" in lines[1]
    assert lines[2] == "True"


def test_import_is_cheap_and_submodules_load_without_the_backend():
    lines = _python(
        "import sys\n"
        "import sspgm\n"
        "from sspgm import cli, instance_help\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'reference', 'fast') if m in sys.modules))\n"
    )
    assert lines == ["[]"]


def test_star_import_gives_the_packages_own_names():
    namespace = {}
    exec("from sspgm import *", namespace)
    assert namespace["backend"] == sspgm.backend and namespace["load_backend"] is sspgm.load_backend
    assert "solve" not in namespace


def test_unknown_name_is_an_attribute_error_naming_the_backend():
    with pytest.raises(AttributeError, match="no attribute 'solv'.*backend"):
        sspgm.solv


def test_gym_entry_point_is_reachable():
    from sspgm.gym_adapter import ssp_from_table

    assert sspgm.ssp_from_table is ssp_from_table
