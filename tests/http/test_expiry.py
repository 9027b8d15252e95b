"""`ttl` and `expiresAt` over HTTP: accepted on every create path and PATCH, refused
(400, nothing stored) out of range, together, or not after the due time; shown by GET."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.http.test_notifications import add_device, napi, ts

__all__ = ["napi"]


def post(api: Api, key: dict[str, str], path: str, body: dict[str, Any]) -> Any:
    return api.client.post(path, json=body, headers=key)


def test_ttl_counts_from_the_due_time_and_get_shows_it(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    created = post(napi, key, "/api/notifications", {"title": "t", "delay": "1h", "ttl": 600})
    assert created.status_code == 201
    shown = napi.client.get(f"/api/notifications/{created.json()['id']}", headers=key).json()
    assert shown["ttl"] == 600
    assert shown["expiresAt"] == ts(fake_clock.now() + timedelta(hours=1, minutes=10))
    assert shown["withdrawnAt"] is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"ttl": 0}, "ttl"),
        ({"ttl": 2_419_201}, "ttl"),
        ({"ttl": 60, "expiresAt": "2036-01-01T00:00:00Z"}, "expiresAt"),
        ({"delay": "1h", "expiresAt": "2026-11-21T10:30:00Z"}, "expiresAt"),  # before the due
    ],
)
def test_a_bad_expiry_is_400_on_every_create_path_and_stores_nothing(
    napi: Api, fields: dict[str, Any], field: str
) -> None:
    key = napi.key("alice")
    stream = post(napi, key, "/api/streams", {"name": "S"}).json()
    body = {"title": "t", **fields}
    answers = [
        post(napi, key, "/api/notifications", body),
        post(napi, key, "/api/notifications/batch", {"notifications": [body]}),
    ]
    if "delay" not in fields:  # a stream send has no timing
        answers.append(post(napi, key, f"/api/streams/{stream['id']}/send", body))
    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert answer.json()["details"][0]["field"].endswith(field)
    assert napi.client.get("/api/notifications", headers=key).json()["items"] == []


def test_batch_and_stream_sends_store_their_expiry(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    stream = post(napi, key, "/api/streams", {"name": "S"}).json()
    at = "2036-01-01T00:00:00.000Z"
    batch = post(
        napi, key, "/api/notifications/batch", {"notifications": [{"title": "a", "expiresAt": at}]}
    )
    sent = post(napi, key, f"/api/streams/{stream['id']}/send", {"title": "b", "ttl": 30})
    assert (batch.status_code, sent.status_code) == (201, 201)
    items = {
        n["title"]: n for n in napi.client.get("/api/notifications", headers=key).json()["items"]
    }
    assert items["a"]["expiresAt"] == at
    assert items["b"]["expiresAt"] == ts(fake_clock.now() + timedelta(seconds=30))


def test_patch_sets_moves_and_clears_the_expiry(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    n = post(napi, key, "/api/notifications", {"title": "t", "delay": "1h", "ttl": 60}).json()
    url = f"/api/notifications/{n['id']}"
    due = fake_clock.now() + timedelta(hours=1)

    moved = napi.client.patch(url, json={"delay": "2h"}, headers=key).json()
    assert moved["expiresAt"] == ts(due + timedelta(hours=1, seconds=60))  # the ttl follows
    at = napi.client.patch(url, json={"expiresAt": "2036-01-01T00:00:00Z"}, headers=key).json()
    assert (at["ttl"], at["expiresAt"]) == (None, "2036-01-01T00:00:00.000Z")
    back = napi.client.patch(url, json={"ttl": 5}, headers=key).json()
    assert (back["ttl"], back["expiresAt"]) == (5, ts(due + timedelta(hours=1, seconds=5)))
    cleared = napi.client.patch(url, json={"ttl": None}, headers=key).json()
    assert (cleared["ttl"], cleared["expiresAt"], cleared["revision"]) == (None, None, 5)
    both = napi.client.patch(url, json={"ttl": 5, "expiresAt": "2036-01-01T00:00:00Z"}, headers=key)
    assert both.status_code == 400
    assert napi.client.get(url, headers=key).json()["revision"] == 5


def test_withdraw_of_an_unknown_or_foreign_notification_is_404(napi: Api) -> None:
    alice, bob = napi.key("alice"), napi.key("bob")
    n = post(napi, alice, "/api/notifications", {"title": "t"}).json()
    for key, path in ((bob, n["id"]), (alice, "ntf_01JD0000000000000000000000")):
        answer = napi.client.post(f"/api/notifications/{path}/withdraw", headers=key)
        assert answer.status_code == 404
    assert (
        napi.client.get(f"/api/notifications/{n['id']}", headers=alice).json()["status"] == "QUEUED"
    )
