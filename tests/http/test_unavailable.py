"""A database outage is API.md's 503 `unavailable` with Retry-After: never a 500."""

from __future__ import annotations

import logging
import sqlite3
import time

import pytest

from pushcore.domain.errors import Unavailable
from tests.conftest import Api


def test_an_outage_is_a_503_with_retry_after_and_no_error_logged(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = api.key("alice")

    def down(*_args: object) -> None:
        raise Unavailable("The database cannot be reached; try again shortly")

    monkeypatch.setattr(api.services.notifications, "stats", down)
    with caplog.at_level(logging.WARNING, logger="pushcore.http"):
        response = api.client.get("/api/notifications/stats", headers=key)
    assert response.status_code == 503
    assert response.json() == {
        "error": "The database cannot be reached; try again shortly",
        "code": "unavailable",
    }
    assert response.headers["retry-after"] == "2"
    # An outage is said as one, without a traceback: it is not a bug of the service.
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [("WARNING", None)]


def test_a_key_authenticates_on_a_database_that_cannot_write(api: Api) -> None:
    key = api.key("alice", "devices:read")  # never used: its first use is due a lastUsedAt
    database = api.services.settings.data_dir / "pushcore.db"
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program holds the write lock
    try:
        started = time.monotonic()
        response = api.client.get("/api/devices", headers=key)
        assert response.status_code == 200, response.text
        # The lastUsedAt write is best-effort: waited for half a second at most.
        assert time.monotonic() - started < 2.0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
