"""The layout of the packages: no import circle, no module over 600 lines, kernels documented."""

import ast
import dataclasses
from pathlib import Path

import pytest

import reference
from reference.backend import KERNEL_GROUPS, KernelSet

ROOT = Path(reference.__file__).parent.parent
PACKAGES = ("reference", "fast", "sspgm")
MAX_LINES = 600


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    """Every module of the packages by name: Python sources, and compiled extensions (whose
    ``.pyx`` imports only other extensions' declarations)."""
    return {_module_name(path): path for package in PACKAGES
            for pattern in ("*.py", "*.pyx") for path in sorted((ROOT / package).rglob(pattern))}


def _imports(name, path, modules):
    """The modules of ``modules`` that the source of ``name`` imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    if path.suffix == ".pyx":
        return found
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycle(graph):
    """One import circle of ``graph`` (a list of modules, first one repeated), or None."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_no_import_circle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # A package imports its own modules (its __init__ re-exports them); a module importing
    # its package's __init__ back would close a circle, and is one.
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_circle_search_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_600_lines(package):
    long = {str(path.relative_to(ROOT)): n for path in sorted((ROOT / package).rglob("*"))
            if path.suffix in (".py", ".pyx", ".pxd", ".h")
            and (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_kernel_is_in_one_group():
    fields = [f.name for f in dataclasses.fields(KernelSet) if f.name != "name"]
    grouped = [name for group in KERNEL_GROUPS.values() for name in group.kernels]
    assert sorted(grouped) == sorted(fields)


def test_the_docs_list_every_kernel_of_every_group():
    text = (ROOT / "docs" / "backends.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines()
            if line.startswith("| `")}
    for group in KERNEL_GROUPS.values():
        assert f"### {group.title}" in text, group.title
        for kernel in group.kernels:
            assert kernel in rows, kernel


def test_the_command_line_offers_the_time_uniform_kinds_of_the_registry():
    from reference.box_kinds import KINDS, time_uniform_kinds
    from sspgm.instance_help import time_uniform_box_kinds

    assert time_uniform_box_kinds() == time_uniform_kinds()
    assert all(name == kind.name for name, kind in KINDS.items())
    assert not KINDS["paper"].time_uniform and KINDS["kl"].time_uniform
