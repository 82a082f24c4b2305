"""The seams ARCHITECTURE.md promises, checked on the source (issue 15)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ragline"
FACES = ("cli", "serve")


def _modules(*folders: str):
    for folder in folders:
        yield from sorted((SRC / folder).rglob("*.py"))


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            out.append(base)
            out.extend(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def test_no_face_imports_the_store():
    offenders = {
        str(p.relative_to(SRC)): [m for m in _imports(p) if "store" in m.split(".")]
        for p in _modules(*FACES)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_face_runs_sql():
    offenders = [
        str(p.relative_to(SRC))
        for p in _modules(*FACES)
        if ".execute(" in p.read_text() or ".connection()" in p.read_text()
    ]
    assert offenders == []


def test_backends_are_chosen_by_the_registries_not_by_prefixes():
    chains = []
    for p in _modules("embed", "rerank", "generate"):
        for node in ast.walk(ast.parse(p.read_text())):
            if (
                isinstance(node, ast.If)
                and isinstance(node.test, ast.Call)
                and getattr(node.test.func, "attr", "") == "startswith"
                and isinstance(getattr(node.test.func, "value", None), ast.Name)
                and node.test.func.value.id in ("spec", "name")
            ):
                chains.append(f"{p.relative_to(SRC)}:{node.lineno}")
    assert chains == []


def test_index_composes_instead_of_inheriting():
    tree = ast.parse((SRC / "index.py").read_text())
    (index,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Index"]
    assert index.bases == []  # collaborators are composed (Binding, TraceRecorder, Research, Admin)
