"""The package's import structure: no module imports itself through others (no cycle, function-level imports and
TYPE_CHECKING imports included), and the stage packages depend one way: jobs and the command line on the stages,
the stages on core, never back."""

from __future__ import annotations

import ast
from pathlib import Path

import edm_ars

PACKAGE = Path(edm_ars.__file__).parent
#: the packages from the bottom up: a package may import only from those before it (and from itself)
LAYERS = ["core", "llm", "data", "formulate", "analysis", "codegen", "review", "writer", "causal", "run", "jobs", "cli"]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports() -> dict[str, set[str]]:
    """Each module of edm_ars and the modules of edm_ars it imports (anywhere in its code)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                for alias in node.names:  # `from pkg import submodule` imports the submodule
                    deps.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_module_imports_itself_through_others():
    assert _cycles(imports()) == []


def test_the_stage_packages_depend_one_way():
    graph = imports()
    wrong = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                   if _layer(m) and _layer(d) and LAYERS.index(_layer(d)) > LAYERS.index(_layer(m)))
    assert wrong == []


def test_every_module_belongs_to_a_stage_package():
    loose = sorted(m for m in imports() if m.count(".") >= 1 and _layer(m) is None
                   and not m.startswith("edm_ars.schemas"))
    assert loose == []


def test_the_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
