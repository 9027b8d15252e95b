"""/api/streams over HTTP: credentials, bodies, validation, plans, codes, rules, sends.

The delivery engine does not run here (``run_engine=False``): a send's
deliveries stay PENDING, so counts and statuses are exactly what the send
itself stored. Icons go through :class:`FakeIconProbe` (``.png``/``.jpg`` pass).
"""

from __future__ import annotations

import re
import secrets
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore.domain.codes import CODE_SUFFIX_ALPHABET, WORDS
from pushcore.domain.model import Plan
from pushcore_http import create_app
from tests.conftest import Api, copy_migrated
from tests.fakes.icons import FakeIconProbe
from tests.support_counts import delivery_counts

CODE_RE = re.compile(r"^[a-z]+-[a-hj-km-np-z2-9]{4}$")
TIMESTAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

STREAM_KEYS = {"id", "name", "code", "description", "iconUrl", "subscribers", "createdAt"}
NESTED_KEYS = STREAM_KEYS - {"createdAt"}
LOOKUP_KEYS = NESTED_KEYS | {"isSubscribed"}
SUBSCRIPTION_KEYS = {"id", "stream", "createdAt"}
SEND_KEYS = {"notificationId", "sent", "subscribers", "stream"}
ERROR_KEYS = {"error", "code"}

ICON = "https://icons.example/stream.png"

READ = "notifications:read"
WRITE = "notifications:write"


class ReplayRandom:
    """:func:`secrets.randbelow`, except that queued values come out first.

    Queuing the draws that produced a code makes the next stream creation draw
    that very code again: a collision the service must notice and redraw.
    """

    def __init__(self) -> None:
        self.queued: deque[int] = deque()

    def randbelow(self, n: int) -> int:
        if self.queued:
            value = self.queued.popleft()
            assert 0 <= value < n
            return value
        return secrets.randbelow(n)

    def replay(self, code: str) -> None:
        """Queue the draws of ``code`` (a word index, then four suffix indices)."""
        word, _, suffix = code.partition("-")
        self.queued.append(WORDS.index(word))
        self.queued.extend(CODE_SUFFIX_ALPHABET.index(c) for c in suffix)


@pytest.fixture
def probe() -> FakeIconProbe:
    return FakeIconProbe()


@pytest.fixture
def replay() -> ReplayRandom:
    return ReplayRandom()


@pytest.fixture
def sapi(
    tmp_path: Path, probe: FakeIconProbe, replay: ReplayRandom, migrated_sqlite: Path
) -> Iterator[Api]:
    """The API on SQLite with a fake icon probe, a replayable random and no engine."""
    copy_migrated(migrated_sqlite, tmp_path)  # a copy, not 60 ms of migrations a test
    services = build_services(load_settings(env={}, data_dir=tmp_path), icons=probe, random=replay)
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services)


def create(api: Api, headers: dict[str, str], **fields: Any) -> dict[str, Any]:
    """POST /api/streams, asserting 201."""
    response = api.client.post("/api/streams", json={"name": "Releases", **fields}, headers=headers)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def subscribe(api: Api, account: str, code: str) -> dict[str, Any]:
    """POST /api/streams/subscribe as ``account``, asserting 201."""
    response = api.client.post(
        "/api/streams/subscribe", json={"code": code}, headers=api.token(account)
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def send(api: Api, headers: dict[str, str], stream_id: str, **fields: Any) -> dict[str, Any]:
    """POST /api/streams/:id/send, asserting 201."""
    response = api.client.post(
        f"/api/streams/{stream_id}/send", json={"title": "Hello", **fields}, headers=headers
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def add_device(api: Api, account: str, token: str) -> dict[str, Any]:
    """Register an android device for ``account`` (with its user token)."""
    response = api.client.post(
        "/api/devices", json={"platform": "android", "token": token}, headers=api.token(account)
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def streams_of(api: Api, account: str) -> list[dict[str, Any]]:
    response = api.client.get("/api/streams", headers=api.token(account))
    assert response.status_code == 200
    body: list[dict[str, Any]] = response.json()
    return body


def lookup(api: Api, account: str, code: str) -> dict[str, Any]:
    response = api.client.get(f"/api/streams/lookup/{code}", headers=api.token(account))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def subscriptions_of(api: Api, account: str) -> list[dict[str, Any]]:
    response = api.client.get("/api/streams/subscriptions", headers=api.token(account))
    assert response.status_code == 200
    body: list[dict[str, Any]] = response.json()
    return body


def assert_error(response: Any, status: int, code: str, message: str | None = None) -> None:
    """An error of the API's one shape: exactly ``error`` and ``code``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == ERROR_KEYS
    assert body["code"] == code
    if message is not None:
        assert body["error"] == message


def detail_fields(response: Any) -> dict[str, str]:
    """A validation error's details as {field: message}."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    assert set(body) == {"error", "code", "details"}
    return {d["field"]: d["message"] for d in body["details"]}


# Credentials: the spec's table, API.md's scopes and messages


def test_create_takes_only_an_api_key_with_notifications_write(sapi: Api) -> None:
    body = {"name": "Releases"}
    user = sapi.client.post("/api/streams", json=body, headers=sapi.token("alice"))
    assert_error(user, 401, "unauthorized", "This endpoint requires an API key")
    reader = sapi.client.post("/api/streams", json=body, headers=sapi.key("alice", READ))
    assert_error(reader, 401, "unauthorized", "API key missing required scope: notifications:write")
    nobody = sapi.client.post("/api/streams", json=body)
    assert_error(nobody, 401, "unauthorized", "Authentication required")
    forged = sapi.client.post("/api/streams", json=body, headers={"X-API-Key": "psk_nope"})
    assert_error(forged, 401, "unauthorized", "Invalid API key")
    # A JWT is refused before its body is even looked at.
    invalid_by_user = sapi.client.post("/api/streams", json={}, headers=sapi.token("alice"))
    assert invalid_by_user.status_code == 401
    assert streams_of(sapi, "alice") == []

    writer = sapi.client.post("/api/streams", json=body, headers=sapi.key("alice", WRITE))
    assert writer.status_code == 201
    assert [s["id"] for s in streams_of(sapi, "alice")] == [writer.json()["id"]]


def test_send_takes_only_an_api_key_with_notifications_write(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice", WRITE))
    path = f"/api/streams/{stream['id']}/send"
    body = {"title": "t"}
    user = sapi.client.post(path, json=body, headers=sapi.token("alice"))
    assert_error(user, 401, "unauthorized", "This endpoint requires an API key")
    reader = sapi.client.post(path, json=body, headers=sapi.key("alice", READ))
    assert_error(reader, 401, "unauthorized", "API key missing required scope: notifications:write")
    assert_error(sapi.client.post(path, json=body), 401, "unauthorized", "Authentication required")
    listed = sapi.client.get("/api/notifications", headers=sapi.key("alice", READ)).json()
    assert listed["items"] == []

    ok = sapi.client.post(path, json=body, headers=sapi.key("alice", WRITE))
    assert ok.status_code == 201


def test_list_takes_a_user_token_or_a_key_with_notifications_read(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice", WRITE))
    by_user = sapi.client.get("/api/streams", headers=sapi.token("alice"))
    by_reader = sapi.client.get("/api/streams", headers=sapi.key("alice", READ))
    assert by_user.status_code == by_reader.status_code == 200
    assert by_user.json() == by_reader.json() == [stream]
    writer = sapi.client.get("/api/streams", headers=sapi.key("alice", WRITE))
    assert_error(writer, 401, "unauthorized", "API key missing required scope: notifications:read")
    devices = sapi.client.get("/api/streams", headers=sapi.key("alice", "devices:read"))
    assert_error(devices, 401, "unauthorized", "API key missing required scope: notifications:read")
    assert_error(sapi.client.get("/api/streams"), 401, "unauthorized", "Authentication required")
    bad_token = sapi.client.get("/api/streams", headers={"Authorization": "Bearer nope"})
    assert_error(bad_token, 401, "unauthorized", "Invalid token")


def test_delete_takes_a_user_token_or_a_key_with_notifications_write(sapi: Api) -> None:
    writer = sapi.key("alice", WRITE)
    by_key, by_user = create(sapi, writer, name="one"), create(sapi, writer, name="two")
    reader = sapi.client.delete(f"/api/streams/{by_key['id']}", headers=sapi.key("alice", READ))
    assert_error(reader, 401, "unauthorized", "API key missing required scope: notifications:write")
    nobody = sapi.client.delete(f"/api/streams/{by_key['id']}")
    assert_error(nobody, 401, "unauthorized", "Authentication required")
    assert len(streams_of(sapi, "alice")) == 2

    deleted = sapi.client.delete(f"/api/streams/{by_key['id']}", headers=writer)
    assert deleted.status_code == 200
    assert deleted.json() == {"success": True, "id": by_key["id"]}
    deleted = sapi.client.delete(f"/api/streams/{by_user['id']}", headers=sapi.token("alice"))
    assert deleted.status_code == 200
    assert deleted.json() == {"success": True, "id": by_user["id"]}
    assert streams_of(sapi, "alice") == []


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", "/api/streams/subscribe", {"code": "{code}"}, id="subscribe"),
        pytest.param("GET", "/api/streams/subscriptions", None, id="subscriptions"),
        pytest.param("DELETE", "/api/streams/subscriptions/{sub}", None, id="unsubscribe"),
    ],
)
def test_subscriber_endpoints_take_only_a_user_token(
    sapi: Api, method: str, path: str, body: dict[str, str] | None
) -> None:
    stream = create(sapi, sapi.key("alice"))
    subscription = subscribe(sapi, "bob", stream["code"])
    url = path.format(code=stream["code"], sub=subscription["id"])
    json = None if body is None else {k: v.format(code=stream["code"]) for k, v in body.items()}

    for scopes in ([READ, WRITE, "devices:read", "devices:write"], [READ], [WRITE]):
        with_key = sapi.client.request(method, url, json=json, headers=sapi.key("bob", *scopes))
        assert_error(with_key, 401, "unauthorized", "This endpoint requires a user token")
    nobody = sapi.client.request(method, url, json=json)
    assert_error(nobody, 401, "unauthorized", "Authentication required")
    bad_token = sapi.client.request(
        method, url, json=json, headers={"Authorization": "Bearer not.a.jwt"}
    )
    assert_error(bad_token, 401, "unauthorized", "Invalid token")
    # Nothing happened: bob still has exactly his one subscription.
    assert [s["id"] for s in subscriptions_of(sapi, "bob")] == [subscription["id"]]


# Response bodies


def test_create_returns_the_stream_with_defaults(sapi: Api, probe: FakeIconProbe) -> None:
    response = sapi.client.post(
        "/api/streams", json={"name": "Releases"}, headers=sapi.key("alice")
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == STREAM_KEYS
    assert body["id"].startswith("str_")
    assert body["name"] == "Releases"
    assert CODE_RE.fullmatch(body["code"])
    assert body["description"] == ""
    assert body["iconUrl"] is None
    assert body["subscribers"] == 0
    assert TIMESTAMP_RE.fullmatch(body["createdAt"])
    assert probe.checked == []  # no icon, nothing to check
    assert streams_of(sapi, "alice") == [body]


def test_create_keeps_description_and_a_checked_icon(sapi: Api, probe: FakeIconProbe) -> None:
    body = create(sapi, sapi.key("alice"), name="Deploys", description="Every deploy", iconUrl=ICON)
    assert body["description"] == "Every deploy"
    assert body["iconUrl"] == ICON
    assert probe.checked == [ICON]
    assert streams_of(sapi, "alice") == [body]


def test_list_is_the_callers_streams_newest_first(sapi: Api) -> None:
    sapi.services.accounts.set_plan("alice", Plan.PRO)
    key = sapi.key("alice")
    made = [create(sapi, key, name=f"s{i}") for i in range(5)]
    create(sapi, sapi.key("bob"), name="bob's")
    listed = streams_of(sapi, "alice")
    assert listed == list(reversed(made))
    assert all(set(s) == STREAM_KEYS for s in listed)
    assert [s["name"] for s in streams_of(sapi, "bob")] == ["bob's"]
    assert streams_of(sapi, "carol") == []


def test_subscription_lookup_and_list_bodies(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"), description="d", iconUrl=ICON)
    nested = {k: v for k, v in stream.items() if k != "createdAt"}

    before = lookup(sapi, "bob", stream["code"])
    assert set(before) == LOOKUP_KEYS
    assert before == {**nested, "isSubscribed": False}

    subscription = subscribe(sapi, "bob", stream["code"])
    assert set(subscription) == SUBSCRIPTION_KEYS
    assert subscription["id"].startswith("sub_")
    assert TIMESTAMP_RE.fullmatch(subscription["createdAt"])
    assert set(subscription["stream"]) == NESTED_KEYS
    assert subscription["stream"] == {**nested, "subscribers": 1}

    assert subscriptions_of(sapi, "bob") == [subscription]
    after = lookup(sapi, "bob", stream["code"])
    assert after == {**nested, "subscribers": 1, "isSubscribed": True}
    # The creator may look its own stream up; it is not subscribed to it.
    assert lookup(sapi, "alice", stream["code"])["isSubscribed"] is False

    gone = sapi.client.delete(
        f"/api/streams/subscriptions/{subscription['id']}", headers=sapi.token("bob")
    )
    assert gone.status_code == 200
    assert gone.json() == {"success": True, "id": subscription["id"]}
    assert subscriptions_of(sapi, "bob") == []
    assert lookup(sapi, "bob", stream["code"]) == {**nested, "isSubscribed": False}


def test_subscriptions_are_listed_newest_first(sapi: Api) -> None:
    key = sapi.key("alice")
    codes = [create(sapi, key, name=f"s{i}")["code"] for i in range(3)]
    made = [subscribe(sapi, "bob", code) for code in codes]
    listed = subscriptions_of(sapi, "bob")
    assert [s["id"] for s in listed] == [s["id"] for s in reversed(made)]
    assert [s["stream"]["code"] for s in listed] == list(reversed(codes))
    assert subscriptions_of(sapi, "carol") == []


def test_send_body(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key, name="Deploys")
    response = sapi.client.post(
        f"/api/streams/{stream['id']}/send", json={"title": "Hi"}, headers=key
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == SEND_KEYS
    assert body["notificationId"].startswith("ntf_")
    assert body["sent"] == 0
    assert body["subscribers"] == 0
    assert body["stream"] == {"name": "Deploys", "code": stream["code"]}


# Validation


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": ""}, "name", "must be 1 to 50 characters"),
        ({"name": "n" * 51}, "name", "must be 1 to 50 characters"),
        ({"name": "   "}, "name", "must not be blank"),
        ({"name": "\t\n"}, "name", "must not be blank"),
        ({"name": 5}, "name", "must be a string"),
        ({"name": None}, "name", None),
        ({"description": "d" * 201}, "description", "must be at most 200 characters"),
        ({"description": 1}, "description", "must be a string"),
        ({"iconUrl": "ftp://icons.example/a.png"}, "iconUrl", "must be an http or https URL"),
        ({"iconUrl": "icons.example/a.png"}, "iconUrl", "must be an http or https URL"),
        ({"iconUrl": "https:///a.png"}, "iconUrl", "must be an http or https URL"),
        ({"iconUrl": "https://icons.example/a.gif"}, "iconUrl", "must be a PNG or JPEG image"),
        ({"iconUrl": 7}, "iconUrl", None),
        ({"nmae": "typo"}, "nmae", "is not a known field"),
        ({"subscribers": 10}, "subscribers", "is not a known field"),
        ({"code": "falcon-7k2q"}, "code", "is not a known field"),
    ],
)
def test_create_single_rule_violations(
    sapi: Api, fields: dict[str, Any], field: str, message: str | None
) -> None:
    response = sapi.client.post(
        "/api/streams", json={"name": "ok", **fields}, headers=sapi.key("alice")
    )
    details = detail_fields(response)
    assert list(details) == [field]
    if message is not None:
        assert details[field] == message
    assert streams_of(sapi, "alice") == []


def test_create_without_a_name_is_refused(sapi: Api) -> None:
    response = sapi.client.post(
        "/api/streams", json={"description": "d"}, headers=sapi.key("alice")
    )
    assert detail_fields(response) == {"name": "is required"}


def test_create_lists_every_invalid_field(sapi: Api) -> None:
    response = sapi.client.post(
        "/api/streams",
        json={"name": "", "description": "d" * 201, "iconUrl": "mailto:x@y", "colour": "red"},
        headers=sapi.key("alice"),
    )
    assert set(detail_fields(response)) == {"name", "description", "iconUrl", "colour"}
    assert streams_of(sapi, "alice") == []


def test_create_limits_are_inclusive(sapi: Api) -> None:
    key = sapi.key("alice")
    longest = create(sapi, key, name="n" * 50, description="d" * 200)
    assert longest["name"] == "n" * 50
    assert longest["description"] == "d" * 200
    emoji = create(sapi, key, name="🚀" * 50, description="")
    assert emoji["name"] == "🚀" * 50
    jpeg = create(sapi, key, iconUrl="http://icons.example/a.jpg")
    assert jpeg["iconUrl"] == "http://icons.example/a.jpg"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", None),
        (b"[1, 2]", "Request body must be a JSON object"),
        (b'"name"', "Request body must be a JSON object"),
    ],
)
def test_create_refuses_a_body_that_is_not_a_json_object(
    sapi: Api, content: bytes, message: str | None
) -> None:
    response = sapi.client.post(
        "/api/streams",
        content=content,
        headers={**sapi.key("alice"), "Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_json", message)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"title": ""}, "title", "must be 1 to 200 characters"),
        ({"title": "t" * 201}, "title", "must be 1 to 200 characters"),
        ({"title": None}, "title", None),
        ({"body": "b" * 2001}, "body", "must be at most 2000 characters"),
        ({"senderName": "n" * 51}, "senderName", "must be 1 to 50 characters"),
        ({"senderName": ""}, "senderName", "must be 1 to 50 characters"),
        ({"sound": "loud"}, "sound", "must be one of: default, soft, critical"),
        ({"priority": "urgent"}, "priority", "must be one of: low, normal, high, critical"),
        ({"priority": 3}, "priority", None),
        ({"senderIcon": "ftp://icons.example/a.png"}, "senderIcon", "must be an http or https URL"),
        (
            {"senderIcon": "https://icons.example/a.gif"},
            "senderIcon",
            "must be a PNG or JPEG image",
        ),
        ({"iconStyle": "bell"}, "iconStyle", "is not a known field"),
        ({"delay": "1m"}, "delay", "is not a known field"),
        ({"metadata": {}}, "metadata", "is not a known field"),
    ],
)
def test_send_single_rule_violations(
    sapi: Api, fields: dict[str, Any], field: str, message: str | None
) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    response = sapi.client.post(
        f"/api/streams/{stream['id']}/send", json={"title": "ok", **fields}, headers=key
    )
    details = detail_fields(response)
    assert list(details) == [field]
    if message is not None:
        assert details[field] == message
    assert sapi.client.get("/api/notifications", headers=key).json()["items"] == []


def test_send_lists_every_invalid_field_and_stores_nothing(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    response = sapi.client.post(
        f"/api/streams/{stream['id']}/send",
        json={
            "title": "t" * 201,
            "body": "b" * 2001,
            "sound": "loud",
            "priority": "urgent",
            "senderName": "n" * 51,
            "senderIcon": "nope",
            "extra": 1,
        },
        headers=key,
    )
    assert set(detail_fields(response)) == {
        "title",
        "body",
        "sound",
        "priority",
        "senderName",
        "senderIcon",
        "extra",
    }
    stats = sapi.client.get("/api/notifications/stats", headers=key).json()
    assert stats["total"] == 0


def test_send_without_a_title_is_refused(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    response = sapi.client.post(
        f"/api/streams/{stream['id']}/send", json={"body": "b"}, headers=key
    )
    assert detail_fields(response) == {"title": "is required"}


def test_send_limits_are_inclusive(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    sent = send(sapi, key, stream["id"], title="t" * 200, body="b" * 2000, senderName="n" * 50)
    full = sapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=key).json()
    assert full["title"] == "t" * 200
    assert full["body"] == "b" * 2000
    assert full["senderName"] == "n" * 50


def test_subscribe_needs_a_code(sapi: Api) -> None:
    user = sapi.token("bob")
    missing = sapi.client.post("/api/streams/subscribe", json={}, headers=user)
    assert detail_fields(missing) == {"code": "is required"}
    wrong = sapi.client.post("/api/streams/subscribe", json={"code": 5, "x": 1}, headers=user)
    assert set(detail_fields(wrong)) == {"code", "x"}


# Codes


def test_codes_have_the_documented_form_and_are_unique(sapi: Api) -> None:
    sapi.services.accounts.set_plan("alice", Plan.PRO)
    key = sapi.key("alice")
    codes = [create(sapi, key, name=f"s{i}")["code"] for i in range(40)]
    assert all(CODE_RE.fullmatch(code) for code in codes), codes
    assert all(code.partition("-")[0] in WORDS for code in codes), codes
    assert len(set(codes)) == len(codes)
    assert sorted(s["code"] for s in streams_of(sapi, "alice")) == sorted(codes)


def test_a_live_streams_code_is_drawn_again_on_collision(sapi: Api, replay: ReplayRandom) -> None:
    alice, bob = sapi.key("alice"), sapi.key("bob")
    first = create(sapi, alice)
    replay.replay(first["code"])
    second = create(sapi, bob)
    assert not replay.queued, "the replayed code was not drawn"
    assert second["code"] != first["code"]
    assert CODE_RE.fullmatch(second["code"])
    assert lookup(sapi, "carol", first["code"])["id"] == first["id"]
    assert lookup(sapi, "carol", second["code"])["id"] == second["id"]


def test_a_deleted_streams_code_is_never_reused(sapi: Api, replay: ReplayRandom) -> None:
    alice, mallory = sapi.key("alice"), sapi.key("mallory")
    old = create(sapi, alice, name="Old")
    subscribe(sapi, "bob", old["code"])
    assert sapi.client.delete(f"/api/streams/{old['id']}", headers=alice).status_code == 200

    for account, key in (("alice", alice), ("mallory", mallory)):
        replay.replay(old["code"])
        new = create(sapi, key, name=f"{account}'s new")
        assert not replay.queued, "the replayed code was not drawn"
        assert new["code"] != old["code"]

    user = sapi.token("bob")
    gone = sapi.client.get(f"/api/streams/lookup/{old['code']}", headers=user)
    assert_error(gone, 404, "not_found")
    again = sapi.client.post("/api/streams/subscribe", json={"code": old["code"]}, headers=user)
    assert_error(again, 404, "not_found")
    assert subscriptions_of(sapi, "bob") == []


def test_a_code_is_found_whatever_its_case_and_surrounding_spaces(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    shouted = lookup(sapi, "bob", stream["code"].upper())
    assert shouted["id"] == stream["id"]
    padded = subscribe(sapi, "bob", f"  {stream['code'].upper()} ")
    assert padded["stream"]["code"] == stream["code"]


# Plans


def test_free_plan_holds_three_streams_and_deleting_frees_a_slot(sapi: Api) -> None:
    key = sapi.key("alice")
    made = [create(sapi, key, name=f"s{i}") for i in range(3)]
    fourth = sapi.client.post("/api/streams", json={"name": "s3"}, headers=key)
    assert_error(fourth, 403, "plan_limit")
    assert len(streams_of(sapi, "alice")) == 3
    # Another account's quota is its own.
    create(sapi, sapi.key("bob"))

    assert sapi.client.delete(f"/api/streams/{made[0]['id']}", headers=key).status_code == 200
    create(sapi, key, name="s3")
    assert_error(
        sapi.client.post("/api/streams", json={"name": "s4"}, headers=key), 403, "plan_limit"
    )
    assert sorted(s["name"] for s in streams_of(sapi, "alice")) == ["s1", "s2", "s3"]


def test_pro_plan_is_unlimited_and_downgrading_stops_new_streams(sapi: Api) -> None:
    key = sapi.key("alice")
    sapi.services.accounts.set_plan("alice", Plan.PRO)
    made = [create(sapi, key, name=f"s{i}") for i in range(6)]
    assert len(streams_of(sapi, "alice")) == 6

    sapi.services.accounts.set_plan("alice", Plan.FREE)
    assert_error(
        sapi.client.post("/api/streams", json={"name": "x"}, headers=key), 403, "plan_limit"
    )
    for stream in made[:3]:
        sapi.client.delete(f"/api/streams/{stream['id']}", headers=key)
    # Three left: still at the limit.
    assert_error(
        sapi.client.post("/api/streams", json={"name": "x"}, headers=key), 403, "plan_limit"
    )
    sapi.client.delete(f"/api/streams/{made[3]['id']}", headers=key)
    create(sapi, key, name="x")


def test_a_plan_set_before_first_use_survives_the_first_token(sapi: Api) -> None:
    sapi.services.accounts.set_plan("newcomer", Plan.PRO)
    key = sapi.key("newcomer")
    for i in range(5):
        create(sapi, key, name=f"s{i}")
    assert len(streams_of(sapi, "newcomer")) == 5


def test_plan_limit_is_checked_after_validation(sapi: Api) -> None:
    key = sapi.key("alice")
    for i in range(3):
        create(sapi, key, name=f"s{i}")
    assert detail_fields(sapi.client.post("/api/streams", json={"name": ""}, headers=key)) == {
        "name": "must be 1 to 50 characters"
    }


# Rules and scoping


def test_creator_cannot_subscribe_to_its_own_stream(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    own = sapi.client.post(
        "/api/streams/subscribe", json={"code": stream["code"]}, headers=sapi.token("alice")
    )
    assert_error(own, 403, "own_stream")
    assert subscriptions_of(sapi, "alice") == []
    assert streams_of(sapi, "alice")[0]["subscribers"] == 0


def test_subscribing_twice_is_a_conflict(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    first = subscribe(sapi, "bob", stream["code"])
    again = sapi.client.post(
        "/api/streams/subscribe", json={"code": stream["code"]}, headers=sapi.token("bob")
    )
    assert_error(again, 409, "already_subscribed")
    assert subscriptions_of(sapi, "bob") == [first]
    assert streams_of(sapi, "alice")[0]["subscribers"] == 1


@pytest.mark.parametrize("code", ["falcon-7k2q", "nothing", "a" * 100])
def test_an_unknown_code_is_not_found(sapi: Api, code: str) -> None:
    user = sapi.token("bob")
    assert_error(sapi.client.get(f"/api/streams/lookup/{code}", headers=user), 404, "not_found")
    subscribed = sapi.client.post("/api/streams/subscribe", json={"code": code}, headers=user)
    assert_error(subscribed, 404, "not_found")


def test_another_accounts_stream_is_not_found_for_delete_and_send(sapi: Api) -> None:
    alice = sapi.key("alice")
    stream = create(sapi, alice)
    mallory = sapi.key("mallory")
    for headers in (mallory, sapi.token("mallory")):
        deleted = sapi.client.delete(f"/api/streams/{stream['id']}", headers=headers)
        assert_error(deleted, 404, "not_found")
    sent = sapi.client.post(
        f"/api/streams/{stream['id']}/send", json={"title": "pwned"}, headers=mallory
    )
    assert_error(sent, 404, "not_found")
    assert streams_of(sapi, "mallory") == []
    assert sapi.client.get("/api/notifications", headers=mallory).json()["items"] == []
    assert sapi.client.get("/api/notifications", headers=alice).json()["items"] == []
    assert streams_of(sapi, "alice") == [stream]


@pytest.mark.parametrize("stream_id", ["str_nope", "str_01JD0000000000000000000000"])
def test_an_unknown_stream_is_not_found(sapi: Api, stream_id: str) -> None:
    key = sapi.key("alice")
    assert_error(sapi.client.delete(f"/api/streams/{stream_id}", headers=key), 404, "not_found")
    sent = sapi.client.post(f"/api/streams/{stream_id}/send", json={"title": "t"}, headers=key)
    assert_error(sent, 404, "not_found")


def test_another_accounts_subscription_is_not_found(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    subscription = subscribe(sapi, "bob", stream["code"])
    for account in ("mallory", "alice"):
        stolen = sapi.client.delete(
            f"/api/streams/subscriptions/{subscription['id']}", headers=sapi.token(account)
        )
        assert_error(stolen, 404, "not_found")
    assert subscriptions_of(sapi, "bob") == [subscription]
    assert subscriptions_of(sapi, "mallory") == []
    unknown = sapi.client.delete("/api/streams/subscriptions/sub_nope", headers=sapi.token("bob"))
    assert_error(unknown, 404, "not_found")


def test_unsubscribing_twice_is_not_found_and_resubscribing_works(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    first = subscribe(sapi, "bob", stream["code"])
    path = f"/api/streams/subscriptions/{first['id']}"
    assert sapi.client.delete(path, headers=sapi.token("bob")).status_code == 200
    assert_error(sapi.client.delete(path, headers=sapi.token("bob")), 404, "not_found")
    second = subscribe(sapi, "bob", stream["code"])
    assert second["id"] != first["id"]
    assert second["stream"]["subscribers"] == 1


def test_subscribers_is_the_live_count_everywhere(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    other = create(sapi, key, name="Other")

    def counts() -> tuple[int, int]:
        mine = {s["id"]: s["subscribers"] for s in streams_of(sapi, "alice")}
        return mine[stream["id"]], lookup(sapi, "zed", stream["code"])["subscribers"]

    assert counts() == (0, 0)
    bob = subscribe(sapi, "bob", stream["code"])
    assert bob["stream"]["subscribers"] == 1
    carol = subscribe(sapi, "carol", stream["code"])
    assert carol["stream"]["subscribers"] == 2
    subscribe(sapi, "carol", other["code"])
    assert counts() == (2, 2)
    assert subscriptions_of(sapi, "bob")[0]["stream"]["subscribers"] == 2
    assert send(sapi, key, stream["id"])["subscribers"] == 2

    sapi.client.delete(f"/api/streams/subscriptions/{bob['id']}", headers=sapi.token("bob"))
    assert counts() == (1, 1)
    assert subscriptions_of(sapi, "carol")[-1]["stream"]["subscribers"] == 1
    assert send(sapi, key, stream["id"])["subscribers"] == 1
    assert {s["id"]: s["subscribers"] for s in streams_of(sapi, "alice")}[other["id"]] == 1


def test_deleting_a_stream_removes_its_subscriptions_but_keeps_its_notifications(
    sapi: Api,
) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key, name="Doomed", iconUrl=ICON)
    kept = create(sapi, key, name="Kept")
    doomed_subscription = subscribe(sapi, "bob", stream["code"])
    kept_subscription = subscribe(sapi, "bob", kept["code"])
    subscribe(sapi, "carol", stream["code"])
    sent = send(sapi, key, stream["id"], title="Last words")

    assert sapi.client.delete(f"/api/streams/{stream['id']}", headers=key).status_code == 200

    assert [s["id"] for s in streams_of(sapi, "alice")] == [kept["id"]]
    assert subscriptions_of(sapi, "bob") == [kept_subscription]
    assert subscriptions_of(sapi, "carol") == []
    unsubscribe = sapi.client.delete(
        f"/api/streams/subscriptions/{doomed_subscription['id']}", headers=sapi.token("bob")
    )
    assert_error(unsubscribe, 404, "not_found")
    assert_error(
        sapi.client.get(f"/api/streams/lookup/{stream['code']}", headers=sapi.token("bob")),
        404,
        "not_found",
    )
    assert_error(sapi.client.delete(f"/api/streams/{stream['id']}", headers=key), 404, "not_found")
    resend = sapi.client.post(
        f"/api/streams/{stream['id']}/send", json={"title": "again"}, headers=key
    )
    assert_error(resend, 404, "not_found")

    full = sapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=key).json()
    assert full["title"] == "Last words"
    assert full["stream"] == {"id": stream["id"], "name": "Doomed", "code": stream["code"]}
    assert full["senderName"] == "Doomed"
    assert full["senderIcon"] == ICON
    listed = sapi.client.get("/api/notifications", headers=key).json()["items"]
    assert [n["stream"] for n in listed] == [full["stream"]]


# Sends


def test_send_is_a_notification_of_the_creator(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key, name="Deploys", iconUrl=ICON)
    sent = send(
        sapi, key, stream["id"], title="Shipped", body="v1.2", sound="soft", priority="high"
    )
    full = sapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=key)
    assert full.status_code == 200
    body = full.json()
    assert body["title"] == "Shipped"
    assert body["body"] == "v1.2"
    assert body["sound"] == "soft"
    assert body["priority"] == "high"
    assert body["iconStyle"] == "bolt"
    assert body["metadata"] == {}
    assert body["targetDeviceToken"] is None
    assert body["stream"] == {"id": stream["id"], "name": "Deploys", "code": stream["code"]}
    assert body["senderName"] == "Deploys"
    assert body["senderIcon"] == ICON
    assert body["scheduledAt"] == body["createdAt"]  # stream sends are immediate

    listed = sapi.client.get("/api/notifications", headers=key).json()["items"]
    assert [n["id"] for n in listed] == [sent["notificationId"]]
    assert listed[0]["stream"] == body["stream"]
    stats = sapi.client.get("/api/notifications/stats", headers=key).json()
    assert stats["total"] == 1

    # A subscriber does not own it.
    bob = sapi.key("bob")
    assert_error(
        sapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=bob),
        404,
        "not_found",
    )


def test_send_defaults_body_sound_and_priority(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    sent = send(sapi, key, stream["id"])
    full = sapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=key).json()
    assert full["body"] == ""
    assert full["sound"] == "default"
    assert full["priority"] == "normal"
    assert full["senderIcon"] is None  # the stream has no icon
    assert full["senderName"] == "Releases"


def test_a_text_body_sends_its_first_line_as_the_title(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key, name="Deploys")
    subscribe(sapi, "bob", stream["code"])
    add_device(sapi, "bob", "bobs-phone")

    # What `curl -d "v2 is out..." URL` sends.
    response = sapi.client.post(
        f"/api/streams/{stream['id']}/send",
        content=b"v2 is out\nRelease notes at /changes",
        headers={**key, "Content-Type": "application/x-www-form-urlencoded"},
    )

    assert response.status_code == 201, response.text
    assert (response.json()["sent"], response.json()["subscribers"]) == (1, 1)
    full = sapi.client.get(
        f"/api/notifications/{response.json()['notificationId']}", headers=key
    ).json()
    assert (full["title"], full["body"]) == ("v2 is out", "Release notes at /changes")
    assert (full["senderName"], full["priority"]) == ("Deploys", "normal")


def test_send_may_override_sender_name_and_icon(sapi: Api, probe: FakeIconProbe) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key, name="Deploys", iconUrl=ICON)
    override = "https://icons.example/bot.jpg"
    sent = send(sapi, key, stream["id"], senderName="CI Bot", senderIcon=override)
    full = sapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=key).json()
    assert full["senderName"] == "CI Bot"
    assert full["senderIcon"] == override
    assert override in probe.checked
    assert sent["stream"] == {"name": "Deploys", "code": stream["code"]}

    only_name = send(sapi, key, stream["id"], senderName="Ops")
    full = sapi.client.get(f"/api/notifications/{only_name['notificationId']}", headers=key).json()
    assert (full["senderName"], full["senderIcon"]) == ("Ops", ICON)


def test_send_with_no_subscriber_device_fails_at_once(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    add_device(sapi, "alice", "creators-own-phone")  # the creator is no subscriber
    nobody = send(sapi, key, stream["id"])
    assert (nobody["sent"], nobody["subscribers"]) == (0, 0)
    subscribe(sapi, "bob", stream["code"])  # a subscriber without devices
    deviceless = send(sapi, key, stream["id"])
    assert (deviceless["sent"], deviceless["subscribers"]) == (0, 1)

    for result in (nobody, deviceless):
        full = sapi.client.get(f"/api/notifications/{result['notificationId']}", headers=key).json()
        assert full["status"] == "FAILED"
        assert full["failureReason"] == "no_devices"
        assert full["devicesTargeted"] == 0
        assert full["deliveries"] == delivery_counts(0, 0, 0)
    stats = sapi.client.get("/api/notifications/stats", headers=key).json()
    assert stats["byStatus"]["FAILED"] == 2


def test_sent_counts_the_active_devices_of_every_subscriber(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    other = create(sapi, key, name="Other")
    subscribe(sapi, "bob", stream["code"])
    subscribe(sapi, "carol", stream["code"])
    subscribe(sapi, "dave", other["code"])  # subscribes to another stream only
    add_device(sapi, "bob", "bob-phone")
    add_device(sapi, "bob", "bob-tablet")
    add_device(sapi, "carol", "carol-phone")
    dead = add_device(sapi, "carol", "carol-old-phone")
    add_device(sapi, "dave", "dave-phone")
    add_device(sapi, "alice", "alice-phone")
    add_device(sapi, "erin", "erin-phone")  # no subscription at all
    with sapi.services.store.transaction() as tx:
        assert tx.devices.deactivate(dead["id"])

    result = send(sapi, key, stream["id"])
    assert result["sent"] == 3
    assert result["subscribers"] == 2
    full = sapi.client.get(f"/api/notifications/{result['notificationId']}", headers=key).json()
    assert full["status"] == "QUEUED"
    assert full["devicesTargeted"] == 3
    assert full["deliveries"] == delivery_counts(3, 0, 0)
    with sapi.services.store.read() as tx:
        deliveries = tx.progress.for_notification(result["notificationId"])
        targeted = {d.device_id for d in deliveries}
        bob_devices = {d.id for d in tx.devices.list("bob")}
        carol_live = {d.id for d in tx.devices.list("carol") if d.is_active}
    assert targeted == bob_devices | carol_live
    assert len(deliveries) == 3

    sapi.client.post(
        "/api/devices",
        json={"platform": "android", "token": "carol-old-phone"},
        headers=sapi.token("carol"),
    )  # registering the dead token again reactivates it
    assert send(sapi, key, stream["id"])["sent"] == 4


def test_a_send_reaches_the_devices_present_when_it_is_made(sapi: Api) -> None:
    key = sapi.key("alice")
    stream = create(sapi, key)
    subscribe(sapi, "bob", stream["code"])
    add_device(sapi, "bob", "bob-phone")
    result = send(sapi, key, stream["id"])
    assert result["sent"] == 1
    add_device(sapi, "bob", "bob-new-tablet")  # stream sends never wait for devices
    full = sapi.client.get(f"/api/notifications/{result['notificationId']}", headers=key).json()
    assert full["devicesTargeted"] == 1
    assert full["deliveries"] == delivery_counts(1, 0, 0)
    assert send(sapi, key, stream["id"])["sent"] == 2


def test_a_share_link_lookup_takes_a_user_token_or_nothing(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    url = f"/api/streams/lookup/{stream['code']}"
    with_key = sapi.client.get(url, headers=sapi.key("bob"))
    assert_error(with_key, 401, "unauthorized", "This endpoint requires a user token")
    bad_token = sapi.client.get(url, headers={"Authorization": "Bearer not.a.jwt"})
    assert_error(bad_token, 401, "unauthorized", "Invalid token")

    # Without a credential: only what the share link may show anyone (API.md, Streams).
    nobody = sapi.client.get(url)
    assert nobody.status_code == 200
    assert nobody.json() == {
        "name": stream["name"],
        "code": stream["code"],
        "description": stream["description"],
        "iconUrl": stream["iconUrl"],
    }
    # The code is read as a person types it, as with a token.
    assert (
        sapi.client.get(url.upper().replace("/API/STREAMS/LOOKUP/", "/api/streams/lookup/")).json()
        == nobody.json()
    )
    unknown = sapi.client.get("/api/streams/lookup/nobody-0000")
    assert_error(unknown, 404, "not_found", "No stream has this code")

    signed_in = sapi.client.get(url, headers=sapi.token("bob")).json()
    assert signed_in["isSubscribed"] is False
    assert signed_in["subscribers"] == 0


def test_lookups_without_a_credential_are_limited_per_address(sapi: Api) -> None:
    stream = create(sapi, sapi.key("alice"))
    url = f"/api/streams/lookup/{stream['code']}"
    statuses: list[int] = []
    while len(statuses) < 100 and 429 not in statuses:
        statuses.append(sapi.client.get(url).status_code)
    assert 429 in statuses, f"{len(statuses)} lookups, none refused"
    assert statuses.index(429) >= 50  # the burst of the address's bucket
    assert set(statuses[: statuses.index(429)]) == {200}
    # A signed-in person is charged to their account, not to the address.
    assert sapi.client.get(url, headers=sapi.token("bob")).status_code == 200
