"""POST /api/notifications/batch: 1 to 500 items, all or nothing, item-named details."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe
from tests.http.test_notifications import add_device, ts
from tests.support_counts import delivery_counts


class RecordingWaker:
    """Stands in for the engine: remembers each wake-up."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def wake(self, at: Any) -> None:
        self.calls.append(at)


@pytest.fixture
def icons() -> FakeIconProbe:
    return FakeIconProbe()


@pytest.fixture
def bapi(tmp_path: Path, fake_clock: FakeClock, icons: FakeIconProbe) -> Iterator[Api]:
    services = build_services(
        load_settings(env={}, data_dir=tmp_path), clock=fake_clock, icons=icons
    )
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services)


def count(api: Api, key: dict[str, str]) -> int:
    return len(api.client.get("/api/notifications?limit=100", headers=key).json()["items"])


def test_batch_creates_every_item_in_order(bapi: Api, fake_clock: FakeClock) -> None:
    key = bapi.key("alice")
    add_device(bapi, key, "t1")
    add_device(bapi, key, "t2")
    waker = RecordingWaker()
    bapi.services.wakes.engine = waker
    items = [
        {"title": "later", "delay": "15m"},
        {"title": "targeted", "targetDeviceToken": "t2", "delay": "1m"},
        {"title": "default"},
    ]
    response = bapi.client.post(
        "/api/notifications/batch", json={"notifications": items}, headers=key
    )
    assert response.status_code == 201, response.text
    created = response.json()["items"]
    assert [c["title"] for c in created] == ["later", "targeted", "default"]
    assert [c["devicesTargeted"] for c in created] == [2, 1, 2]
    assert all(c["status"] == "QUEUED" and c["id"].startswith("ntf_") for c in created)
    now = fake_clock.now()
    assert created[0]["scheduledAt"] == ts(now + timedelta(minutes=15))
    assert created[2]["scheduledAt"] == ts(now + timedelta(seconds=5))
    # One wake-up, for the earliest due time of the batch.
    assert waker.calls == [now + timedelta(seconds=5)]
    # Each item is a notification like any other.
    full = bapi.client.get(f"/api/notifications/{created[1]['id']}", headers=key).json()
    assert full["targetDeviceToken"] == "t2"
    assert full["deliveries"] == delivery_counts(1, 0, 0)


def test_one_invalid_item_stores_nothing_and_every_field_is_named(bapi: Api) -> None:
    key = bapi.key("alice")
    items: list[Any] = [{"title": "fine"} for _ in range(12)]
    items[3] = {"title": ""}
    items[10] = {"title": "x", "delay": "custom", "colour": "red"}
    items[11] = "not an object"
    response = bapi.client.post(
        "/api/notifications/batch", json={"notifications": items}, headers=key
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    fields = [d["field"] for d in body["details"]]
    assert "notifications[3].title" in fields
    assert "notifications[10].colour" in fields
    assert "notifications[11]" in fields
    assert not any(f.startswith(("notifications[0]", "notifications[1].")) for f in fields)
    assert count(bapi, key) == 0


def test_schedule_and_icon_errors_are_named_per_item(bapi: Api, icons: FakeIconProbe) -> None:
    key = bapi.key("alice")
    bad_icon = "https://example.com/icon.gif"
    items = [
        {"title": "a", "senderIcon": bad_icon},
        {"title": "b", "customDelay": 30},
        {"title": "c", "senderIcon": bad_icon},
        {"title": "d", "senderIcon": "https://example.com/ok.png"},
    ]
    response = bapi.client.post(
        "/api/notifications/batch", json={"notifications": items}, headers=key
    )
    assert response.status_code == 400
    fields = [d["field"] for d in response.json()["details"]]
    assert fields == [
        "notifications[0].senderIcon",
        "notifications[1].customDelay",
        "notifications[2].senderIcon",
    ]
    # Each distinct URL is checked once.
    assert sorted(icons.checked) == sorted([bad_icon, "https://example.com/ok.png"])
    assert count(bapi, key) == 0


def test_unknown_target_device_is_a_400_detail_and_nothing_is_stored(bapi: Api) -> None:
    key = bapi.key("alice")
    add_device(bapi, key, "known")
    items = [
        {"title": "a", "targetDeviceToken": "known"},
        {"title": "b", "targetDeviceToken": "missing"},
        {"title": "c"},
    ]
    response = bapi.client.post(
        "/api/notifications/batch", json={"notifications": items}, headers=key
    )
    assert response.status_code == 400
    assert response.json()["details"] == [
        {
            "field": "notifications[1].targetDeviceToken",
            "message": "no device with this token on this account",
        }
    ]
    assert count(bapi, key) == 0


@pytest.mark.parametrize("body", [{"notifications": []}, {}, {"notifications": {"title": "x"}}])
def test_empty_missing_or_wrong_list_names_notifications(bapi: Api, body: Any) -> None:
    response = bapi.client.post("/api/notifications/batch", json=body, headers=bapi.key("alice"))
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["details"]] == ["notifications"]


def test_500_items_pass_and_501_are_refused(bapi: Api) -> None:
    key = bapi.key("alice")
    items = [{"title": f"n{i}", "body": "x" * 200} for i in range(501)]
    refused = bapi.client.post(
        "/api/notifications/batch", json={"notifications": items}, headers=key
    )
    assert refused.status_code == 400
    assert refused.json()["details"][0]["field"] == "notifications"
    assert count(bapi, key) == 0
    # 500 items of this size are over the single endpoint's 64 KiB, within 1 MiB.
    body = json.dumps({"notifications": items[:500]})
    assert 64 * 1024 < len(body) < 1024 * 1024
    headers = {**key, "Content-Type": "application/json"}
    accepted = bapi.client.post("/api/notifications/batch", content=body, headers=headers)
    assert accepted.status_code == 201, accepted.text
    assert len(accepted.json()["items"]) == 500


def test_body_over_one_mib_is_413(bapi: Api) -> None:
    key = bapi.key("alice")
    body = json.dumps({"notifications": [{"title": "t", "body": "x" * 1990}] * 520})
    assert len(body) > 1024 * 1024
    headers = {**key, "Content-Type": "application/json"}
    response = bapi.client.post("/api/notifications/batch", content=body, headers=headers)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    # The single create keeps its 64 KiB limit.
    single = json.dumps({"title": "t", "metadata": {"k": "x" * 70_000}})
    assert bapi.client.post("/api/notifications", content=single, headers=headers).status_code == (
        413
    )


def test_batch_needs_the_write_scope(bapi: Api) -> None:
    reader = bapi.key("alice", "notifications:read")
    response = bapi.client.post(
        "/api/notifications/batch", json={"notifications": [{"title": "x"}]}, headers=reader
    )
    assert response.status_code == 401
    assert response.json()["error"] == "API key missing required scope: notifications:write"
