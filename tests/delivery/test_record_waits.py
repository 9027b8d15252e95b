"""What a gateway's answer waits for before it is recorded (API.md, "Limits and fairness":
within 100 ms, so a crash repeats only the last ~100 ms of sends).

Neither a claim's reads nor the record of earlier answers may stand between an answer
and its record: each test makes one of them stall and shows the answer recorded
meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from pushcore.domain.model import Notification
from pushcore.domain.outcomes import Dispatch, Outcome
from pushcore.domain.states import DeliveryStatus
from pushcore.storage.sql.notifications import Notifications
from tests.delivery.conftest import Harness, at, until

DELIVERED, IN_FLIGHT = [DeliveryStatus.DELIVERED], [DeliveryStatus.IN_FLIGHT]


def test_an_answer_is_recorded_while_the_record_before_it_is_stuck(h: Harness) -> None:
    h.device("phone")
    first = h.notify_in(5, title="first")
    second = h.notify_in(6, title="second")
    engine = h.engine()
    gate, calls = threading.Event(), []
    record = engine._ledger.record

    def first_stuck(pairs: Sequence[tuple[Dispatch, Outcome]]) -> object:
        calls.append(len(pairs))
        if len(calls) == 1:
            gate.wait(30)  # before its transaction: the database is free meanwhile
        return record(pairs)

    engine._ledger.record = first_stuck  # type: ignore[method-assign,assignment]

    async def run() -> None:
        h.clock.set(at(5))
        await engine.tick()
        await until(lambda: len(calls) == 1)
        h.clock.set(at(6))
        await engine.tick()
        try:
            await until(lambda: h.delivery_statuses(second) == DELIVERED, timeout=5)
            assert h.delivery_statuses(first) == IN_FLIGHT
        finally:
            gate.set()
        await engine.drain()

    asyncio.run(run())
    assert h.delivery_statuses(first) == DELIVERED


def test_an_answer_is_recorded_while_a_claim_reads_what_it_sends(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.device("phone")
    first = h.notify_in(5, title="first")
    h.notify_in(6, title="second")
    engine = h.engine()
    reading, stalled, gate = threading.Event(), threading.Event(), threading.Event()
    by_ids = Notifications.by_ids

    def slow_claim_read(self: Notifications, ids: Sequence[str]) -> Sequence[Notification]:
        if threading.current_thread().name.startswith("pushcore-claim") and reading.is_set():
            stalled.set()
            gate.wait(30)
        return by_ids(self, ids)

    monkeypatch.setattr(Notifications, "by_ids", slow_claim_read)

    async def run() -> None:
        h.gateway.hold()
        h.clock.set(at(5))
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        reading.set()  # the next claim stalls reading its notifications
        h.clock.set(at(6))
        claim = asyncio.ensure_future(engine.tick())
        try:
            await until(stalled.is_set)
            h.gateway.let_go()
            await until(lambda: h.delivery_statuses(first) == DELIVERED, timeout=5)
        finally:
            gate.set()
        await claim
        await engine.drain()

    asyncio.run(run())
    assert len(h.gateway.sent) == 2
