"""Quiet hours black-box, on a loopback server with its engine and the real clock: a
window set around now holds a webhook push and marks the live event quiet; clearing it
sends what was held at once (API.md, "The recipient's time")."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.scopes import Scope
from pushcore.live import LiveLimits
from tests.fakes.receiver import Receiver, running_receiver
from tests.live.conftest import LiveServer


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    """The live server, its webhooks allowed to reach a loopback receiver."""
    env = {"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}
    services = build_services(load_settings(env=env, data_dir=tmp_path))
    services.live.limits = LiveLimits(keepalive=0.3, key_check=0.2)
    server = LiveServer(services)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback."""
    with running_receiver() as found:
        yield found


def due_now(title: str) -> dict[str, str]:
    """A notification due at once."""
    return {"title": title, "scheduledAt": datetime.now(UTC).isoformat()}


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_window_around_now_holds_the_push_and_marks_the_event_quiet(
    live: LiveServer, receiver: Receiver
) -> None:
    user = live.user("alice")
    _, key = live.key("alice", *Scope)
    device = {"platform": "webhook", "token": receiver.url("/hook")}
    assert live.request("POST", "/api/devices", json=device, headers=key).status_code == 201
    now = datetime.now(UTC)
    window = {
        "start": (now - timedelta(hours=1)).strftime("%H:%M"),
        "end": (now + timedelta(hours=1)).strftime("%H:%M"),
    }
    answer = live.request("PATCH", "/api/account", json={"quietHours": window}, headers=user)
    assert answer.status_code == 200, answer.text
    listener = live.listen(user)

    sent = live.request("POST", "/api/notifications", json=due_now("at night"), headers=key)
    assert sent.status_code == 201
    notification_id = sent.json()["id"]
    assert listener.wait_for(lambda events: len(events) == 1)
    (event,) = listener.notifications()
    assert event.data["notificationId"] == notification_id
    assert event.data["quiet"] is True

    def held() -> bool:
        with live.services.store.read() as tx:
            found = tx.progress.for_notification(notification_id)
        return [d.status.value for d in found] == ["HELD"]

    assert eventually(held)
    assert receiver.requests == []
    detail = live.request("GET", f"/api/notifications/{notification_id}", headers=key).json()
    assert detail["status"] == "QUEUED"

    # Cleared: what was held goes out at once, and a new one is not quiet.
    cleared = live.request("PATCH", "/api/account", json={"quietHours": None}, headers=user)
    assert cleared.json()["quietHours"] is None
    assert receiver.wait_for(1, timeout=10)
    live.request("POST", "/api/notifications", json=due_now("by day"), headers=key)
    assert listener.wait_for(lambda events: len(events) == 2)
    assert "quiet" not in listener.notifications()[1].data
    assert receiver.wait_for(2, timeout=10)
