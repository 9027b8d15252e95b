"""Signed webhook deliveries, end to end: the secret shown at registration, the Standard
Webhooks headers on each delivery, checked by the reference library."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from pushcore.delivery.event_process import NICENESS
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module's tests; each uses an account of its own."""
    s = Server(tmp_path_factory.mktemp("signed") / "data", {"PUSHCORE_RETRY_MIN_DELAY": "200ms"})
    s.start()
    try:
        yield s
    finally:
        s.stop()


def register(server: Server, key: dict[str, str], url: str) -> tuple[int, dict[str, object]]:
    answer = server.request(
        "POST", "/api/devices", json={"platform": "webhook", "token": url}, headers=key
    )
    return answer.status_code, answer.json()


def send(server: Server, key: dict[str, str], title: str) -> None:
    answer = server.request(
        "POST",
        "/api/notifications",
        json={"title": title, "scheduledAt": "2020-01-01T00:00:00Z"},
        headers=key,
    )
    assert answer.status_code == 201, answer.text


def test_each_delivery_is_signed_with_the_secret_shown_once(
    server: Server, receiver: Receiver
) -> None:
    key = server.key("signed")
    status, device = register(server, key, receiver.url("/hook"))
    assert status == 201
    secret = device["secret"]
    assert isinstance(secret, str)
    assert secret.startswith("whsec_")
    # Shown in that answer only.
    listed = server.request("GET", "/api/devices", headers=key).json()
    assert all("secret" not in d for d in listed)

    # A first answer of 503: the retry carries the same webhook-id, signed afresh.
    receiver.answer("/hook", 503)
    send(server, key, "signed")
    assert receiver.wait_for(1, timeout=30, path="/hook")
    first, again = receiver.to("/hook")[:2]
    assert (first.status, again.status) == (503, 200)
    for request in (first, again):
        Webhook(secret).verify(request.raw, request.headers, json_parse=False)
        assert request.headers["webhook-signature"].startswith("v1,")
    assert first.headers["webhook-id"] == again.headers["webhook-id"]
    assert first.headers["webhook-id"].startswith("dlv_")


def test_registering_again_issues_a_new_secret_and_the_old_one_stops_signing(
    server: Server, receiver: Receiver
) -> None:
    key = server.key("again")
    _, first = register(server, key, receiver.url("/hook"))
    status, again = register(server, key, receiver.url("/hook"))
    assert status == 200
    assert again["id"] == first["id"]
    old, new = first["secret"], again["secret"]
    assert isinstance(old, str)
    assert isinstance(new, str)
    assert old != new
    send(server, key, "after the upsert")
    assert receiver.wait_for(1, timeout=30, path="/hook")
    (request,) = receiver.to("/hook")
    Webhook(new).verify(request.raw, request.headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(request.raw, request.headers, json_parse=False)


def test_other_platforms_get_no_secret(server: Server) -> None:
    key = server.key("android")
    answer = server.request(
        "POST", "/api/devices", json={"platform": "android", "token": "fcm-token-1"}, headers=key
    )
    assert answer.status_code == 201
    assert "secret" not in answer.json()


def children(pid: int) -> list[int]:
    """The processes ``pid`` started and that still run, from /proc."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def sender_other_than(server: Server, old: int | None, timeout: float = 20.0) -> int:
    """The server's event sender process, once it is not ``old``."""
    assert server.process is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in children(server.process.pid) if p != old]
        if found:
            (pid,) = found
            return pid
        time.sleep(0.05)
    raise AssertionError(f"no event sender process beside pid {old}")


def test_events_are_posted_from_a_process_of_their_own_started_again_after_a_kill(
    server: Server, receiver: Receiver
) -> None:
    # No endpoint yet (this module's other tests make none): no sender process either,
    # as on a server no sender uses events; it starts once an endpoint exists.
    assert server.process is not None
    assert children(server.process.pid) == []
    user = server.user("events")
    made = server.request(
        "POST",
        "/api/webhooks",
        json={"url": receiver.url("/events"), "events": ["notification.*"]},
        headers=user,
    )
    assert made.status_code == 201, made.text
    secret = made.json()["secret"]
    # Before any event: the first ones are not kept waiting for the process to start.
    sender_other_than(server, None)
    key = server.key("events")
    server.webhook(key, receiver.url("/hook"))

    send(server, key, "first")
    assert receiver.wait_for(1, timeout=30, path="/events")
    # `pushctl serve` posts them from a child process (PUSHCORE_EVENTS_PROCESS).
    sender = sender_other_than(server, None)
    # It runs below the engine's priority (it has posted: its niceness is set).
    engine = os.getpriority(os.PRIO_PROCESS, server.process.pid)
    assert os.getpriority(os.PRIO_PROCESS, sender) == min(19, engine + NICENESS)
    os.kill(sender, signal.SIGKILL)
    # Started again, and the next event comes through it; the server went on serving.
    sender_other_than(server, sender)
    send(server, key, "second")
    assert receiver.wait_for(2, timeout=30, path="/events")
    bodies = []
    for request in receiver.delivered("/events"):
        Webhook(secret).verify(request.raw, request.headers, json_parse=False)
        bodies.append(json.loads(request.raw))
    assert [b["type"] for b in bodies] == ["notification.delivered"] * 2
    assert len({b["id"] for b in bodies}) == 2
