"""Every runtime dependency in pyproject.toml is imported by the product, or it moves out."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("pushcore", "pushcore_http", "pushcore_cli")
# Needed without being imported by our code, each for a reason pyproject.toml gives.
NOT_IMPORTED_ON_PURPOSE = {
    # httpcore looks for sniffio on every request; present, it is found at once.
    "sniffio",
    # zoneinfo reads its zone database when the system has none (slim images, Windows):
    # schedules' time zones must not depend on the host.
    "tzdata",
}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def runtime_dependencies() -> set[str]:
    """The distribution names of ``[project] dependencies``, normalised."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {_name(r) for r in project["dependencies"]}


def imported_top_level_modules() -> set[str]:
    """Every top-level module the product's source imports."""
    found: set[str] = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.split(".")[0])
    return found


def imported_distributions() -> set[str]:
    """The installed distributions that provide the modules the product imports."""
    providers = packages_distributions()
    return {
        _name(dist) for module in imported_top_level_modules() for dist in providers.get(module, ())
    }


def test_every_runtime_dependency_is_imported_by_the_product() -> None:
    unused = runtime_dependencies() - imported_distributions() - NOT_IMPORTED_ON_PURPOSE

    assert unused == set(), f"in [project] dependencies but imported by no product code: {unused}"


def test_the_check_sees_imports() -> None:
    # A dependency that is used must be found, or the test above proves nothing.
    assert {"attrs", "httpx", "typer", "uvicorn", "joserfc"} <= imported_distributions()
