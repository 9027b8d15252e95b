"""Input a careful API refuses: each a 4xx in API.md's error shape, and nothing stored.

Lone surrogates, deep nesting, duplicate keys, bodies that are not JSON by
their Content-Type, blank titles, odd bytes in paths, queries and headers.
(Oversized request headers need a real server: tests/e2e/test_hardening.py.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api

JSON = {"Content-Type": "application/json"}


def stored(api: Api, account: str) -> dict[str, int]:
    """How many of each thing ``account`` has: all zero after a refused request."""
    services = api.services
    return {
        "notifications": len(services.notifications.list(account, None, 100, None).items),
        "devices": len(services.devices.list(account)),
        "keys": len(services.keys.list(account)),
        "streams": len(services.streams.list(account)),
        "subscriptions": len(services.streams.subscriptions(account)),
    }


def post(api: Api, path: str, raw: bytes, headers: dict[str, str]) -> Any:
    return api.client.post(path, content=raw, headers={**JSON, **headers})


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    assert isinstance(body["error"], str)
    assert body["error"]
    assert set(body) <= {"error", "code", "details"}
    return body


# Every string field the issue names, in its endpoint, with a lone surrogate:
# once as a JSON escape, once as the raw (ill-formed) UTF-8 bytes of one.
SURROGATE_CASES = [
    ("/api/notifications", "key", '{"title": %s}'),
    ("/api/notifications", "key", '{"title": "t", "body": %s}'),
    ("/api/notifications", "key", '{"title": "t", "senderName": %s}'),
    ("/api/notifications", "key", '{"title": "t", "metadata": {"k": %s}}'),
    ("/api/notifications", "key", '{"title": "t", "metadata": {%s: "v"}}'),
    ("/api/devices", "key", '{"platform": "android", "token": %s}'),
    ("/api/devices", "key", '{"platform": "android", "token": "tok", "name": %s}'),
    ("/api/streams", "key", '{"name": %s}'),
    ("/api/keys", "user", '{"name": %s, "scopes": ["devices:read"]}'),
    ("/api/streams/subscribe", "user", '{"code": %s}'),
]


@pytest.mark.parametrize(("path", "credential", "template"), SURROGATE_CASES)
@pytest.mark.parametrize("spelling", [b'"a\\ud800b"', b'"a\xed\xa0\x80b"'], ids=["escape", "raw"])
def test_a_lone_surrogate_is_invalid_json_and_nothing_is_stored(
    api: Api, path: str, credential: str, template: str, spelling: bytes
) -> None:
    headers = api.token("bob") if credential == "user" else api.key("bob")
    before = stored(api, "bob")
    raw = template.encode().replace(b"%s", spelling)
    body = assert_error(post(api, path, raw, headers), 400, "invalid_json")
    assert "not valid Unicode" in body["error"]
    assert stored(api, "bob") == before


def test_a_lone_surrogate_in_a_stream_send_is_refused(api: Api) -> None:
    key = api.key("carol")
    stream = api.client.post("/api/streams", json={"name": "News"}, headers=key).json()
    raw = b'{"title": "\\udfff"}'
    assert_error(post(api, f"/api/streams/{stream['id']}/send", raw, key), 400, "invalid_json")
    assert stored(api, "carol")["notifications"] == 0


def test_a_surrogate_pair_is_valid_unicode(api: Api) -> None:
    # The escape of one character outside the BMP is two surrogates, together valid.
    response = post(api, "/api/notifications", b'{"title": "\\ud83d\\ude80"}', api.key("dan"))
    assert response.status_code == 201, response.text
    assert api.client.get(f"/api/notifications/{response.json()['id']}", headers=api.key("dan"))


def nested(depth: int) -> bytes:
    """``{"title": "t", "metadata": {"k": [[...]]}}`` with ``depth`` levels in all."""
    inner = depth - 2  # the top object and metadata are two levels
    return b'{"title": "t", "metadata": {"k": ' + b"[" * inner + b"]" * inner + b"}}"


@pytest.mark.parametrize("depth", [65, 200, 999, 1000, 32_000])
def test_json_nested_deeper_than_64_levels_is_invalid_json(api: Api, depth: int) -> None:
    key = api.key("erin")
    body = assert_error(post(api, "/api/notifications", nested(depth), key), 400, "invalid_json")
    assert "nested deeper than 64 levels" in body["error"]
    assert stored(api, "erin")["notifications"] == 0


def test_json_nested_64_levels_deep_is_parsed(api: Api) -> None:
    # Parsed, then refused by validation for what it says (metadata values are strings).
    response = post(api, "/api/notifications", nested(64), api.key("erin"))
    body = assert_error(response, 400, "validation_error")
    assert [d["field"].split(".")[0] for d in body["details"]] == ["metadata"]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"title": "a", "title": "b"}',
        b'{"title": "a", "metadata": {"k": "1", "k": "2"}}',
    ],
    ids=["top-level", "nested"],
)
def test_a_duplicate_key_is_invalid_json(api: Api, raw: bytes) -> None:
    body = assert_error(post(api, "/api/notifications", raw, api.key("fay")), 400, "invalid_json")
    assert "duplicate key" in body["error"]
    assert stored(api, "fay")["notifications"] == 0


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/jsonx",
    ],
)
def test_a_body_that_is_not_json_by_its_type_is_415(api: Api, content_type: str) -> None:
    # On an endpoint that takes JSON only (a create also takes text: test_notifications).
    key = api.key("gus")
    response = api.client.post(
        "/api/devices",
        content=b'{"title": "t"}',
        headers={**key, "Content-Type": content_type},
    )
    assert_error(response, 415, "unsupported_media_type")
    assert api.client.get("/api/devices", headers=key).json() == []


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json", "Application/JSON; charset=UTF-8", "application/merge-patch+json"],
)
def test_json_media_types_and_none_are_read(api: Api, content_type: str | None) -> None:
    headers = api.key("hal")
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = api.client.post("/api/notifications", content=b'{"title": "t"}', headers=headers)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("title", [" ", "   ", "\t\n", "\u3000"])
def test_a_blank_title_is_a_validation_error(api: Api, title: str) -> None:
    key = api.key("ida")
    stream = api.client.post("/api/streams", json={"name": "News"}, headers=key).json()
    for path in ("/api/notifications", f"/api/streams/{stream['id']}/send"):
        response = post(api, path, json.dumps({"title": title}).encode(), key)
        body = assert_error(response, 400, "validation_error")
        assert body["details"] == [{"field": "title", "message": "must not be blank"}]
    assert stored(api, "ida")["notifications"] == 0


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/notifications/ntf_%ED%A0%80", 404),
        ("DELETE", "/api/notifications/%FF%FE", 404),
        ("DELETE", "/api/devices/dev_%ED%A0%80", 404),
        ("DELETE", "/api/streams/%C0%80", 404),
        ("DELETE", "/api/streams/subscriptions/%ED%A0%80", 404),
        ("GET", "/api/streams/lookup/%ED%A0%80", 404),
        ("DELETE", "/api/keys/%FF", 404),
        ("GET", "/api/notifications?cursor=%ED%A0%80", 400),
        ("GET", "/api/notifications?cursor=%FF%FF%FF%FF", 400),
        ("GET", "/api/notifications?status=%ED%A0%80", 400),
        ("GET", "/api/notifications?limit=%FF", 400),
    ],
)
def test_odd_bytes_in_paths_and_queries_are_4xx(
    api: Api, method: str, path: str, status: int
) -> None:
    headers = {**api.key("jo"), **api.token("jo")} if "/keys" not in path else api.token("jo")
    if "/subscriptions/" in path or "/lookup/" in path:
        headers = api.token("jo")
    response = api.client.request(method, path, headers=headers)
    assert_error(response, status, "not_found" if status == 404 else "validation_error")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("X-API-Key", b"psk_\xff\xfe" + b"a" * 36, "Invalid API key"),
        ("X-API-Key", "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZ\u00e9".encode("latin-1"), None),
        ("Authorization", b"Bearer \xff\xfe.\xed\xa0\x80.x", "Invalid token"),
        ("Authorization", b"Bearer eyJhbGciOiJIUzI1NiJ9.\xff.x", "Invalid token"),
    ],
)
def test_odd_bytes_in_credentials_are_401(
    api: Api, name: str, value: bytes, message: str | None
) -> None:
    path = "/api/keys" if name == "Authorization" else "/api/notifications"
    response = api.client.get(path, headers={name: value})
    body = assert_error(response, 401, "unauthorized")
    if message is not None:
        assert body["error"] == message


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/streams/subscribe", "POST"),
        ("DELETE", "/api/streams/subscribe", "POST"),
        ("POST", "/api/streams/subscriptions", "GET, HEAD"),
        ("DELETE", "/api/streams/subscriptions", "GET, HEAD"),
        ("POST", "/api/notifications/stats", "GET, HEAD"),
    ],
)
def test_a_fixed_path_answers_405_with_its_own_allow(
    api: Api, method: str, path: str, allow: str
) -> None:
    response = api.client.request(method, path, headers=api.token("kim"))
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == allow
