"""PATCH /api/account (zone, quiet hours, snooze) and PATCH /api/streams/subscriptions/:id
(mute), as a user sees them (API.md, "The recipient's time")."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import Api

HOURS = {"start": "22:00", "end": "07:00"}
EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def patch(api: Api, body: Any, account: str = "alice") -> Any:
    """PATCH /api/account as ``account``; the response."""
    return api.client.patch("/api/account", json=body, headers=api.token(account))


def test_the_account_shows_the_defaults_until_set(api: Api) -> None:
    found = api.client.get("/api/account", headers=api.token("alice")).json()
    assert found["timeZone"] == "UTC"
    assert found["quietHours"] is None
    assert found["snoozeUntil"] is None


def test_each_given_field_is_replaced_whole_and_the_others_kept(api: Api) -> None:
    answer = patch(api, {"timeZone": "Europe/Berlin", "quietHours": HOURS})
    assert answer.status_code == 200, answer.text
    full = {**HOURS, "days": EVERY_DAY, "mode": "hold", "bypass": ["critical"]}
    assert answer.json()["quietHours"] == full
    # quietHours replaced whole: the days not given are every day again.
    patch(api, {"quietHours": {**HOURS, "days": ["sat", "sun"], "mode": "silent"}})
    answer = patch(api, {"quietHours": {"start": "23:30", "end": "06:00", "bypass": []}})
    shown = api.client.get("/api/account", headers=api.token("alice")).json()
    assert shown == answer.json()
    assert shown["timeZone"] == "Europe/Berlin"  # not given: kept
    assert shown["quietHours"] == {
        "start": "23:30",
        "end": "06:00",
        "days": EVERY_DAY,
        "mode": "hold",
        "bypass": [],
    }
    snoozed = patch(api, {"snoozeUntil": "2030-01-01T09:00:00+01:00"}).json()
    assert snoozed["snoozeUntil"] == "2030-01-01T08:00:00.000Z"
    cleared = patch(api, {"snoozeUntil": None, "quietHours": None}).json()
    assert (cleared["snoozeUntil"], cleared["quietHours"], cleared["timeZone"]) == (
        None,
        None,
        "Europe/Berlin",
    )
    # Another account's are its own.
    assert api.client.get("/api/account", headers=api.token("bob")).json()["timeZone"] == "UTC"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timeZone": "Mars/Olympus"}, "timeZone"),
        ({"timeZone": "+02:00"}, "timeZone"),
        ({"timeZone": 2}, "timeZone"),
        ({"quietHours": {"start": "22:00"}}, "quietHours"),
        ({"quietHours": {**HOURS, "start": "24:00"}}, "quietHours"),
        ({"quietHours": {**HOURS, "end": "22:00"}}, "quietHours"),  # start == end
        ({"quietHours": {**HOURS, "mode": "loud"}}, "quietHours"),
        ({"quietHours": {**HOURS, "bypass": ["normal"]}}, "quietHours"),
        ({"quietHours": {**HOURS, "days": ["monday"]}}, "quietHours"),
        ({"quietHours": {**HOURS, "days": []}}, "quietHours"),
        ({"quietHours": "22-07"}, "quietHours"),
        ({"snoozeUntil": "tomorrow"}, "snoozeUntil"),
        ({"snoozeUntil": "2030-01-01T09:00:00"}, "snoozeUntil"),  # no offset
        ({"plan": "pro"}, "plan"),
    ],
)
def test_bad_settings_are_a_400_naming_the_field_and_change_nothing(
    api: Api, body: Any, field: str
) -> None:
    patch(api, {"timeZone": "Asia/Tokyo"})
    answer = patch(api, {"quietHours": HOURS, **body})
    assert answer.status_code == 400
    assert answer.json()["code"] == "validation_error"
    assert [d["field"] for d in answer.json()["details"]] == [field]
    shown = api.client.get("/api/account", headers=api.token("alice")).json()
    assert (shown["timeZone"], shown["quietHours"]) == ("Asia/Tokyo", None)


def test_settings_take_a_user_s_token_not_an_api_key(api: Api, client: TestClient) -> None:
    key = api.key("alice")
    assert client.patch("/api/account", json={"timeZone": "UTC"}, headers=key).status_code in (
        401,
        403,
    )
    assert client.patch("/api/account", json={"timeZone": "UTC"}).status_code == 401


def subscribed(api: Api) -> str:
    """bob subscribes to a stream of alice's; the subscription id."""
    stream = api.client.post("/api/streams", json={"name": "News"}, headers=api.key("alice"))
    code = stream.json()["code"]
    made = api.client.post("/api/streams/subscribe", json={"code": code}, headers=api.token("bob"))
    assert made.status_code == 201
    assert set(made.json()) == {"id", "stream", "createdAt"}  # not muted: its usual shape
    return str(made.json()["id"])


def test_a_subscription_is_muted_and_unmuted_by_its_subscriber_only(api: Api) -> None:
    sub = subscribed(api)
    url, bob = f"/api/streams/subscriptions/{sub}", api.token("bob")
    answer = api.client.patch(url, json={"mutedUntil": "2030-01-01T00:00:00Z"}, headers=bob)
    assert answer.status_code == 200, answer.text
    assert answer.json()["mutedUntil"] == "2030-01-01T00:00:00.000Z"
    assert answer.json()["allowCritical"] is True
    (listed,) = api.client.get("/api/streams/subscriptions", headers=bob).json()
    assert (listed["mutedUntil"], listed["allowCritical"]) == ("2030-01-01T00:00:00.000Z", True)
    off = api.client.patch(url, json={"mutedUntil": None, "allowCritical": False}, headers=bob)
    assert (off.json()["mutedUntil"], off.json()["allowCritical"]) == (None, False)
    # Someone else's subscription, or none: 404, and nothing changes.
    other = api.client.patch(url, json={"mutedUntil": None}, headers=api.token("carol"))
    assert other.status_code == 404
    assert api.client.patch(url + "x", json={}, headers=bob).status_code == 404
    bad = api.client.patch(url, json={"mutedUntil": "soon"}, headers=bob)
    assert bad.status_code == 400
    assert [d["field"] for d in bad.json()["details"]] == ["mutedUntil"]
    (listed,) = api.client.get("/api/streams/subscriptions", headers=bob).json()
    assert listed["allowCritical"] is False
