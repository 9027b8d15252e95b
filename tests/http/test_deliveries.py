"""GET /api/notifications/:id/deliveries and POST /api/receipts over HTTP, on SQLite and
PostgreSQL, with the engine delivering to real webhook receivers on loopback."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient

from pushcore.bootstrap import build_services
from pushcore.config import load_settings
from pushcore_http.app import create_app
from tests.conftest import Api
from tests.fakes.receiver import Receiver, running_receiver

if TYPE_CHECKING:
    from tests.pg import Cluster

Json = dict[str, Any]
# Due now, not after the default 5 s: a due time a moment in the past is now.
NOW = {"title": "Hi", "scheduledAt": "2026-01-01T00:00:00Z"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def dapi(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """The app with its engine (real clock) on each database; webhooks may reach loopback."""
    url = None
    if request.param == "postgres":
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        url = cluster.create_database()
    env = {"PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}
    settings = load_settings(env=env, data_dir=tmp_path / "data", database_url=url)
    services = build_services(settings)
    with TestClient(create_app(services)) as client:
        yield Api(client, services)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def until(check: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    """``check()`` once it is truthy; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return found


def device(api: Api, headers: dict[str, str], platform: str, token: str, name: str) -> str:
    body = {"platform": platform, "token": token, "name": name}
    found: str = ok(api.client.post("/api/devices", json=body, headers=headers), 201)["id"]
    return found


def settled(api: Api, key: dict[str, str], notification_id: str) -> Json:
    url = f"/api/notifications/{notification_id}"
    found: Json = until(
        lambda: (n := ok(api.client.get(url, headers=key)))["status"] != "QUEUED" and n,
        "the notification to settle",
    )
    return found


def deliveries(api: Api, key: dict[str, str], notification_id: str, query: str = "") -> Any:
    url = f"/api/notifications/{notification_id}/deliveries{query}"
    return api.client.get(url, headers=key)


def receipt(api: Api, token: str, event: str, **headers: str) -> Any:
    return api.client.post("/api/receipts", json={"token": token, "event": event}, headers=headers)


def test_the_list_pages_filters_and_shows_each_device(dapi: Api, receiver: Receiver) -> None:
    key = dapi.key("alice")
    hooks = [device(dapi, key, "webhook", receiver.url(f"/w{n}"), f"hook {n}") for n in (1, 2)]
    # No FCM credentials on this server: the Android delivery fails.
    phone = device(dapi, key, "android", "fcm-token-1", "Pixel")
    n = ok(dapi.client.post("/api/notifications", json=NOW, headers=key), 201)
    detail = settled(dapi, key, n["id"])

    page = ok(deliveries(dapi, key, n["id"]))
    assert page["nextCursor"] is None
    items = page["items"]
    assert [i["id"] for i in items] == sorted(i["id"] for i in items)
    assert all(i["id"].startswith("dlv_") for i in items)
    by_device = {i["deviceId"]: i for i in items}
    assert set(by_device) == {*hooks, phone}
    for hook in hooks:
        d = by_device[hook]
        assert (d["platform"], d["status"], d["attempts"], d["revision"]) == (
            "webhook",
            "DELIVERED",
            1,
            1,
        )
        assert d["deviceName"] in {"hook 1", "hook 2"}
        assert d["deliveredAt"] is not None
        assert d["lastAttemptAt"] == d["deliveredAt"]
        assert (d["displayedAt"], d["openedAt"], d["heldUntil"], d["failureReason"]) == (
            None,
            None,
            None,
            None,
        )
    failed = by_device[phone]
    assert (failed["status"], failed["deviceName"], failed["deliveredAt"]) == (
        "FAILED",
        "Pixel",
        None,
    )
    assert failed["failureReason"]
    assert failed["lastAttemptAt"] is not None
    assert detail["deliveries"] == {
        "pending": 0,
        "delivered": 2,
        "failed": 1,
        "held": 0,
        "expired": 0,
        "opened": 0,
    }

    first = ok(deliveries(dapi, key, n["id"], "?limit=2"))
    assert len(first["items"]) == 2
    assert first["nextCursor"]
    rest = ok(deliveries(dapi, key, n["id"], f"?limit=2&cursor={first['nextCursor']}"))
    assert (first["items"] + rest["items"], rest["nextCursor"]) == (items, None)
    assert [
        i["deviceId"] for i in ok(deliveries(dapi, key, n["id"], "?status=failed"))["items"]
    ] == [phone]
    delivered = ok(deliveries(dapi, key, n["id"], "?status=DELIVERED"))["items"]
    assert {i["deviceId"] for i in delivered} == set(hooks)
    assert ok(deliveries(dapi, key, n["id"], "?status=HELD"))["items"] == []

    for query, field in (
        ("?status=sent", "status"),
        ("?limit=0", "limit"),
        ("?cursor=!", "cursor"),
    ):
        refused = deliveries(dapi, key, n["id"], query)
        assert refused.status_code == 400, query
        assert refused.json()["details"][0]["field"] == field
    # Another account's notification, or none: 404; a JWT or a write-only key: 401.
    assert deliveries(dapi, dapi.key("bob"), n["id"]).status_code == 404
    assert deliveries(dapi, key, "ntf_01JD3V6Q5X8ZK2M4N7P9R0S1T2").status_code == 404
    assert deliveries(dapi, dapi.token("alice"), n["id"]).status_code == 401
    assert deliveries(dapi, dapi.key("alice", "notifications:write"), n["id"]).status_code == 401


def test_a_stream_send_hides_other_accounts_devices(dapi: Api, receiver: Receiver) -> None:
    key = dapi.key("alice")
    stream = ok(dapi.client.post("/api/streams", json={"name": "Deploys"}, headers=key), 201)
    for person in ("bob", "carol"):
        jwt = dapi.token(person)
        ok(
            dapi.client.post("/api/streams/subscribe", json={"code": stream["code"]}, headers=jwt),
            201,
        )
        device(dapi, jwt, "webhook", receiver.url(f"/{person}"), f"{person}'s laptop")
    sent = ok(
        dapi.client.post(f"/api/streams/{stream['id']}/send", json={"title": "v2"}, headers=key),
        201,
    )
    settled(dapi, key, sent["notificationId"])

    items = ok(deliveries(dapi, key, sent["notificationId"]))["items"]

    assert len(items) == 2
    for item in items:
        assert (item["deviceId"], item["deviceName"]) == (None, None)
        assert (item["platform"], item["status"]) == ("webhook", "DELIVERED")
    text = deliveries(dapi, key, sent["notificationId"]).text
    assert "laptop" not in text
    assert "dev_" not in text


def test_receipts_first_wins_and_forgeries_are_404(dapi: Api, receiver: Receiver) -> None:
    key = dapi.key("alice")
    hook = device(dapi, key, "webhook", receiver.url("/w"), "hook")
    n = ok(dapi.client.post("/api/notifications", json=NOW, headers=key), 201)
    settled(dapi, key, n["id"])
    [request] = receiver.delivered("/w")
    token = request.body["receipt"]
    assert token.startswith("rct_")
    assert n["id"] not in token

    # No credential at all; the answer is 202 {}.
    answered = receipt(dapi, token, "displayed")
    assert (answered.status_code, answered.json()) == (202, {})
    [item] = ok(deliveries(dapi, key, n["id"]))["items"]
    assert item["deviceId"] == hook
    assert item["displayedAt"] is not None
    assert item["openedAt"] is None
    # The first of each event wins: again is accepted and changes nothing.
    time.sleep(0.002)  # a later event would have a later time
    assert receipt(dapi, token, "displayed").status_code == 202
    assert ok(deliveries(dapi, key, n["id"]))["items"][0]["displayedAt"] == item["displayedAt"]
    assert receipt(dapi, token, "opened").status_code == 202
    [opened] = ok(deliveries(dapi, key, n["id"]))["items"]
    assert opened["openedAt"] is not None
    assert receipt(dapi, token, "opened").status_code == 202
    assert ok(deliveries(dapi, key, n["id"]))["items"][0]["openedAt"] == opened["openedAt"]
    detail = ok(dapi.client.get(f"/api/notifications/{n['id']}", headers=key))
    assert detail["deliveries"]["opened"] == 1

    # A changed character, another server's kind of token, an unknown one: 404, nothing kept.
    flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
    for forged in (flipped, "rct_" + token[4:][::-1], "rct_", "nope", "rct_" + "A" * 300):
        refused = receipt(dapi, forged, "opened")
        assert (refused.status_code, refused.json()["code"]) == (404, "not_found"), forged
    # A body that is not a receipt: 400.
    bodies: list[Any] = [
        {"token": token},
        {"token": token, "event": "seen"},
        {"event": "opened"},
        [],
    ]
    for body in bodies:
        assert dapi.client.post("/api/receipts", json=body).status_code == 400, body
    assert ok(deliveries(dapi, key, n["id"]))["items"] == [opened]


def test_a_receipt_keeps_no_address_or_user_agent(dapi: Api, receiver: Receiver) -> None:
    key = dapi.key("alice")
    device(dapi, key, "webhook", receiver.url("/w"), "hook")
    n = ok(dapi.client.post("/api/notifications", json=NOW, headers=key), 201)
    settled(dapi, key, n["id"])
    token = receiver.delivered("/w")[0].body["receipt"]
    agent = "Mozilla/5.0 (receipt-marker-7f3a)"
    assert receipt(dapi, token, "opened", **{"User-Agent": agent}).status_code == 202
    if dapi.services.settings.database_url is None:  # the SQLite file
        path = dapi.services.settings.data_dir / "pushcore.db"
        with sqlite3.connect(path) as db:
            dump = "\n".join(db.iterdump())
        assert "receipt-marker-7f3a" not in dump
        assert "testclient" not in dump


def test_receipts_are_limited_per_address(dapi: Api) -> None:
    statuses: list[int] = []
    while len(statuses) < 100 and 429 not in statuses:
        statuses.append(receipt(dapi, "rct_AAAA", "opened").status_code)
    assert 429 in statuses, f"{len(statuses)} receipts, none refused"
    assert statuses.index(429) >= 50  # the burst of the address's bucket
    assert set(statuses[: statuses.index(429)]) == {404}


def test_reading_the_inbox_opens_that_accounts_deliveries(dapi: Api, receiver: Receiver) -> None:
    key = dapi.key("alice")
    stream = ok(dapi.client.post("/api/streams", json={"name": "Deploys"}, headers=key), 201)
    for person in ("bob", "carol"):
        jwt = dapi.token(person)
        ok(
            dapi.client.post("/api/streams/subscribe", json={"code": stream["code"]}, headers=jwt),
            201,
        )
        for n in (1, 2):
            device(dapi, jwt, "webhook", receiver.url(f"/{person}{n}"), f"{person} {n}")
    sent = ok(
        dapi.client.post(f"/api/streams/{stream['id']}/send", json={"title": "v2"}, headers=key),
        201,
    )
    settled(dapi, key, sent["notificationId"])
    bob = dapi.token("bob")
    [entry] = ok(dapi.client.get("/api/inbox", headers=bob))["items"]

    ok(dapi.client.post("/api/inbox/read", json={"ids": [entry["id"]]}, headers=bob))

    items = ok(deliveries(dapi, key, sent["notificationId"]))["items"]
    opened = [i for i in items if i["openedAt"] is not None]
    assert len(items) == 4
    assert len(opened) == 2
    bobs = {r.body["receipt"] for p in ("/bob1", "/bob2") for r in receiver.delivered(p)}
    assert len(bobs) == 2  # each device got its own token
    detail = ok(dapi.client.get(f"/api/notifications/{sent['notificationId']}", headers=key))
    assert detail["deliveries"]["opened"] == 2
    # Bob's devices were the ones opened: their tokens' `opened` is already taken,
    # carol's is not.
    before = {i["id"]: i["openedAt"] for i in items}
    for token in bobs:
        assert receipt(dapi, token, "opened").status_code == 202
    assert {
        i["id"]: i["openedAt"] for i in ok(deliveries(dapi, key, sent["notificationId"]))["items"]
    } == before


def test_a_superseded_delivery_is_listed_and_filtered_as_superseded(
    dapi: Api, receiver: Receiver
) -> None:
    key = dapi.key("alice")
    device(dapi, key, "webhook", receiver.url("/w"), "hook")
    later = {"title": "Score 1-0", "collapseKey": "match-7", "delay": "custom", "customDelay": 3600}
    older = ok(dapi.client.post("/api/notifications", json=later, headers=key), 201)
    newer = {**later, "title": "Score 2-0"}
    ok(dapi.client.post("/api/notifications", json=newer, headers=key), 201)

    (item,) = ok(deliveries(dapi, key, older["id"]))["items"]
    assert (item["status"], item["failureReason"]) == ("SUPERSEDED", "superseded")
    assert ok(deliveries(dapi, key, older["id"], "?status=SUPERSEDED"))["items"] == [item]
    assert ok(deliveries(dapi, key, older["id"], "?status=CANCELLED"))["items"] == []
