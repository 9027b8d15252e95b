"""GET /api/notifications?streamId=&scheduleId=: one stream's sends, one schedule's
occurrences (what the app's Sent list reads), on SQLite and PostgreSQL."""

from __future__ import annotations

from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.http.test_schedules import create, sapi, schedules_database

__all__ = ["sapi", "schedules_database"]


def ids(api: Api, key: dict[str, str], query: str) -> list[str]:
    response = api.client.get(f"/api/notifications?{query}", headers=key)
    assert response.status_code == 200, response.text
    return [n["id"] for n in response.json()["items"]]


def test_stream_and_schedule_filters(sapi: tuple[Api, FakeClock]) -> None:
    api, _ = sapi
    key = api.key("alice")
    streams = [
        api.client.post("/api/streams", json={"name": name}, headers=key).json()["id"]
        for name in ("Builds", "Weather")
    ]
    sent = []
    for stream_id in (streams[0], streams[1], streams[0]):
        answer = api.client.post(f"/api/streams/{stream_id}/send", json={"title": "t"}, headers=key)
        assert answer.status_code == 201, answer.text
        sent.append(answer.json()["notificationId"])
    direct = api.client.post("/api/notifications", json={"title": "direct"}, headers=key)
    daily = create(api, key, streamId=streams[0])
    other = create(api, key)
    triggered = [
        api.client.post(f"/api/schedules/{s['id']}/trigger", headers=key).status_code
        for s in (daily, other)
    ]
    assert triggered == [200, 200]
    occurrence = ids(api, key, f"scheduleId={daily['id']}")
    assert len(occurrence) == 1

    # Newest first; the schedule's occurrence is a send to its stream too.
    assert ids(api, key, f"streamId={streams[0]}") == [occurrence[0], sent[2], sent[0]]
    assert ids(api, key, f"streamId={streams[1]}") == [sent[1]]
    assert len(ids(api, key, f"scheduleId={other['id']}")) == 1
    assert ids(api, key, f"scheduleId={daily['id']}&streamId={streams[1]}") == []
    assert direct.json()["id"] not in ids(api, key, f"streamId={streams[0]}")
    # Another account's stream and schedule show nothing of alice's.
    bob = api.key("bob")
    assert ids(api, bob, f"streamId={streams[0]}") == []
    assert ids(api, bob, f"scheduleId={daily['id']}") == []
    assert len(ids(api, key, "limit=100")) == 6
