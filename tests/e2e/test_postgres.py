"""End to end on PostgreSQL: real `pushctl serve` processes on the session's own cluster."""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.e2e.test_delivery import iso
from tests.fakes.receiver import Receiver, running_receiver
from tests.pg import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def statuses(server: Server, key: dict[str, str], ids: list[str], timeout: float) -> list[str]:
    """The notifications' statuses, once all are settled or ``timeout`` has passed."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            server.request("GET", f"/api/notifications/{i}", headers=key).json()["status"]
            for i in ids
        ]
        if all(s in ("DELIVERED", "FAILED") for s in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_server_on_postgres_accepts_and_delivers(
    tmp_path: Path, pg_cluster: Cluster, receiver: Receiver
) -> None:
    server = Server(tmp_path / "data", env={"PUSHCORE_DATABASE_URL": pg_cluster.create_database()})
    server.start()
    try:
        ready = server.request("GET", "/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"] == {"database": "ok", "scheduler": "running"}
        key = server.key("alice")
        server.webhook(key, receiver.url("/a"))
        events = {"url": receiver.url("/events"), "events": ["notification.*"]}
        made = server.request("POST", "/api/webhooks", json=events, headers=server.user("alice"))
        assert made.status_code == 201
        now = iso(datetime.now(UTC))
        created = server.request(
            "POST",
            "/api/notifications",
            json={"title": "on postgres", "scheduledAt": now},
            headers=key,
        )
        assert created.status_code == 201, created.text
        assert receiver.wait_for(1, timeout=20, path="/a")
        (arrival,) = receiver.delivered("/a")
        assert arrival.body["notificationId"] == created.json()["id"]
        assert arrival.body["title"] == "on postgres"
        assert statuses(server, key, [created.json()["id"]], timeout=10) == ["DELIVERED"]
        # Its event, from the server's event sender process on the same database.
        assert receiver.wait_for(1, timeout=20, path="/events")
        (event,) = receiver.delivered("/events")
        assert event.body["data"]["notificationId"] == created.json()["id"]
        # What PostgreSQL's text cannot hold is refused at the edge, never a 500.
        nul = server.request("POST", "/api/notifications", json={"title": "a\u0000"}, headers=key)
        assert nul.status_code == 400
        assert server.request("GET", "/api/notifications/ntf_%00", headers=key).status_code == 404
        assert not (tmp_path / "data" / "pushcore.db").exists()  # nothing went to SQLite
    finally:
        server.stop()


def test_two_servers_on_one_database_deliver_each_notification_once(
    tmp_path: Path, pg_cluster: Cluster, receiver: Receiver
) -> None:
    env = {
        "PUSHCORE_DATABASE_URL": pg_cluster.create_database(),
        "PUSHCORE_JWT_SECRET": secrets.token_urlsafe(32),
        # Small batches, so that both schedulers keep claiming side by side.
        "PUSHCORE_DELIVERY_BATCH_SIZE": "4",
    }
    servers = [Server(tmp_path / name, env=env) for name in ("one", "two")]
    for server in servers:
        server.start()
    try:
        key = servers[0].key("alice")  # stored in the shared database: good on both
        for path in ("/a", "/b"):
            servers[1].webhook(key, receiver.url(path))
        due = datetime.now(UTC) + timedelta(seconds=2)
        ids = [
            servers[i % 2]
            .request(
                "POST",
                "/api/notifications",
                json={"title": f"n{i}", "scheduledAt": iso(due)},
                headers=key,
            )
            .json()["id"]
            for i in range(30)
        ]
        assert receiver.wait_for(60, timeout=30)
        time.sleep(1.0)  # a second copy of anything would show up now
        arrivals = Counter((r.body["notificationId"], r.path) for r in receiver.delivered())
        assert arrivals == Counter({(i, p): 1 for i in ids for p in ("/a", "/b")})
        assert min(r.at for r in receiver.delivered()) >= due.timestamp()
        # Both processes settled deliveries of the same notifications: each still ends DELIVERED.
        assert statuses(servers[0], key, ids, timeout=10) == ["DELIVERED"] * len(ids)
    finally:
        for server in servers:
            server.stop()
