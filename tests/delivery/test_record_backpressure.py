"""Back-pressure from the records (API.md, "Limits and fairness": an answer is recorded
within 100 ms, so a crash repeats only the last ~100 ms of sends).

At overload the engine claimed and sent more than it could record in time: answers
waited behind the claims' and roll-ups' work. Now a claim (and so the sends it starts)
waits while an answer has gone unrecorded for longer than the bound, or more answers
wait than one group takes; a record stuck on the database slows claims, never stops
them (test_record_waits.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from pushcore.delivery import engine as engine_module
from pushcore.delivery.recorder import GroupRecorder
from pushcore.domain.outcomes import Dispatch, Outcome
from pushcore.domain.states import DeliveryStatus
from tests.delivery.conftest import Harness, at, until


def test_no_claim_while_an_answer_waits_to_be_recorded(
    db: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite and PostgreSQL: the second claim comes only after the first answer's record."""
    monkeypatch.setattr(engine_module, "RECORD_HOLD", 30.0)  # the bound, not the hold, decides
    db.device("phone")
    first = db.notify_in(5, title="first")
    second = db.notify_in(6, title="second")
    engine = db.engine()
    gate, stalled, claiming = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []
    record, claim = engine._ledger.record, engine._ledger.claim

    def stalled_record(pairs: Sequence[tuple[Dispatch, Outcome]]) -> object:
        stalled.set()
        gate.wait(30)  # a record starved of the CPU, or slow to commit
        done = record(pairs)
        order.append("record")
        return done

    def noted_claim(*args: object) -> object:
        claiming.set()
        order.append("claim")
        return claim(*args)  # type: ignore[arg-type]

    engine._ledger.record = stalled_record  # type: ignore[method-assign,assignment]
    waiting = asyncio.Event()
    caught_up = engine._records.caught_up

    async def noted_wait(timeout: float) -> bool:
        if engine._records.behind():
            waiting.set()
        return await caught_up(timeout)

    engine._records.caught_up = noted_wait  # type: ignore[method-assign]

    async def run() -> None:
        db.clock.set(at(5))
        await engine.tick()
        await until(stalled.is_set)
        await until(engine._records.behind)  # the answer is older than the bound now
        engine._ledger.claim = noted_claim  # type: ignore[method-assign,assignment]
        db.clock.set(at(6))
        tick = asyncio.ensure_future(engine.tick())
        try:
            # Before the fix the claim went ahead at once; now the tick waits.
            await until(lambda: claiming.is_set() or waiting.is_set())
        finally:
            gate.set()
        await tick
        await engine.drain()

    asyncio.run(run())
    assert order[:2] == ["record", "claim"]
    assert db.delivery_statuses(first) == db.delivery_statuses(second) == [DeliveryStatus.DELIVERED]


def test_the_recorder_is_behind_with_an_old_answer_or_more_than_a_group() -> None:
    """What holds the claims: an item waiting longer than the bound (queued or being
    stored), or more waiting than one group takes; a stored group ends it."""

    async def run() -> None:
        release = asyncio.Event()
        stored: list[list[int]] = []

        async def flush(items: list[int]) -> None:
            await release.wait()
            stored.append(items)

        recorder: GroupRecorder[int, None] = GroupRecorder(
            flush, window=0.0, size=3, parallel=1, behind=0.01
        )
        assert not recorder.behind()
        first = asyncio.ensure_future(recorder.submit([1]))
        await until(recorder.behind)  # older than 10 ms, being stored
        assert not await recorder.caught_up(0.0)  # the hold runs out: claims go on
        more = asyncio.ensure_future(recorder.submit([2, 3, 4]))
        release.set()
        assert await recorder.caught_up(30.0)
        await asyncio.gather(first, more)
        assert stored == [[1], [2, 3, 4]]
        big: GroupRecorder[int, None] = GroupRecorder(
            flush, window=10.0, size=3, parallel=1, behind=10.0
        )
        release.clear()
        held = asyncio.ensure_future(big.submit([1]))
        await until(lambda: big._running != {})
        queued = asyncio.ensure_future(big.submit([2, 3, 4]))  # 4 waiting: over a group
        await until(big.behind)  # not by age: the bound is 10 s
        release.set()
        await asyncio.gather(held, queued)
        await until(lambda: not big.behind())

    asyncio.run(run())
