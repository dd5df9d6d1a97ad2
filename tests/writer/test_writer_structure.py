"""The writer package's sections write from the shared context only (the package-wide import check is tests/test_imports.py)."""

import ast
from pathlib import Path

WRITER = Path(__file__).resolve().parents[2] / "scripts" / "edm_ars" / "writer"


def _module(path: Path) -> str:
    parts = path.relative_to(WRITER).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def _imports(path: Path) -> set[str]:
    """The writer modules a file imports (relative imports resolved; any depth of nesting)."""
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
            if node.level - 1 > len(package):
                continue  # outside the writer package
            target = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                full = ".".join([*target, alias.name])
                if (WRITER / Path(*full.split("."))).with_suffix(".py").exists():
                    out.add(full)
                elif target and (WRITER / Path(*target)).with_suffix(".py").exists():
                    out.add(".".join(target))
                elif target and (WRITER / Path(*target) / "__init__.py").exists():
                    out.add(".".join(target))
    return out - {_module(path)}


def test_each_section_writes_from_the_shared_context_only():
    """A section module imports the shared modules, never another section."""
    for path in (WRITER / "sections").glob("*.py"):
        others = {m for m in _imports(path) if m.startswith("sections.") and m != "sections.__init__"}
        assert not others, f"{path.name} imports {sorted(others)}"
