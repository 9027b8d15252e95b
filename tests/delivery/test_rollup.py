"""Outcomes are recorded first, notifications rolled up after: a crash between loses nothing.

The engine records a gateway's answers in a short transaction (the
deliveries and a note each) and derives the notifications' statuses in
another. A process killed between the two leaves the notes; an engine that
starts rolls them up before anything else, and a running one rolls up a dead
process's notes once they are a lease old.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from pushcore.delivery.ledger import Ledger
from pushcore.domain.outcomes import Delivered, Failed
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.storage.sql.dialect import Sql
from tests.delivery.conftest import CONFIG, DUE, LEASE, Harness, advancing, half, until

N = NotificationStatus
D = DeliveryStatus


def record_then_die(h: Harness, failed: bool = False) -> None:
    """A process that claims what is due at DUE, records its answers and dies before
    rolling up the notifications."""
    dead = Ledger(h.services.store, h.clock, CONFIG, "dead", half)
    claim = dead.claim(DUE, 10)
    # Leased before the clock reaches DUE where an engine runs beside: else that
    # engine may claim and send the delivery itself first (it did, under load).
    h.clock.set(max(h.clock.now(), DUE))
    outcome = Failed("410 Gone") if failed else Delivered()
    dead.record([(d, outcome) for d in claim.dispatches])


def test_recorded_deliveries_wait_for_their_roll_up_to_settle_the_notification(
    h: Harness,
) -> None:
    h.device("tok-a")
    n = h.notify()
    h.clock.set(DUE)

    record_then_die(h)

    # What a crash must not send again is recorded; the notification follows later.
    assert h.delivery_statuses(n) == [D.DELIVERED]
    assert h.status(n) is N.QUEUED


def test_an_engine_that_starts_rolls_up_what_a_crash_left(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    first, second = h.notify(), h.notify()
    h.clock.set(DUE)
    record_then_die(h)  # both notifications' deliveries: delivered
    engine = h.engine()

    async def scenario() -> None:
        engine.start()
        await until(lambda: h.status(second) is N.DELIVERED)
        await engine.stop()

    asyncio.run(scenario())
    assert h.status(first) is N.DELIVERED
    assert h.status(second) is N.DELIVERED
    stats = h.services.notifications.stats(first.account_id)
    assert stats.by_status[N.DELIVERED] == 2
    assert stats.by_status[N.QUEUED] == 0
    assert h.gateway.sent == []  # nothing was sent again


def test_a_failed_answer_left_unrolled_fails_its_notification_with_its_reason(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    h.clock.set(DUE)
    record_then_die(h, failed=True)
    engine = h.engine()

    async def scenario() -> None:
        engine.start()
        await until(lambda: h.status(n) is N.FAILED)
        await engine.stop()

    asyncio.run(scenario())
    assert h.get(n).notification.failure_reason == "410 Gone"


def test_a_running_engine_rolls_up_a_dead_process_notes_once_a_lease_old(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()

    async def scenario() -> None:
        engine.start()
        await until(lambda: engine.ticked_at is not None)
        await asyncio.to_thread(record_then_die, h)  # it moves the clock to DUE
        # A live process's notes are younger than a lease: left to it.
        h.clock.advance(CONFIG.heartbeat.total_seconds())
        await until(lambda: engine.ticked_at is not None and engine.ticked_at >= h.clock.now())
        assert h.status(n) is N.QUEUED
        h.clock.advance((LEASE + timedelta(seconds=1)).total_seconds())
        # The pass that rolls them up waits on the fake clock: it may have set its
        # wait after that move, so the clock goes on until it has run.
        await advancing(h, lambda: h.status(n) is N.DELIVERED)
        await engine.stop()

    asyncio.run(scenario())
    assert h.status(n) is N.DELIVERED
    assert h.gateway.sent == []  # the dead process's send, never this engine's


def test_a_roll_up_reads_and_locks_its_notifications_once_and_writes_no_withdrawal(
    db: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The roll-up's statements per transaction are most of the engine's CPU a delivery
    # (docs/benchmarks.md, "Engine: where a delivery's CPU goes"): nothing withdrawn
    # is one read, not two UPDATEs of deliveries, and the notifications the refresh
    # read locked are neither locked again by a statement of its own (PostgreSQL) nor
    # read again for the counts.
    for token in ("tok-a", "tok-b"):
        db.device(token)
    first, second = db.notify(), db.notify()
    db.clock.set(DUE)
    ledger = Ledger(db.services.store, db.clock, CONFIG, "engine", half)
    pairs = [(d, Delivered()) for d in ledger.claim(DUE, 10).dispatches]
    ledger.record(pairs)
    statements: list[str] = []
    run = Sql.run

    def counted(sql: Sql, text: str, params: Any = ()) -> Any:
        statements.append(text)
        return run(sql, text, params)

    monkeypatch.setattr(Sql, "run", counted)
    ledger.roll_up(pairs)
    monkeypatch.undo()

    assert db.status(first) is N.DELIVERED
    assert db.status(second) is N.DELIVERED
    # The counts follow from the notifications as the roll-up read them.
    stats = db.services.notifications.stats(first.account_id)
    assert (stats.by_status[N.DELIVERED], stats.by_status[N.QUEUED]) == (2, 0)
    assert [s for s in statements if "kind = 'withdrawal'" in s] == []
    assert [s for s in statements if s.startswith("SELECT 1 FROM notifications")] == []
    assert [s for s in statements if "id, account_id, status, settled_at" in s] == []
    # The one read that says none is withdrawn.
    assert len([s for s in statements if "withdrawn_at IS NOT NULL" in s]) == 1
