"""Posting events: Standard Webhooks signatures (checked with the reference package),
rotation's two signatures, retries on the pinned schedule with one webhook-id, a 410,
three days without success, the attempts list, and one slow endpoint."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from pushcore.converter import parse_timestamp
from tests.events.conftest import World
from tests.fakes.receiver import Received, Receiver, running_receiver


def verified(secret: str, received: Received) -> dict[str, Any]:
    """The body, once the reference implementation accepts its signature with ``secret``."""
    headers = {k: received.headers[k] for k in ("webhook-id", "webhook-timestamp")}
    headers["webhook-signature"] = received.headers["webhook-signature"]
    payload: dict[str, Any] = Webhook(secret).verify(received.raw, headers)
    return payload


def test_an_event_is_signed_as_standard_webhooks_says(world: World, receiver: Receiver) -> None:
    made = world.create(receiver.url())
    answer = world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    assert answer.status_code == 202
    event_id = answer.json()["eventId"]
    assert world.pump() == 1
    (got,) = receiver.requests
    assert got.headers["webhook-id"] == event_id
    body = verified(made["secret"], got)
    assert body["id"] == event_id
    assert body["type"] == "webhook.test"
    assert set(body) == {"id", "type", "timestamp", "data"}
    # Another secret does not verify it.
    other = world.create(receiver.url("/other"))
    with pytest.raises(WebhookVerificationError):
        verified(other["secret"], got)


def test_after_a_rotation_both_secrets_sign_for_24_hours(world: World, receiver: Receiver) -> None:
    made = world.create(receiver.url())
    rotated = world.client.post(f"/api/webhooks/{made['id']}/rotate-secret", headers=world.auth())
    assert rotated.status_code == 200
    new = rotated.json()["secret"]
    assert new != made["secret"]
    assert new.startswith("whsec_")
    world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    world.pump()
    (got,) = receiver.requests
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    verified(new, got)
    verified(made["secret"], got)
    # A day later the old secret signs no more.
    world.clock.advance(timedelta(hours=24, seconds=1))
    world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    world.pump()
    later = receiver.requests[-1]
    assert len(later.headers["webhook-signature"].split(" ")) == 1
    with pytest.raises(WebhookVerificationError):
        verified(made["secret"], later)


def attempts(world: World, endpoint_id: str) -> list[dict[str, Any]]:
    answer = world.client.get(f"/api/webhooks/{endpoint_id}/attempts", headers=world.auth())
    assert answer.status_code == 200
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def test_failures_are_retried_on_schedule_with_the_same_webhook_id(
    world: World, receiver: Receiver
) -> None:
    made = world.create(receiver.url())
    receiver.answer("/hook", 500)
    receiver.answer("/hook", 503, Retry_After="600")  # longer than the 5 min due: honoured
    world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    world.pump()
    (pending,) = attempts(world, made["id"])
    assert pending["status"] == "pending"
    assert pending["responseStatus"] == 500
    # Not before its 5 s.
    world.clock.advance(timedelta(seconds=4))
    assert world.pump() == 0
    world.clock.advance(timedelta(seconds=1))
    assert world.pump() == 1
    (pending,) = attempts(world, made["id"])
    assert pending["responseStatus"] == 503
    world.clock.advance(timedelta(minutes=5))
    assert world.pump() == 0  # Retry-After said 10 minutes
    world.clock.advance(timedelta(minutes=5))
    assert world.pump() == 1
    ids = {r.headers["webhook-id"] for r in receiver.requests}
    assert len(receiver.requests) == 3
    assert len(ids) == 1
    (done,) = attempts(world, made["id"])
    assert done["status"] == "succeeded"
    assert done["responseStatus"] == 200
    assert done["nextAttemptAt"] is None
    assert done["durationMs"] >= 0


def test_a_410_disables_the_endpoint_at_once(world: World, receiver: Receiver) -> None:
    made = world.create(receiver.url())
    receiver.answer("/hook", 410, times=2)  # both tries, whichever is answered first
    for _ in range(2):
        world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    world.pump()
    now = world.client.get(f"/api/webhooks/{made['id']}", headers=world.auth()).json()
    assert now["enabled"] is False
    assert "410" in now["disabledReason"]
    assert {a["status"] for a in attempts(world, made["id"])} == {"failed"}
    world.clock.advance(timedelta(days=1))
    assert world.pump() == 0
    # Enabled again, it gets new events and the reason is gone.
    again = world.client.patch(
        f"/api/webhooks/{made['id']}", json={"enabled": True}, headers=world.auth()
    )
    assert again.json()["disabledReason"] is None


def test_three_days_without_success_disable_the_endpoint(world: World, receiver: Receiver) -> None:
    made = world.create(receiver.url())
    receiver.answer("/hook", 500, times=100)
    world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    gaps = []
    for _ in range(20):
        world.pump()
        (attempt,) = attempts(world, made["id"])
        if attempt["status"] != "pending":
            break
        due = attempt["nextAttemptAt"]
        before = world.clock.now()
        world.clock.set(parse_timestamp(due))
        gaps.append(world.clock.now() - before)
    assert gaps[:7] == [
        timedelta(seconds=5),
        timedelta(minutes=5),
        timedelta(minutes=30),
        timedelta(hours=2),
        timedelta(hours=5),
        timedelta(hours=10),
        timedelta(hours=12),
    ]
    assert attempt["status"] == "failed"
    endpoint = world.client.get(f"/api/webhooks/{made['id']}", headers=world.auth()).json()
    assert endpoint["enabled"] is False
    assert "3 days" in endpoint["disabledReason"]


def test_a_slow_endpoint_delays_only_its_own_events(world: World, receiver: Receiver) -> None:
    with running_receiver() as slow:
        slow.delay = 1.5
        world.create(slow.url(), ["webhook.*"])
        fast = world.create(receiver.url(), ["webhook.*"])
        slow_id = world.client.get("/api/webhooks", headers=world.auth()).json()[0]["id"]
        for endpoint in (slow_id, fast["id"]):
            for _ in range(6):
                world.client.post(f"/api/webhooks/{endpoint}/test", headers=world.auth())

        async def scenario() -> float:
            started = time.monotonic()
            await world.sender.round()
            while len(receiver.requests) < 4:  # the fast endpoint's first share
                await asyncio.sleep(0.01)
                assert time.monotonic() - started < 1.0, "the fast endpoint waited"
            took = time.monotonic() - started
            await world.sender.drain()
            await world.sender.aclose()
            return took

        took = asyncio.run(scenario())
        assert took < 1.0
        # At most per_endpoint POSTs at once went to the slow one.
        assert max(slow.peak.values()) <= world.sender.config.per_endpoint


def test_a_paused_endpoint_gets_nothing_until_enabled_again(
    world: World, receiver: Receiver
) -> None:
    made = world.create(receiver.url())
    world.client.post(f"/api/webhooks/{made['id']}/test", headers=world.auth())
    off = {"enabled": False}
    world.client.patch(f"/api/webhooks/{made['id']}", json=off, headers=world.auth())
    assert world.pump() == 0
    assert receiver.requests == []
    on = {"enabled": True}
    world.client.patch(f"/api/webhooks/{made['id']}", json=on, headers=world.auth())
    assert world.pump() == 1
    assert len(receiver.requests) == 1
