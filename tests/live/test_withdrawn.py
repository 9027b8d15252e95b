"""Withdraw and expiry, black box on a real loopback server (SQLite and PostgreSQL): the
open channel gets `event: withdrawn`, GET /api/inbox stops listing the entry, and a
webhook device gets the signed withdrawal once, however often the sender withdraws."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.scopes import Scope
from pushcore.live import LiveLimits
from tests.fakes.receiver import Receiver, running_receiver
from tests.live.conftest import LiveServer

SCOPES = (Scope.NOTIFICATIONS_READ, Scope.NOTIFICATIONS_WRITE, Scope.DEVICES_WRITE)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveServer]:
    """A server (API and engine) that may deliver to loopback webhooks."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_cluster").create_database()
    env = {"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}
    settings = load_settings(env=env, data_dir=tmp_path / "data", database_url=url)
    services = build_services(settings)
    services.live.limits = LiveLimits(keepalive=0.3)
    started = LiveServer(services)
    started.start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """Alice's webhook device."""
    with running_receiver() as running:
        yield running


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether ``condition`` holds within ``timeout`` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def inbox(server: LiveServer, user: dict[str, str]) -> list[dict[str, Any]]:
    """What GET /api/inbox lists."""
    items: list[dict[str, Any]] = server.request("GET", "/api/inbox", headers=user).json()["items"]
    return items


def test_a_withdrawal_leaves_every_surface_and_is_sent_once(
    server: LiveServer, receiver: Receiver
) -> None:
    user = server.user("alice")
    _, key = server.key("alice", *SCOPES)
    device = {"platform": "webhook", "token": receiver.url("/hook")}
    assert server.request("POST", "/api/devices", json=device, headers=key).status_code == 201
    channel = server.listen(user)
    sent = server.request(
        "POST", "/api/notifications", json={"title": "Wrong", "delay": "1s"}, headers=key
    ).json()
    assert channel.wait_for(lambda _: len(channel.notifications()) == 1)
    assert eventually(lambda: len(receiver.requests) == 1)
    entry_id = channel.notifications()[0].id

    url = f"/api/notifications/{sent['id']}/withdraw"
    first = server.request("POST", url, headers=key)
    again = server.request("POST", url, headers=key)

    assert first.status_code == again.status_code == 200
    assert first.json()["withdrawnAt"] is not None
    assert channel.wait_for(lambda events: events[-1].event == "withdrawn")
    assert channel.events[-1].data == {"ids": [entry_id]}
    assert inbox(server, user) == []
    assert eventually(lambda: len(receiver.requests) == 2)
    assert receiver.requests[1].body == {
        "event": "withdrawn",
        "notificationId": sent["id"],
        "collapseKey": None,
    }
    detail = f"/api/notifications/{sent['id']}"
    assert eventually(
        lambda: server.request("GET", detail, headers=key).json()["deliveries"]["pending"] == 0
    )
    # Withdrawn twice, sent once: the second answer is the first, and nothing more came.
    assert (
        server.request("POST", url, headers=key).json()["withdrawnAt"]
        == (first.json()["withdrawnAt"])
    )
    assert len(receiver.requests) == 2


def test_an_entry_leaves_the_inbox_at_its_expiry(server: LiveServer) -> None:
    user = server.user("alice")
    _, key = server.key("alice", *SCOPES)
    channel = server.listen(user)
    sent = server.request(
        "POST",
        "/api/notifications",
        json={"title": "Short-lived", "delay": "1s", "ttl": 1},
        headers=key,
    )
    assert sent.status_code == 201
    assert channel.wait_for(lambda _: len(channel.notifications()) == 1)
    entry = channel.notifications()[0]
    assert entry.data["expiresAt"] is not None

    assert channel.wait_for(lambda events: events[-1].event == "withdrawn", timeout=10)

    assert channel.events[-1].data == {"ids": [entry.id]}
    assert inbox(server, user) == []
