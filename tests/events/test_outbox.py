"""The outbox: events written in the transaction of the change they report, by the
engine (a notification settled, a delivery failed, a device deactivated), and none
left by a change that was rolled back."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from pushcore import build_engine
from pushcore.domain.events import EventType
from pushcore.domain.inputs import NewDevice, NewNotification
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Failed, TokenInvalid
from pushcore.events import Change, record_event, record_events
from tests.events.conftest import ALICE, World
from tests.fakes.gateway import ScriptedGateway
from tests.fakes.receiver import Receiver


def events(world: World, account: str = ALICE) -> list[dict[str, Any]]:
    answer = world.client.get("/api/events?limit=100", headers=world.auth(account))
    assert answer.status_code == 200
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def test_a_rolled_back_change_leaves_no_event_and_no_attempt(
    world: World, receiver: Receiver
) -> None:
    made = world.create(receiver.url())

    def failing_change() -> None:
        with world.services.store.transaction() as tx:
            at = world.clock.now()
            record_event(tx, ALICE, EventType.NOTIFICATION_FAILED, at, status="FAILED")
            raise RuntimeError("the change failed after its event was written")

    with pytest.raises(RuntimeError):
        failing_change()
    assert events(world) == []
    assert world.pump() == 0
    # Committed, the same call is an event and an attempt for the endpoint.
    with world.services.store.transaction() as tx:
        record_event(tx, ALICE, EventType.NOTIFICATION_FAILED, world.clock.now(), status="FAILED")
    assert [e["type"] for e in events(world)] == ["notification.failed"]
    assert world.pump() == 1
    assert receiver.requests[0].body["data"]["status"] == "FAILED"
    assert made["id"]


def run_engine(world: World, gateway: ScriptedGateway) -> None:
    engine = build_engine(world.services, gateways=dict.fromkeys(Platform, gateway))

    async def once() -> None:
        await engine.tick()
        await engine.drain()
        await engine.stop()

    asyncio.run(once())


def test_the_engine_reports_settled_notifications_failed_deliveries_and_dead_devices(
    world: World, receiver: Receiver
) -> None:
    world.create(receiver.url(), ["notification.*", "delivery.failed", "device.*"])
    register = world.services.devices.register
    ok = register(ALICE, NewDevice(token="tok-ok", platform=Platform.ANDROID)).device
    bad = register(ALICE, NewDevice(token="tok-bad", platform=Platform.ANDROID)).device
    gone = register(ALICE, NewDevice(token="tok-gone", platform=Platform.ANDROID)).device
    gateway = ScriptedGateway(world.clock)
    gateway.script("tok-bad", Failed("Bad request"), Failed("Bad request"))
    gateway.script("tok-gone", TokenInvalid("Unregistered"))
    create = world.services.notifications.create
    sent = asyncio.run(create(ALICE, NewNotification(title="Hello")))
    only_bad = asyncio.run(
        create(ALICE, NewNotification(title="Bad", target_device_token="tok-bad"))
    )
    world.clock.advance(timedelta(seconds=6))
    run_engine(world, gateway)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events(world):
        by_type.setdefault(event["type"], []).append(event["data"])
    delivered = by_type["notification.delivered"]
    assert [d["notificationId"] for d in delivered] == [sent.id]
    assert delivered[0]["status"] == "DELIVERED"
    failed = by_type["notification.failed"]
    assert [d["notificationId"] for d in failed] == [only_bad.id]
    assert failed[0]["reason"] == "Bad request"
    failures = {
        (d["notificationId"], d["deviceId"], d["reason"]) for d in by_type["delivery.failed"]
    }
    assert failures == {
        (sent.id, bad.id, "Bad request"),
        (sent.id, gone.id, "Unregistered"),
        (only_bad.id, bad.id, "Bad request"),
    }
    (dead,) = by_type["device.deactivated"]
    assert dead["deviceId"] == gone.id
    assert ok.id not in {d["deviceId"] for d in by_type["delivery.failed"]}
    # Each reached the endpoint, once (a round takes 4 of one endpoint's).
    while world.pump():
        pass
    assert sorted(r.body["id"] for r in receiver.requests) == sorted(e["id"] for e in events(world))


def test_a_withdrawal_is_an_event_in_its_transaction(world: World, receiver: Receiver) -> None:
    world.create(receiver.url(), ["notification.withdrawn"])
    made = world.client.post(
        "/api/keys",
        json={"name": "k", "scopes": ["notifications:write", "notifications:read"]},
        headers=world.auth(),
    )
    key = {"X-API-Key": made.json()["key"]}
    sent = world.client.post("/api/notifications", json={"title": "Oops"}, headers=key).json()
    answer = world.client.post(f"/api/notifications/{sent['id']}/withdraw", headers=key)
    assert answer.status_code == 200, answer.text
    (event,) = [e for e in events(world) if e["type"] == "notification.withdrawn"]
    assert event["data"] == {"notificationId": sent["id"], "deviceId": None, "status": "WITHDRAWN"}
    assert world.pump() == 1
    assert receiver.requests[0].body["type"] == "notification.withdrawn"


def test_reading_a_stream_send_in_the_inbox_tells_the_sender_delivery_opened(
    world: World, receiver: Receiver
) -> None:
    world.create(receiver.url(), ["delivery.opened"])
    made = world.client.post(
        "/api/keys", json={"name": "k", "scopes": ["notifications:write"]}, headers=world.auth()
    )
    key = {"X-API-Key": made.json()["key"]}
    stream = world.client.post("/api/streams", json={"name": "Deploys"}, headers=key).json()
    bob = world.auth("bob")
    joined = world.client.post("/api/streams/subscribe", json={"code": stream["code"]}, headers=bob)
    assert joined.status_code == 201, joined.text
    device = {"platform": "ios", "token": "b0" * 32, "name": "Bob's phone"}
    assert world.client.post("/api/devices", json=device, headers=bob).status_code == 201
    sent = world.client.post(
        f"/api/streams/{stream['id']}/send", json={"title": "v2"}, headers=key
    ).json()
    (entry,) = world.client.get("/api/inbox", headers=bob).json()["items"]
    assert not [e for e in events(world) if e["type"] == "delivery.opened"]

    read = world.client.post("/api/inbox/read", json={"ids": [entry["id"]]}, headers=bob)
    assert read.status_code == 200, read.text

    (event,) = [e for e in events(world) if e["type"] == "delivery.opened"]
    assert event["data"]["notificationId"] == sent["notificationId"]
    assert event["data"]["status"] == "OPENED"
    # Bob's phone is not the sender's to see.
    assert event["data"]["deviceId"] is None
    assert not events(world, "bob")


def test_a_record_group_larger_than_one_insert_keeps_every_event_in_order(
    world: World, receiver: Receiver
) -> None:
    wanted = world.create(receiver.url(), ["notification.*"])
    other = world.create(receiver.url(), ["delivery.*"])
    changes = [
        Change(ALICE, EventType.NOTIFICATION_DELIVERED, {"status": "DELIVERED"}, f"ntf_{i:04d}")
        for i in range(600)  # more rows than one INSERT takes
    ]
    with world.services.store.transaction() as tx:
        made = [e.id for e in record_events(tx, changes, world.clock.now())]
    assert made == sorted(made)
    assert len(set(made)) == 600
    listed: list[dict[str, Any]] = []
    while len(listed) < 700:
        after = f"&after={listed[-1]['id']}" if listed else ""
        answer = world.client.get(f"/api/events?limit=100{after}", headers=world.auth())
        page = answer.json()["items"]
        if not page:
            break
        listed += page
    assert [e["id"] for e in listed] == made
    assert [e["data"]["notificationId"] for e in listed] == [c.notification_id for c in changes]
    assert {e["data"]["status"] for e in listed} == {"DELIVERED"}
    with world.services.store.read() as tx:
        assert sorted(a.event_id for a in tx.events.attempts(wanted["id"], None, 1000)) == made
        assert tx.events.attempts(other["id"], None, 1000) == []
