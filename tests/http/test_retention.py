"""PUSHCORE_RETENTION over HTTP: the server's engine deletes settled notifications,
whose id is then a 404, and the stats count what is kept."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe


@pytest.fixture
def rapi(tmp_path: Path, fake_clock: FakeClock) -> Iterator[Api]:
    """An API and its engine on a fake clock, keeping settled notifications for an hour."""
    settings = load_settings(env={"PUSHCORE_RETENTION": "1h"}, data_dir=tmp_path)
    services = build_services(settings, clock=fake_clock, icons=FakeIconProbe())
    with TestClient(create_app(services)) as client:
        yield Api(client, services)


def eventually(condition: Callable[[], bool]) -> None:
    """Wait for the engine's thread; the bound only turns a hang into a failure."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "condition not met within 30 s"
        time.sleep(0.01)


def test_a_settled_notification_is_a_404_after_the_retention(
    rapi: Api, fake_clock: FakeClock
) -> None:
    key = rapi.key("alice")
    rapi.client.post("/api/devices", json={"platform": "android", "token": "t1"}, headers=key)
    # Android without FCM credentials: the delivery fails, which settles it.
    settled = rapi.client.post("/api/notifications", json={"title": "a"}, headers=key).json()
    fake_clock.advance(timedelta(seconds=5))

    def status(notification_id: str) -> object:
        return rapi.client.get(f"/api/notifications/{notification_id}", headers=key).json()

    eventually(lambda: status(settled["id"]).get("status") == "FAILED")  # type: ignore[attr-defined]
    kept = rapi.client.post(
        "/api/notifications",
        json={"title": "b", "delay": "custom", "customDelay": 86400},
        headers=key,
    ).json()
    fake_clock.advance(timedelta(minutes=61))
    eventually(
        lambda: (
            rapi.client.get(f"/api/notifications/{settled['id']}", headers=key).status_code == 404
        )
    )
    assert rapi.client.get(f"/api/notifications/{kept['id']}", headers=key).status_code == 200
    stats = rapi.client.get("/api/notifications/stats", headers=key).json()
    assert stats["total"] == 1
    assert stats["byStatus"]["FAILED"] == 0
    assert stats["deliveries"] == {"delivered": 0, "failed": 0, "pending": 1}
