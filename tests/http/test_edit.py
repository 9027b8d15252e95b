"""PATCH /api/notifications/:id over HTTP: merge patch, If-Match, refusals change nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.http.test_notifications import add_device, napi, ts

__all__ = ["napi"]


def created(api: Api, key: dict[str, str], **fields: Any) -> dict[str, Any]:
    response = api.client.post(
        "/api/notifications", json={"title": "Build 41", **fields}, headers=key
    )
    assert response.status_code == 201
    body: dict[str, Any] = response.json()
    return body


def test_patch_merges_and_counts_revisions(napi: Api, fake_clock: FakeClock) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    n = created(napi, key, body="running", delay="1h", metadata={"a": "1"})
    url = f"/api/notifications/{n['id']}"
    assert napi.client.get(url, headers=key).json()["revision"] == 1

    response = napi.client.patch(
        url,
        content=b'{"body": "passed", "metadata": {"b": "2"}, "delay": "5m"}',
        headers=key | {"content-type": "application/merge-patch+json", "if-match": '"1"'},
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["revision"] == 2
    assert (body["title"], body["body"], body["metadata"]) == ("Build 41", "passed", {"b": "2"})
    assert body["scheduledAt"] == ts(fake_clock.now() + timedelta(minutes=5))
    assert napi.client.get(url, headers=key).json() == body
    # null clears an optional field; a bare If-Match works too.
    cleared = napi.client.patch(url, json={"metadata": None}, headers=key | {"if-match": "2"})
    assert (cleared.status_code, cleared.json()["metadata"], cleared.json()["revision"]) == (
        200,
        {},
        3,
    )


def test_refusals_change_nothing(napi: Api) -> None:
    key = napi.key("alice")
    add_device(napi, key, "t1")
    n = created(napi, key, delay="1h")
    url = f"/api/notifications/{n['id']}"
    before = napi.client.get(url, headers=key).json()
    cases: list[tuple[Any, dict[str, str], int, str]] = [
        ({"title": "x"}, {"if-match": "7"}, 412, "revision_mismatch"),
        ({}, {}, 400, "validation_error"),
        ({"collapseKey": "k"}, {}, 400, "validation_error"),
        ({"status": "FAILED"}, {}, 400, "validation_error"),
        ({"delay": "5m", "scheduledAt": "2030-01-01T00:00:00Z"}, {}, 400, "validation_error"),
        ({"title": ""}, {}, 400, "validation_error"),
        ({"title": "x"}, {"if-match": "abc"}, 400, "validation_error"),
        ({"targetDeviceToken": "nope"}, {}, 404, "device_not_found"),
    ]
    for patch, headers, status, code in cases:
        response = napi.client.patch(url, json=patch, headers=key | headers)
        assert (response.status_code, response.json()["code"]) == (status, code), patch
    assert napi.client.get(url, headers=key).json() == before
    other = napi.client.patch(url, json={"title": "x"}, headers=napi.key("bob"))
    assert other.status_code == 404
    reader = napi.key("alice", "notifications:read")
    assert napi.client.patch(url, json={"title": "x"}, headers=reader).status_code == 401


def test_a_cancelled_notification_is_not_editable(napi: Api) -> None:
    key = napi.key("alice")
    n = created(napi, key, delay="1h")
    url = f"/api/notifications/{n['id']}"
    assert napi.client.delete(url, headers=key).status_code == 200
    response = napi.client.patch(url, json={"title": "x"}, headers=key)
    assert response.status_code == 409
    assert response.json()["code"] == "not_editable"
    assert f"/api/notifications/{n['id']}/replace" in response.json()["error"]


def test_openapi_declares_the_patch(napi: Api) -> None:
    spec = napi.client.get("/openapi.json").json()
    patch = spec["paths"]["/api/notifications/{notification_id}"]["patch"]
    assert {"200", "409", "412"} <= set(patch["responses"])
