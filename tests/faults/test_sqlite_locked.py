"""SQLite locked past the writers' wait: a 503 in seconds, reads go on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.faults.conftest import (
    READY_BOUND,
    RECOVERY_BOUND,
    assert_unavailable,
    create,
    ready_within,
    timed,
)

pytestmark = pytest.mark.slow

# The store waits up to 3 s for the writers' locks and 3 s for SQLite's own:
# a create gives up after about 3 s here (nothing else queues for the locks).
LOCKED_BOUND = 8.0


def test_a_database_locked_by_another_writer_is_a_prompt_503_and_reads_go_on(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path / "data")
    server.start()
    try:
        key = server.key("alice")
        fresh = server.key("alice")  # never used: its first use wants a lastUsedAt write
        assert create(server, key)[0].status_code == 201
        # Another program (the sqlite3 shell, a backup) holds the write lock.
        holder = sqlite3.connect(tmp_path / "data" / "pushcore.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            response, took = create(server, key, "while locked")
            assert_unavailable(response)
            assert took < LOCKED_BOUND, f"the 503 took {took:.1f} s"
            ready, took = timed(server, "GET", "/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"]["database"] == "down"
            assert took < READY_BOUND
            # Reads need no write: not the listing, not the key's authentication.
            listed, took = timed(server, "GET", "/api/notifications", headers=fresh)
            assert listed.status_code == 200, listed.text
            assert [n["title"] for n in listed.json()["items"]] == ["fault"]
            assert took < LOCKED_BOUND
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        ready_within(server, RECOVERY_BOUND)
        assert create(server, key, "after")[0].status_code == 201
    finally:
        server.stop()
