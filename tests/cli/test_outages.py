"""pushctl on a database it cannot write: a message and exit 1, not a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pushcore.storage.sqlite import store as sqlite_module
from tests.cli.conftest import Cli


def test_a_locked_database_is_refused_with_a_message(
    cli: Cli, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli("keys list --account alice").exit_code == 0  # creates the database
    monkeypatch.setattr(sqlite_module, "LOCK_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT_MS", 200)
    holder = sqlite3.connect(data_dir / "pushcore.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program holds the write lock
    try:
        result = cli("keys create --account alice --name laptop --scope devices:read")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 1
    assert "The database is locked" in result.stderr
    assert "Traceback" not in result.output
