"""collapseKey, renotify and POST /api/notifications/:id/replace over HTTP."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api
from tests.http.test_edit import created
from tests.http.test_notifications import add_device, napi

__all__ = ["napi"]


def test_collapse_key_and_renotify_are_stored_and_shown(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    n = created(napi, key, collapseKey="build-7.main_~x", renotify=False, delay="1h")
    body = napi.client.get(f"/api/notifications/{n['id']}", headers=key).json()
    assert (body["collapseKey"], body["renotify"], body["supersedes"]) == (
        "build-7.main_~x",
        False,
        None,
    )
    plain = created(napi, key, delay="1h")
    body = napi.client.get(f"/api/notifications/{plain['id']}", headers=key).json()
    assert (body["collapseKey"], body["renotify"]) == (None, True)


def test_a_bad_collapse_key_is_a_400_that_stores_nothing(napi: Api) -> None:
    key = napi.key("alice")
    for bad in ["", "a b", "ключ", "x" * 65, "a/b", 7]:
        response = napi.client.post(
            "/api/notifications", json={"title": "t", "collapseKey": bad}, headers=key
        )
        assert response.status_code == 400, bad
        assert response.json()["details"][0]["field"] == "collapseKey", bad
    batch = napi.client.post(
        "/api/notifications/batch",
        json={"notifications": [{"title": "ok"}, {"title": "t", "collapseKey": "a b"}]},
        headers=key,
    )
    assert batch.status_code == 400
    assert batch.json()["details"][0]["field"] == "notifications[1].collapseKey"
    assert napi.client.get("/api/notifications", headers=key).json()["items"] == []
    assert created(napi, key, collapseKey="x" * 64)["status"] == "QUEUED"


def test_a_newer_one_supersedes_and_the_list_filters_by_key(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    old = created(napi, key, collapseKey="alarm", delay="1h")
    created(napi, key, collapseKey="other", delay="1h")
    new = created(napi, key, collapseKey="alarm", delay="2h")
    detail = napi.client.get(f"/api/notifications/{old['id']}", headers=key).json()
    assert (detail["status"], detail["failureReason"]) == ("CANCELLED", "superseded")
    assert detail["deliveries"]["pending"] == 0
    listed = napi.client.get("/api/notifications?collapseKey=alarm", headers=key).json()
    assert [i["id"] for i in listed["items"]] == [new["id"], old["id"]]
    queued = napi.client.get("/api/notifications?collapseKey=alarm&status=QUEUED", headers=key)
    assert [i["id"] for i in queued.json()["items"]] == [new["id"]]
    # A superseded notification is not editable; its replacement is.
    patch = napi.client.patch(f"/api/notifications/{old['id']}", json={"title": "x"}, headers=key)
    assert (patch.status_code, patch.json()["code"]) == (409, "not_editable")
    # collapseKey cannot change by PATCH.
    patch = napi.client.patch(
        f"/api/notifications/{new['id']}", json={"collapseKey": "alarm"}, headers=key
    )
    assert patch.status_code == 400


def test_replace_answers_201_with_the_new_notification(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    original = created(
        napi, key, body="was", delay="1h", metadata={"a": "1"}, targetDeviceToken="t1"
    )
    url = f"/api/notifications/{original['id']}/replace"
    response = napi.client.post(url, json={"body": "now"}, headers=key)
    assert response.status_code == 201, response.text
    new: dict[str, Any] = response.json()
    assert new["supersedes"] == original["id"]
    assert new["collapseKey"] == original["id"]
    assert (new["title"], new["body"], new["metadata"]) == ("Build 41", "now", {"a": "1"})
    assert new["targetDeviceToken"] == "t1"
    assert new["scheduledAt"] <= new["createdAt"]  # no timing: now
    assert new["id"] != original["id"]
    gone = napi.client.get(f"/api/notifications/{original['id']}", headers=key).json()
    assert (gone["status"], gone["failureReason"]) == ("CANCELLED", "superseded")
    # Replacing again keeps the key; no body at all is the original's fields, now.
    again = napi.client.post(f"/api/notifications/{new['id']}/replace", headers=key)
    assert again.status_code == 201, again.text
    assert (again.json()["collapseKey"], again.json()["body"]) == (original["id"], "now")
    timed = napi.client.post(
        f"/api/notifications/{again.json()['id']}/replace", json={"delay": "2h"}, headers=key
    )
    assert timed.json()["scheduledAt"] > again.json()["scheduledAt"]


def test_replace_refusals(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    original = created(napi, key, collapseKey="k", delay="1h")
    url = f"/api/notifications/{original['id']}/replace"
    cases: list[tuple[Any, int]] = [
        ({"collapseKey": "other"}, 400),
        ({"title": ""}, 400),
        ({"status": "QUEUED"}, 400),
        ({"delay": "5m", "scheduledAt": "2030-01-01T00:00:00Z"}, 400),
        ([1], 400),
    ]
    for body, status in cases:
        response = napi.client.post(url, json=body, headers=key)
        assert response.status_code == status, (body, response.text)
    assert napi.client.get(f"/api/notifications/{original['id']}", headers=key).json()[
        "status"
    ] == ("QUEUED")
    assert napi.client.post(url, json={}, headers=napi.key("bob")).status_code == 404
    missing = "/api/notifications/ntf_01JD3V6Q5X8ZK2M4N7P9R0S1T2/replace"
    assert napi.client.post(missing, json={}, headers=key).status_code == 404
    reader = napi.key("alice", "notifications:read")
    assert napi.client.post(url, json={}, headers=reader).status_code == 401
    # The same key as the original's is fine.
    same = napi.client.post(url, json={"collapseKey": "k"}, headers=key)
    assert same.status_code == 201


def test_stream_sends_take_a_collapse_key(napi: Api) -> None:
    alice, bob = napi.key("alice"), napi.token("bob")
    stream = napi.client.post("/api/streams", json={"name": "Scores"}, headers=alice).json()
    napi.client.post("/api/streams/subscribe", json={"code": stream["code"]}, headers=bob)
    sent = napi.client.post(
        f"/api/streams/{stream['id']}/send",
        json={"title": "1-0", "collapseKey": "match-9", "renotify": False},
        headers=alice,
    )
    assert sent.status_code in (200, 201), sent.text
    listed = napi.client.get("/api/notifications?collapseKey=match-9", headers=alice).json()
    ((item),) = listed["items"]
    assert (item["collapseKey"], item["renotify"]) == ("match-9", False)
    (entry,) = napi.client.get("/api/inbox", headers=bob).json()["items"]
    assert (entry["collapseKey"], entry["replaces"], entry["expiresAt"]) == ("match-9", None, None)
    again = napi.client.post(
        f"/api/streams/{stream['id']}/send",
        json={"title": "2-0", "collapseKey": "match-9"},
        headers=alice,
    )
    assert again.status_code in (200, 201)
    (entry2,) = napi.client.get("/api/inbox", headers=bob).json()["items"]
    assert (entry2["title"], entry2["replaces"]) == ("2-0", entry["id"])
    bad = napi.client.post(
        f"/api/streams/{stream['id']}/send",
        json={"title": "x", "collapseKey": "a b"},
        headers=alice,
    )
    assert bad.status_code == 400
    timed = napi.client.post(
        f"/api/notifications/{item['id']}/replace", json={"delay": "1h"}, headers=alice
    )
    assert timed.status_code == 400
