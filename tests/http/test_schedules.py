"""/api/schedules over HTTP on SQLite and PostgreSQL: fields, refusals, states, the
daylight-saving preview, and occurrences made into notifications (fake clock)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore.bootstrap import build_services
from pushcore.config import load_settings
from pushcore.ports import Store
from pushcore.storage.sqlite import SqliteStore
from pushcore_http.app import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe
from tests.pg import Cluster

NOW = datetime(2027, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def schedules_database(pg_cluster: Cluster) -> str:
    """One migrated PostgreSQL database these tests share, emptied before each."""
    return pg_cluster.create_database("http_schedules")


def open_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if kind == "sqlite":
        return SqliteStore(tmp_path / "pushcore.db")
    from pushcore.storage.postgres import PostgresStore

    url: str = request.getfixturevalue("schedules_database")
    request.getfixturevalue("pg_cluster").empty(url)
    return PostgresStore(url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sapi(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Api, FakeClock]]:
    """The API on a fake clock, with no engine running: a test makes occurrences itself."""
    clock = FakeClock(NOW)
    store = open_store(request.param, tmp_path, request)
    services = build_services(
        load_settings(env={}, data_dir=tmp_path / "data"),
        store=store,
        clock=clock,
        icons=FakeIconProbe(),
    )
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services), clock


def ts(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def create(api: Api, key: dict[str, str], **fields: Any) -> dict[str, Any]:
    body = {"name": "Stand-up", "rrule": "FREQ=DAILY", "template": {"title": "Stand-up"}}
    response = api.client.post("/api/schedules", json=body | fields, headers=key)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def made(api: Api, key: dict[str, str]) -> list[dict[str, Any]]:
    """The account's notifications, oldest first, as GET /api/notifications/:id shows each."""
    page = api.client.get("/api/notifications?limit=100", headers=key).json()["items"]
    return [
        api.client.get(f"/api/notifications/{n['id']}", headers=key).json() for n in reversed(page)
    ]


def test_create_get_and_list(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    key = api.key("alice")
    first = create(api, key, start="2027-03-02T09:00:00", timeZone="Europe/Berlin")
    assert first["id"].startswith("sch_")
    assert {k: first[k] for k in ("name", "state", "rrule", "start", "timeZone", "exdates")} == {
        "name": "Stand-up",
        "state": "ACTIVE",
        "rrule": "FREQ=DAILY",
        "start": "2027-03-02T09:00:00",
        "timeZone": "Europe/Berlin",
        "exdates": [],
    }
    assert first["catchUp"] == {"mode": "latest", "window": 3600}
    assert first["nextOccurrenceAt"] == "2027-03-02T08:00:00.000Z"
    assert (first["sent"], first["missed"], first["revision"]) == (0, 0, 1)
    assert first["createdAt"] == ts(NOW)
    second = create(api, key, name="Digest")
    assert api.client.get(f"/api/schedules/{first['id']}", headers=key).json() == first
    page = api.client.get("/api/schedules?limit=1", headers=key).json()
    assert [s["id"] for s in page["items"]] == [second["id"]]
    rest = api.client.get(f"/api/schedules?cursor={page['nextCursor']}", headers=key).json()
    assert ([s["id"] for s in rest["items"]], rest["nextCursor"]) == ([first["id"]], None)
    api.client.post(f"/api/schedules/{first['id']}/pause", headers=key)
    paused = api.client.get("/api/schedules?state=PAUSED", headers=key).json()["items"]
    assert [s["id"] for s in paused] == [first["id"]]
    assert api.client.get("/api/schedules?state=ON", headers=key).status_code == 400
    # Another account sees none of it.
    bob = api.key("bob")
    assert api.client.get(f"/api/schedules/{first['id']}", headers=bob).status_code == 404
    assert api.client.delete(f"/api/schedules/{first['id']}", headers=bob).status_code == 404
    assert api.client.get("/api/schedules", headers=bob).json()["items"] == []


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"template": {"body": "no title"}}, "template.title"),
        (
            {"template": {"title": "x", "scheduledAt": "2027-03-01T09:00:00Z"}},
            "template.scheduledAt",
        ),
        ({"template": {"title": "x", "sound": "loud"}}, "template.sound"),
        ({"rrule": "FREQ=SECONDLY"}, "rrule"),
        ({"rrule": "FREQ=DAILY;DTSTART=20270101T000000"}, "rrule"),
        ({"rrule": "FREQ=MINUTELY;BYSECOND=0,30"}, "rrule"),
        ({"timeZone": "+02:00"}, "timeZone"),
        ({"timeZone": "Mars/Olympus"}, "timeZone"),
        ({"start": "2027-03-01T09:00:00Z"}, "start"),
        ({"catchUp": {"mode": "some"}}, "catchUp.mode"),
        ({"catchUp": {"window": 10}}, "catchUp.window"),
        ({"name": ""}, "name"),
        ({"colour": "red"}, "colour"),
    ],
)
# Refused by the converter before any store is asked, the same on either: on SQLite only.
@pytest.mark.parametrize("sapi", ["sqlite"], indirect=True)
def test_bad_fields_are_400s_naming_the_field_and_store_nothing(
    sapi: tuple[Api, FakeClock], fields: dict[str, Any], named: str
) -> None:
    api, _ = sapi
    key = api.key("alice")
    body = {"name": "n", "rrule": "FREQ=DAILY", "template": {"title": "t"}} | fields
    response = api.client.post("/api/schedules", json=body, headers=key)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "validation_error"
    assert named in [d["field"] for d in response.json()["details"]]
    assert api.client.get("/api/schedules", headers=key).json()["items"] == []


def as_user(api: Api, account: str, zone: str, token: str) -> None:
    """Give ``account`` a zone and an android device ``token`` (its own calls)."""
    jwt = api.token(account)
    assert api.client.patch("/api/account", json={"timeZone": zone}, headers=jwt).is_success
    device = {"platform": "android", "token": token}
    assert api.client.post("/api/devices", json=device, headers=jwt).status_code == 201


def deliveries_due(api: Api, key: dict[str, str], notification_id: str) -> list[str]:
    url = f"/api/notifications/{notification_id}/deliveries"
    return sorted(d["dueAt"] for d in api.client.get(url, headers=key).json()["items"])


def test_recipient_time_zone_makes_each_occurrence_a_local_time_send(
    sapi: tuple[Api, FakeClock],
) -> None:
    api, clock = sapi
    key = api.key("alice")
    as_user(api, "alice", "Europe/Berlin", "tok-a")
    maker = api.services.schedules.maker
    s = create(api, key, start="2027-03-02T09:00:00", timeZone="recipient", rrule="FREQ=DAILY")
    assert s["timeZone"] == "recipient"
    # The rule's wall times; each occurrence's instant is the first any clock shows it (UTC+14).
    url = f"/api/schedules/{s['id']}/occurrences?limit=2"
    shown = api.client.get(url, headers=key).json()
    assert [(o["at"], o["localTime"]) for o in shown] == [
        ("2027-03-01T19:00:00.000Z", "2027-03-02T09:00:00"),
        ("2027-03-02T19:00:00.000Z", "2027-03-03T09:00:00"),
    ]
    clock.set(datetime(2027, 3, 1, 18, 59, 30, tzinfo=UTC))
    maker.run_once()
    (own,) = made(api, key)
    assert own["deliverAt"] == {"localTime": "09:00", "date": "2027-03-02"}
    # 09:00 in Berlin (CET) on 2 March.
    assert own["scheduledAt"] == "2027-03-02T08:00:00.000Z"
    assert deliveries_due(api, key, own["id"]) == ["2027-03-02T08:00:00.000Z"]

    # A stream schedule: each subscriber at 09:00 in its own zone.
    as_user(api, "bob", "Asia/Tokyo", "tok-b")
    as_user(api, "carol", "America/New_York", "tok-c")
    stream = api.client.post("/api/streams", json={"name": "Daily"}, headers=key).json()
    for account in ("bob", "carol"):
        code = {"code": stream["code"]}
        jwt = api.token(account)
        assert api.client.post("/api/streams/subscribe", json=code, headers=jwt).status_code == 201
    create(
        api,
        key,
        start="2027-03-03T09:00:00",
        timeZone="recipient",
        template={"title": "Digest"},
        streamId=stream["id"],
    )
    clock.set(datetime(2027, 3, 2, 19, 0, tzinfo=UTC))
    maker.run_once()
    digest = next(n for n in made(api, key) if n["title"] == "Digest")
    assert digest["deliverAt"] == {"localTime": "09:00", "date": "2027-03-03"}
    assert deliveries_due(api, key, digest["id"]) == [
        "2027-03-03T00:00:00.000Z",  # Tokyo
        "2027-03-03T14:00:00.000Z",  # New York (EST)
    ]


def test_scopes_and_jwt(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    reader = api.key("alice", "notifications:read")
    body = {"name": "n", "rrule": "FREQ=DAILY", "template": {"title": "t"}}
    # A missing scope is a 401, as everywhere in the API.
    assert api.client.post("/api/schedules", json=body, headers=reader).status_code == 401
    created = create(api, api.token("alice"))
    assert api.client.get(f"/api/schedules/{created['id']}", headers=reader).status_code == 200
    writer = api.key("alice", "notifications:write")
    assert api.client.get("/api/schedules", headers=writer).status_code == 401


def test_patch_merges_with_if_match(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    key = api.key("alice")
    s = create(api, key, start="2027-03-02T09:00:00")
    url = f"/api/schedules/{s['id']}"
    stale = api.client.patch(url, json={"name": "x"}, headers=key | {"if-match": '"7"'})
    assert (stale.status_code, stale.json()["code"]) == (412, "revision_mismatch")
    bad = api.client.patch(url, json={"template": {"title": None}}, headers=key)
    assert bad.status_code == 400
    assert bad.json()["details"][0]["field"] == "template.title"
    assert api.client.get(url, headers=key).json() == s
    response = api.client.patch(
        url,
        content=b'{"rrule": "FREQ=WEEKLY", "template": {"body": "agenda"}}',
        headers=key | {"content-type": "application/merge-patch+json", "if-match": "1"},
    )
    assert response.status_code == 200, response.text
    edited = response.json()
    assert (edited["rrule"], edited["revision"]) == ("FREQ=WEEKLY", 2)
    assert edited["template"] == {"title": "Stand-up", "body": "agenda"}
    assert edited["nextOccurrenceAt"] == "2027-03-02T09:00:00.000Z"


def test_the_free_plan_holds_twenty_schedules_not_completed(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    key = api.key("alice")
    for _ in range(20):
        create(api, key)
    body = {"name": "n", "rrule": "FREQ=DAILY", "template": {"title": "t"}}
    refused = api.client.post("/api/schedules", json=body, headers=key)
    assert (refused.status_code, refused.json()["code"]) == (403, "plan_limit")
    assert len(api.client.get("/api/schedules?limit=100", headers=key).json()["items"]) == 20


def preview(api: Api, key: dict[str, str], **fields: Any) -> list[dict[str, Any]]:
    s = create(api, key, **fields)
    since = fields.get("since", "2027-01-01T00:00:00Z")
    url = f"/api/schedules/{s['id']}/occurrences?from={since}&limit=4"
    response = api.client.get(url, headers=key)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()
    return found


def test_the_pinned_daylight_saving_cases(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    key = api.key("alice")
    berlin = {"timeZone": "Europe/Berlin"}
    spring = preview(api, key, start="2027-03-27T02:30:00", **berlin)
    assert spring[:3] == [
        {"at": "2027-03-27T01:30:00.000Z", "localTime": "2027-03-27T02:30:00", "shifted": False},
        {"at": "2027-03-28T01:30:00.000Z", "localTime": "2027-03-28T02:30:00", "shifted": True},
        {"at": "2027-03-29T00:30:00.000Z", "localTime": "2027-03-29T02:30:00", "shifted": False},
    ]
    fall = preview(api, key, start="2027-10-30T02:30:00", **berlin)
    assert [o["at"] for o in fall[:3]] == [
        "2027-10-30T00:30:00.000Z",
        "2027-10-31T00:30:00.000Z",  # the first 02:30 (CEST), once
        "2027-11-01T01:30:00.000Z",
    ]
    hourly = {"rrule": "FREQ=HOURLY", **berlin}
    forward = preview(api, key, start="2027-03-28T00:00:00", **hourly)
    assert [o["at"][11:16] for o in forward] == ["23:00", "00:00", "01:00", "02:00"]
    assert [o["localTime"][11:16] for o in forward] == ["00:00", "01:00", "03:00", "04:00"]
    back = preview(api, key, start="2027-10-31T01:00:00", **hourly)
    assert [o["at"][11:16] for o in back] == ["23:00", "00:00", "01:00", "02:00"]
    assert [o["localTime"][11:16] for o in back] == ["01:00", "02:00", "02:00", "03:00"]
    s = create(api, key)
    url = f"/api/schedules/{s['id']}/occurrences"
    assert len(api.client.get(url, headers=key).json()) == 10
    for bad in ("?limit=0", "?limit=101", "?from=yesterday"):
        assert api.client.get(url + bad, headers=key).status_code == 400


def test_occurrences_become_notifications_once_each(sapi: tuple[Api, FakeClock]) -> None:
    api, clock = sapi
    key = api.key("alice")
    maker = api.services.schedules.maker
    s = create(api, key, start="2027-03-01T09:00:00", rrule="FREQ=DAILY;COUNT=2")
    maker.run_once()
    assert made(api, key) == []  # an hour before: not yet
    clock.set(datetime(2027, 3, 1, 8, 59, 30, tzinfo=UTC))
    maker.run_once()
    maker.run_once()
    (first,) = made(api, key)
    assert first["schedule"] == {"id": s["id"], "occurrenceAt": "2027-03-01T09:00:00.000Z"}
    assert (first["title"], first["scheduledAt"]) == ("Stand-up", "2027-03-01T09:00:00.000Z")
    got = api.client.get(f"/api/schedules/{s['id']}", headers=key).json()
    assert (got["state"], got["sent"], got["nextOccurrenceAt"]) == (
        "ACTIVE",
        1,
        "2027-03-02T09:00:00.000Z",
    )
    clock.set(datetime(2027, 3, 2, 8, 59, 30, tzinfo=UTC))
    maker.run_once()
    assert len(made(api, key)) == 2
    got = api.client.get(f"/api/schedules/{s['id']}", headers=key).json()
    assert (got["state"], got["sent"], got["lastOccurrenceAt"]) == (
        "COMPLETED",
        2,
        "2027-03-02T09:00:00.000Z",
    )
    for action in ("pause", "resume", "trigger"):
        ended = api.client.post(f"/api/schedules/{s['id']}/{action}", headers=key)
        assert (ended.status_code, ended.json()["code"]) == (409, "schedule_ended")


@pytest.mark.parametrize(
    ("mode", "sent", "missed"), [("latest", 1, 4), ("all", 3, 2), ("skip", 0, 5)]
)
def test_catch_up_after_an_outage(
    sapi: tuple[Api, FakeClock], mode: str, sent: int, missed: int
) -> None:
    api, clock = sapi
    key = api.key("alice")
    s = create(
        api,
        key,
        start="2027-03-01T09:00:00",
        rrule="FREQ=HOURLY",
        catchUp={"mode": mode, "window": 3 * 3600},
    )
    # Down from before 09:00 until 13:30: 09:00 ... 13:00 were never made.
    clock.set(datetime(2027, 3, 1, 13, 30, tzinfo=UTC))
    api.services.schedules.maker.run_once()
    notifications = made(api, key)
    got = api.client.get(f"/api/schedules/{s['id']}", headers=key).json()
    assert (got["sent"], got["missed"]) == (sent, missed)
    assert len(notifications) == sent
    # Sent now, each for the occurrence it stands for: the newest first to go.
    expected = ["13:00", "12:00", "11:00"][:sent]
    assert sorted(n["schedule"]["occurrenceAt"][11:16] for n in notifications) == sorted(expected)
    assert all(n["scheduledAt"] == ts(clock.now()) for n in notifications)
    assert got["nextOccurrenceAt"] == "2027-03-01T14:00:00.000Z"


def test_pause_cancels_the_made_occurrence_and_resume_counts_the_pause_missed(
    sapi: tuple[Api, FakeClock],
) -> None:
    api, clock = sapi
    key = api.key("alice")
    maker = api.services.schedules.maker
    s = create(api, key, start="2027-03-01T09:00:00", rrule="FREQ=HOURLY")
    url = f"/api/schedules/{s['id']}"
    clock.set(datetime(2027, 3, 1, 8, 59, 30, tzinfo=UTC))
    maker.run_once()
    (pending,) = made(api, key)
    paused = api.client.post(f"{url}/pause", headers=key).json()
    assert (paused["state"], paused["sent"], paused["missed"]) == ("PAUSED", 0, 1)
    assert made(api, key)[0]["status"] == "CANCELLED"
    assert api.client.post(f"{url}/pause", headers=key).json()["state"] == "PAUSED"
    clock.set(datetime(2027, 3, 1, 12, 10, tzinfo=UTC))
    maker.run_once()
    assert len(made(api, key)) == 1  # nothing made while paused
    resumed = api.client.post(f"{url}/resume", headers=key).json()
    # 10:00, 11:00 and 12:00 fell in the pause.
    assert (resumed["state"], resumed["missed"]) == ("ACTIVE", 4)
    assert resumed["nextOccurrenceAt"] == "2027-03-01T13:00:00.000Z"
    triggered = api.client.post(f"{url}/trigger", headers=key).json()
    assert triggered["sent"] == 1
    now = made(api, key)[-1]
    assert now["schedule"] == {"id": s["id"], "occurrenceAt": ts(clock.now())}
    assert pending["id"] != now["id"]


def test_delete_cancels_the_pending_occurrence(sapi: tuple[Api, FakeClock]) -> None:
    api, clock = sapi
    key = api.key("alice")
    s = create(api, key, start="2027-03-01T09:00:00")
    clock.set(datetime(2027, 3, 1, 8, 59, 30, tzinfo=UTC))
    api.services.schedules.maker.run_once()
    response = api.client.delete(f"/api/schedules/{s['id']}", headers=key)
    assert response.json() == {"success": True, "id": s["id"]}
    assert made(api, key)[0]["status"] == "CANCELLED"
    assert api.client.get(f"/api/schedules/{s['id']}", headers=key).status_code == 404
    clock.advance(timedelta(days=1))
    api.services.schedules.maker.run_once()
    assert len(made(api, key)) == 1


def test_a_retimed_schedule_never_makes_an_occurrence_twice(sapi: tuple[Api, FakeClock]) -> None:
    api, clock = sapi
    key = api.key("alice")
    s = create(api, key, start="2027-03-01T09:00:00")
    clock.set(datetime(2027, 3, 1, 8, 59, 30, tzinfo=UTC))
    api.services.schedules.maker.run_once()
    # A new timing places the schedule at its first occurrence from now: 09:00 again.
    patched = api.client.patch(
        f"/api/schedules/{s['id']}", json={"exdates": ["2027-03-05T09:00:00"]}, headers=key
    ).json()
    assert patched["nextOccurrenceAt"] == "2027-03-01T09:00:00.000Z"
    api.services.schedules.maker.run_once()
    assert [n["schedule"]["occurrenceAt"] for n in made(api, key)] == ["2027-03-01T09:00:00.000Z"]
    got = api.client.get(f"/api/schedules/{s['id']}", headers=key).json()
    assert (got["sent"], got["nextOccurrenceAt"]) == (1, "2027-03-02T09:00:00.000Z")


def test_count_until_and_exdates_in_the_preview(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    key = api.key("alice")
    counted = preview(
        api, key, start="2027-03-02T09:00:00", rrule="FREQ=DAILY;COUNT=3",
        exdates=["2027-03-03T09:00:00"],
    )  # fmt: skip
    # COUNT counts the rule's instances before exdates remove any.
    assert [o["localTime"] for o in counted] == ["2027-03-02T09:00:00", "2027-03-04T09:00:00"]
    until = preview(api, key, start="2027-03-02T09:00:00", rrule="FREQ=DAILY;UNTIL=20270303T090000")
    assert [o["localTime"] for o in until] == ["2027-03-02T09:00:00", "2027-03-03T09:00:00"]
    both = {"name": "n", "rrule": "FREQ=DAILY;COUNT=2;UNTIL=20270303T090000Z"}
    response = api.client.post(
        "/api/schedules", json=both | {"template": {"title": "t"}}, headers=key
    )
    assert response.status_code == 400


def test_a_stream_schedule_sends_to_the_subscribers_when_due(sapi: tuple[Api, FakeClock]) -> None:
    api, clock = sapi
    key = api.key("alice")
    stream = api.client.post("/api/streams", json={"name": "Deploys"}, headers=key).json()
    template = {"title": "Weekly", "priority": "high"}
    missing = api.client.post(
        "/api/schedules",
        json={"name": "n", "rrule": "FREQ=DAILY", "template": template, "streamId": "str_x"},
        headers=key,
    )
    assert missing.status_code == 404
    bad = api.client.post(
        "/api/schedules",
        json={"name": "n", "rrule": "FREQ=DAILY", "template": {"title": "t", "iconStyle": "bell"},
              "streamId": stream["id"]},
        headers=key,
    )  # fmt: skip
    assert bad.json()["details"][0]["field"] == "template.iconStyle"
    s = create(api, key, start="2027-03-01T09:00:00", template=template, streamId=stream["id"])
    assert s["streamId"] == stream["id"]
    clock.set(datetime(2027, 3, 1, 8, 59, 30, tzinfo=UTC))
    api.services.schedules.maker.run_once()
    assert made(api, key) == []  # a stream send is made when due, not ahead
    clock.set(datetime(2027, 3, 1, 9, 0, 0, 400_000, tzinfo=UTC))
    api.services.schedules.maker.run_once()
    (sent,) = made(api, key)
    assert (sent["stream"]["id"], sent["priority"], sent["title"]) == (
        stream["id"],
        "high",
        "Weekly",
    )
    assert sent["schedule"] == {"id": s["id"], "occurrenceAt": "2027-03-01T09:00:00.000Z"}


def test_a_start_or_from_too_far_for_the_rule_is_a_400_not_a_stall(
    sapi: tuple[Api, FakeClock],
) -> None:
    api, _ = sapi
    key = api.key("alice")
    body = {"name": "n", "rrule": "FREQ=MINUTELY", "template": {"title": "t"}}
    old = api.client.post(
        "/api/schedules", json=body | {"start": "1900-01-01T00:00:00"}, headers=key
    )
    assert (old.status_code, old.json()["details"][0]["field"]) == (400, "start")
    s = create(api, key, rrule="FREQ=MINUTELY")
    url = f"/api/schedules/{s['id']}/occurrences?from=9999-01-01T00:00:00Z"
    far = api.client.get(url, headers=key)
    assert (far.status_code, far.json()["details"][0]["field"]) == (400, "from")


def test_the_default_start_is_this_minute_so_a_rule_fires_on_the_minute(
    sapi: tuple[Api, FakeClock],
) -> None:
    api, clock = sapi
    clock.advance(timedelta(seconds=45, milliseconds=120))  # 08:00:45.120 UTC
    key = api.key("alice")
    schedule = create(api, key, rrule="FREQ=DAILY;BYHOUR=9;BYMINUTE=0", timeZone="Europe/Berlin")
    assert schedule["start"] == "2027-03-01T09:00:00"
    url = f"/api/schedules/{schedule['id']}/occurrences?limit=2"
    first, second = api.client.get(url, headers=key).json()
    assert (first["localTime"], second["localTime"]) == (
        "2027-03-02T09:00:00",
        "2027-03-03T09:00:00",
    )
