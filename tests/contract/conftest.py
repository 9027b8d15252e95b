"""The ``store`` fixture: every contract test runs once against each storage adapter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pushcore.ports import Store
from pushcore.storage.memory import MemoryStore
from pushcore.storage.postgres import PostgresStore
from pushcore.storage.sqlite import SqliteStore
from tests.pg import Cluster


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which adapter the test runs against."""
    kind: str = request.param
    return kind


@pytest.fixture(scope="session")
def contract_database(pg_cluster: Cluster) -> str:
    """The URL of one migrated database that the PostgreSQL contract tests share, in turn."""
    return pg_cluster.create_database("contract")


@pytest.fixture
def store(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh, empty store of the current kind.

    SQLite gets a file in a temporary directory; PostgreSQL gets the shared
    contract database with every table emptied (far quicker than a database
    per test, and the schema is the same).
    """
    # Annotated as the port, so mypy checks that every adapter satisfies it.
    opened: Store
    if store_kind == "memory":
        opened = MemoryStore()
    elif store_kind == "sqlite":
        opened = SqliteStore(tmp_path / "pushcore.db")
    else:
        url: str = request.getfixturevalue("contract_database")
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        cluster.empty(url)
        opened = PostgresStore(url)
    yield opened
    opened.close()
