"""/api/devices over HTTP: idempotent registration, platforms, scoping, SSRF guard."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from tests.conftest import Api
from tests.http.test_streams import assert_error

IOS_TOKEN = "a1" * 32
_POINT = (
    ec.generate_private_key(ec.SECP256R1())
    .public_key()
    .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
)
P256DH = base64.urlsafe_b64encode(_POINT).rstrip(b"=").decode()
AUTH = base64.urlsafe_b64encode(b"\x22" * 16).rstrip(b"=").decode()


def test_register_is_an_idempotent_upsert(api: Api) -> None:
    headers = api.key("alice", "devices:write", "devices:read")
    first = api.client.post(
        "/api/devices",
        json={"platform": "ios", "token": IOS_TOKEN, "name": "phone"},
        headers=headers,
    )
    assert first.status_code == 201
    device = first.json()
    assert set(device) == {
        "id",
        "name",
        "platform",
        "tokenPrefix",
        "isActive",
        "createdAt",
        "lastDeliveredAt",
    }
    assert device["id"].startswith("dev_")
    assert device["tokenPrefix"] == IOS_TOKEN[:8]
    assert device["isActive"] is True
    assert device["lastDeliveredAt"] is None
    assert device["name"] == "phone"

    second = api.client.post(
        "/api/devices", json={"platform": "ios", "token": IOS_TOKEN}, headers=headers
    )
    assert second.status_code == 200
    assert second.json() == device  # same id; a missing name keeps the old one
    listed = api.client.get("/api/devices", headers=headers)
    assert listed.json() == [device]
    assert IOS_TOKEN not in listed.text


def test_register_reactivates_a_deactivated_device(api: Api) -> None:
    headers = api.key("alice")
    device = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=headers
    ).json()
    # A gateway's "token no longer valid" deactivates a device (the delivery engine's job).
    with api.services.store.transaction() as tx:
        stored = tx.devices.get("alice", device["id"])
        assert stored is not None
        tx.devices.update(attrs.evolve(stored, is_active=False))
    assert api.client.get("/api/devices", headers=headers).json()[0]["isActive"] is False
    again = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=headers
    )
    assert again.status_code == 200
    assert again.json()["isActive"] is True
    assert again.json()["id"] == device["id"]


def test_remove_then_register_again_is_new(api: Api) -> None:
    headers = api.key("alice")
    device = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=headers
    ).json()
    removed = api.client.delete(f"/api/devices/{device['id']}", headers=headers)
    assert removed.status_code == 200
    assert removed.json() == {"success": True, "id": device["id"]}
    assert api.client.get("/api/devices", headers=headers).json() == []
    gone = api.client.delete(f"/api/devices/{device['id']}", headers=headers)
    assert gone.status_code == 404
    assert gone.json() == {"error": "Device not found", "code": "not_found"}
    again = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=headers
    )
    assert again.status_code == 201
    assert again.json()["id"] != device["id"]


def test_another_accounts_device_is_not_found(api: Api) -> None:
    alice = api.key("alice")
    device = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=alice
    ).json()
    mallory = api.token("mallory")
    assert api.client.delete(f"/api/devices/{device['id']}", headers=mallory).status_code == 404
    assert api.client.get("/api/devices", headers=mallory).json() == []
    # The same token on another account is another device, not a takeover.
    theirs = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-1"}, headers=mallory
    )
    assert theirs.status_code == 201
    assert len(api.client.get("/api/devices", headers=alice).json()) == 1


def test_jwt_has_every_right_of_its_account(api: Api) -> None:
    user = api.token("alice")
    created = api.client.post(
        "/api/devices", json={"platform": "android", "token": "t"}, headers=user
    )
    assert created.status_code == 201
    assert len(api.client.get("/api/devices", headers=user).json()) == 1


def test_web_push_devices_need_their_keys(api: Api) -> None:
    headers = api.key("alice")
    endpoint = "https://push.example.net/send/abc"
    missing = api.client.post(
        "/api/devices", json={"platform": "web", "token": endpoint}, headers=headers
    )
    assert missing.status_code == 400
    assert [d["field"] for d in missing.json()["details"]] == ["keys"]
    bad = api.client.post(
        "/api/devices",
        json={"platform": "web", "token": endpoint, "keys": {"p256dh": "AAAA", "auth": "AAAA"}},
        headers=headers,
    )
    assert {d["field"] for d in bad.json()["details"]} == {"keys.p256dh", "keys.auth"}
    good = api.client.post(
        "/api/devices",
        json={"platform": "web", "token": endpoint, "keys": {"p256dh": P256DH, "auth": AUTH}},
        headers=headers,
    )
    assert good.status_code == 201
    assert good.json()["platform"] == "web"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"platform": "ios", "token": "not-hex"}, {"token"}),
        ({"platform": "android", "token": "t", "keys": {"p256dh": P256DH, "auth": AUTH}}, {"keys"}),
        (
            {"platform": "pager", "token": 5, "name": True, "extra": 1},
            {"platform", "token", "name", "extra"},
        ),
        ({"platform": "android", "token": "   "}, {"token"}),
        ({"platform": "webhook", "token": "ftp://example.com/x"}, {"token"}),
        ({}, {"platform", "token"}),
    ],
)
def test_invalid_registrations(api: Api, body: dict[str, object], fields: set[str]) -> None:
    headers = api.key("alice")
    response = api.client.post("/api/devices", json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert {d["field"] for d in response.json()["details"]} == fields
    assert api.client.get("/api/devices", headers=headers).json() == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_webhooks_to_private_addresses_are_refused(api: Api, url: str) -> None:
    response = api.client.post(
        "/api/devices", json={"platform": "webhook", "token": url}, headers=api.key("alice")
    )
    assert response.status_code == 400
    assert response.json()["details"] == [
        {"field": "token", "message": "must not point at a private, loopback or link-local address"}
    ]


def test_public_webhook_is_accepted(api: Api) -> None:
    response = api.client.post(
        "/api/devices",
        json={"platform": "webhook", "token": "https://93.184.216.34/hook"},
        headers=api.key("alice"),
    )
    assert response.status_code == 201


@pytest.fixture
def permissive(tmp_path: Path) -> Iterator[Api]:
    from pushcore_http import create_app

    services = build_services(
        load_settings(env={"PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}, data_dir=tmp_path)
    )
    with TestClient(create_app(services)) as client:
        yield Api(client, services)
    services.close()


def test_private_webhooks_allowed_by_configuration(permissive: Api) -> None:
    response = permissive.client.post(
        "/api/devices",
        json={"platform": "webhook", "token": "http://127.0.0.1:9999/hook"},
        headers=permissive.key("alice"),
    )
    assert response.status_code == 201


def test_read_scope_lists_but_cannot_register(api: Api) -> None:
    reader = api.key("alice", "devices:read")
    assert api.client.get("/api/devices", headers=reader).status_code == 200
    writer = api.key("alice", "devices:write")
    listed = api.client.get("/api/devices", headers=writer)
    assert listed.status_code == 401
    assert listed.json()["error"] == "API key missing required scope: devices:read"


def test_the_101st_device_of_a_free_account_is_a_403_plan_limit(api: Api) -> None:
    headers = api.key("alice", "devices:write", "devices:read")
    for i in range(100):
        body = {"platform": "ios", "token": f"{i:064x}"}
        assert api.client.post("/api/devices", json=body, headers=headers).status_code == 201
    refused = api.client.post(
        "/api/devices", json={"platform": "ios", "token": f"{100:064x}"}, headers=headers
    )
    assert_error(refused, 403, "plan_limit")
    again = api.client.post(
        "/api/devices", json={"platform": "ios", "token": f"{5:064x}"}, headers=headers
    )
    assert again.status_code == 200
    assert len(api.client.get("/api/devices", headers=headers).json()) == 100
