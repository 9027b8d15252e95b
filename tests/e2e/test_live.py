"""End to end: the live channel of real `pushctl serve` processes.

A server killed (SIGKILL) and started again: the client resumes with
Last-Event-ID and gets exactly the entries it missed. An engine in another
process (`pushctl worker` beside `pushctl serve --no-engine`, on one SQLite
file or on PostgreSQL): its entries reach the open channels within 1 s of
their due time.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.e2e.test_delivery import iso
from tests.live.sse import Listener, titles
from tests.pg import Cluster

pytestmark = pytest.mark.slow


def listen(server: Server, headers: dict[str, str]) -> Listener:
    listener = Listener(f"{server.base}/api/inbox/events", headers)
    assert listener.opened.wait(10)
    assert listener.status == 200
    return listener


def send_at(server: Server, key: dict[str, str], title: str, due: datetime) -> str:
    """Schedule a notification; its due time as the server stored it (ISO)."""
    created = server.request(
        "POST", "/api/notifications", json={"title": title, "scheduledAt": iso(due)}, headers=key
    )
    assert created.status_code == 201, created.text
    scheduled: str = created.json()["scheduledAt"]
    return scheduled


def in_inbox(server: Server, user: dict[str, str], title: str, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = server.request("GET", "/api/inbox", headers=user).json()["items"]
        if title in [i["title"] for i in items]:
            return True
        time.sleep(0.1)
    return False


def test_after_a_kill_the_client_resumes_with_exactly_the_entries_it_missed(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path / "data")
    server.start()
    try:
        user, key = server.user("alice"), server.key("alice")
        first = listen(server, user)
        now = datetime.now(UTC)
        send_at(server, key, "A", now)
        assert first.wait_for(lambda _: titles(first) == ["A"], timeout=15)
        last_seen = first.notifications()[-1].id
        assert last_seen is not None
        first.close()  # the client is away...
        send_at(server, key, "B", datetime.now(UTC) + timedelta(seconds=1))
        send_at(server, key, "C", datetime.now(UTC) + timedelta(seconds=6))
        assert in_inbox(server, user, "B")
        server.kill()  # ... and the server dies between B and C
        server.start()
        again = listen(server, user | {"Last-Event-ID": last_seen})
        assert again.wait_for(lambda _: len(again.notifications()) >= 2, timeout=20)
        time.sleep(1.0)  # anything repeated would have come by now
        assert titles(again) == ["B", "C"]
        again.close()
    finally:
        server.stop()


def arrivals_within_a_second(api: Server) -> None:
    """With a worker of its own, entries reach the API process's open channels within 1 s
    of their due time."""
    worker = api.start_worker()
    try:
        user, key = api.user("alice"), api.key("alice")
        listener = listen(api, user)
        due = [
            send_at(api, key, f"n{i}", datetime.now(UTC) + timedelta(seconds=2 + i))
            for i in range(3)
        ]
        assert listener.wait_for(lambda _: len(listener.notifications()) == 3, timeout=20)
        late = [
            event.at - datetime.fromisoformat(when).timestamp()
            for event, when in zip(listener.notifications(), due, strict=True)
        ]
        assert titles(listener) == ["n0", "n1", "n2"]
        assert max(late) < 1.0, late
        listener.close()
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(20)


@pytest.fixture
def api_only(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path / "data", command=["serve", "--no-engine"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


# Timing bounds (arrivals within 1 s): run after the parallel pass (scripts/check.sh).
@pytest.mark.serial
def test_a_worker_s_entries_reach_channels_of_an_api_only_server_on_sqlite(
    api_only: Server,
) -> None:
    arrivals_within_a_second(api_only)


@pytest.mark.serial
@pytest.mark.postgres
def test_a_worker_s_entries_reach_channels_of_an_api_only_server_on_postgres(
    tmp_path: Path, pg_cluster: Cluster
) -> None:
    url = pg_cluster.create_database()
    server = Server(
        tmp_path / "data",
        env={"PUSHCORE_DATABASE_URL": url, "PUSHCORE_JWT_SECRET": "s" * 32},
        command=["serve", "--no-engine"],
    )
    server.start()
    try:
        arrivals_within_a_second(server)
    finally:
        server.stop()
