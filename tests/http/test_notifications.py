"""/api/notifications over HTTP: fields, defaults, limits, statuses, scoping."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe


@pytest.fixture
def napi(tmp_path: Path, fake_clock: FakeClock) -> Iterator[Api]:
    """An API on a fake clock (nothing becomes due unless the test moves it)."""
    services = build_services(
        load_settings(env={}, data_dir=tmp_path), clock=fake_clock, icons=FakeIconProbe()
    )
    with TestClient(create_app(services)) as client:
        yield Api(client, services)


def ts(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def add_device(api: Api, headers: dict[str, str], token: str) -> dict[str, Any]:
    response = api.client.post(
        "/api/devices", json={"platform": "android", "token": token}, headers=headers
    )
    assert response.status_code in (200, 201)
    body: dict[str, Any] = response.json()
    return body


def test_create_with_defaults(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    add_device(napi, key, "t2")
    response = napi.client.post("/api/notifications", json={"title": "Hi"}, headers=key)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {
        "id",
        "title",
        "body",
        "status",
        "scheduledAt",
        "createdAt",
        "devicesTargeted",
    }
    assert body["id"].startswith("ntf_")
    assert body["body"] == ""
    assert body["status"] == "QUEUED"
    assert body["devicesTargeted"] == 2
    assert body["createdAt"] == ts(fake_clock.now())
    assert body["scheduledAt"] == ts(fake_clock.now() + timedelta(seconds=5))

    full = napi.client.get(f"/api/notifications/{body['id']}", headers=key).json()
    assert full["iconStyle"] == "bolt"
    assert full["sound"] == "default"
    assert full["priority"] == "normal"
    assert full["delay"] == "5s"
    assert full["customDelay"] is None
    assert full["metadata"] == {}
    assert full["stream"] is None
    assert full["senderName"] is None
    assert full["senderIcon"] is None
    assert full["targetDeviceToken"] is None
    assert full["failureReason"] is None
    assert full["deliveries"] == {
        "pending": 2,
        "delivered": 0,
        "failed": 0,
        "held": 0,
        "expired": 0,
        "opened": 0,
    }


@pytest.mark.parametrize(
    ("fields", "seconds"),
    [
        ({"delay": "30s"}, 30),
        ({"delay": "1m"}, 60),
        ({"delay": "5m"}, 300),
        ({"delay": "15m"}, 900),
        ({"delay": "30m"}, 1800),
        ({"delay": "1h"}, 3600),
        ({"delay": "custom", "customDelay": 1}, 1),
        ({"delay": "custom", "customDelay": 86400}, 86400),
        # Any duration, written as pushctl's --delay takes it (API.md), up to 30 days.
        ({"delay": "90s"}, 90),
        ({"delay": "2h"}, 7200),
        ({"delay": "1d"}, 86400),
        ({"delay": "30d"}, 30 * 86400),
        ({"delay": "45"}, 45),
        ({"delay": "1s"}, 1),
    ],
)
def test_delays(napi: Api, fake_clock: FakeClock, fields: dict[str, Any], seconds: int) -> None:
    response = napi.client.post(
        "/api/notifications", json={"title": "t", **fields}, headers=napi.key("alice")
    )
    assert response.status_code == 201
    assert response.json()["scheduledAt"] == ts(fake_clock.now() + timedelta(seconds=seconds))


def test_scheduled_at_overrides_delay_and_past_means_now(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    at = fake_clock.now() + timedelta(hours=2)
    exact = napi.client.post(
        "/api/notifications",
        json={"title": "t", "delay": "1m", "scheduledAt": at.astimezone().isoformat()},
        headers=key,
    )
    assert exact.json()["scheduledAt"] == ts(at)
    past = napi.client.post(
        "/api/notifications",
        json={"title": "t", "scheduledAt": "2001-01-01T00:00:00+02:00"},
        headers=key,
    )
    assert past.status_code == 201
    assert past.json()["scheduledAt"] == ts(fake_clock.now())
    thirty_days = fake_clock.now() + timedelta(days=30)
    limit = napi.client.post(
        "/api/notifications", json={"title": "t", "scheduledAt": ts(thirty_days)}, headers=key
    )
    assert limit.status_code == 201


def test_every_field_is_stored(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "phone")
    add_device(napi, key, "tablet")
    request = {
        "title": "Deploy finished",
        "body": "All green",
        "iconStyle": "terminal",
        "sound": "critical",
        "delay": "custom",
        "customDelay": 42,
        "priority": "high",
        "targetDeviceToken": "phone",
        "metadata": {"build": "1234", "branch": "main"},
        "senderName": "CI Bot",
        "senderIcon": "https://example.com/bot.png",
    }
    created = napi.client.post("/api/notifications", json=request, headers=key).json()
    assert created["devicesTargeted"] == 1
    full = napi.client.get(f"/api/notifications/{created['id']}", headers=key).json()
    for field, value in request.items():
        assert full[field] == value, field


def test_invalid_bodies_list_every_field_and_store_nothing(napi: Api) -> None:
    key = napi.key("alice")
    response = napi.client.post(
        "/api/notifications",
        json={
            "title": "",
            "body": "x" * 2001,
            "iconStyle": "star",
            "sound": "loud",
            "delay": "2 minutes",
            "priority": "urgent",
            "metadata": {"n": 1},
            "senderName": "n" * 51,
            "senderIcon": "ftp://x/y.png",
            "scheduledAt": "tomorrow",
            "customDelay": 0,
            "surprise": True,
        },
        headers=key,
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert {d["field"] for d in body["details"]} == {
        "title",
        "body",
        "iconStyle",
        "sound",
        "delay",
        "priority",
        "metadata",
        "senderName",
        "senderIcon",
        "scheduledAt",
        "customDelay",
        "surprise",
    }
    stats = napi.client.get("/api/notifications/stats", headers=key).json()
    assert stats["total"] == 0


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"title": "x" * 201}, "title", "must be 1 to 200 characters"),
        ({"customDelay": 10}, "customDelay", "is only allowed when delay is custom"),
        ({"delay": "custom"}, "customDelay", "is required when delay is custom"),
        ({"delay": "custom", "customDelay": 86401}, "customDelay", "must be from 1 to 86400"),
        ({"delay": "31d"}, "delay", "must be a duration from 1 second to 30 days"),
        ({"delay": "0s"}, "delay", "must be a duration from 1 second to 30 days"),
        ({"delay": "2 hours"}, "delay", None),
        ({"delay": "1w"}, "delay", None),
        ({"delay": 90}, "delay", "must be a string or null"),
        ({"scheduledAt": "2099-01-01T00:00:00Z"}, "scheduledAt", "must be at most 30 days ahead"),
        ({"scheduledAt": "2026-11-21T10:00:00"}, "scheduledAt", None),
        ({"metadata": {f"k{i}": "v" for i in range(51)}}, "metadata", "must have at most 50 keys"),
        ({"metadata": {"k": "v" * 4096}}, "metadata", None),
        (
            {"senderIcon": "https://example.com/icon.gif"},
            "senderIcon",
            "must be a PNG or JPEG image",
        ),
        ({"title": 5}, "title", "must be a string"),
    ],
)
def test_single_rule_violations(
    napi: Api, fields: dict[str, Any], field: str, message: str | None
) -> None:
    response = napi.client.post(
        "/api/notifications", json={"title": "ok", **fields}, headers=napi.key("alice")
    )
    assert response.status_code == 400
    details = response.json()["details"]
    assert [d["field"] for d in details] == [field]
    if message is not None:
        assert details[0]["message"] == message


def test_unknown_target_device_is_404(napi: Api) -> None:
    key = napi.key("alice")
    napi.key("bob")
    add_device(napi, napi.key("bob"), "bobs-phone")
    response = napi.client.post(
        "/api/notifications", json={"title": "t", "targetDeviceToken": "bobs-phone"}, headers=key
    )
    assert response.status_code == 404
    assert response.json()["code"] == "device_not_found"


def test_scopes_and_credentials(napi: Api) -> None:
    reader = napi.key("alice", "notifications:read")
    writer = napi.key("alice", "notifications:write")
    created = napi.client.post("/api/notifications", json={"title": "t"}, headers=writer)
    assert created.status_code == 201
    denied = napi.client.post("/api/notifications", json={"title": "t"}, headers=reader)
    assert denied.status_code == 401
    assert denied.json()["error"] == "API key missing required scope: notifications:write"
    for path in ("/api/notifications", "/api/notifications/stats"):
        assert napi.client.get(path, headers=writer).json()["error"] == (
            "API key missing required scope: notifications:read"
        )
        assert napi.client.get(path, headers=reader).status_code == 200
    token = napi.client.get("/api/notifications", headers=napi.token("alice"))
    assert token.status_code == 401
    assert token.json()["error"] == "This endpoint requires an API key"


def test_another_accounts_notification_is_not_found(napi: Api) -> None:
    alice = napi.key("alice")
    created = napi.client.post("/api/notifications", json={"title": "t"}, headers=alice).json()
    mallory = napi.key("mallory")
    assert (
        napi.client.get(f"/api/notifications/{created['id']}", headers=mallory).status_code == 404
    )
    cancel = napi.client.delete(f"/api/notifications/{created['id']}", headers=mallory)
    assert cancel.status_code == 404
    assert napi.client.get("/api/notifications", headers=mallory).json()["items"] == []
    assert napi.client.get("/api/notifications/stats", headers=mallory).json()["total"] == 0
    mine = napi.client.get(f"/api/notifications/{created['id']}", headers=alice).json()
    assert mine["status"] == "QUEUED"


def test_cancel(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    created = napi.client.post("/api/notifications", json={"title": "t"}, headers=key).json()
    cancelled = napi.client.delete(f"/api/notifications/{created['id']}", headers=key)
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "CANCELLED"
    assert cancelled.json()["deliveries"] == {
        "pending": 0,
        "delivered": 0,
        "failed": 0,
        "held": 0,
        "expired": 0,
        "opened": 0,
    }
    again = napi.client.delete(f"/api/notifications/{created['id']}", headers=key)
    assert again.status_code == 409
    assert again.json()["code"] == "not_cancellable"
    assert napi.client.delete("/api/notifications/ntf_nope", headers=key).status_code == 404


def test_list_pages_newest_first_with_status_filter(napi: Api) -> None:
    key = napi.key("alice")
    ids = [
        napi.client.post("/api/notifications", json={"title": f"n{i}"}, headers=key).json()["id"]
        for i in range(7)
    ]
    napi.client.delete(f"/api/notifications/{ids[3]}", headers=key)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        params = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        page = napi.client.get("/api/notifications", params=params, headers=key).json()
        seen += [item["id"] for item in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    default = napi.client.get("/api/notifications", headers=key).json()
    assert len(default["items"]) == 7
    assert default["nextCursor"] is None
    cancelled = napi.client.get(
        "/api/notifications", params={"status": "CANCELLED"}, headers=key
    ).json()
    assert [item["id"] for item in cancelled["items"]] == [ids[3]]


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        ({"status": "SENT"}, ["status"]),
        ({"limit": "0"}, ["limit"]),
        ({"limit": "101"}, ["limit"]),
        ({"limit": "ten"}, ["limit"]),
        ({"cursor": "bm9wZQ"}, ["cursor"]),
        ({"cursor": "!!"}, ["cursor"]),
        ({"status": "nope", "limit": "-1"}, ["status", "limit"]),
    ],
)
def test_bad_list_queries(napi: Api, params: dict[str, str], fields: list[str]) -> None:
    response = napi.client.get("/api/notifications", params=params, headers=napi.key("alice"))
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["details"]] == fields


def test_stats(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    for _ in range(3):
        napi.client.post("/api/notifications", json={"title": "t"}, headers=key)
    first = napi.client.get("/api/notifications", headers=key).json()["items"][0]["id"]
    napi.client.delete(f"/api/notifications/{first}", headers=key)
    stats = napi.client.get("/api/notifications/stats", headers=key).json()
    assert stats == {
        "total": 3,
        "byStatus": {"SCHEDULED": 0, "QUEUED": 2, "DELIVERED": 0, "FAILED": 0, "CANCELLED": 1},
        "deliveries": {"delivered": 0, "failed": 0, "pending": 0},
        "last24h": {"created": 3, "delivered": 0, "failed": 0},
    }
    fake_clock.set(datetime(2026, 11, 23, 10, 0, tzinfo=UTC))
    later = napi.client.get("/api/notifications/stats", headers=key).json()
    assert later["last24h"]["created"] == 0
    assert later["total"] == 3


def test_a_delay_is_shown_as_it_was_asked(napi: Api) -> None:
    key = napi.key("alice")
    created = napi.client.post(
        "/api/notifications", json={"title": "t", "delay": "2h"}, headers=key
    ).json()

    shown = napi.client.get(f"/api/notifications/{created['id']}", headers=key).json()

    assert (shown["delay"], shown["customDelay"]) == ("2h", None)


@pytest.mark.parametrize(
    ("content_type", "text", "title", "body"),
    [
        # What `curl -d "Backup done" URL` sends: no encoding, whatever the type says.
        ("application/x-www-form-urlencoded", "Backup done", "Backup done", ""),
        (
            "text/plain",
            "Backup done\nAll 3 volumes copied.\n",
            "Backup done",
            "All 3 volumes copied.",
        ),
        (
            "text/plain; charset=utf-8",
            "  Ünïcode ✓\r\nline 2\r\nline 3",
            "Ünïcode ✓",
            "line 2\r\nline 3",
        ),
    ],
)
def test_a_text_body_is_a_notification_titled_by_its_first_line(
    napi: Api, fake_clock: FakeClock, content_type: str, text: str, title: str, body: str
) -> None:
    key = napi.key("alice")

    response = napi.client.post(
        "/api/notifications",
        content=text.encode(),
        headers={**key, "Content-Type": content_type},
    )

    assert response.status_code == 201, response.text
    created = response.json()
    assert (created["title"], created["body"]) == (title, body)
    # Every other field at its default: the 5 s delay, normal priority.
    assert created["scheduledAt"] == ts(fake_clock.now() + timedelta(seconds=5))
    shown = napi.client.get(f"/api/notifications/{created['id']}", headers=key).json()
    assert (shown["priority"], shown["sound"], shown["metadata"]) == ("normal", "default", {})


@pytest.mark.parametrize(
    ("content", "field", "message"),
    [
        (b"", "title", "must be 1 to 200 characters"),
        (b"   \n  ", "title", "must be 1 to 200 characters"),
        (b"x" * 201, "title", "must be 1 to 200 characters"),
        (b"\xff\xfe", "title", "a text body must be UTF-8"),
        (b"ti\x00tle", "title", "must not contain the NUL character"),
    ],
)
def test_a_bad_text_body_is_a_400_that_stores_nothing(
    napi: Api, content: bytes, field: str, message: str
) -> None:
    key = napi.key("alice")

    response = napi.client.post(
        "/api/notifications", content=content, headers={**key, "Content-Type": "text/plain"}
    )

    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert response.json()["details"][0] == {"field": field, "message": message}
    assert napi.client.get("/api/notifications/stats", headers=key).json()["total"] == 0


def test_a_text_body_in_another_charset_is_a_415(napi: Api) -> None:
    response = napi.client.post(
        "/api/notifications",
        content=b"Backup done",
        headers={**napi.key("alice"), "Content-Type": "text/plain; charset=latin-1"},
    )
    assert response.status_code == 415
