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
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pushcore import build_services, load_settings
from pushcore.delivery import ledger as ledger_module
from pushcore.delivery.ledger import Ledger
from pushcore.domain.model import Notification
from pushcore.domain.outcomes import Delivered, Dispatch, Outcome
from pushcore.domain.states import DeliveryStatus
from pushcore.storage.sql.notifications import Notifications
from pushcore.storage.sql.queue import Queue
from tests.delivery.conftest import CONFIG, DUE, LEASE, Harness, at, half, until
from tests.fakes.clock import FakeClock
from tests.pg import Cluster

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


@pytest.mark.postgres
def test_an_answer_is_recorded_while_a_heartbeat_renews_other_leases(
    tmp_path: Path, fake_clock: FakeClock, pg_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a renewal locks the rows it extends until it commits: one renewing a
    whole backlog at once held back the record of any of its answers. (On SQLite the one
    writer waits for any transaction; a renewal there is short.)"""
    settings = load_settings(env={}, data_dir=tmp_path, database_url=pg_cluster.create_database())
    h = Harness(build_services(settings, clock=fake_clock), fake_clock)
    try:
        h.device("phone")
        for _ in range(3):
            h.notify()
        ledger = Ledger(h.services.store, h.clock, CONFIG, "engine-a", half)
        first, *_, last = ledger.claim(DUE, 10).dispatches  # in id order
        monkeypatch.setattr(ledger_module, "RENEW_CHUNK", 2, raising=False)
        stalled, gate = threading.Event(), threading.Event()
        renew = Queue.renew

        def stalling_renew(self: Queue, ids: Sequence[str], *args: Any) -> int:
            renewed = renew(self, ids, *args)
            if last.delivery.id in ids:  # the renewal of the backlog's end stalls
                stalled.set()
                gate.wait(30)
            return renewed

        monkeypatch.setattr(Queue, "renew", stalling_renew)
        h.clock.set(DUE + LEASE / 2 + timedelta(seconds=1))  # due for renewal
        with ThreadPoolExecutor(2) as threads:
            beat = threads.submit(ledger.beat, [first.delivery.id, "x", last.delivery.id])
            try:
                assert stalled.wait(30)
                record = threads.submit(ledger.record, [(first, Delivered())])
                record.result(timeout=10)  # not held by the stalled renewal
            finally:
                gate.set()
            assert beat.result(timeout=30) == 2
        assert [d.status for d in h.deliveries(first.notification)] == DELIVERED
    finally:
        h.close()
