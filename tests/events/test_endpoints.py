"""/api/webhooks over HTTP: the secret shown once, the shapes API.md pins, scopes, the
plan's limit, the SSRF guard on endpoint URLs, and /api/events."""

from __future__ import annotations

import re

from pushcore.domain.model import Plan
from tests.events.conftest import ALICE, World
from tests.fakes.receiver import Receiver

SECRET = re.compile(r"^whsec_[A-Za-z0-9+/]{32}$")  # base64 of 24 bytes


def test_an_endpoint_is_created_listed_changed_and_deleted(world: World) -> None:
    made = world.create("https://93.184.215.14/hook", ["delivery.*"], description="orders")
    assert SECRET.match(made["secret"])
    assert made["id"].startswith("whe_")
    assert {k: made[k] for k in ("url", "events", "description", "enabled", "disabledReason")} == {
        "url": "https://93.184.215.14/hook",
        "events": ["delivery.*"],
        "description": "orders",
        "enabled": True,
        "disabledReason": None,
    }
    listed = world.client.get("/api/webhooks", headers=world.auth())
    assert listed.status_code == 200
    assert [w["id"] for w in listed.json()] == [made["id"]]
    # The secret is in the creation's answer only.
    assert "secret" not in listed.json()[0]
    one = world.client.get(f"/api/webhooks/{made['id']}", headers=world.auth()).json()
    assert "secret" not in one
    assert one["url"] == made["url"]
    patched = world.client.patch(
        f"/api/webhooks/{made['id']}",
        json={"events": ["notification.delivered"], "enabled": False},
        headers=world.auth(),
    )
    assert patched.status_code == 200
    assert patched.json()["events"] == ["notification.delivered"]
    assert patched.json()["enabled"] is False
    gone = world.client.delete(f"/api/webhooks/{made['id']}", headers=world.auth())
    assert gone.json() == {"success": True, "id": made["id"]}
    again = world.client.get(f"/api/webhooks/{made['id']}", headers=world.auth())
    assert again.status_code == 404


def test_other_accounts_see_none_of_it(world: World) -> None:
    made = world.create("https://93.184.215.14/hook")
    for method in ("get", "delete"):
        answer = getattr(world.client, method)(
            f"/api/webhooks/{made['id']}", headers=world.auth("mallory")
        )
        assert answer.status_code == 404
    assert world.client.get("/api/webhooks", headers=world.auth("mallory")).json() == []


def test_an_api_key_needs_the_webhooks_scopes(world: World) -> None:
    made = world.client.post(
        "/api/keys",
        json={"name": "k", "scopes": ["notifications:read", "webhooks:read"]},
        headers=world.auth(),
    )
    key = {"X-API-Key": made.json()["key"]}
    assert world.client.get("/api/webhooks", headers=key).status_code == 200
    refused = world.client.post(
        "/api/webhooks", json={"url": "https://93.184.215.14/h", "events": ["*"]}, headers=key
    )
    assert refused.status_code == 401
    assert "webhooks:write" in refused.json()["error"]
    assert world.client.get("/api/webhooks", headers=world.auth()).json() == []


def test_the_free_plan_allows_three_endpoints_and_pro_twenty_five(world: World) -> None:
    for n in range(3):
        world.create(f"https://93.184.215.14/{n}")
    fourth = world.client.post(
        "/api/webhooks",
        json={"url": "https://93.184.215.14/4", "events": ["*"]},
        headers=world.auth(),
    )
    assert fourth.status_code == 403
    assert fourth.json()["code"] == "plan_limit"
    world.services.accounts.set_plan(ALICE, Plan.PRO)
    world.create("https://93.184.215.14/4")
    assert len(world.client.get("/api/webhooks", headers=world.auth()).json()) == 4


def test_bad_input_is_a_400_naming_each_field_and_stores_nothing(world: World) -> None:
    answer = world.client.post(
        "/api/webhooks",
        json={"url": "ftp://example.com", "events": ["delivery.nope", "*"]},
        headers=world.auth(),
    )
    assert answer.status_code == 400
    assert {d["field"] for d in answer.json()["details"]} == {"url", "events"}
    assert world.client.get("/api/webhooks", headers=world.auth()).json() == []


def test_the_ssrf_guard_refuses_private_addresses(world: World) -> None:
    world.guard.allow_private = False
    for url in ("http://127.0.0.1:8080/h", "http://169.254.169.254/latest", "http://[::1]/h"):
        answer = world.client.post(
            "/api/webhooks", json={"url": url, "events": ["*"]}, headers=world.auth()
        )
        assert answer.status_code == 400, url
        assert answer.json()["details"][0]["field"] == "url"
    made = world.create("https://93.184.215.14/h")
    patched = world.client.patch(
        f"/api/webhooks/{made['id']}", json={"url": "http://10.0.0.1/h"}, headers=world.auth()
    )
    assert patched.status_code == 400
    assert world.client.get(f"/api/webhooks/{made['id']}", headers=world.auth()).json()["url"] == (
        "https://93.184.215.14/h"
    )


def test_the_sender_checks_the_address_again_when_it_posts(
    world: World, receiver: Receiver
) -> None:
    # Allowed when created (a name that resolved publicly then, say), loopback when sent.
    made = world.create(receiver.url())
    world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    world.guard.allow_private = False
    world.pump()
    assert receiver.requests == []
    (attempt,) = world.client.get(
        f"/api/webhooks/{made['id']}/attempts", headers=world.auth()
    ).json()["items"]
    assert attempt["status"] == "pending"
    assert attempt["responseStatus"] is None


def test_events_are_listed_oldest_first_after_an_id(world: World, receiver: Receiver) -> None:
    made = world.create(receiver.url())
    ids = [
        world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth()).json()[
            "eventId"
        ]
        for _ in range(3)
    ]
    first = world.client.get("/api/events?limit=2", headers=world.auth()).json()
    assert [e["id"] for e in first["items"]] == ids[:2]
    assert first["nextCursor"] == ids[1]
    rest = world.client.get(f"/api/events?after={ids[1]}", headers=world.auth()).json()
    assert [e["id"] for e in rest["items"]] == ids[2:]
    assert rest["nextCursor"] is None
    event = first["items"][0]
    assert event["type"] == "webhook.test"
    assert event["data"]["endpointId"] == made["id"]
    only = world.client.get("/api/events?type=notification.failed", headers=world.auth())
    assert only.json()["items"] == []
    bad = world.client.get("/api/events?type=nope", headers=world.auth())
    assert bad.status_code == 400
    other = world.client.get("/api/events", headers=world.auth("mallory")).json()
    assert other["items"] == []
