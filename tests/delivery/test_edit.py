"""Editing against the engine: allowed until a delivery is handed to a gateway."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pushcore.converter import request_json, structure_request
from pushcore.domain.errors import DeviceNotFound, NotEditable, RevisionMismatch, ValidationError
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.revisions import merge_patch
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore_http.errors import status_for
from tests.delivery.conftest import ALICE, Harness, at, until

N = NotificationStatus
D = DeliveryStatus


def edit(h: Harness, n: Notification, if_revision: int | None = None, **patch: Any) -> Notification:
    """PATCH ``n`` as the HTTP handler does (the merge is applied to the locked revision)."""

    def apply(found: Notification) -> NewNotification:
        return structure_request(NewNotification, merge_patch(request_json(found), patch))

    return asyncio.run(h.services.notifications.edit(ALICE, n.id, if_revision, apply)).notification


def test_an_edit_before_the_due_time_is_what_every_device_gets_at_the_new_time(
    h: Harness,
) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify_in(60, body="old body", metadata={"k": "v"})
    engine = h.engine()
    h.step(engine, at(30))

    edited = edit(h, n, 1, title="Deploy rolled back", customDelay=None, delay="2m")

    assert edited.revision == 2
    assert edited.title == "Deploy rolled back"
    assert edited.body == "old body"  # not named: kept
    assert edited.metadata == {"k": "v"}
    assert edited.scheduled_at == at(150)  # 2 minutes from the edit
    h.step(engine, at(60))
    assert h.gateway.sent == []  # not at the old time
    h.step(engine, at(150))
    assert sorted((s.token, s.title, s.revision) for s in h.gateway.sent) == [
        ("tok-a", "Deploy rolled back", 2),
        ("tok-b", "Deploy rolled back", 2),
    ]
    stored = h.get(n).notification
    assert (stored.revision, stored.title, stored.status) == (2, "Deploy rolled back", N.DELIVERED)


def test_if_match_of_another_revision_is_412_and_changes_nothing(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify_in(60)
    edit(h, n, None, body="first edit")
    with pytest.raises(RevisionMismatch) as info:
        edit(h, n, 1, body="stale edit")
    assert status_for(info.value) == 412
    assert info.value.code == "revision_mismatch"
    stored = h.get(n).notification
    assert (stored.revision, stored.body) == (2, "first edit")


def test_a_patch_the_create_would_refuse_is_400_and_changes_nothing(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify_in(60)
    for patch in ({"title": ""}, {"delay": "custom"}, {"scheduledAt": "2030-01-01T00:00:00Z"}):
        with pytest.raises(ValidationError):
            edit(h, n, None, **patch)
    with pytest.raises(DeviceNotFound):
        edit(h, n, None, targetDeviceToken="no-such-token")
    stored = h.get(n).notification
    assert (stored.revision, stored.title, stored.scheduled_at) == (1, n.title, n.scheduled_at)


def test_a_new_target_replaces_the_deliveries(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify_in(60)
    edited = edit(h, n, None, targetDeviceToken="tok-b")
    assert edited.devices_targeted == 1
    engine = h.engine()
    h.step(engine, at(60))
    assert h.gateway.tokens() == ["tok-b"]


def detail(h: Harness, n: Notification, **patch: Any) -> Any:
    """PATCH ``n`` (no If-Match) and return the whole answer, counts included."""

    def apply(found: Notification) -> NewNotification:
        return structure_request(NewNotification, merge_patch(request_json(found), patch))

    return asyncio.run(h.services.notifications.edit(ALICE, n.id, None, apply))


def test_an_edit_of_content_alone_goes_out_at_the_original_time(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify_in(60)
    engine = h.engine()
    h.step(engine, at(30))
    answered = detail(h, n, title="Corrected")
    assert answered.notification.scheduled_at == n.scheduled_at
    assert (answered.deliveries.pending, answered.deliveries.delivered) == (2, 0)
    h.step(engine, at(59))
    assert h.gateway.sent == []
    h.step(engine, at(60))
    assert sorted((s.token, s.title, s.revision) for s in h.gateway.sent) == [
        ("tok-a", "Corrected", 2),
        ("tok-b", "Corrected", 2),
    ]


def test_the_answer_to_a_new_target_counts_the_new_deliveries(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify_in(60)
    answered = detail(h, n, targetDeviceToken="tok-b")
    assert (answered.deliveries.pending, answered.deliveries.cancelled) == (1, 2)
    assert answered.deliveries == h.get(n).deliveries


def test_an_edit_after_the_claim_is_409_and_the_old_content_arrives(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    h.clock.set(n.scheduled_at)

    async def scenario() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        with pytest.raises(NotEditable) as info:
            await h.services.notifications.edit(
                ALICE, n.id, None, lambda f: pytest.fail("applied after the claim")
            )
        assert status_for(info.value) == 409
        assert info.value.code == "not_editable"
        assert f"/api/notifications/{n.id}/replace" in str(info.value)
        h.gateway.let_go()
        await engine.drain()

    asyncio.run(scenario())
    assert [(s.title, s.revision) for s in h.gateway.sent] == [(n.title, 1)]
    assert h.get(n).notification.revision == 1
