"""The import graph of the project's packages: layers and no circles.

Every import statement counts, also the ones inside functions (a reader sees them all): the engine
library ``perft_core`` never imports the oracle or the command dispatcher, and no module reaches
itself through imports.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("perft_core", "oracle", "perft_cli")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    found["perft_core._core"] = ROOT / "perft_core" / "_core.cpp"  # the extension: a leaf, imports nothing
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that ``name`` imports (``from P import m`` counts as ``P.m`` when m is a module)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                pkg = ".".join(base + ([node.module] if node.module else []))
            else:
                pkg = node.module
            targets = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in modules else pkg for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) if path.suffix == ".py" else set() for name, path in modules.items()}


def test_the_graph_sees_the_packages():
    graph = _graph()
    assert "perft_core.gpu.registry" in graph and "oracle.engines.base" in graph
    assert "perft_core.gpu.driver" in graph["perft_core.gpu.ttdriver"]  # a lazy or top-level import is seen


def test_perft_core_never_imports_the_oracle_or_the_dispatcher():
    bad = {(src, dst) for src, dsts in _graph().items() if src.startswith("perft_core")
           for dst in dsts if dst.split(".")[0] in ("oracle", "perft_cli")}
    assert not bad, f"perft_core must stay a library below the oracle: {sorted(bad)}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_cycle_finder_finds_circles(graph, expected):
    assert _cycles(graph) == expected


def test_the_estimate_does_not_reach_into_the_gpu_driver():
    """``perft_core.estimate`` takes distinct positions from ``perft_core.distinct``, which needs
    nothing of the GPU package (issue 33, item 7); it reaches the GPU only through the backends."""
    graph = _graph()
    assert not [m for m in graph["perft_core.estimate"] if m.startswith("perft_core.gpu")]
    seen, todo = set(), ["perft_core.distinct"]
    while todo:  # everything distinct imports, directly or not
        for dep in graph.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    assert "perft_core.distinct" in graph["perft_core.estimate"] and seen
    assert not [m for m in seen if m.startswith("perft_core.gpu")]
