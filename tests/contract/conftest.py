"""The ``store`` fixture: every contract test runs once against each database.

``memory://`` is SQLite in a temporary directory (the same code as ``sqlite``),
so the contract runs on SQLite and PostgreSQL; ``test_memory_store.py`` checks
what ``memory://`` adds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pushcore.ports import Store
from pushcore.storage.sqlite import SqliteStore
from tests.conftest import copy_migrated

if TYPE_CHECKING:
    from tests.pg import Cluster


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which database the test runs against."""
    kind: str = request.param
    return kind


@pytest.fixture(scope="session")
def contract_database(pg_cluster: Cluster) -> str:
    """The URL of one migrated database that the PostgreSQL contract tests share, in turn."""
    return pg_cluster.create_database("contract")


def open_kind(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    """A fresh, empty store of ``store_kind``.

    SQLite gets a copy of the worker's migrated file (``migrated_sqlite``) in a
    temporary directory: migrating a new file cost 40 ms of CPU a test. PostgreSQL
    gets the shared contract database with every table emptied (far quicker than a
    database per test, and the schema is the same).
    """
    if store_kind == "sqlite":
        migrated: Path = request.getfixturevalue("migrated_sqlite")
        return SqliteStore(copy_migrated(migrated, tmp_path))
    # Imported here: the SQLite runs need no psycopg.
    from pushcore.storage.postgres import PostgresStore

    url: str = request.getfixturevalue("contract_database")
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    cluster.empty(url)
    return PostgresStore(url)


@pytest.fixture
def store(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh, empty store of the current kind."""
    # Annotated as the port, so mypy checks that every adapter satisfies it.
    opened: Store = open_kind(store_kind, tmp_path, request)
    yield opened
    opened.close()
