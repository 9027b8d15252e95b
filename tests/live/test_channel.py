"""GET /api/inbox/events on a real loopback server: the format, resuming, reads and
dismissals, the end of a credential, and the bound on channels."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx

from pushcore.domain.scopes import Scope
from tests.live.conftest import LiveServer
from tests.live.sse import titles


def test_the_channel_starts_with_retry_then_sends_entries_and_keepalives(
    live: LiveServer,
) -> None:
    alice = live.listen(live.user("alice"))
    assert alice.status == 200
    sent = live.notify("alice", "hello")
    live.notify("bob", "not for alice")
    assert alice.wait_for(lambda events: len(events) == 1)
    (event,) = alice.notifications()
    assert event.data["notificationId"] == sent.id
    assert event.id == event.data["id"]
    assert (event.id or "").startswith("inb_")
    assert alice.wait_for(lambda _: ": keepalive" in alice.lines, timeout=5)
    assert alice.lines[:2] == ["retry: 2000", ""]
    # Events come in order: once a later one is here, a repeat of "hello" would be too.
    live.notify("alice", "later")
    assert alice.wait_for(lambda _: titles(alice)[-1:] == ["later"])
    assert titles(alice) == ["hello", "later"]


def test_the_content_type_and_headers_are_those_of_an_event_stream(live: LiveServer) -> None:
    url, user = f"{live.base}/api/inbox/events", live.user("alice")
    # Asked with gzip as a browser does: a stream is never compressed (its events would
    # wait in the compressor's buffer).
    takes = user | {"Accept-Encoding": "gzip, deflate"}
    with httpx.Client(timeout=5) as client, client.stream("GET", url, headers=takes) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-store"
        assert "content-encoding" not in response.headers


def test_last_event_id_and_since_replay_what_came_after_oldest_first(live: LiveServer) -> None:
    user = live.user("alice")
    first = live.listen(user)
    for title in ("one", "two", "three"):
        live.notify("alice", title)
    assert first.wait_for(lambda _: len(first.notifications()) == 3)
    one = first.notifications()[0].id
    assert one is not None
    resumed = live.listen(user | {"Last-Event-ID": one})
    assert resumed.wait_for(lambda _: len(resumed.notifications()) == 2)
    by_query = live.listen(user, f"?since={one}")
    assert by_query.wait_for(lambda _: len(by_query.notifications()) == 2)
    live.notify("alice", "four")
    for listener in (first, resumed, by_query):
        assert listener.wait_for(lambda _, it=listener: titles(it)[-1:] == ["four"])  # type: ignore[misc]
    # A later event marks the end: anything repeated would have come before it.
    live.notify("alice", "five")
    for listener in (first, resumed, by_query):
        assert listener.wait_for(lambda _, it=listener: titles(it)[-1:] == ["five"])  # type: ignore[misc]
    assert titles(resumed) == titles(by_query) == ["two", "three", "four", "five"]
    assert titles(first) == ["one", "two", "three", "four", "five"]
    bad = live.request("GET", "/api/inbox/events", headers=user | {"Last-Event-ID": "nope"})
    assert bad.status_code == 400
    assert bad.json()["details"][0]["field"] == "Last-Event-ID"


def test_reads_and_dismissals_reach_every_open_channel_of_the_account(live: LiveServer) -> None:
    user = live.user("alice")
    phone, laptop = live.listen(user), live.listen(user)
    for title in ("one", "two"):
        live.notify("alice", title)
    assert laptop.wait_for(lambda _: len(laptop.notifications()) == 2)
    one, two = (e.id for e in laptop.notifications())
    read = live.request("POST", "/api/inbox/read", json={"ids": [one]}, headers=user)
    assert read.json() == {"unread": 1}
    dismissed = live.request("DELETE", f"/api/inbox/{two}", headers=user)
    assert dismissed.json() == {"success": True, "id": two}
    for listener in (phone, laptop):
        assert listener.wait_for(
            lambda events: [e.event for e in events][-2:] == ["read", "dismissed"]
        )
        read_event, dismissed_event = listener.events[-2:]
        assert read_event.data == {"ids": [one], "unread": 1}
        assert read_event.id is None  # the resume point stays the last entry's
        assert dismissed_event.data == {"id": two}


def test_the_channel_ends_when_its_token_expires(live: LiveServer) -> None:
    short = live.listen(live.user("alice", ttl=timedelta(seconds=2)))
    assert short.ended.wait(6)


def test_the_channel_ends_when_its_api_key_is_revoked(live: LiveServer) -> None:
    key_id, key = live.key("alice", Scope.NOTIFICATIONS_READ)
    listener = live.listen(key)
    assert listener.status == 200
    live.notify("alice", "still open")  # the key's channel carries events until revoked
    assert listener.wait_for(lambda _: titles(listener) == ["still open"])
    assert not listener.ended.is_set()
    live.services.keys.revoke("alice", key_id)
    assert listener.ended.wait(3)
    again = live.request("GET", "/api/inbox/events", headers=key)
    assert again.status_code == 401


def test_an_api_key_needs_notifications_read(live: LiveServer) -> None:
    _, key = live.key("alice", Scope.DEVICES_READ)
    refused = live.request("GET", "/api/inbox/events", headers=key)
    assert refused.status_code == 401


def test_at_most_20_channels_per_account(live: LiveServer) -> None:
    user = live.user("alice")
    listeners = [live.listen(user) for _ in range(20)]
    assert {listener.status for listener in listeners} == {200}
    refused = live.request("GET", "/api/inbox/events", headers=user)
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    assert live.listen(live.user("bob")).status == 200
    listeners[0].close()
    deadline = time.monotonic() + 5
    while live.services.live.open_channels > 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live.listen(user).status == 200


def opening(live: LiveServer, account: str, source: str = "127.0.0.1") -> httpx.Response:
    """The answer to opening a channel from ``source`` (its body read unless a 200)."""
    transport = httpx.HTTPTransport(local_address=source)
    with (
        httpx.Client(transport=transport, timeout=10) as client,
        client.stream(
            "GET", f"{live.base}/api/inbox/events", headers=live.user(account)
        ) as response,
    ):
        if response.status_code != 200:
            response.read()
        return response


def test_at_most_100_channels_per_client_address(live: LiveServer) -> None:
    listeners = [live.listen(live.user(f"user{i // 20}")) for i in range(100)]
    assert {listener.status for listener in listeners} == {200}
    refused = opening(live, "another")
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    # Another address is not refused for this one's channels.
    assert opening(live, "another", source="127.0.0.2").status_code == 200


def test_metrics_count_channels_events_and_replays(live: LiveServer) -> None:
    user = live.user("alice")
    first = live.listen(user)
    live.notify("alice", "one")
    live.notify("alice", "two")
    assert first.wait_for(lambda _: len(first.notifications()) == 2)
    resumed = live.listen(user | {"Last-Event-ID": first.notifications()[0].id or ""})
    assert resumed.wait_for(lambda _: len(resumed.notifications()) == 1)
    text = live.request("GET", "/metrics").text
    samples = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith("pushcore_live_")
    }
    assert samples["pushcore_live_channels"] == 2
    assert samples["pushcore_live_events_total"] == 3
    assert samples["pushcore_live_replays_total"] == 1
    assert samples["pushcore_live_replayed_entries_total"] == 1
    assert samples["pushcore_live_slow_closes_total"] == 0
