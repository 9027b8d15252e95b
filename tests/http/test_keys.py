"""/api/keys over HTTP: every key rule and message of API.md."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock

KEY_RE = re.compile(r"^psk_[0-9A-Za-z]{38}$")


def test_create_returns_the_full_key_once_and_lists_it_masked(api: Api) -> None:
    user = api.token("alice")
    created = api.client.post(
        "/api/keys",
        json={"name": "ci", "scopes": ["notifications:write", "notifications:read"]},
        headers=user,
    )
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"id", "name", "key", "keyPrefix", "scopes", "expiresAt", "createdAt"}
    assert KEY_RE.match(body["key"])
    assert body["keyPrefix"] == body["key"][:12]
    assert body["id"].startswith("key_")
    assert body["scopes"] == ["notifications:read", "notifications:write"]
    assert body["expiresAt"] is None
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", body["createdAt"])

    listed = api.client.get("/api/keys", headers=user)
    assert listed.status_code == 200
    assert body["key"] not in listed.text
    assert body["key"][12:] not in listed.text
    (item,) = listed.json()
    assert set(item) == {
        "id",
        "name",
        "keyPrefix",
        "scopes",
        "expiresAt",
        "isActive",
        "lastUsedAt",
        "createdAt",
    }
    assert item["keyPrefix"] == body["keyPrefix"]
    assert item["isActive"] is True


def test_only_a_hash_of_the_key_is_stored(api: Api, settings_path: Path) -> None:
    secret = api.key("alice")["X-API-Key"]
    database = (settings_path / "pushcore.db").read_bytes()
    wal = settings_path / "pushcore.db-wal"
    stored = database + (wal.read_bytes() if wal.exists() else b"")
    assert secret.encode() not in stored
    assert secret[12:].encode() not in stored


@pytest.fixture
def settings_path(services: Services) -> Path:
    return services.settings.data_dir


def test_scopes_are_deduplicated_and_expiry_kept(api: Api) -> None:
    response = api.client.post(
        "/api/keys",
        json={
            "name": "dup",
            "scopes": ["devices:read", "devices:read"],
            "expiresAt": "2099-01-01T01:00:00+01:00",
        },
        headers=api.token("alice"),
    )
    assert response.status_code == 201
    assert response.json()["scopes"] == ["devices:read"]
    assert response.json()["expiresAt"] == "2099-01-01T00:00:00.000Z"


def test_revoke_keeps_the_key_listed_inactive_and_refuses_it(api: Api) -> None:
    user = api.token("alice")
    key_headers = api.key("alice", "devices:read")
    key_id = api.client.get("/api/keys", headers=user).json()[0]["id"]
    assert api.client.get("/api/devices", headers=key_headers).status_code == 200

    revoked = api.client.delete(f"/api/keys/{key_id}", headers=user)
    assert revoked.status_code == 200
    assert revoked.json() == {"success": True, "id": key_id}
    again = api.client.delete(f"/api/keys/{key_id}", headers=user)
    assert again.json() == {"success": True, "id": key_id}

    (item,) = api.client.get("/api/keys", headers=user).json()
    assert item["isActive"] is False
    refused = api.client.get("/api/devices", headers=key_headers)
    assert refused.status_code == 401
    assert refused.json() == {"error": "API key revoked", "code": "unauthorized"}


def test_another_accounts_key_is_not_found(api: Api) -> None:
    api.key("alice")
    alice_key = api.client.get("/api/keys", headers=api.token("alice")).json()[0]["id"]
    response = api.client.delete(f"/api/keys/{alice_key}", headers=api.token("mallory"))
    assert response.status_code == 404
    assert response.json() == {"error": "API key not found", "code": "not_found"}
    assert api.client.get("/api/keys", headers=api.token("alice")).json()[0]["isActive"] is True
    assert api.client.get("/api/keys", headers=api.token("mallory")).json() == []
    unknown = api.client.delete("/api/keys/key_nope", headers=api.token("alice"))
    assert unknown.status_code == 404


def test_a_key_cannot_manage_keys(api: Api) -> None:
    key_headers = api.key("alice")
    for method, path in (("GET", "/api/keys"), ("POST", "/api/keys"), ("DELETE", "/api/keys/x")):
        response = api.client.request(method, path, headers=key_headers, json={})
        assert response.status_code == 401
        assert response.json() == {
            "error": "This endpoint requires a user token",
            "code": "unauthorized",
        }


def test_missing_scope_is_401_naming_the_scope(api: Api) -> None:
    key_headers = api.key("alice", "devices:read")
    response = api.client.post(
        "/api/devices", json={"platform": "android", "token": "fcm-token"}, headers=key_headers
    )
    assert response.status_code == 401
    assert response.json() == {
        "error": "API key missing required scope: devices:write",
        "code": "unauthorized",
    }
    assert api.client.get("/api/devices", headers=api.token("alice")).json() == []


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "Authentication required"),
        ({"X-API-Key": "psk_short"}, "Invalid API key"),
        # Well-formed (valid checksum) but never issued.
        ({"X-API-Key": "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZW"}, "Invalid API key"),
        # One character off: the checksum catches it.
        ({"X-API-Key": "psk_abcdefghijklmnopqrstuvwxyzABCDEE1mVgZW"}, "Invalid API key"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "Invalid token"),
    ],
)
def test_bad_credentials(client: TestClient, headers: dict[str, str], message: str) -> None:
    response = client.get("/api/devices", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": message, "code": "unauthorized"}
    assert response.headers["www-authenticate"] == "Bearer"


def test_invalid_bodies_list_every_field_and_store_nothing(api: Api) -> None:
    user = api.token("alice")
    response = api.client.post(
        "/api/keys",
        json={"name": "", "scopes": ["bogus"], "expiresAt": "yesterday", "colour": "red"},
        headers=user,
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert {d["field"] for d in body["details"]} == {"name", "scopes", "expiresAt", "colour"}
    missing = api.client.post("/api/keys", json={}, headers=user).json()
    assert {d["field"] for d in missing["details"]} == {"name", "scopes"}
    empty = api.client.post("/api/keys", json={"name": "x", "scopes": []}, headers=user).json()
    assert empty["details"] == [{"field": "scopes", "message": "must name at least one scope"}]
    past = api.client.post(
        "/api/keys",
        json={"name": "x", "scopes": ["devices:read"], "expiresAt": "2001-01-01T00:00:00Z"},
        headers=user,
    ).json()
    assert past["details"] == [{"field": "expiresAt", "message": "must be in the future"}]
    assert api.client.get("/api/keys", headers=user).json() == []


def test_malformed_and_oversized_bodies(api: Api) -> None:
    user = api.token("alice")
    malformed = api.client.post("/api/keys", content=b'{"name": ', headers=user)
    assert malformed.status_code == 400
    assert malformed.json()["code"] == "invalid_json"
    not_object = api.client.post("/api/keys", json=["a"], headers=user)
    assert not_object.status_code == 400
    assert not_object.json()["code"] == "invalid_json"
    big = api.client.post(
        "/api/keys",
        content=b'{"name": "' + b"x" * 70_000 + b'", "scopes": ["devices:read"]}',
        headers={**user, "Content-Type": "application/json"},
    )
    assert big.status_code == 413
    assert big.json() == {
        "error": "Request body must be at most 65536 bytes",
        "code": "payload_too_large",
    }

    def chunks() -> Iterator[bytes]:
        # No Content-Length: the cap must hold while streaming.
        yield b'{"name": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'", "scopes": ["devices:read"]}'

    streamed = api.client.post("/api/keys", content=chunks(), headers=user)
    assert streamed.status_code == 413
    assert api.client.get("/api/keys", headers=user).json() == []


def test_unknown_routes_and_methods_answer_json(client: TestClient) -> None:
    missing = client.get("/api/nothing-here")
    assert missing.status_code == 404
    # A route miss says so, so that a client can tell a wrong base URL from an unknown id.
    assert missing.json() == {"error": "Not found: no such endpoint", "code": "not_found"}
    wrong_method = client.put("/api/keys")
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {"error": "Method not allowed", "code": "method_not_allowed"}
    assert "GET" in wrong_method.headers["allow"]


@pytest.fixture
def clocked(tmp_path: Path, fake_clock: FakeClock) -> Iterator[tuple[Api, FakeClock]]:
    """An API on services whose clock the test moves."""
    services = build_services(load_settings(env={}, data_dir=tmp_path / "d"), clock=fake_clock)
    with TestClient(create_app(services)) as client:
        yield Api(client, services), fake_clock
    services.close()


@pytest.mark.parametrize(
    "lifetime",
    # The short one expires while the key is still in the 1-second cache of keys.
    [timedelta(minutes=5), timedelta(milliseconds=300)],
    ids=["expires-later", "expires-while-cached"],
)
def test_expired_key_is_refused(clocked: tuple[Api, FakeClock], lifetime: timedelta) -> None:
    api, clock = clocked
    expires = clock.now() + lifetime
    created = api.client.post(
        "/api/keys",
        json={"name": "short", "scopes": ["devices:read"], "expiresAt": expires.isoformat()},
        headers=api.token("alice"),
    ).json()
    headers = {"X-API-Key": created["key"]}
    assert api.client.get("/api/devices", headers=headers).status_code == 200
    clock.advance(lifetime)
    response = api.client.get("/api/devices", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "API key expired", "code": "unauthorized"}


def test_last_used_is_written_at_most_once_a_minute(clocked: tuple[Api, FakeClock]) -> None:
    api, clock = clocked
    headers = api.key("alice", "devices:read")
    user = api.token("alice")
    assert api.client.get("/api/keys", headers=user).json()[0]["lastUsedAt"] is None
    first_use = clock.now()
    api.client.get("/api/devices", headers=headers)

    def last_used() -> str:
        value: str = api.client.get("/api/keys", headers=user).json()[0]["lastUsedAt"]
        return value

    assert last_used() == first_use.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    clock.advance(30)
    api.client.get("/api/devices", headers=headers)
    assert last_used() == first_use.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    clock.advance(31)
    api.client.get("/api/devices", headers=headers)
    assert last_used() == clock.now().isoformat(timespec="milliseconds").replace("+00:00", "Z")
