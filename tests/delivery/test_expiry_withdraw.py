"""Expiry and withdrawal against the engine, on SQLite and PostgreSQL, on a fake clock.

API.md, "After sending": a delivery not made by `expiresAt` (waiting for its
time, a device or a retry) ends EXPIRED and a notification none of whose
deliveries succeeded ends FAILED `expired`; a withdrawal cancels what no
gateway took, sends nothing for a failed one, and otherwise queues a
withdrawal to each device it reached, durably, once.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pushcore.delivery.retention import Retention, RetentionConfig
from pushcore.domain.errors import NotFound
from pushcore.domain.inbox import Withdrawn
from pushcore.domain.outcomes import Failed, Retry
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import ALICE, BOB, DUE, Harness, at, until

N = NotificationStatus
D = DeliveryStatus


@pytest.fixture
def h(db: Harness) -> Harness:
    """The harness on SQLite, and on a PostgreSQL database of its own."""
    return db


class Signals:
    """What the live channels of this process were told."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, object]] = []

    def committed(self) -> None:
        """New entries: not what these tests look at."""

    def changed(self, account_id: str, change: object) -> None:
        """Record a read, dismissal or withdrawal."""
        self.changes.append((account_id, change))


def inbox_titles(h: Harness, account: str = ALICE) -> list[str]:
    """What GET /api/inbox lists."""
    page = h.services.inbox.page(account, 50)
    return [item.notification.title for item in page.items]


# -- expiry ---------------------------------------------------------------------


def test_a_retry_that_would_come_after_the_expiry_ends_expired_and_the_notification_failed(
    h: Harness,
) -> None:
    h.device("tok-a")
    n = h.notify(ttl=1)  # due at DUE, expires a second later
    h.gateway.script("tok-a", Retry("HTTP 503"))
    engine = h.engine()

    h.step(engine, DUE)
    assert [s.token for s in h.gateway.sent] == ["tok-a"]
    # The retry was due 1.5 s later; it is brought back to the expiry and not sent.
    assert [d.due_at for d in h.deliveries(n)] == [DUE + timedelta(seconds=1)]
    h.step(engine, DUE + timedelta(seconds=1))

    assert len(h.gateway.sent) == 1
    assert h.delivery_statuses(n) == [D.EXPIRED]
    stored = h.get(n).notification
    assert (stored.status, stored.failure_reason) == (N.FAILED, "expired")
    assert stored.expires_at == DUE + timedelta(seconds=1)


def test_a_notification_due_after_its_expiry_is_never_sent(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify(expiresAt=(DUE + timedelta(seconds=2)).isoformat())
    engine = h.engine()
    h.clock.set(DUE + timedelta(seconds=3))  # the engine was away until after the expiry

    h.step(engine)

    assert h.gateway.sent == []
    assert h.delivery_statuses(n) == [D.EXPIRED, D.EXPIRED]
    assert (h.status(n), h.get(n).notification.failure_reason) == (N.FAILED, "expired")


def test_one_delivered_and_one_expired_is_delivered(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify(ttl=1)
    h.gateway.script("tok-b", Retry("HTTP 503"))
    engine = h.engine()
    h.step(engine, DUE)
    h.step(engine, DUE + timedelta(seconds=1))

    assert h.delivery_statuses(n) == [D.DELIVERED, D.EXPIRED]
    assert h.status(n) == N.DELIVERED


def test_waiting_for_a_device_ends_at_the_expiry_not_at_the_grace_period(h: Harness) -> None:
    n = h.notify(ttl=30)  # no device: it waits
    engine = h.engine()
    h.step(engine, DUE)
    assert h.status(n) == N.SCHEDULED

    h.step(engine, DUE + timedelta(seconds=30))

    stored = h.get(n).notification
    assert (stored.status, stored.failure_reason) == (N.FAILED, "expired")


def test_an_expired_entry_leaves_the_inbox_and_the_live_channels_are_told(h: Harness) -> None:
    n = h.notify(ttl=10)
    kept = h.notify(title="Kept")
    engine = h.engine()
    h.step(engine, DUE)
    assert sorted(inbox_titles(h)) == ["Deploy finished", "Kept"]
    signals = Signals()
    retention = Retention(h.services.store, h.clock, RetentionConfig(keep=timedelta(0)), signals)

    h.clock.set(DUE + timedelta(seconds=9))
    retention.sweep()
    assert len(inbox_titles(h)) == 2  # not yet
    h.clock.set(DUE + timedelta(seconds=10))
    retention.sweep()

    assert inbox_titles(h) == ["Kept"]
    if h.services.settings.effective_database_url.startswith("sqlite"):
        # PostgreSQL tells every process by NOTIFY instead.
        [(account, change)] = signals.changes
        assert account == ALICE
        assert isinstance(change, Withdrawn)
        assert len(change.ids) == 1
    assert h.get(n).notification.expires_at == DUE + timedelta(seconds=10)
    assert h.get(kept).notification.expires_at is None


# -- withdrawal -------------------------------------------------------------------


def test_withdrawing_before_any_send_cancels_and_sends_nothing(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify_in(60)

    withdrawn = h.services.withdrawals.withdraw(ALICE, n.id)

    assert withdrawn.status == N.CANCELLED
    assert withdrawn.withdrawn_at == h.clock.now()
    engine = h.engine()
    h.step(engine, at(60))
    assert h.gateway.sent == []
    assert h.delivery_statuses(n) == [D.CANCELLED]


def test_withdrawing_a_delivered_one_sends_each_device_the_withdrawal_once(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify()
    engine = h.engine()
    h.step(engine, DUE)
    assert h.status(n) == N.DELIVERED
    assert inbox_titles(h) == ["Deploy finished"]
    h.clock.set(DUE + timedelta(seconds=5))

    first = h.services.withdrawals.withdraw(ALICE, n.id)
    again = h.services.withdrawals.withdraw(ALICE, n.id)

    assert first == again
    assert first.withdrawn_at == DUE + timedelta(seconds=5)
    assert first.status == N.DELIVERED
    assert inbox_titles(h) == []
    h.step(engine)
    withdrawals = [s for s in h.gateway.sent if s.kind == "withdrawal"]
    assert sorted(s.token for s in withdrawals) == ["tok-a", "tok-b"]
    assert h.delivery_statuses(n) == [D.WITHDRAWN, D.WITHDRAWN]
    assert inbox_titles(h) == []  # the claim of the withdrawals brought no entry back
    # A third withdrawal, and more ticks, send nothing more.
    h.services.withdrawals.withdraw(ALICE, n.id)
    h.step(engine, DUE + timedelta(minutes=5))
    assert len(h.gateway.sent) == 4
    assert h.get(n).deliveries.delivered == 2  # still counted as reached


def test_a_withdrawal_survives_an_engine_that_was_not_running(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    h.step(h.engine("first"), DUE)
    h.services.withdrawals.withdraw(ALICE, n.id)  # no engine takes it now: it waits, stored

    h.step(h.engine("second"))

    [withdrawal] = [s for s in h.gateway.sent if s.kind == "withdrawal"]
    assert withdrawal.token == "tok-a"
    assert h.delivery_statuses(n) == [D.WITHDRAWN]


def test_a_withdrawal_the_gateway_refuses_is_retried_then_settled(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    h.step(engine, DUE)
    h.gateway.script("tok-a", Retry("HTTP 503"), Failed("HTTP 400"))
    h.services.withdrawals.withdraw(ALICE, n.id)
    h.step(engine)
    h.step(engine, h.clock.now() + timedelta(seconds=2))

    assert [s.kind for s in h.gateway.sent] == ["notification", "withdrawal", "withdrawal"]
    [delivery] = h.deliveries(n)
    assert (delivery.status, delivery.failure_reason) == (D.WITHDRAWN, "HTTP 400")


def test_a_delivery_in_flight_at_the_withdrawal_is_withdrawn_once_it_lands(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    h.clock.set(DUE)

    async def withdraw_while_sending() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        await asyncio.to_thread(h.services.withdrawals.withdraw, ALICE, n.id)
        h.gateway.let_go()
        await engine.drain()

    asyncio.run(withdraw_while_sending())
    h.step(engine)

    assert [s.kind for s in h.gateway.sent] == ["notification", "withdrawal"]
    assert h.delivery_statuses(n) == [D.WITHDRAWN]


def test_withdrawing_a_failed_one_answers_and_sends_nothing(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    h.gateway.script("tok-a", Failed("HTTP 400"))
    engine = h.engine()
    h.step(engine, DUE)
    assert h.status(n) == N.FAILED

    withdrawn = h.services.withdrawals.withdraw(ALICE, n.id)

    assert (withdrawn.status, withdrawn.withdrawn_at) == (N.FAILED, h.clock.now())
    h.step(engine, DUE + timedelta(minutes=1))
    assert len(h.gateway.sent) == 1
    assert h.delivery_statuses(n) == [D.FAILED]


def test_withdrawing_while_retrying_stops_the_retries(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify()
    h.gateway.script("tok-b", Retry("HTTP 503"))
    engine = h.engine()
    h.step(engine, DUE)

    h.services.withdrawals.withdraw(ALICE, n.id)
    h.step(engine, DUE + timedelta(minutes=1))

    kinds = sorted((s.token, s.kind) for s in h.gateway.sent)
    assert kinds == [
        ("tok-a", "notification"),
        ("tok-a", "withdrawal"),
        ("tok-b", "notification"),
    ]
    assert h.delivery_statuses(n) == [D.CANCELLED, D.WITHDRAWN]
    assert h.status(n) == N.DELIVERED


def test_another_account_cannot_withdraw(h: Harness) -> None:
    n = h.notify()
    with pytest.raises(NotFound):
        h.services.withdrawals.withdraw(BOB, n.id)
    assert h.get(n).notification.withdrawn_at is None
