"""The ``store`` fixture: every contract test runs once against each storage adapter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pushcore.ports import Store
from pushcore.storage.memory import MemoryStore
from pushcore.storage.sqlite import SqliteStore


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which adapter the test runs against."""
    kind: str = request.param
    return kind


@pytest.fixture
def store(store_kind: str, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store of the current kind (SQLite in a temporary directory)."""
    # Annotated as the port, so mypy checks that both adapters satisfy it.
    opened: Store = (
        MemoryStore() if store_kind == "memory" else SqliteStore(tmp_path / "pushcore.db")
    )
    yield opened
    opened.close()
