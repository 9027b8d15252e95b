"""SIGTERM a real `pushctl serve` whose deliveries are in flight to a slow receiver.

API.md ("Limits and fairness"): on SIGTERM a server exits within 5 s. The
deliveries still waiting for their receiver's answer are not lost: they are
handed back to the queue at the stop, so the next start sends them at once
(not a lease later), with the same `webhook-id`.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.e2e.test_delivery import iso
from tests.fakes.receiver import Receiver, running_receiver
from tests.pg import Cluster

pytestmark = pytest.mark.slow

COUNT = 5


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def wait_for(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def stop_with_deliveries_in_flight(server: Server, receiver: Receiver) -> None:
    receiver.delay = 60.0  # answers nothing while the server stops
    server.start()
    try:
        key = server.key("slow")
        server.webhook(key, receiver.url("/hook"))
        now = iso(datetime.now(UTC))  # due at once, not after the default 5 s delay
        items = [{"title": f"n{i}", "scheduledAt": now} for i in range(COUNT)]
        answer = server.request(
            "POST", "/api/notifications/batch", json={"notifications": items}, headers=key
        )
        assert answer.status_code in (200, 201), answer.text
        assert wait_for(lambda: len(receiver.to("/hook")) == COUNT, timeout=20)
        assert server.process is not None
        started = time.monotonic()
        server.process.terminate()
        code = server.process.wait(15)
        took = time.monotonic() - started
        # uvicorn re-raises the signal once it has stopped cleanly.
        assert code in (0, -signal.SIGTERM), server.log.read_text()
        assert took < 5, f"took {took:.1f} s to exit with deliveries in flight"

        # Handed back, not left to a lease (30 s): the next start sends them at once.
        receiver.delay = 0.0
        server.start()
        restarted = time.monotonic()

        def delivered() -> bool:
            stats = server.request("GET", "/api/notifications/stats", headers=key).json()
            return bool(stats["byStatus"]["DELIVERED"] == COUNT)

        assert wait_for(delivered, timeout=15), server.log.read_text()
        assert time.monotonic() - restarted < 15
    finally:
        server.stop()
    by_notification: dict[str, set[str]] = {}
    for request in receiver.to("/hook"):
        by_notification.setdefault(request.body["notificationId"], set()).add(
            request.headers["webhook-id"]
        )
    # Each sent twice (the first answer never came), with one webhook-id.
    assert len(by_notification) == COUNT
    assert all(len(ids) == 1 for ids in by_notification.values())
    assert len(receiver.to("/hook")) == 2 * COUNT


def test_sigterm_with_deliveries_in_flight_exits_within_5_s_and_loses_none_on_sqlite(
    tmp_path: Path, receiver: Receiver
) -> None:
    stop_with_deliveries_in_flight(Server(tmp_path / "data"), receiver)


def test_sigterm_with_deliveries_in_flight_exits_within_5_s_and_loses_none_on_postgres(
    tmp_path: Path, receiver: Receiver, pg_cluster: Cluster
) -> None:
    env = {"PUSHCORE_DATABASE_URL": pg_cluster.create_database()}
    stop_with_deliveries_in_flight(Server(tmp_path / "data", env=env), receiver)
