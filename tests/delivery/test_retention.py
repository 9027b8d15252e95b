"""Retention run by the engine's process, on fake time: what it deletes, and when."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

from pushcore.delivery.retention import Retention, RetentionConfig
from pushcore.domain.errors import NotFound
from pushcore.domain.idempotency import IdempotencyRecord
from pushcore.domain.outcomes import Failed
from pushcore.domain.states import NotificationStatus
from tests.delivery.conftest import ALICE, DUE, Harness, WatchedStore, until

N = NotificationStatus
HOUR = timedelta(hours=1)
REST = timedelta(minutes=1)
PAUSE = timedelta(milliseconds=70)  # unlike the engine's 50 ms tick, so tests tell them apart


def retention(h: Harness, keep: timedelta, batch: int = 500) -> Retention:
    config = RetentionConfig(keep=keep, batch=batch, pause=PAUSE, rest=REST)
    return Retention(h.services.store, h.clock, config)


async def swept(h: Harness) -> None:
    """Let the retention task sweep until it rests, moving the clock through its pauses."""
    while True:
        now = h.clock.now()
        ends = {now + REST, now + PAUSE}
        await until(lambda ends=ends: bool(ends & set(h.clock.sleepers)))  # type: ignore[misc]
        if now + REST in h.clock.sleepers:
            return
        h.clock.advance(PAUSE)


def test_the_engine_deletes_what_settled_before_the_retention_and_keeps_the_rest(
    h: Harness,
) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.gateway.script("tok-b", Failed("InvalidPayload"))
    delivered = h.notify()
    engine = h.engine(retention=retention(h, HOUR))
    h.step(engine, DUE)
    assert h.status(delivered) is N.DELIVERED
    later = h.notify_in(3 * 3600)  # due after the retention has passed: QUEUED all along
    recent = h.notify_in(1)

    async def scenario() -> None:
        engine.start()
        # Past the delivered one's retention, not the recent one's.
        h.clock.set(DUE + HOUR + timedelta(seconds=2))
        await until(lambda: h.status(recent) is not N.QUEUED)
        await until(lambda: gone(h, delivered))
        await engine.stop()

    asyncio.run(scenario())
    assert not gone(h, recent)
    assert h.status(later) is N.QUEUED
    stats = h.services.notifications.stats(ALICE)
    assert stats.total == 2
    assert stats.deliveries.delivered + stats.deliveries.failed == 2  # only `recent`'s


def test_a_short_retention_takes_effect_within_seconds(h: Harness) -> None:
    h.device("tok-a")
    delivered = h.notify()
    # The defaults but for the retention itself: PUSHCORE_RETENTION=2s.
    task = Retention(h.services.store, h.clock, RetentionConfig(keep=timedelta(seconds=2)))
    engine = h.engine(retention=task)
    h.step(engine, DUE)
    assert h.status(delivered) is N.DELIVERED

    async def scenario() -> None:
        engine.start()
        await until(lambda: h.clock.now() + task.config.rest in h.clock.sleepers)
        assert not gone(h, delivered)
        # Settled at DUE: past its retention at DUE + 2 s, gone by the next pass.
        h.clock.set(DUE + timedelta(seconds=2))
        h.clock.advance(task.config.rest)
        await until(lambda: gone(h, delivered))
        await engine.stop()

    asyncio.run(scenario())
    assert h.clock.now() <= DUE + timedelta(seconds=3)


def test_passes_are_a_second_apart_and_batches_small() -> None:
    # A steady load is deleted in steady slices, not a minute's worth at once.
    config = RetentionConfig()
    assert config.rest <= timedelta(seconds=1)
    assert config.batch <= 200


def test_retention_zero_keeps_everything(h: Harness) -> None:
    h.device("tok-a")
    delivered = h.notify()
    engine = h.engine(retention=retention(h, timedelta(0)))
    h.step(engine, DUE)

    async def scenario() -> None:
        engine.start()
        h.clock.set(DUE + 400 * 24 * HOUR)
        await swept(h)
        await engine.stop()

    asyncio.run(scenario())
    assert h.status(delivered) is N.DELIVERED


def test_batches_are_small_and_paused_between(h: Harness) -> None:
    h.device("tok-a")
    sent = [h.notify() for _ in range(5)]
    h.step(h.engine(), DUE)
    task = retention(h, HOUR, batch=2)
    h.clock.set(DUE + 2 * HOUR)
    # Each batch deletes at most two deliveries (and two inbox entries) and the
    # notifications they free.
    assert task.sweep() == 2 + 2 + 2
    assert sum(gone(h, n) for n in sent) == 2
    pause = task.config.pause

    async def scenario() -> None:
        running = asyncio.ensure_future(task.run())
        await until(lambda: h.clock.now() + pause in h.clock.sleepers)
        assert sum(gone(h, n) for n in sent) == 4  # one batch, then a pause
        h.clock.advance(pause)
        await until(lambda: all(gone(h, n) for n in sent))
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    asyncio.run(scenario())


def test_stopping_the_engine_waits_for_the_batch_in_its_thread(h: Harness) -> None:
    # Closing the store under a batch still running would crash SQLite.
    watched = WatchedStore(h.services.store)
    config = RetentionConfig(keep=HOUR, pause=PAUSE, rest=REST)
    engine = h.engine(retention=Retention(watched, h.clock, config))

    async def scenario() -> None:
        watched.gate = threading.Event()
        engine.start()
        await until(watched.waiting.is_set)  # the batch is in its thread, held
        stopping = asyncio.ensure_future(engine.stop())
        for _ in range(50):
            await asyncio.sleep(0)
        assert not stopping.done()
        watched.gate.set()
        await stopping

    asyncio.run(scenario())


def gone(h: Harness, notification: object) -> bool:
    """Whether GET /api/notifications/:id would be a 404."""
    try:
        h.get(notification)  # type: ignore[arg-type]
    except NotFound:
        return True
    return False


@pytest.mark.parametrize("raw", ["0", "0s"])
def test_the_setting_zero_turns_retention_off(raw: str) -> None:
    from pushcore import load_settings

    assert load_settings(env={"PUSHCORE_RETENTION": raw}).retention == timedelta(0)
    assert load_settings(env={}).retention == timedelta(days=30)
    assert load_settings(env={"PUSHCORE_RETENTION": "7d"}).retention == timedelta(days=7)


def test_idempotency_records_are_forgotten_after_their_24_hours(h: Harness) -> None:
    # Kept whatever PUSHCORE_RETENTION keeps (here: everything), for exactly 24 hours.
    task = retention(h, timedelta(0))
    start = h.clock.now()
    with h.services.store.transaction() as tx:
        for key in ("old", "young"):
            record = IdempotencyRecord(ALICE, key, "hash", h.clock.now())
            assert tx.idempotency_keys.claim(record, start, start) is None
            h.clock.advance(HOUR)
    h.clock.set(start + 24 * HOUR + timedelta(minutes=30))

    task.sweep()

    with h.services.store.read() as tx:
        assert tx.idempotency_keys.get(ALICE, "old") is None
        assert tx.idempotency_keys.get(ALICE, "young") is not None
