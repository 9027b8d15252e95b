"""From POST /api/notifications to each platform's fake gateway server, through the engine.

The app runs in-process (Starlette TestClient, with the real delivery engine
in its lifespan); the gateways speak their real protocols to fakes on
loopback.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.apns_server import Answer, FakeApns, running_apns
from tests.fakes.fcm_server import FcmServer, fcm_error, running_fcm_server
from tests.fakes.webpush_server import WebPushServer, running_webpush_server
from tests.gateways.support import make_ca

pytestmark = pytest.mark.slow


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def wait_for_status(
    api: Api, key: dict[str, str], notification_id: str, status: str
) -> dict[str, Any]:
    """The notification, once it has reached ``status``."""

    def reached() -> bool:
        body = api.client.get(f"/api/notifications/{notification_id}", headers=key).json()
        return bool(body["status"] == status)

    wait_for(reached)
    detail: dict[str, Any] = api.client.get(
        f"/api/notifications/{notification_id}", headers=key
    ).json()
    return detail


@pytest.fixture
def webpush() -> Iterator[WebPushServer]:
    with running_webpush_server() as server:
        yield server


@pytest.fixture
def web_api(tmp_path: Path) -> Iterator[Api]:
    settings = load_settings(
        env={
            "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true",
            "PUSHCORE_VAPID_SUBJECT": "mailto:ops@example.com",
        },
        data_dir=tmp_path,
    )
    services = build_services(settings)
    with TestClient(create_app(services)) as client:
        yield Api(client, services)


def test_web_push_end_to_end(web_api: Api, webpush: WebPushServer) -> None:
    key = web_api.key("alice")
    public_key = web_api.client.get("/api/webpush/vapid-public-key").json()["publicKey"]
    subscription = webpush.subscribe()
    device = web_api.client.post(
        "/api/devices",
        json={
            "platform": "web",
            "token": subscription.endpoint,
            "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
        },
        headers=key,
    )
    assert device.status_code == 201
    request: dict[str, Any] = {
        "title": "Build passed",
        "body": "main is green",
        "priority": "high",
        "sound": "soft",
        "iconStyle": "terminal",
        "metadata": {"build": "42"},
        "senderName": "CI",
        "scheduledAt": "2000-01-01T00:00:00Z",
    }
    created = web_api.client.post("/api/notifications", json=request, headers=key).json()
    wait_for(lambda: len(webpush.to(subscription)) == 1)
    (message,) = webpush.to(subscription)
    assert webpush.errors == []
    # Each delivery's own receipt token (API.md, "Following up").
    assert message.payload["receipt"].startswith("rct_")
    assert message.payload == {
        "notificationId": created["id"],
        "title": "Build passed",
        "body": "main is green",
        "iconStyle": "terminal",
        "sound": "soft",
        "priority": "high",
        "metadata": {"build": "42"},
        "sender": {"name": "CI", "icon": None},
        "stream": None,
        "scheduledAt": created["scheduledAt"],
        "event": "notification",
        "collapseKey": None,
        "revision": 1,
        "renotify": True,
        "receipt": message.payload["receipt"],
        "expiresAt": None,
    }
    assert "topic" not in message.headers
    assert message.headers["urgency"] == "high"
    assert message.headers["ttl"] == "86400"
    assert message.headers["content-encoding"] == "aes128gcm"
    assert message.vapid_key == public_key
    assert message.claims["sub"] == "mailto:ops@example.com"
    assert message.claims["aud"] == webpush.origin
    wait_for_status(web_api, key, created["id"], "DELIVERED")


def test_a_gone_subscription_deactivates_the_web_device(
    web_api: Api, webpush: WebPushServer
) -> None:
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
    webpush.unsubscribe(subscription)
    created = web_api.client.post(
        "/api/notifications",
        json={"title": "t", "scheduledAt": "2000-01-01T00:00:00Z"},
        headers=key,
    ).json()

    detail = wait_for_status(web_api, key, created["id"], "FAILED")
    assert detail["failureReason"] == "Gone"
    devices = web_api.client.get("/api/devices", headers=key).json()
    assert [d["isActive"] for d in devices] == [False]


def test_vapid_public_key_is_stable_and_needs_no_auth(tmp_path: Path) -> None:
    keys = []
    for _ in range(2):
        services = build_services(load_settings(env={}, data_dir=tmp_path))
        with TestClient(create_app(services, run_engine=False)) as client:
            response = client.get("/api/webpush/vapid-public-key")
            assert response.status_code == 200
            keys.append(response.json()["publicKey"])
    assert keys[0] == keys[1]
    assert len(keys[0]) == 87  # 65 bytes, base64url without padding
    assert (tmp_path / "vapid-private.pem").stat().st_mode & 0o777 == 0o600


@pytest.fixture
def fcm_api(tmp_path: Path) -> Iterator[tuple[Api, FcmServer]]:
    tls = make_ca()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.ca.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    tls.ca.cert_pem.write_to_path(str(ca_file))
    with running_fcm_server(context) as fake:
        account_file = tmp_path / "service-account.json"
        account_file.write_text(json.dumps(fake.service_account()))
        settings = load_settings(
            env={
                "PUSHCORE_FCM_SERVICE_ACCOUNT_FILE": str(account_file),
                "PUSHCORE_FCM_URL": fake.base_url,
                "PUSHCORE_CA_FILE": str(ca_file),
            },
            data_dir=tmp_path / "data",
        )
        services = build_services(settings)
        with TestClient(create_app(services)) as client:
            yield Api(client, services), fake


def test_fcm_end_to_end(fcm_api: tuple[Api, FcmServer]) -> None:
    api, fake = fcm_api
    key = api.key("alice")
    api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-token-1"}, headers=key
    )
    created = api.client.post(
        "/api/notifications",
        json={
            "title": "Disk almost full",
            "body": "91% on db-1",
            "priority": "low",
            "metadata": {"host": "db-1"},
            "senderIcon": None,
            "scheduledAt": "2000-01-01T00:00:00Z",
        },
        headers=key,
    ).json()
    wait_for(lambda: len(fake.received) == 1)
    (received,) = fake.received
    receipt = received.message["data"]["receipt"]
    assert receipt.startswith("rct_")
    assert received.message == {
        "token": "fcm-token-1",
        "android": {"priority": "NORMAL"},
        "data": {
            "notificationId": created["id"],
            "title": "Disk almost full",
            "body": "91% on db-1",
            "iconStyle": "bolt",
            "sound": "default",
            "priority": "low",
            "metadata": '{"host":"db-1"}',
            "receipt": receipt,
        },
    }
    assert fake.token_requests == 1


def test_fcm_unregistered_deactivates_the_device(fcm_api: tuple[Api, FcmServer]) -> None:
    api, fake = fcm_api
    key = api.key("alice")
    api.client.post("/api/devices", json={"platform": "android", "token": "dead"}, headers=key)
    fake.inject("dead", fcm_error("UNREGISTERED"))
    created = api.client.post(
        "/api/notifications",
        json={"title": "t", "scheduledAt": "2000-01-01T00:00:00Z"},
        headers=key,
    ).json()

    detail = wait_for_status(api, key, created["id"], "FAILED")
    assert detail["failureReason"] == "UNREGISTERED"
    assert [d["isActive"] for d in api.client.get("/api/devices", headers=key).json()] == [False]


APNS_TOKEN = "ab" * 32


@pytest.fixture
def apns_api(tmp_path: Path) -> Iterator[tuple[Api, FakeApns]]:
    key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with running_apns(
        key_pem=key, key_id="KEY1234567", team_id="TEAM123456", topic="com.example.app"
    ) as fake:
        key_file, ca_file = tmp_path / "AuthKey.p8", tmp_path / "ca.pem"
        key_file.write_bytes(key)
        fake.ca.cert_pem.write_to_path(str(ca_file))
        settings = load_settings(
            env={
                "PUSHCORE_APNS_KEY_FILE": str(key_file),
                "PUSHCORE_APNS_KEY_ID": "KEY1234567",
                "PUSHCORE_APNS_TEAM_ID": "TEAM123456",
                "PUSHCORE_APNS_TOPIC": "com.example.app",
                "PUSHCORE_APNS_URL": fake.url,
                "PUSHCORE_CA_FILE": str(ca_file),
            },
            data_dir=tmp_path / "data",
        )
        services = build_services(settings)
        with TestClient(create_app(services)) as client:
            yield Api(client, services), fake


def test_apns_end_to_end(apns_api: tuple[Api, FakeApns]) -> None:
    api, fake = apns_api
    key = api.key("alice")
    api.client.post("/api/devices", json={"platform": "ios", "token": APNS_TOKEN}, headers=key)
    created = api.client.post(
        "/api/notifications",
        json={
            "title": "Server down",
            "body": "api-2 is not answering",
            "priority": "critical",
            "sound": "critical",
            "metadata": {"host": "api-2"},
            "senderName": "Pager",
            "scheduledAt": "2000-01-01T00:00:00Z",
        },
        headers=key,
    ).json()
    wait_for(lambda: len(fake.requests) == 1)
    (request,) = fake.requests
    assert fake.rejected == []
    assert request.token == APNS_TOKEN
    assert request.headers["apns-topic"] == "com.example.app"
    assert request.headers["apns-push-type"] == "alert"
    assert request.headers["apns-priority"] == "10"
    assert request.claims["iss"] == "TEAM123456"
    assert request.jwt_header["kid"] == "KEY1234567"
    assert request.payload["receipt"].startswith("rct_")
    assert request.payload == {
        "aps": {
            "alert": {"title": "Server down", "body": "api-2 is not answering"},
            "sound": {"critical": 1, "name": "default", "volume": 1.0},
            "interruption-level": "critical",
            "mutable-content": 1,
        },
        "notificationId": created["id"],
        "iconStyle": "bolt",
        "metadata": {"host": "api-2"},
        "sender": {"name": "Pager", "icon": None},
        "receipt": request.payload["receipt"],
    }

    wait_for_status(api, key, created["id"], "DELIVERED")


def test_apns_unregistered_deactivates_the_device(apns_api: tuple[Api, FakeApns]) -> None:
    api, fake = apns_api
    key = api.key("alice")
    api.client.post("/api/devices", json={"platform": "ios", "token": APNS_TOKEN}, headers=key)
    fake.script(APNS_TOKEN, Answer(410, "Unregistered"))
    created = api.client.post(
        "/api/notifications",
        json={"title": "t", "scheduledAt": "2000-01-01T00:00:00Z"},
        headers=key,
    ).json()

    detail = wait_for_status(api, key, created["id"], "FAILED")
    assert detail["failureReason"] == "Unregistered"
    assert [d["isActive"] for d in api.client.get("/api/devices", headers=key).json()] == [False]
