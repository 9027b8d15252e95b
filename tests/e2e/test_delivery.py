"""End to end: a real `pushctl serve` process, real HTTP, a real webhook receiver.

Bounds are generous (a busy CI machine); precision is the benchmark's business.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.server import Server
from tests.fakes.receiver import Receiver, running_receiver
from tests.support_counts import delivery_counts

pytestmark = pytest.mark.slow


def iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module's tests; each uses an account of its own."""
    s = Server(tmp_path_factory.mktemp("delivery") / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_delivered_at_due_time_to_the_targeted_devices(server: Server, receiver: Receiver) -> None:
    key = server.key("due")
    server.webhook(key, receiver.url("/a"))
    server.webhook(key, receiver.url("/b"))
    due = datetime.now(UTC) + timedelta(seconds=1.5)
    everyone = server.request(
        "POST", "/api/notifications", json={"title": "all", "scheduledAt": iso(due)}, headers=key
    )
    assert everyone.status_code == 201
    assert everyone.json()["devicesTargeted"] == 2
    only_a = server.request(
        "POST",
        "/api/notifications",
        json={"title": "only a", "scheduledAt": iso(due), "targetDeviceToken": receiver.url("/a")},
        headers=key,
    ).json()
    assert only_a["devicesTargeted"] == 1

    assert receiver.wait_for(3, timeout=15)
    time.sleep(0.5)  # anything extra would show up now
    arrivals = receiver.delivered()
    assert sorted((r.path, r.body["title"]) for r in arrivals) == [
        ("/a", "all"),
        ("/a", "only a"),
        ("/b", "all"),
    ]
    for arrival in arrivals:
        scheduled = parse(arrival.body["scheduledAt"])
        assert arrival.at >= scheduled, "delivered before its scheduledAt"
        assert arrival.at - scheduled < 5.0
        assert arrival.headers["content-type"] == "application/json"

    shown = server.request("GET", f"/api/notifications/{everyone.json()['id']}", headers=key)
    deadline = time.monotonic() + 5
    while shown.json()["status"] != "DELIVERED" and time.monotonic() < deadline:
        time.sleep(0.1)
        shown = server.request("GET", f"/api/notifications/{everyone.json()['id']}", headers=key)
    assert shown.json()["status"] == "DELIVERED"
    assert shown.json()["deliveries"] == delivery_counts(0, 2, 0)
    devices = server.request("GET", "/api/devices", headers=key).json()
    assert all(d["lastDeliveredAt"] is not None for d in devices)

    conflict = server.request("DELETE", f"/api/notifications/{only_a['id']}", headers=key)
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "not_cancellable"


def test_a_cancelled_notification_never_arrives(server: Server, receiver: Receiver) -> None:
    key = server.key("cancel")
    server.webhook(key, receiver.url("/a"))
    due = datetime.now(UTC) + timedelta(seconds=1.5)
    doomed = server.request(
        "POST", "/api/notifications", json={"title": "no", "scheduledAt": iso(due)}, headers=key
    ).json()
    kept = server.request(
        "POST", "/api/notifications", json={"title": "yes", "scheduledAt": iso(due)}, headers=key
    ).json()
    cancelled = server.request("DELETE", f"/api/notifications/{doomed['id']}", headers=key)
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "CANCELLED"
    assert receiver.wait_for(1, timeout=15)
    time.sleep(1.0)
    assert [r.body["notificationId"] for r in receiver.delivered()] == [kept["id"]]


def test_retries_honour_retry_after_and_410_deactivates(server: Server, receiver: Receiver) -> None:
    key = server.key("retry")
    server.webhook(key, receiver.url("/flaky"))
    server.webhook(key, receiver.url("/busy"))
    gone = server.webhook(key, receiver.url("/gone"))
    receiver.answer("/flaky", 503, times=2)
    receiver.answer("/busy", 429, times=2, Retry_After="2")
    receiver.answer("/gone", 410)

    # Due now, not after the default 5 s delay: the waits here are the retries'.
    now = {"scheduledAt": iso(datetime.now(UTC))}
    first = server.request("POST", "/api/notifications", json={"title": "one"} | now, headers=key)
    assert first.status_code == 201
    assert receiver.wait_for(1, timeout=30, path="/flaky")
    assert receiver.wait_for(1, timeout=30, path="/busy")

    flaky = receiver.to("/flaky")
    assert [r.status for r in flaky] == [503, 503, 200]
    busy = receiver.to("/busy")
    assert [r.status for r in busy] == [429, 429, 200]
    for earlier, later in itertools.pairwise(busy):
        assert later.at - earlier.at >= 2.0 - 0.05, "retried sooner than Retry-After allowed"

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        devices = {d["id"]: d for d in server.request("GET", "/api/devices", headers=key).json()}
        if devices[gone]["isActive"] is False:
            break
        time.sleep(0.1)
    assert devices[gone]["isActive"] is False
    assert [r.status for r in receiver.to("/gone")] == [410]

    now = {"scheduledAt": iso(datetime.now(UTC))}
    second = server.request("POST", "/api/notifications", json={"title": "two"} | now, headers=key)
    assert second.json()["devicesTargeted"] == 2
    assert receiver.wait_for(2, timeout=15, path="/flaky")
    time.sleep(0.5)
    assert [r.status for r in receiver.to("/gone")] == [410], "sent to a deactivated device"
    detail = server.request("GET", f"/api/notifications/{first.json()['id']}", headers=key).json()
    assert detail["deliveries"] == delivery_counts(0, 2, 1)
    assert detail["status"] == "DELIVERED"


def test_accepted_notifications_survive_a_crash(tmp_path: Path, receiver: Receiver) -> None:
    # The first server only accepts (no engine): however slow the machine,
    # nothing can be sent before the crash, and all of it must be sent after.
    server = Server(tmp_path / "data", command=("serve", "--no-engine"))
    server.start()
    try:
        key = server.key("alice")
        server.webhook(key, receiver.url("/a"))
        due = datetime.now(UTC) + timedelta(seconds=3)
        ids = [
            server.request(
                "POST",
                "/api/notifications",
                json={"title": f"n{i}", "scheduledAt": iso(due)},
                headers=key,
            ).json()["id"]
            for i in range(40)
        ]
        server.kill()
        assert receiver.requests == []
        server.command = ["serve"]
        server.start()
        assert receiver.wait_for(40, timeout=30)
        time.sleep(0.5)
        received = Counter(r.body["notificationId"] for r in receiver.delivered())
        assert set(received) == set(ids)
        assert sum(received.values()) - len(ids) == 0
        assert min(r.at for r in receiver.delivered()) >= due.timestamp()
    finally:
        server.stop()


def scraped(server: Server, name: str) -> float:
    """One unlabelled sample of the server's /metrics."""
    text = server.request("GET", "/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise AssertionError(f"{name} not in /metrics")


def test_in_flight_deliveries_come_back_after_the_lease(tmp_path: Path, receiver: Receiver) -> None:
    lease = 5
    in_flight = 8  # the documented bound on what a crash can make arrive twice
    server = Server(
        tmp_path / "data",
        env={
            "PUSHCORE_DELIVERY_LEASE_SECONDS": str(lease),
            "PUSHCORE_DELIVERY_BATCH_SIZE": "4",
            "PUSHCORE_DELIVERY_MAX_IN_FLIGHT": str(in_flight),
        },
    )
    server.start()
    try:
        key = server.key("alice")
        server.webhook(key, receiver.url("/a"))
        receiver.delay = 3.0  # answers come too late for the first server
        body = {"title": "n", "delay": "custom", "customDelay": 1}
        made = [
            server.request("POST", "/api/notifications", json=body, headers=key).json()
            for _ in range(20)
        ]
        ids = [n["id"] for n in made]
        # The earliest a claim can take a notification's lease: its due time (less
        # the claim lead, 0.02 s), so the lease cannot run out before this plus a lease.
        due = {n["id"]: datetime.fromisoformat(n["scheduledAt"]).timestamp() for n in made}
        deadline = time.monotonic() + 15
        while len(receiver.requests) < in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(receiver.requests) >= in_flight  # a full load handed to the gateway
        assert scraped(server, "pushcore_engine_in_flight_deliveries") <= in_flight
        server.kill()
        receiver.delay = 0.0
        restarted = time.time()
        server.start()
        deadline = time.monotonic() + lease + 30
        for notification_id in ids:  # each settled: what was in flight was sent again
            while (
                server.request("GET", f"/api/notifications/{notification_id}", headers=key).json()[
                    "status"
                ]
                != "DELIVERED"
            ):
                assert time.monotonic() < deadline, "the crashed process's work never came back"
                time.sleep(0.1)
        counts = Counter(r.body["notificationId"] for r in receiver.requests)
        assert set(counts) == set(ids)
        duplicates = sum(counts.values()) - len(ids)
        # Only what was in flight at the crash can arrive twice: at most
        # PUSHCORE_DELIVERY_MAX_IN_FLIGHT, and each is counted as a redelivery. The count
        # may also hold those claimed ahead and waiting for room, never handed: they have
        # a room of their own as large.
        assert 0 < duplicates <= in_flight
        assert duplicates <= scraped(server, "pushcore_redeliveries_total") <= 2 * in_flight
        for notification_id in (i for i, n in counts.items() if n > 1):
            first, second = sorted(
                r.at for r in receiver.requests if r.body["notificationId"] == notification_id
            )
            # Sent again by the restarted server, once the crashed claim's lease ran out.
            # From the due time, not the first send: on a loaded machine a send can come
            # more than a second after its claim took the lease.
            assert first >= due[notification_id] - 0.5
            assert second > restarted
            assert second >= due[notification_id] + lease - 0.5
    finally:
        server.stop()
