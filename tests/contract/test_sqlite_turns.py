"""Whose turn the SQLite store's one writer is: the engine's urgent records go first, but
a writer that is not urgent (a roll-up writing the event webhooks' outbox, a claim, an
API's write) is not kept waiting by a burst of them past ``PATIENCE``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pushcore.storage.sqlite import SqliteStore
from pushcore.storage.sqlite import store as sqlite_module
from pushcore.storage.sqlite.locks import PATIENCE, FairLock
from tests.contract.test_store_contract import make_device


def until(done: Callable[[], bool], within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not done():
        assert time.monotonic() < deadline, "not within the wait"
        time.sleep(0.001)


def grants(waited: float) -> list[str]:
    """The order in which a waiter that is not urgent and an urgent one (asking after it)
    get a lock released once the first has waited ``waited`` (on the lock's clock)."""
    now = [100.0]
    lock = FairLock(clock=lambda: now[0])
    assert lock.acquire(1)
    order: list[str] = []

    def wait(name: str, urgent: bool) -> threading.Thread:
        def take() -> None:
            assert lock.acquire(5, urgent=urgent)
            order.append(name)
            lock.release()

        thread = threading.Thread(target=take)
        thread.start()
        return thread

    threads = [wait("patient", urgent=False)]
    until(lambda: lock.waiting == 1)
    threads.append(wait("urgent", urgent=True))
    until(lambda: lock.waiting == 2)
    now[0] += waited
    lock.release()
    for thread in threads:
        thread.join(5)
    return order


def test_an_urgent_waiter_goes_first_until_the_other_has_waited_its_patience() -> None:
    assert grants(PATIENCE / 2) == ["urgent", "patient"]
    assert grants(PATIENCE * 1.5) == ["patient", "urgent"]


@pytest.mark.serial
def test_a_writer_that_is_not_urgent_gets_its_turn_during_back_to_back_urgent_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A burst's records: two threads, each asking again as soon as its transaction ends,
    # so an urgent one waits at every release. Before PATIENCE, a write that is not urgent
    # (here a device added, in the engine a roll-up and its events) waited until they
    # stopped: past the lock wait, Unavailable. The wait is shortened to keep a failure
    # quick; it is still forty times PATIENCE.
    monkeypatch.setattr(sqlite_module, "LOCK_WAIT_SECONDS", 2.0)
    store = SqliteStore(tmp_path / "pushcore.db")
    stop, records = threading.Event(), [0]

    def burst() -> None:
        while not stop.is_set():
            with store.transaction(urgent=True) as tx:
                tx.health.mark(datetime.now(UTC))
                time.sleep(0.002)  # a record's hold: the other urgent thread queues meanwhile
            records[0] += 1

    threads = [threading.Thread(target=burst) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        until(lambda: records[0] >= 10)
        with store.transaction() as tx:
            tx.devices.add(make_device("dev_01"))
        during = records[0]
        until(lambda: records[0] >= during + 10)  # and the burst went on after it
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        store.close()
