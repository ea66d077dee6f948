"""No two modules of the package import each other, directly or around a loop.

Module-level imports count, including those under `if TYPE_CHECKING:` (a loop kept only for type
hints still ties two modules together); imports inside functions are deliberate late binding
and do not count.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pyice_sql

ROOT = Path(pyice_sql.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(body: list[ast.stmt], modules: set[str]) -> set[str]:
    out: set[str] = set()
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyice_sql"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("pyice_sql")}
        elif isinstance(node, ast.If):
            out |= _imports(node.body, modules) | _imports(node.orelse, modules)
        elif isinstance(node, ast.Try):
            out |= _imports(node.body, modules)
    return out & modules


def _import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    return {m: _imports(ast.parse(p.read_text()).body, modules) - {m} for m, p in paths.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_loop():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_package_has_no_import_cycles():
    graph = _import_graph()
    assert "pyice_sql.spark.session" in graph and graph["pyice_sql.spark.session"]
    assert _cycles(graph) == []
