"""Local-time sends (`deliverAt`, API.md "The recipient's time") over HTTP, on SQLite and
PostgreSQL: each recipient's delivery stored with its own due time, and, with the engine
driven on a fake clock, what reached the gateway and when.

The fake clock starts on Saturday 2026-11-21 at 10:00 UTC: 11:00 in Berlin, 19:00 in
Tokyo, 05:00 in New York.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api, copy_migrated
from tests.delivery.conftest import T0, Harness
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe

Json = dict[str, Any]
BERLIN, TOKYO, NEW_YORK = "Europe/Berlin", "Asia/Tokyo", "America/New_York"


def z(hour: int, minute: int = 0, day: int = 21) -> datetime:
    """An instant of November 2026 in UTC."""
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def stamp(at: datetime) -> str:
    """``at`` as the API writes a timestamp."""
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Local:
    """The API and the engine on one set of services and one fake clock."""

    def __init__(self, api: Api, harness: Harness) -> None:
        self.api = api
        self.h = harness
        self.engine = harness.engine()
        self._keys: dict[str, dict[str, str]] = {}

    def key(self, account: str) -> dict[str, str]:
        """An API key of ``account``'s (one per test)."""
        if account not in self._keys:
            self._keys[account] = self.api.key(account)
        return self._keys[account]

    def ok(self, method: str, path: str, account: str, status: int = 200, **kw: Any) -> Any:
        """The JSON answer of a call as ``account`` (its API key for the publisher's
        calls, a user token for the rest), asserting ``status``."""
        user = path.startswith(
            ("/api/account", "/api/devices", "/api/streams/subscribe", "/api/inbox")
        )
        headers = self.api.token(account) if user else self.key(account)
        response = self.api.client.request(method, path, headers=headers, **kw)
        assert response.status_code == status, response.text
        return response.json()

    def person(self, account: str, zone: str | None, token: str | None = None) -> None:
        """Give ``account`` a zone (None: the default) and an android device ``token``."""
        if zone is not None:
            self.ok("PATCH", "/api/account", account, json={"timeZone": zone})
        if token is not None:
            body = {"platform": "android", "token": token}
            self.ok("POST", "/api/devices", account, 201, json=body)

    def stream(self, owner: str, *subscribers: str) -> str:
        """A stream of ``owner``'s with these subscribers; its id."""
        made = self.ok("POST", "/api/streams", owner, 201, json={"name": "Daily"})
        for account in subscribers:
            self.ok("POST", "/api/streams/subscribe", account, 201, json={"code": made["code"]})
        return str(made["id"])

    def due_list(self, account: str, notification_id: str) -> list[str]:
        """The deliveries' `dueAt`s, sorted."""
        found = self.ok("GET", f"/api/notifications/{notification_id}/deliveries", account)
        return sorted(d["dueAt"] for d in found["items"])

    def step(self, when: datetime) -> list[str]:
        """Move the clock to ``when``, run the engine once: the tokens sent so far."""
        self.h.step(self.engine, when)
        return [s.token for s in self.h.gateway.sent]

    def status(self, account: str, notification_id: str) -> str:
        """The notification's status as GET shows it."""
        return str(self.ok("GET", f"/api/notifications/{notification_id}", account)["status"])

    def inbox(self, account: str) -> list[str]:
        """The titles in ``account``'s inbox."""
        page = self.ok("GET", "/api/inbox", account)
        return [item["title"] for item in page["items"]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def lt(request: pytest.FixtureRequest, tmp_path: Path, fake_clock: FakeClock) -> Iterator[Local]:
    """The app (its own engine off) and a hand-driven engine on one fake clock."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_cluster").create_database()
    else:  # a copy of the worker's migrated file, not 60 ms of migrations a test
        copy_migrated(request.getfixturevalue("migrated_sqlite"), tmp_path / "data")
    settings = load_settings(env={}, data_dir=tmp_path / "data", database_url=url)
    services = build_services(settings, clock=fake_clock, icons=FakeIconProbe())
    harness = Harness(services, fake_clock)
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Local(Api(client, services), harness)
    harness.close()


def send_to_stream(lt: Local, stream_id: str, status: int = 201, **fields: Any) -> Json:
    """POST /api/streams/:id/send with an API key of alice's."""
    response = lt.api.client.post(
        f"/api/streams/{stream_id}/send",
        json={"title": "Morning", **fields},
        headers=lt.key("alice"),
    )
    assert response.status_code == status, response.text
    body: Json = response.json()
    return body


def test_each_subscriber_gets_it_at_the_time_in_its_own_zone(lt: Local) -> None:
    lt.person("bob", BERLIN, "tok-bob")
    lt.person("carol", NEW_YORK, "tok-carol")
    stream = lt.stream("alice", "bob", "carol")
    sent = send_to_stream(lt, stream, deliverAt={"localTime": "11:30"})
    nid = sent["notificationId"]
    assert (sent["sent"], sent["subscribers"]) == (2, 2)  # the deliveries enqueued, counted
    # 11:30 in Berlin is 10:30 UTC today; in New York (EST) 16:30 UTC.
    assert lt.due_list("alice", nid) == [stamp(z(10, 30)), stamp(z(16, 30))]
    shown = lt.ok("GET", f"/api/notifications/{nid}", "alice")
    assert shown["scheduledAt"] == stamp(z(10, 30))  # the earliest
    assert shown["deliverAt"] == {"localTime": "11:30", "date": None}
    assert shown["status"] == "QUEUED"

    # The send waits: nothing goes now, and no inbox shows it yet.
    assert lt.step(T0) == []
    assert lt.inbox("bob") == lt.inbox("carol") == []
    assert lt.step(z(10, 29)) == []
    assert lt.step(z(10, 30)) == ["tok-bob"]
    assert lt.h.gateway.sent[0].at == z(10, 30)
    assert lt.inbox("bob") == ["Morning"]
    assert lt.inbox("carol") == []
    assert lt.status("alice", nid) == "QUEUED"  # until the last delivery settles

    assert lt.step(z(16, 29)) == ["tok-bob"]
    assert lt.step(z(16, 30)) == ["tok-bob", "tok-carol"]
    assert lt.inbox("carol") == ["Morning"]
    assert lt.status("alice", nid) == "DELIVERED"


def test_a_date_whose_time_has_passed_in_a_zone_goes_there_at_once(lt: Local) -> None:
    lt.person("bob", TOKYO, "tok-bob")  # 19:00 there: 09:00 today has passed
    lt.person("carol", NEW_YORK, "tok-carol")  # 05:00 there
    stream = lt.stream("alice", "bob", "carol")
    at = {"localTime": "09:00", "date": "2026-11-21"}
    nid = send_to_stream(lt, stream, deliverAt=at)["notificationId"]
    assert lt.due_list("alice", nid) == [stamp(T0), stamp(z(14))]
    assert lt.step(T0) == ["tok-bob"]
    assert lt.step(z(14)) == ["tok-bob", "tok-carol"]


def test_an_own_notification_is_due_in_the_owners_zone(lt: Local) -> None:
    lt.person("alice", BERLIN, "tok-a")
    key = lt.key("alice")
    body = {"title": "Stand-up", "deliverAt": {"localTime": "09:00"}}
    made = lt.api.client.post("/api/notifications", json=body, headers=key)
    assert made.status_code == 201, made.text
    # 09:00 has passed in Berlin today (11:00): tomorrow, 08:00 UTC.
    assert made.json()["scheduledAt"] == stamp(z(8, day=22))
    assert lt.due_list("alice", made.json()["id"]) == [stamp(z(8, day=22))]
    # Batch items take it too, each in the owner's zone.
    items = [{"title": "a", "deliverAt": {"localTime": "12:15"}}, {"title": "b", "delay": "1m"}]
    batch = lt.api.client.post(
        "/api/notifications/batch", json={"notifications": items}, headers=key
    )
    assert batch.status_code == 201, batch.text
    first = batch.json()["items"][0]
    assert first["scheduledAt"] == stamp(z(11, 15))
    assert lt.step(z(11, 14)) == ["tok-a"]  # "b", a minute after creation
    assert lt.step(z(11, 15)) == ["tok-a", "tok-a"]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"deliverAt": {"localTime": "09:00"}, "delay": "1h"}, "deliverAt"),
        ({"deliverAt": {"localTime": "09:00"}, "scheduledAt": "2026-11-22T00:00:00Z"}, "deliverAt"),
        ({"deliverAt": {"localTime": "09:00", "date": "2026-12-22"}}, "deliverAt.date"),
        ({"deliverAt": {"localTime": "9:00"}}, "deliverAt.localTime"),
        ({"deliverAt": {"localTime": "24:00"}}, "deliverAt.localTime"),
        ({"deliverAt": {"localTime": "09:00", "date": "2026-02-30"}}, "deliverAt.date"),
        ({"deliverAt": {"localTime": "09:00", "date": "21.11.2026"}}, "deliverAt.date"),
        ({"deliverAt": {"date": "2026-11-22"}}, "deliverAt.localTime"),
        ({"deliverAt": {"localTime": "09:00", "zone": "UTC"}}, "deliverAt.zone"),
        ({"deliverAt": "09:00"}, "deliverAt"),
    ],
)
# Refused by the converter before any store is asked, the same on either: on SQLite only.
@pytest.mark.parametrize("lt", ["sqlite"], indirect=True)
def test_bad_local_times_are_400s_naming_the_field_and_store_nothing(
    lt: Local, fields: Json, named: str
) -> None:
    key = lt.key("alice")
    stream = lt.stream("alice")
    for path, body in (
        ("/api/notifications", {"title": "x", **fields}),
        ("/api/notifications/batch", {"notifications": [{"title": "x", **fields}]}),
        (f"/api/streams/{stream}/send", {"title": "x", **fields}),
    ):
        if path.endswith("/send") and len(fields) > 1:
            continue  # a stream send has no other timing: the other field is unknown there
        answer = lt.api.client.post(path, json=body, headers=key)
        assert answer.status_code == 400, (path, answer.text)
        error = answer.json()
        assert error["code"] == "validation_error"
        fields_named = [d["field"] for d in error["details"]]
        prefix = "notifications[0]." if path.endswith("batch") else ""
        assert prefix + named in fields_named, (path, fields_named)
    assert lt.ok("GET", "/api/notifications", "alice")["items"] == []


def test_thirty_days_ahead_in_every_zone_is_the_limit(lt: Local) -> None:
    key = lt.key("alice")
    ok = {"title": "x", "deliverAt": {"localTime": "09:00", "date": "2026-12-20"}}
    assert lt.api.client.post("/api/notifications", json=ok, headers=key).status_code == 201
    far = {"title": "x", "deliverAt": {"localTime": "09:00", "date": "2026-12-22"}}
    assert lt.api.client.post("/api/notifications", json=far, headers=key).status_code == 400


def test_patch_to_deliver_at_recomputes_each_deliverys_due_time(lt: Local) -> None:
    lt.person("alice", BERLIN, "tok-a")
    key = lt.key("alice")
    made = lt.api.client.post(
        "/api/notifications", json={"title": "x", "delay": "1h"}, headers=key
    ).json()
    url = f"/api/notifications/{made['id']}"
    edited = lt.api.client.patch(url, json={"deliverAt": {"localTime": "12:00"}}, headers=key)
    assert edited.status_code == 200, edited.text
    assert edited.json()["scheduledAt"] == stamp(z(11))
    assert edited.json()["deliverAt"] == {"localTime": "12:00", "date": None}
    assert lt.due_list("alice", made["id"]) == [stamp(z(11))]
    # An edit of something else keeps the local-time due times.
    lt.api.client.patch(url, json={"title": "y"}, headers=key)
    assert lt.due_list("alice", made["id"]) == [stamp(z(11))]
    # Both timings in one patch are a 400; another timing replaces deliverAt.
    both = {"deliverAt": {"localTime": "12:00"}, "delay": "5m"}
    assert lt.api.client.patch(url, json=both, headers=key).status_code == 400
    back = lt.api.client.patch(url, json={"delay": "5m"}, headers=key).json()
    assert (back["deliverAt"], back["scheduledAt"]) == (None, stamp(z(10, 5)))

    # A stream send's deliveries move each to its subscriber's zone.
    lt.person("bob", TOKYO, "tok-bob")
    lt.person("carol", NEW_YORK, "tok-carol")
    stream = lt.stream("alice", "bob", "carol")
    nid = send_to_stream(lt, stream, deliverAt={"localTime": "23:00"})["notificationId"]
    assert lt.due_list("alice", nid) == [stamp(z(14)), stamp(z(4, day=22))]
    moved = lt.api.client.patch(
        f"/api/notifications/{nid}", json={"deliverAt": {"localTime": "22:00"}}, headers=key
    )
    assert moved.status_code == 200, moved.text
    assert lt.due_list("alice", nid) == [stamp(z(13)), stamp(z(3, day=22))]
    fixed = lt.api.client.patch(f"/api/notifications/{nid}", json={"delay": "5m"}, headers=key)
    assert fixed.status_code == 400


def test_a_partly_sent_local_time_send_cannot_be_cancelled_but_can_be_withdrawn(
    lt: Local,
) -> None:
    lt.person("bob", BERLIN, "tok-bob")
    lt.person("carol", NEW_YORK, "tok-carol")
    stream = lt.stream("alice", "bob", "carol")
    nid = send_to_stream(lt, stream, deliverAt={"localTime": "11:30"})["notificationId"]
    key = lt.key("alice")
    assert lt.step(z(10, 30)) == ["tok-bob"]
    cancel = lt.api.client.delete(f"/api/notifications/{nid}", headers=key)
    assert cancel.status_code == 409, cancel.text
    assert cancel.json()["code"] == "not_cancellable"
    withdrawn = lt.api.client.post(f"/api/notifications/{nid}/withdraw", headers=key)
    assert withdrawn.status_code == 200, withdrawn.text
    assert lt.step(z(16, 30)) == ["tok-bob", "tok-bob"]  # the withdrawal; carol gets nothing
    assert [s.kind for s in lt.h.gateway.sent] == ["notification", "withdrawal"]
    assert lt.inbox("carol") == []


def test_a_local_time_send_not_yet_sent_is_cancelled_whole(lt: Local) -> None:
    lt.person("bob", BERLIN, "tok-bob")
    stream = lt.stream("alice", "bob")
    nid = send_to_stream(lt, stream, deliverAt={"localTime": "11:30"})["notificationId"]
    cancel = lt.api.client.delete(f"/api/notifications/{nid}", headers=lt.key("alice"))
    assert cancel.status_code == 200, cancel.text
    assert lt.step(z(10, 30)) == []
    assert lt.inbox("bob") == []


def test_quiet_hours_hold_a_local_time_delivery_that_falls_inside_them(lt: Local) -> None:
    lt.person("bob", BERLIN, "tok-bob")
    lt.person("carol", NEW_YORK, "tok-carol")
    quiet = {"quietHours": {"start": "11:00", "end": "12:00"}}
    lt.ok("PATCH", "/api/account", "carol", json=quiet)
    stream = lt.stream("alice", "bob", "carol")
    nid = send_to_stream(lt, stream, deliverAt={"localTime": "11:30"})["notificationId"]
    assert lt.step(z(10, 30)) == ["tok-bob"]
    assert lt.step(z(16, 30)) == ["tok-bob"]  # 11:30 in New York: inside carol's quiet hours
    held = lt.ok("GET", f"/api/notifications/{nid}/deliveries?status=HELD", "alice")["items"]
    assert [(d["dueAt"], d["heldUntil"]) for d in held] == [(stamp(z(16, 30)), stamp(z(17)))]
    assert lt.status("alice", nid) == "QUEUED"
    assert lt.step(z(17)) == ["tok-bob", "tok-carol"]
    assert lt.status("alice", nid) == "DELIVERED"


def test_replace_reaches_subscribers_still_waiting_for_their_time_with_only_the_new_one(
    lt: Local,
) -> None:
    # API.md: a replacement goes to the stream's subscribers at the original send, and
    # no timing means now; the original's deliveries no gateway has taken are superseded.
    lt.person("bob", BERLIN, "tok-bob")
    lt.person("carol", NEW_YORK, "tok-carol")
    stream = lt.stream("alice", "bob", "carol")
    nid = send_to_stream(lt, stream, deliverAt={"localTime": "11:30"})["notificationId"]
    assert lt.step(z(10, 30)) == ["tok-bob"]  # 11:30 in Berlin; New York waits for 16:30
    new = lt.ok("POST", f"/api/notifications/{nid}/replace", "alice", 201, json={"title": "Fixed"})
    assert new["supersedes"] == nid
    assert new["deliverAt"] is None  # it goes now, to everyone
    assert new["devicesTargeted"] == 2
    assert lt.inbox("bob") == ["Fixed"]  # in the old entry's place
    assert lt.inbox("carol") == ["Fixed"]
    lt.step(z(10, 31))
    lt.step(z(16, 30))
    lt.step(z(17))
    shown = [(s.token, s.title) for s in lt.h.gateway.sent]
    assert shown == [("tok-bob", "Morning"), ("tok-bob", "Fixed"), ("tok-carol", "Fixed")]
    assert lt.inbox("carol") == ["Fixed"]
    waited = lt.ok("GET", f"/api/notifications/{nid}/deliveries?status=SUPERSEDED", "alice")
    assert [d["dueAt"] for d in waited["items"]] == [stamp(z(16, 30))]  # carol's
    assert lt.status("alice", nid) == "DELIVERED"  # bob's settles it; carol's never goes


def test_a_local_time_stream_send_replaces_an_older_entry_with_its_key_at_the_persons_time(
    lt: Local,
) -> None:
    lt.person("bob", BERLIN, "tok-bob")
    stream = lt.stream("alice", "bob")
    lt.h.clock.set(z(9))
    send_to_stream(lt, stream, title="Score 1-0", collapseKey="score")
    lt.step(z(9, 1))
    assert lt.inbox("bob") == ["Score 1-0"]
    send_to_stream(
        lt, stream, title="Score 2-0", collapseKey="score", deliverAt={"localTime": "11:30"}
    )
    assert lt.step(z(10, 30)) == ["tok-bob", "tok-bob"]  # 11:30 in Berlin: the second
    assert lt.inbox("bob") == ["Score 2-0"]  # in the older one's place
