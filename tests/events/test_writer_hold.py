"""The sender's share of the database's write lock (on SQLite the engine's outcome records
wait for it): its claim's write transaction holds the lease alone, and its database
thread is not niced with its posting."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from pushcore.delivery import event_process
from pushcore.delivery.webhooks import EventSender
from pushcore.domain.events import EventType
from pushcore.events import Change, record_events
from pushcore.outbound.guard import NetworkGuard
from pushcore.ports import Store
from pushcore.storage.sql.events import Events
from tests.events.conftest import ALICE, World
from tests.fakes.clock import FakeClock
from tests.fakes.receiver import Receiver


def test_a_claim_reads_its_events_and_endpoints_outside_its_write_transaction(
    world: World, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.create(receiver.url(), ["delivery.*"])
    change = Change(ALICE, EventType.DELIVERY_FAILED, {"status": "FAILED", "reason": "x"}, None)
    with world.services.store.transaction() as tx:
        sent = [e.id for e in record_events(tx, [change] * 3, world.clock.now())]
    store = world.services.store
    writing = [0]  # write transactions open now
    reads: list[tuple[str, int]] = []  # (what was read, write transactions open meanwhile)
    transaction = store.transaction

    @contextlib.contextmanager
    def counted(**kwargs: Any) -> Iterator[Any]:
        with transaction(**kwargs) as tx:
            writing[0] += 1
            try:
                yield tx
            finally:
                writing[0] -= 1

    monkeypatch.setattr(store, "transaction", counted)
    by_ids = Events.by_ids

    def events_by_ids(self: Events, ids: Any) -> Any:
        reads.append(("events", writing[0]))
        return by_ids(self, ids)

    monkeypatch.setattr(Events, "by_ids", events_by_ids)
    assert world.pump() == 3
    assert sorted(r.headers["webhook-id"] for r in receiver.requests) == sorted(sent)
    # The events' data was read once, with no write transaction open.
    assert reads == [("events", 0)]


@pytest.mark.skipif(sys.platform != "linux", reason="Linux keeps a niceness per thread")
def test_the_sender_s_database_thread_keeps_the_engine_s_priority() -> None:
    # Neither its store nor its clock is used here.
    sender = EventSender(cast(Store, None), FakeClock(datetime.now(UTC)), NetworkGuard(), "s-1")
    found: dict[str, int] = {}

    def child() -> None:
        # A thread of its own: the niceness it takes stays with it, not with the tests'.
        here = threading.get_native_id()
        found["before"] = os.getpriority(os.PRIO_PROCESS, here)
        event_process._lower_posting_priority(sender)
        found["posting"] = os.getpriority(os.PRIO_PROCESS, here)
        found["database"] = os.getpriority(os.PRIO_PROCESS, sender.start_thread())
        # A thread the posting starts from now on (a name's look-up) is niced too.
        started = threading.Thread(
            target=lambda: found.update(later=os.getpriority(os.PRIO_PROCESS, 0))
        )
        started.start()
        started.join()

    thread = threading.Thread(target=child)
    thread.start()
    thread.join()
    base = found["before"]
    assert found["posting"] == min(19, base + event_process.NICENESS)
    assert found["later"] == found["posting"]
    assert found["database"] == base
