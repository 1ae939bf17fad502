"""Every public function has an Examples section with a doctest (numpydoc), so its page shows one.

The packages checked are ``reference``, ``bounds`` and ``sspgm`` and every
module the API reference documents (``docs/api.rst``). ``fast`` is covered by
``reference``: its functions carry the very same docstrings
(``tests/test_parity.py``). The doctests themselves run with the suite
(``--doctest-modules``).
"""

import importlib
import inspect
import re
from pathlib import Path

import pytest

API_PAGE = Path(__file__).resolve().parent.parent / "docs" / "api.rst"
EXAMPLES = re.compile(r"^Examples\n-{8}\n(?:.*\n)*?>>> ", re.M)


def documented_modules():
    """The modules listed in the autosummary of ``docs/api.rst``."""
    text = API_PAGE.read_text(encoding="utf-8")
    block = text.split(".. autosummary::", 1)[1]
    names = []
    for line in block.splitlines()[1:]:
        if line and not line.startswith(" "):
            break
        entry = line.strip()
        if entry and not entry.startswith(":"):
            names.append(entry)
    return names


def public_functions():
    """``(module, name)`` of every function in the ``__all__`` of a documented module."""
    found = {}
    for module_name in dict.fromkeys(["reference", "bounds", "sspgm", *documented_modules()]):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                found.setdefault(f"{obj.__module__}.{obj.__qualname__}", (module_name, name))
    return sorted(found.values())


def test_the_api_page_lists_the_packages():
    assert {"reference", "bounds", "sspgm", "sspgm.cli"} <= set(documented_modules())


@pytest.mark.parametrize("module_name, name", public_functions())
def test_every_public_function_has_examples(module_name, name):
    doc = inspect.getdoc(getattr(importlib.import_module(module_name), name)) or ""
    assert EXAMPLES.search(doc + "\n"), f"{module_name}.{name} has no Examples section with >>>"


@pytest.mark.parametrize("doc, has", [
    ("Summary.\n\nExamples\n--------\n>>> 1 + 1\n2", True),
    ("Summary.\n\nExamples\n--------\nSome text first.\n\n>>> f()\n", True),
    ("Summary.\n\nNotes\n-----\n>>> 1 + 1\n2", False),
    ("Summary.\n\nExamples\n--------\nNone yet.", False),
])
def test_the_check_finds_an_examples_section(doc, has):
    assert bool(EXAMPLES.search(doc + "\n")) is has
