"""One meaning per word (docs/architecture.md, "Words with one meaning").

"hub" names only the registry of open live channels, and "live" only the live
channel and what follows it; a class or module that takes either word for
something else fails here, so that the next one is named apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
PRODUCT = ("pushcore", "pushcore_http", "pushcore_cli")
# Every module named for the live channel: its server side, its endpoint, the
# `live` platform's gateway, the client's reader and the settings its events are
# told quiet by.
LIVE_MODULES = {
    "pushcore/live",
    "pushcore/gateways/live.py",
    "pushcore_http/routes/live.py",
    "pushcore_http/live_settings.py",
    "pushcore/client/_live.py",
}


def _product_files() -> list[Path]:
    return [p for package in PRODUCT for p in sorted((ROOT / package).rglob("*.py"))]


def test_hub_names_only_the_live_channels_registry() -> None:
    hubs = {
        node.name
        for path in _product_files()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and "hub" in node.name.lower()
    }
    assert hubs == {"LiveHub"}


def test_live_names_only_the_live_channel() -> None:
    named = {
        str(p.relative_to(ROOT)).removesuffix("/__init__.py")
        for p in _product_files()
        if "live" in p.stem.strip("_").split("_") or p.parent.name == "live"
    }
    within = {n for n in named if any(n == m or n.startswith(m + "/") for m in LIVE_MODULES)}
    assert named == within, named - within
