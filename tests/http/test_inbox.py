"""/api/inbox over HTTP: pages, reading, dismissing, credentials; `live` devices."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

from tests.conftest import Api


def subscribed_sends(api: Api, titles: list[str]) -> dict[str, str]:
    """Bob subscribes to a stream of Alice's, who sends ``titles``: Bob's inbox has them
    at once (a stream send reaches the inbox when sent). Bob's user headers."""
    alice, bob = api.key("alice"), api.token("bob")
    stream = api.client.post("/api/streams", json={"name": "Deploys"}, headers=alice).json()
    api.client.post("/api/streams/subscribe", json={"code": stream["code"]}, headers=bob)
    for title in titles:
        sent = api.client.post(
            f"/api/streams/{stream['id']}/send", json={"title": title}, headers=alice
        )
        assert sent.status_code == 201, sent.text
    return bob


def page(api: Api, headers: dict[str, str], query: str = "") -> Any:
    response = api.client.get(f"/api/inbox{query}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_inbox_pages_newest_first_with_the_unread_count(api: Api) -> None:
    bob = subscribed_sends(api, ["one", "two", "three"])
    first = page(api, bob, "?limit=2")
    assert [i["title"] for i in first["items"]] == ["three", "two"]
    assert first["unread"] == 3
    entry = first["items"][0]
    assert set(entry) == {
        "id", "notificationId", "title", "body", "iconStyle", "sound", "priority", "metadata",
        "sender", "stream", "deliveredAt", "readAt", "replaces", "collapseKey", "expiresAt",
    }  # fmt: skip
    assert entry["sender"] == {"name": "Deploys", "icon": None}
    assert entry["stream"]["name"] == "Deploys"
    assert entry["readAt"] is None
    rest = page(api, bob, f"?limit=2&cursor={first['nextCursor']}")
    assert [i["title"] for i in rest["items"]] == ["one"]
    assert rest["nextCursor"] is None
    assert page(api, api.token("alice"))["items"] == []  # never the publisher's


def test_reading_by_ids_and_up_to(api: Api) -> None:
    bob = subscribed_sends(api, ["one", "two", "three"])
    one, two, three = reversed([i["id"] for i in page(api, bob)["items"]])
    read = api.client.post("/api/inbox/read", json={"ids": [two]}, headers=bob)
    assert read.json() == {"unread": 2}
    assert [i["title"] for i in page(api, bob, "?unread=true")["items"]] == ["three", "one"]
    read = api.client.post("/api/inbox/read", json={"upTo": three}, headers=bob)
    assert read.json() == {"unread": 0}
    assert all(i["readAt"] for i in page(api, bob)["items"])
    assert one < two < three  # ids sort by arrival


def test_malformed_queries_and_bodies_are_400s_naming_the_field(api: Api) -> None:
    bob = subscribed_sends(api, ["one"])
    for query, field in (
        ("?limit=0", "limit"),
        ("?limit=x", "limit"),
        ("?unread=yes", "unread"),
        ("?cursor=ntf_1", "cursor"),
    ):
        response = api.client.get(f"/api/inbox{query}", headers=bob)
        assert response.status_code == 400, query
        assert response.json()["details"][0]["field"] == field
    for body, field in (
        ({}, "ids"),
        ({"ids": []}, "ids"),
        ({"ids": ["nope"]}, "ids"),
        ({"upTo": "inb_x"}, "upTo"),
        (
            {
                "ids": ["inb_00000000000000000000000000000001"],
                "upTo": "inb_00000000000000000000000000000001",
            },
            "ids",
        ),
        ({"all": True}, "all"),
    ):
        response = api.client.post("/api/inbox/read", json=body, headers=bob)
        assert response.status_code == 400, body
        assert response.json()["details"][0]["field"] == field


def test_dismissing_and_another_account_s_entry_is_a_404(api: Api) -> None:
    bob = subscribed_sends(api, ["one"])
    (entry,) = page(api, bob)["items"]
    carol = api.token("carol")
    assert api.client.delete(f"/api/inbox/{entry['id']}", headers=carol).status_code == 404
    gone = api.client.delete(f"/api/inbox/{entry['id']}", headers=bob)
    assert gone.json() == {"success": True, "id": entry["id"]}
    assert api.client.delete(f"/api/inbox/{entry['id']}", headers=bob).status_code == 404
    assert page(api, bob) == {"items": [], "nextCursor": None, "unread": 0}


def test_an_api_key_reads_with_notifications_read_and_changes_with_write(api: Api) -> None:
    subscribed_sends(api, ["one"])
    reader = api.key("bob", "notifications:read")
    (entry,) = page(api, reader)["items"]
    refused = api.client.post("/api/inbox/read", json={"ids": [entry["id"]]}, headers=reader)
    assert refused.status_code == 401
    assert refused.json()["error"] == "API key missing required scope: notifications:write"
    writer = api.key("bob", "notifications:write")
    assert api.client.get("/api/inbox", headers=writer).status_code == 401
    read = api.client.post("/api/inbox/read", json={"ids": [entry["id"]]}, headers=writer)
    assert read.json() == {"unread": 0}


def test_a_live_device_counts_as_reached(api: Api) -> None:
    bob = api.token("bob")
    device = api.client.post(
        "/api/devices",
        json={"platform": "live", "token": "pushctl listen", "name": "cli"},
        headers=bob,
    )
    assert device.status_code == 201, device.text
    assert device.json()["platform"] == "live"
    too_long = {"platform": "live", "token": "x" * 201}
    assert api.client.post("/api/devices", json=too_long, headers=bob).status_code == 400
    alice = api.key("alice")
    stream = api.client.post("/api/streams", json={"name": "Deploys"}, headers=alice).json()
    api.client.post("/api/streams/subscribe", json={"code": stream["code"]}, headers=bob)
    sent = api.client.post(f"/api/streams/{stream['id']}/send", json={"title": "t"}, headers=alice)
    assert sent.json()["sent"] == 1
    status = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listed = api.client.get("/api/notifications", headers=alice).json()["items"]
        status = listed[0]["status"]
        if status == "DELIVERED":
            break
        time.sleep(0.05)
    assert status == "DELIVERED"


def test_a_large_page_is_gzipped_for_a_client_that_takes_it(api: Api) -> None:
    # The app's first screen waits for this page: sent gzipped it is a tenth of its size.
    bob = subscribed_sends(api, [f"entry {i} of a long inbox" for i in range(12)])
    raw = {**bob, "Accept-Encoding": "gzip"}
    with api.client.stream("GET", "/api/inbox", headers=raw) as response:
        wire = b"".join(response.iter_raw())
        assert response.headers["content-encoding"] == "gzip"
        assert response.headers["vary"] == "Accept-Encoding"
        assert int(response.headers["content-length"]) == len(wire)
    plain = api.client.get("/api/inbox", headers={**bob, "Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert json.loads(gzip.decompress(wire)) == plain.json()
    assert len(wire) * 3 < len(plain.content)
    # A small page is not worth it.
    small = api.client.get("/api/inbox?limit=1", headers=raw)
    assert "content-encoding" not in small.headers
    # Nor is a client that refuses gzip by weight, however it names it.
    for refusal in ("gzip;q=0", "br, gzip; q=0.0", "*;q=0"):
        refused = api.client.get("/api/inbox", headers={**bob, "Accept-Encoding": refusal})
        assert "content-encoding" not in refused.headers, refusal
        assert refused.json() == plain.json()
