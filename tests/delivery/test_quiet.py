"""Quiet hours, snooze and mute in the engine (API.md, "The recipient's time"), on a fake
clock, on SQLite and PostgreSQL: what reached the gateway, when, and how deliveries end."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pushcore.converter import structure_request
from pushcore.converter.recipient import parse_account_patch
from pushcore.domain.inputs import NewStream, StreamSend
from pushcore.domain.model import Notification
from pushcore.domain.outcomes import Dispatch, Outcome
from pushcore.domain.recipient import Mute
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import ALICE, BOB, T0, Harness, at
from tests.fakes.clock import FakeClock
from tests.fakes.gateway import ScriptedGateway

CAROL = "acct_carol"
DAVE = "acct_dave"
# T0 is Saturday 2026-11-21 10:00 UTC.
HALF_PAST = T0 + timedelta(minutes=30)


def utc(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    """A UTC instant."""
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


class QuietAware(ScriptedGateway):
    """The scripted gateway, also noting which dispatches came in their quiet form."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.quiet: dict[str, bool] = {}

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Note each dispatch's quiet flag by token, then answer as scripted."""
        for d in dispatches:
            self.quiet[d.device.token] = d.quiet
        return await super().send(dispatches)


@pytest.fixture
def h(db: Harness, fake_clock: FakeClock) -> Harness:
    """The harness on SQLite or PostgreSQL, its gateway noting quiet dispatches."""
    db.gateway = QuietAware(fake_clock)
    return db


def settle(h: Harness, account: str, **body: Any) -> None:
    """PATCH /api/account's service call with ``body`` (JSON names)."""
    h.services.recipients.update(account, parse_account_patch(body))


def held(h: Harness, n: Notification) -> list[tuple[DeliveryStatus, datetime | None]]:
    """Each delivery's status and held_until."""
    return [(d.status, d.held_until) for d in h.deliveries(n)]


def quiet_gateway(h: Harness) -> QuietAware:
    """The harness's gateway, as the fixture made it."""
    assert isinstance(h.gateway, QuietAware)
    return h.gateway


def test_held_inside_quiet_hours_then_sent_at_their_end_in_due_order(h: Harness) -> None:
    h.device("tok-a")
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})
    first = h.notify_in(5, title="first")
    second = h.notify_in(10, title="second")
    engine = h.engine()
    h.step(engine, at(5))
    assert h.step(engine, at(10)) == HALF_PAST  # the engine sleeps until the end
    assert h.gateway.sent == []
    assert held(h, first) == held(h, second) == [(DeliveryStatus.HELD, HALF_PAST)]
    assert h.status(first) is NotificationStatus.QUEUED
    # The inbox entry is there at the due time all the same.
    assert len(h.services.inbox.page(ALICE).items) == 2

    h.step(engine, HALF_PAST - timedelta(seconds=1))
    assert h.gateway.sent == []
    h.step(engine, HALF_PAST)
    assert [s.title for s in h.gateway.sent] == ["first", "second"]
    assert h.status(first) is h.status(second) is NotificationStatus.DELIVERED


def test_a_priority_in_bypass_goes_out_as_usual(h: Harness) -> None:
    h.device("tok-a")
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})
    critical = h.notify_in(5, title="critical", priority="critical")
    high = h.notify_in(5, title="high", priority="high")
    engine = h.engine()
    h.step(engine, at(5))
    assert [s.title for s in h.gateway.sent] == ["critical"]
    assert held(h, high) == [(DeliveryStatus.HELD, HALF_PAST)]
    assert h.status(critical) is NotificationStatus.DELIVERED

    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30", "bypass": ["high"]})
    h.step(engine, at(6))
    assert sorted(s.title for s in h.gateway.sent) == ["critical", "high"]
    # bypass [high] only: critical is held like the rest.
    later = h.notify_in(5, title="critical again", priority="critical")
    h.step(engine, at(12))
    assert held(h, later) == [(DeliveryStatus.HELD, HALF_PAST)]


def test_silent_mode_sends_at_once_in_the_quiet_form(h: Harness) -> None:
    h.device("tok-a")
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30", "mode": "silent"})
    h.notify_in(5)
    engine = h.engine()
    h.step(engine, at(5))
    assert quiet_gateway(h).quiet == {"tok-a": True}
    h.notify_in(30 * 60)  # due after the end: as usual
    h.step(engine, HALF_PAST + timedelta(seconds=5))
    assert quiet_gateway(h).quiet == {"tok-a": False}
    assert len(h.gateway.sent) == 2


def test_a_snooze_holds_until_it_ends_whatever_the_mode(h: Harness) -> None:
    h.device("tok-a")
    until = T0 + timedelta(hours=1)
    settle(h, ALICE, snoozeUntil="2026-11-21T11:00:00Z")
    snoozed = h.notify_in(5)
    critical = h.notify_in(5, priority="critical")
    engine = h.engine()
    h.step(engine, at(5))
    assert held(h, snoozed) == [(DeliveryStatus.HELD, until)]
    assert h.status(critical) is NotificationStatus.DELIVERED  # bypass defaults to critical
    h.step(engine, until)
    assert h.status(snoozed) is NotificationStatus.DELIVERED


def test_a_change_of_settings_applies_at_once_to_what_is_held(h: Harness) -> None:
    h.device("tok-a")
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})
    n = h.notify_in(5)
    engine = h.engine()
    h.step(engine, at(5))
    # A later end: held until that one.
    settle(h, ALICE, quietHours={"start": "09:00", "end": "11:00"})
    h.step(engine, at(6))
    assert held(h, n) == [(DeliveryStatus.HELD, T0 + timedelta(hours=1))]
    # None: out at the next claim, long before either end.
    settle(h, ALICE, quietHours=None)
    h.step(engine, at(7))
    assert [s.at for s in h.gateway.sent] == [at(7)]
    assert h.status(n) is NotificationStatus.DELIVERED


def test_a_window_across_midnight_in_the_person_s_zone(h: Harness) -> None:
    # 10:00 UTC is 05:00 in New York: inside Friday night's 22:00-07:00, which ends at
    # 07:00 there (12:00 UTC).
    h.device("tok-a")
    hours = {"start": "22:00", "end": "07:00"}
    settle(h, ALICE, timeZone="America/New_York", quietHours=hours)
    n = h.notify_in(5)
    engine = h.engine()
    h.step(engine, at(5))
    assert held(h, n) == [(DeliveryStatus.HELD, T0 + timedelta(hours=2))]
    # Only Saturday's period: Friday night's is not quiet, so out at once.
    settle(h, ALICE, quietHours={**hours, "days": ["sat"]})
    h.step(engine, at(6))
    assert h.status(n) is NotificationStatus.DELIVERED


@pytest.mark.parametrize(
    ("now", "end", "expected"),
    [
        # Clocks go forward in Berlin on 2027-03-28 at 02:00 (01:00 UTC): an end at
        # 02:30 does not exist that night and is shifted by the gap, to 03:30 CEST.
        (utc(2027, 3, 28, 0, 50), "02:30", utc(2027, 3, 28, 1, 30)),
        # Clocks go back on 2027-10-31 at 03:00 CEST (01:00 UTC): 02:30 happens twice;
        # the end is the first, 02:30 CEST (00:30 UTC).
        (utc(2027, 10, 31, 0, 10), "02:30", utc(2027, 10, 31, 0, 30)),
    ],
)  # fmt: skip
def test_daylight_saving_inside_a_window_follows_the_written_rule(
    h: Harness, now: datetime, end: str, expected: datetime
) -> None:
    h.clock.set(now)
    h.device("tok-a")
    settle(h, ALICE, timeZone="Europe/Berlin", quietHours={"start": "22:00", "end": end})
    n = h.notify_in(5)
    engine = h.engine()
    h.step(engine, now + timedelta(seconds=5))
    assert held(h, n) == [(DeliveryStatus.HELD, expected)]
    h.step(engine, expected)
    assert h.status(n) is NotificationStatus.DELIVERED


# -- stream sends: each subscriber's own settings, and mutes -------------------------


def stream_to(h: Harness, *subscribers: str) -> tuple[str, dict[str, str]]:
    """ALICE's stream, ``subscribers`` subscribed (a device ``tok-<account>`` each);
    the stream id and each subscriber's subscription id."""
    made = asyncio.run(
        h.services.streams.create(ALICE, structure_request(NewStream, {"name": "N"}))
    )
    subscriptions = {}
    for account in subscribers:
        h.device(f"tok-{account}", account)
        found, _ = h.services.streams.subscribe(account, made.stream.code)
        subscriptions[account] = found.id
    return made.stream.id, subscriptions


def publish(h: Harness, stream_id: str, **fields: Any) -> str:
    """A stream send now; its notification id."""
    body = structure_request(StreamSend, {"title": "News", **fields})
    return asyncio.run(h.services.streams.send(ALICE, stream_id, body)).notification.id


def by_token(h: Harness, notification_id: str) -> dict[str, tuple[DeliveryStatus, str | None]]:
    """Each device token's delivery of the notification: status and failure reason."""
    with h.services.store.read() as tx:
        deliveries = tx.progress.for_notification(notification_id)
        devices = {d.id: d.token for d in tx.devices.by_ids([d.device_id for d in deliveries])}
    return {devices[d.device_id]: (d.status, d.failure_reason) for d in deliveries}


def test_a_stream_send_follows_each_subscriber_s_own_settings(h: Harness) -> None:
    stream_id, _ = stream_to(h, BOB, CAROL, DAVE)
    settle(h, BOB, quietHours={"start": "09:00", "end": "10:30"})
    settle(h, CAROL, quietHours={"start": "09:00", "end": "10:30", "mode": "silent"})
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})  # the sender's: no part
    sent = publish(h, stream_id)
    engine = h.engine()
    h.step(engine)
    assert quiet_gateway(h).quiet == {f"tok-{CAROL}": True, f"tok-{DAVE}": False}
    assert by_token(h, sent)[f"tok-{BOB}"] == (DeliveryStatus.HELD, None)
    h.step(engine, HALF_PAST)
    assert sorted(h.gateway.tokens()) == [f"tok-{BOB}", f"tok-{CAROL}", f"tok-{DAVE}"]


def test_a_muted_subscription_gets_the_inbox_entry_and_no_push(h: Harness) -> None:
    stream_id, subscriptions = stream_to(h, BOB, CAROL)
    mute = Mute(T0 + timedelta(hours=1))
    h.services.recipients.mute(BOB, subscriptions[BOB], mute)
    engine = h.engine()
    news = publish(h, stream_id)
    h.step(engine)
    assert by_token(h, news)[f"tok-{BOB}"] == (DeliveryStatus.CANCELLED, "muted")
    assert h.gateway.tokens() == [f"tok-{CAROL}"]
    assert [i.notification.id for i in h.services.inbox.page(BOB).items] == [news]
    # Critical goes through a mute that allows it...
    alarm = publish(h, stream_id, priority="critical")
    h.step(engine)
    assert by_token(h, alarm)[f"tok-{BOB}"] == (DeliveryStatus.DELIVERED, None)
    # ...and is high where it does not: muted, and held by quiet hours like high.
    h.services.recipients.mute(BOB, subscriptions[BOB], Mute(mute.muted_until, False))
    again = publish(h, stream_id, priority="critical")
    h.step(engine)
    assert by_token(h, again)[f"tok-{BOB}"] == (DeliveryStatus.CANCELLED, "muted")
    h.services.recipients.mute(BOB, subscriptions[BOB], Mute(None, False))
    settle(h, BOB, quietHours={"start": "09:00", "end": "10:30"})
    held_one = publish(h, stream_id, priority="critical")
    h.step(engine)
    assert by_token(h, held_one)[f"tok-{BOB}"] == (DeliveryStatus.HELD, None)
    # Past the mute's end: out as usual.
    settle(h, BOB, quietHours=None)
    h.step(engine, T0 + timedelta(hours=1))
    assert by_token(h, publish(h, stream_id))[f"tok-{BOB}"][0] is DeliveryStatus.PENDING
    h.step(engine)
    assert h.gateway.tokens().count(f"tok-{BOB}") == 3
