"""Where quiet hours meet the after-sending features: a HELD delivery and an edit,
a withdraw, a cancel, a newer notification of its collapse key, its expiry, its device
removed (API.md, "After sending" and "The recipient's time"; docs/api.md, hard cases).
On a fake clock, on SQLite and PostgreSQL (the quiet-hours harness)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from pushcore.converter import request_json, structure_request
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.revisions import merge_patch
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import ALICE, BOB, Harness, at
from tests.delivery.test_quiet import (
    CAROL,
    HALF_PAST,
    by_token,
    h,
    held,
    publish,
    settle,
    stream_to,
)

__all__ = ["h"]  # the quiet-hours harness: SQLite and PostgreSQL

D = DeliveryStatus
N = NotificationStatus
QUIET = {"start": "09:00", "end": "10:30"}  # T0 is 10:00 UTC: inside, ending at HALF_PAST


def edit(h: Harness, n: Notification, **patch: Any) -> Notification:
    """PATCH ``n`` as the HTTP handler does."""

    def apply(found: Notification) -> NewNotification:
        return structure_request(NewNotification, merge_patch(request_json(found), patch))

    return asyncio.run(h.services.notifications.edit(ALICE, n.id, None, apply)).notification


def held_one(h: Harness, until: datetime = HALF_PAST, **fields: Any) -> Notification:
    """A notification to ALICE's one device, held (until ``until``) by her quiet hours."""
    settle(h, ALICE, quietHours=QUIET)
    n = h.notify_in(5, **fields)
    h.step(h.engine(), at(5))
    assert held(h, n) == [(D.HELD, until)]
    return n


def test_a_held_delivery_edited_sends_the_new_content_at_the_end(h: Harness) -> None:
    h.device("tok-a")
    n = held_one(h, title="old")
    assert edit(h, n, title="new").revision == 2
    engine = h.engine()
    h.step(engine, at(20))
    assert h.gateway.sent == []  # still quiet: held again, not sent
    h.step(engine, HALF_PAST)
    assert [s.title for s in h.gateway.sent] == ["new"]
    assert h.status(n) is N.DELIVERED


def test_a_held_delivery_moved_past_the_end_goes_at_its_new_time(h: Harness) -> None:
    h.device("tok-a")
    n = held_one(h)
    later = HALF_PAST + timedelta(minutes=10)
    edit(h, n, scheduledAt=later.isoformat().replace("+00:00", "Z"))
    engine = h.engine()
    h.step(engine, HALF_PAST)
    assert h.gateway.sent == []
    h.step(engine, later)
    assert [s.at for s in h.gateway.sent] == [later]


def test_a_held_delivery_withdrawn_or_cancelled_never_goes(h: Harness) -> None:
    h.device("tok-a")
    withdrawn = held_one(h, title="w")
    cancelled = h.notify_in(1, title="c")
    engine = h.engine()
    h.step(engine, at(10))
    assert h.services.withdrawals.withdraw(ALICE, withdrawn.id).status is N.CANCELLED
    assert h.services.notifications.cancel(ALICE, cancelled.id).status is N.CANCELLED
    h.step(engine, HALF_PAST)
    assert h.gateway.sent == []
    assert [(d.status, d.failure_reason) for d in h.deliveries(withdrawn)] == [
        (D.CANCELLED, "withdrawn")
    ]
    assert [d.status for d in h.deliveries(cancelled)] == [D.CANCELLED]


def test_a_newer_one_of_the_key_supersedes_the_held_one_and_only_it_goes(h: Harness) -> None:
    h.device("tok-a")
    old = held_one(h, title="score 1-0", collapseKey="score")
    new = h.notify_in(1, title="score 2-0", collapseKey="score")
    engine = h.engine()
    h.step(engine, at(20))
    assert h.status(old) is N.CANCELLED
    assert h.get(old).notification.failure_reason == "superseded"
    h.step(engine, HALF_PAST)
    assert [s.title for s in h.gateway.sent] == ["score 2-0"]
    assert h.status(new) is N.DELIVERED


def test_a_held_delivery_past_its_expiry_ends_expired_at_the_expiry(h: Harness) -> None:
    h.device("tok-a")
    # Expiring at 10:10:05, twenty minutes before the end: held until then (heldUntil).
    n = held_one(h, at(605), ttl=600)
    engine = h.engine()
    h.step(engine, at(605))
    assert [(d.status, d.failure_reason) for d in h.deliveries(n)] == [(D.EXPIRED, "expired")]
    found = h.get(n).notification
    assert (found.status, found.failure_reason) == (N.FAILED, "expired")
    h.step(engine, HALF_PAST)
    assert h.gateway.sent == []
    # The sender hears of it once, at the expiry.
    events = h.services.webhooks.events(ALICE, None, [], 100).items
    assert [(e.type, e.created_at) for e in events] == [
        ("delivery.expired", at(605)),
        ("notification.failed", at(605)),
    ]


def test_a_held_delivery_whose_device_is_removed_ends_and_nothing_goes(h: Harness) -> None:
    device = h.device("tok-a")
    n = held_one(h)
    h.services.devices.remove(ALICE, device.id)
    h.step(h.engine(), HALF_PAST)
    assert h.gateway.sent == []
    assert [d.status for d in h.deliveries(n)] == [D.CANCELLED]
    assert h.status(n) is not N.QUEUED


def test_a_held_delivery_an_unheld_newer_one_of_its_key_reached_first_never_goes(
    h: Harness,
) -> None:
    # Bob's quiet hours hold the first score; Carol has it. The second, critical, goes
    # through Bob's quiet hours at once: at their end the first must not follow it.
    stream_id, _ = stream_to(h, BOB, CAROL)
    settle(h, BOB, quietHours=QUIET)
    engine = h.engine()
    first = publish(h, stream_id, title="1-0", collapseKey="score")
    h.step(engine, at(1))
    assert by_token(h, first)[f"tok-{BOB}"][0] is D.HELD
    publish(h, stream_id, title="2-0", collapseKey="score", priority="critical")
    h.step(engine, at(2))
    h.step(engine, HALF_PAST)
    bob = [s.title for s in h.gateway.sent if s.token == f"tok-{BOB}"]
    assert bob == ["2-0"]
    assert by_token(h, first)[f"tok-{BOB}"] == (D.CANCELLED, "superseded")


def test_two_senders_keys_of_one_name_do_not_replace_each_other_when_released(
    h: Harness,
) -> None:
    # A key names one thing within one sending account: Bob's own "score" and Alice's
    # stream's "score", both held on Bob's phone, both go at the end.
    stream_id, _ = stream_to(h, BOB)
    settle(h, BOB, quietHours=QUIET)
    engine = h.engine()
    publish(h, stream_id, title="Alice's", collapseKey="score")
    h.notify_in(1, BOB, title="Bob's own", collapseKey="score")
    h.step(engine, at(2))
    assert h.gateway.sent == []
    h.step(engine, HALF_PAST)
    assert sorted(s.title for s in h.gateway.sent) == ["Alice's", "Bob's own"]


def test_pausing_a_schedule_cancels_its_held_occurrence(h: Harness) -> None:
    h.device("tok-a")
    settle(h, ALICE, quietHours=QUIET)
    h.services.accounts.ensure(ALICE)
    body = {"name": "d", "rrule": "FREQ=DAILY", "start": "2026-11-21T10:05:00"}
    schedule = h.services.schedules.create(ALICE, body | {"template": {"title": "Daily"}})
    h.clock.set(at(5 * 60 - 30))
    assert h.services.schedules.maker.run_once() == 1  # made 60 s ahead at most
    engine = h.engine()
    h.step(engine, at(5 * 60))
    (made,) = h.services.notifications.list(ALICE).items
    assert held(h, made) == [(D.HELD, HALF_PAST)]
    paused = h.services.schedules.pause(ALICE, schedule.id)
    assert (paused.sent, paused.missed) == (0, 1)
    assert h.status(made) is N.CANCELLED
    h.step(engine, HALF_PAST)
    assert h.gateway.sent == []
