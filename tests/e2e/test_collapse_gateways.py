"""A replacement at the fake APNs, FCM and Web Push servers: each platform's collapse
field carries the key, and `renotify: false` sends no sound."""

from __future__ import annotations

from typing import Any

import pytest

from pushcore.domain.collapse import web_push_topic
from tests.conftest import Api
from tests.e2e.test_platforms import (
    APNS_TOKEN,
    apns_api,
    fcm_api,
    wait_for,
    wait_for_status,
    web_api,
    webpush,
)
from tests.fakes.apns_server import FakeApns
from tests.fakes.fcm_server import FcmServer
from tests.fakes.webpush_server import WebPushServer

__all__ = ["apns_api", "fcm_api", "web_api", "webpush"]
pytestmark = pytest.mark.slow
NOW = "2000-01-01T00:00:00Z"


def send(api: Api, key: dict[str, str], **fields: Any) -> dict[str, Any]:
    response = api.client.post(
        "/api/notifications", json={"title": "Build 7", "scheduledAt": NOW, **fields}, headers=key
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_apns_gets_the_key_as_apns_collapse_id(apns_api: tuple[Api, FakeApns]) -> None:
    api, fake = apns_api
    key = api.key("alice")
    api.client.post("/api/devices", json={"platform": "ios", "token": APNS_TOKEN}, headers=key)
    first = send(api, key, body="running", collapseKey="build-7")
    wait_for_status(api, key, first["id"], "DELIVERED")
    quiet_send = send(api, key, body="passed", collapseKey="build-7", renotify=False)
    # A replacement created before a gateway took the older one cancels it (superseded), so
    # the quiet one must have gone out before the replacement is made.
    wait_for_status(api, key, quiet_send["id"], "DELIVERED")
    replaced = api.client.post(
        f"/api/notifications/{first['id']}/replace", json={"body": "failed"}, headers=key
    )
    assert replaced.status_code == 201
    wait_for(lambda: len(fake.requests) == 3)
    by_body = {r.payload["aps"]["alert"]["body"]: r for r in fake.requests}
    loud, quiet, again = by_body["running"], by_body["passed"], by_body["failed"]
    assert [r.headers["apns-collapse-id"] for r in fake.requests] == ["build-7"] * 3
    assert loud.payload["aps"]["sound"] == "default"
    assert "sound" not in quiet.payload["aps"]
    assert quiet.payload["aps"]["interruption-level"] == "passive"
    assert again.payload["aps"]["sound"] == "default"
    plain = send(api, key)
    wait_for(lambda: len(fake.requests) == 4)
    assert "apns-collapse-id" not in fake.requests[3].headers
    wait_for_status(api, key, plain["id"], "DELIVERED")


def test_fcm_gets_collapse_key_and_data(fcm_api: tuple[Api, FcmServer]) -> None:
    api, fake = fcm_api
    key = api.key("alice")
    api.client.post("/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=key)
    send(api, key, collapseKey="build-7")
    wait_for(lambda: len(fake.received) == 1)
    send(api, key, collapseKey="build-7", renotify=False)
    send(api, key)
    wait_for(lambda: len(fake.received) == 3)
    loud = fake.received[0].message
    # The last two are due at once and may arrive in either order.
    (quiet,) = [r.message for r in fake.received[1:] if "collapseKey" in r.message["data"]]
    (plain,) = [r.message for r in fake.received[1:] if "collapseKey" not in r.message["data"]]
    assert loud["android"] == {"priority": "HIGH", "collapse_key": "build-7"}
    assert (loud["data"]["collapseKey"], loud["data"]["sound"]) == ("build-7", "default")
    assert quiet["android"]["collapse_key"] == "build-7"
    assert "sound" not in quiet["data"]
    assert quiet["data"]["renotify"] == "false"
    assert plain["android"] == {"priority": "HIGH"}


def test_web_push_gets_the_key_as_topic(web_api: Api, webpush: WebPushServer) -> None:
    key = web_api.key("alice")
    subscription = webpush.subscribe()
    web_api.client.post(
        "/api/devices",
        json={
            "platform": "web",
            "token": subscription.endpoint,
            "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
        },
        headers=key,
    )
    long_key = "release.v2.0~candidate-" + "x" * 30  # 53 characters with dots: hashed
    first = send(web_api, key, collapseKey="build-7")
    wait_for(lambda: len(webpush.to(subscription)) == 1)
    second = send(web_api, key, collapseKey=long_key, renotify=False)
    wait_for(lambda: len(webpush.to(subscription)) == 2)
    short, hashed = webpush.to(subscription)
    assert webpush.errors == []
    assert short.headers["topic"] == "build-7"
    assert hashed.headers["topic"] == web_push_topic(long_key)
    assert len(hashed.headers["topic"]) == 32
    assert "." not in hashed.headers["topic"]
    assert (short.payload["collapseKey"], short.payload["notificationId"]) == (
        "build-7",
        first["id"],
    )
    assert hashed.payload["event"] == "notification"
    assert (hashed.payload["collapseKey"], hashed.payload["renotify"]) == (long_key, False)
    assert hashed.payload["revision"] == 1
    assert hashed.payload["receipt"].startswith("rct_")
    assert hashed.payload["notificationId"] == second["id"]
