"""Back-pressure from the records (API.md, "Limits and fairness": an answer is recorded
within 100 ms, so a crash repeats only the last ~100 ms of sends).

Under overload the engine claimed and sent more than it could record in time. Now a
claim after a full one (and so the sends it starts) waits while an answer has gone
unrecorded for longer than ``recorder.BEHIND``; a record stuck on the database slows claims, never
stops them (test_record_waits.py). Age alone decides: at a normal pace, however many
answers come at once, nothing waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from pushcore.delivery import engine as engine_module
from pushcore.delivery.recorder import BEHIND, GroupRecorder
from pushcore.domain.outcomes import Dispatch, Outcome
from pushcore.domain.states import DeliveryStatus
from tests.delivery.conftest import CONFIG, Harness, at, until


def test_no_claim_while_an_answer_waits_to_be_recorded(
    db: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite and PostgreSQL: with the first answer's record stalled past the bound, a
    tick's first claim goes (work at the pace it falls due is never held), but after a
    full claim (an overload) the next comes only after that record."""
    monkeypatch.setattr(engine_module, "RECORD_HOLD", 30.0)  # the record, not the hold, ends it
    db.device("phone")
    first = db.notify_in(5, title="first")
    overdue = [db.notify_in(6, title=f"overdue {n}") for n in range(CONFIG.batch_size + 1)]
    engine = db.engine()
    assert engine.config.batch_size == CONFIG.batch_size
    gate, stalled = threading.Event(), threading.Event()
    order: list[str] = []
    record, claim = engine._ledger.record, engine._ledger.claim

    def stalled_record(pairs: Sequence[tuple[Dispatch, Outcome]]) -> object:
        stalled.set()
        gate.wait(30)  # a record starved of the CPU, or slow to commit
        done = record(pairs)
        order.append("record")
        return done

    def noted_claim(*args: object) -> object:
        order.append("claim")
        return claim(*args)  # type: ignore[arg-type]

    engine._ledger.record = stalled_record  # type: ignore[method-assign,assignment]

    async def run() -> None:
        db.clock.set(at(5))
        await engine.tick()
        await until(stalled.is_set)
        assert not engine._records.behind()  # just answered: young
        engine._ledger.claim = noted_claim  # type: ignore[method-assign,assignment]
        db.clock.set(at(6))  # the first answer is a second old now
        assert engine._records.behind()
        tick = asyncio.ensure_future(engine.tick())
        try:
            await until(lambda: order.count("claim") >= 1)  # the first claim is not held
            # Without the wait the second claim went ahead at once, before the record.
            await until(lambda: order.count("claim") >= 2 or engine._records.holds > 0)
            await asyncio.sleep(0.05)  # room for a claim that should not come
            assert order.count("claim") == 1
        finally:
            gate.set()
        await tick
        await engine.drain()

    asyncio.run(run())
    second_claim = [n for n, step in enumerate(order) if step == "claim"][1]
    assert "record" in order[:second_claim]
    delivered = [DeliveryStatus.DELIVERED]
    assert db.delivery_statuses(first) == db.delivery_statuses(overdue[-1]) == delivered


def test_a_normal_pace_never_waits_however_many_answers_come_at_once() -> None:
    """Only an old answer holds the engine: answers every ms recorded as they come, and
    a burst of four groups' worth not stored yet but younger than the bound, do not."""

    async def run() -> None:
        now = [0.0]
        release = asyncio.Event()
        release.set()
        stored: list[int] = []

        async def flush(items: list[int]) -> None:
            await release.wait()
            stored.extend(items)

        recorder: GroupRecorder[int, None] = GroupRecorder(
            flush, window=0.0, size=256, now=lambda: now[0]
        )
        pending = []
        for n in range(1000):  # 1,000 answers a second, each group stored at once
            now[0] = n / 1000
            pending.append(asyncio.ensure_future(recorder.submit([n])))
            await asyncio.sleep(0)
            assert await recorder.caught_up(30.0)
        await asyncio.gather(*pending)
        release.clear()
        burst = [asyncio.ensure_future(recorder.submit(list(range(256)))) for _ in range(5)]
        await asyncio.sleep(0)
        assert len(recorder._running) == 4  # four groups being stored, one queued
        assert recorder._queued
        now[0] += BEHIND * 0.9
        assert await recorder.caught_up(30.0)  # young: no wait
        assert recorder.holds == 0
        now[0] += BEHIND * 0.2  # the burst's oldest is past the bound now
        assert recorder.behind()
        assert not await recorder.caught_up(0.01)  # the hold runs out: claims go on
        assert recorder.holds == 1
        release.set()
        await asyncio.gather(*burst)
        assert not recorder.behind()
        assert len(stored) == 1000 + 5 * 256

    asyncio.run(run())


def test_the_oldest_queued_or_stored_answer_decides() -> None:
    """An answer queued behind busy slots counts as much as one being stored; a group that
    ends lets the wait go at once."""

    async def run() -> None:
        now = [0.0]
        release = asyncio.Event()

        async def flush(items: list[int]) -> None:
            await release.wait()

        recorder: GroupRecorder[int, None] = GroupRecorder(
            flush, window=0.0, size=1, parallel=1, now=lambda: now[0]
        )
        stored = asyncio.ensure_future(recorder.submit([1]))
        await asyncio.sleep(0)
        now[0] = BEHIND / 2
        queued = asyncio.ensure_future(recorder.submit([2]))  # waits for the one slot
        await asyncio.sleep(0)
        now[0] = BEHIND * 1.2  # the stored one is old, the queued one not
        assert recorder.behind()
        waiter = asyncio.ensure_future(recorder.caught_up(30.0))
        await asyncio.sleep(0.01)
        assert not waiter.done()
        release.set()
        await stored
        # The queued one started as the first ended, and is now the oldest: still young.
        assert await waiter
        now[0] = BEHIND * 1.6  # the queued one is past the bound too
        await queued
        assert not recorder.behind()

    asyncio.run(run())
