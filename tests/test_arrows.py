"""Imports point down only: the arrows issue 26 turned round stay turned.

Read with ``ast`` (nothing is imported), every import counts, including those
inside functions and under ``if TYPE_CHECKING:``: a lazy import up is still an
arrow up, and a cycle hidden behind TYPE_CHECKING is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pushcore", "pushcore_http", "pushcore_cli")


def module_name(path: Path) -> str:
    """``pushcore/storage/sql/dialect.py`` -> ``pushcore.storage.sql.dialect``."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, package: str = "") -> set[str]:
    """Every module ``path`` imports, ``from a import b`` counted as both ``a`` and ``a.b``."""
    found: set[str] = set()
    if not package:
        package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


MODULES = {
    module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
}


def test_the_reader_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    # The check below is only as good as this reader: it must not miss the
    # kinds of import the arrows up were written as.
    sample = ROOT / "pushcore" / "gateways" / "checks.py"
    assert "pushcore.config" in imports_of(sample)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pushcore.bootstrap import PLATFORMS\n"
        "def f():\n    from pushcore import __version__\n"
    )
    assert {"pushcore.bootstrap", "pushcore.__version__"} <= imports_of(probe, "pushcore")


def below_the_face() -> list[str]:
    return sorted(m for m in MODULES if m.startswith("pushcore.") and m != "pushcore")


@pytest.mark.parametrize("module", below_the_face())
def test_no_library_module_imports_the_package_face(module: str) -> None:
    # `from pushcore import X` loads the whole face (and through it the composition
    # root): a module inside the library takes X from the module that defines it.
    # `from pushcore import storage` names a package, not the face's re-exports.
    faces = {
        name
        for name in imports_of(MODULES[module])
        if name.startswith("pushcore.")
        and name.count(".") == 1
        and name not in MODULES
        and not (ROOT / "pushcore" / name.split(".")[1]).is_dir()  # a namespace package
    }
    assert not faces


@pytest.mark.parametrize("module", below_the_face())
def test_only_the_face_imports_the_composition_root(module: str) -> None:
    if module == "pushcore.bootstrap":
        return
    assert not any(
        name == "pushcore.bootstrap" or name.startswith("pushcore.bootstrap.")
        for name in imports_of(MODULES[module])
    )


def test_the_sql_modules_import_no_cycle() -> None:
    sql = {m for m in MODULES if m.startswith("pushcore.storage.sql.")}
    edges = {m: imports_of(MODULES[m]) & sql for m in sql}
    cycles = sorted((a, b) for a in sql for b in edges[a] if a < b and a in edges.get(b, set()))
    assert not cycles
    # Longer cycles too: a depth-first walk finds no module reachable from itself.
    for start in sorted(sql):
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            current = todo.pop()
            assert current != start, f"{start} imports itself through {sorted(seen)}"
            if current not in seen:
                seen.add(current)
                todo.extend(edges[current])


@pytest.mark.parametrize(
    "module",
    sorted(
        m
        for m in MODULES
        if m.startswith("pushcore_http.")
        and not m.startswith("pushcore_http.routes")
        and m != "pushcore_http.app"  # the app assembles the route table
    ),
)
def test_only_the_app_imports_the_routes(module: str) -> None:
    assert not any(
        name == "pushcore_http.routes" or name.startswith("pushcore_http.routes.")
        for name in imports_of(MODULES[module])
    )
