"""End to end: an API-only `pushctl serve --no-engine` with `pushctl worker` processes.

The scaled-out shape of a deployment (API.md: several API and worker
processes), here on one SQLite file: the API accepts, the workers deliver,
each notification exactly once, and a stopped worker hands nothing over twice.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests import forkserver
from tests.e2e.server import Server
from tests.e2e.test_delivery import iso
from tests.e2e.test_signed_webhooks import children
from tests.fakes.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Server]:
    # Small batches, so that both workers of a test take part in one burst.
    env = {"PUSHCORE_DELIVERY_BATCH_SIZE": "8"}
    s = Server(tmp_path / "data", env, command=["serve", "--no-engine"])
    s.start()
    try:
        yield s
    finally:
        s.stop()


def stop(worker: forkserver.Process) -> int:
    worker.send_signal(signal.SIGTERM)
    return worker.wait(20)


def test_an_api_only_server_delivers_nothing_by_itself(api: Server, receiver: Receiver) -> None:
    ready = api.request("GET", "/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok"}  # no scheduler in this process
    key = api.key("alice")
    api.webhook(key, receiver.url("/a"))
    events = {"url": receiver.url("/events"), "events": ["notification.*"]}
    made = api.request("POST", "/api/webhooks", json=events, headers=api.user("alice"))
    assert made.status_code == 201
    due = datetime.now(UTC) + timedelta(seconds=0.5)
    created = api.request(
        "POST", "/api/notifications", json={"title": "t", "scheduledAt": iso(due)}, headers=key
    ).json()
    time.sleep(2.5)
    assert receiver.requests == []
    worker = api.start_worker()
    try:
        assert receiver.wait_for(1, timeout=15)
        assert [r.body["notificationId"] for r in receiver.delivered()] == [created["id"]]
        shown = api.request("GET", f"/api/notifications/{created['id']}", headers=key)
        deadline = time.monotonic() + 5
        while shown.json()["status"] != "DELIVERED" and time.monotonic() < deadline:
            time.sleep(0.1)
            shown = api.request("GET", f"/api/notifications/{created['id']}", headers=key)
        assert shown.json()["status"] == "DELIVERED"
        # Its event, posted by the worker's own event sender process.
        assert receiver.wait_for(1, timeout=15, path="/events")
        (event,) = receiver.delivered("/events")
        assert event.body["type"] == "notification.delivered"
        assert children(worker.pid)
    finally:
        assert stop(worker) == 0


def test_two_workers_deliver_each_notification_exactly_once(
    api: Server, receiver: Receiver
) -> None:
    key = api.key("alice")
    api.webhook(key, receiver.url("/a"))
    api.webhook(key, receiver.url("/b"))
    workers = [api.start_worker(), api.start_worker()]
    try:
        due = datetime.now(UTC) + timedelta(seconds=2)
        ids = [
            api.request(
                "POST",
                "/api/notifications",
                json={"title": f"n{i}", "scheduledAt": iso(due)},
                headers=key,
            ).json()["id"]
            for i in range(60)
        ]
        assert receiver.wait_for(120, timeout=30)
        time.sleep(1.0)  # a duplicate would arrive now
        arrivals = receiver.delivered()
        assert Counter((r.path, r.body["notificationId"]) for r in arrivals) == {
            (path, i): 1 for path in ("/a", "/b") for i in ids
        }
        assert min(r.at for r in arrivals) >= due.timestamp()
    finally:
        assert [stop(w) for w in workers] == [0, 0]


def test_a_worker_with_a_port_serves_health_and_its_delivery_metrics(
    api: Server, receiver: Receiver
) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from tests.e2e.server import free_port

    port = free_port()
    worker = api.start_worker("--port", str(port))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the worker's /healthz never answered"
            time.sleep(0.1)
        ready = httpx.get(f"{base}/readyz", timeout=5)
        assert ready.status_code == 200
        assert ready.json()["checks"] == {"database": "ok", "scheduler": "running"}
        # Health and metrics only: no API on a worker's port.
        assert httpx.get(f"{base}/api/notifications", timeout=5).status_code == 404

        key = api.key("alice")
        api.webhook(key, receiver.url("/a"))
        now = {"scheduledAt": iso(datetime.now(UTC))}  # due at once: the worker sends it
        api.request("POST", "/api/notifications", json={"title": "t"} | now, headers=key)
        assert receiver.wait_for(1, timeout=20)

        def delivered(url: str) -> float:
            text = httpx.get(f"{url}/metrics", timeout=5).text
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.name == "pushcore_deliveries_total" and sample.labels == {
                        "platform": "webhook",
                        "outcome": "delivered",
                    }:
                        return sample.value
            raise AssertionError("no pushcore_deliveries_total")

        deadline = time.monotonic() + 10
        while delivered(base) < 1:
            assert time.monotonic() < deadline, "the worker's /metrics never counted it"
            time.sleep(0.2)
        # The worker delivered it: the API process counts none (it has no engine).
        assert delivered(api.base) == 0
    finally:
        # As `pushctl serve` (uvicorn): a graceful stop, then the signal's own status.
        assert stop(worker) in (0, -signal.SIGTERM)
