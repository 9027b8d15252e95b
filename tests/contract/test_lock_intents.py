"""The races the lock intents (``tx.locks``, ``for_update``) settle, on every database.

Each test races real threads (released together by a barrier) and widens
the window between a transaction's read and its write, so that on
PostgreSQL, whose writers run at once, the race is lost whenever a lock
intent is missing; SQLite's one writer at a time wins it either way.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, cast

import pytest

from pushcore import Services, build_services, load_settings
from pushcore.consistency import reconcile
from pushcore.domain.errors import NotCancellable, PlanLimit
from pushcore.domain.inputs import NewDevice, NewStream
from pushcore.domain.model import Platform
from pushcore.ports import Store, Transaction
from tests.contract.test_queue_contract import (
    D,
    N,
    add_deliveries,
    add_notifications,
    in_flight,
    make_delivery,
    make_notification,
)
from tests.contract.test_store_contract import MINUTE, T0
from tests.contract.threads import race

PAUSE = 0.3  # seconds between a read and the write that depends on it


@pytest.fixture(autouse=True)
def warm(store: Store) -> None:
    """Four connections open, so that the threads then run truly at once.

    A PostgreSQL pool opens connections one by one as they are first needed:
    without this the first threads would take turns on the one it has.
    """
    barrier = threading.Barrier(4)

    def hold(_: int) -> None:
        with store.read():
            barrier.wait(5)

    race(4, hold)


class _PausingRepository:
    def __init__(self, inner: Any, method: str) -> None:
        self._inner, self._method = inner, method

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._method:
            return found

        def paused(*args: Any, **kwargs: Any) -> Any:
            result = found(*args, **kwargs)
            time.sleep(PAUSE)
            return result

        return paused


class _PausingTransaction:
    def __init__(self, inner: Transaction, repository: str, method: str) -> None:
        self._inner, self._repository, self._method = inner, repository, method

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        return _PausingRepository(found, self._method) if name == self._repository else found


class PausingStore:
    """``store``, whose write transactions pause after ``repository.method`` returns."""

    def __init__(self, store: Store, repository: str, method: str) -> None:
        self._store, self._repository, self._method = store, repository, method

    @contextmanager
    def transaction(self, *, urgent: bool = False) -> Iterator[Transaction]:
        with self._store.transaction(urgent=urgent) as tx:
            yield cast(Transaction, _PausingTransaction(tx, self._repository, self._method))

    def read(self) -> Any:
        return self._store.read()

    def ping(self) -> None:
        self._store.ping()

    def close(self) -> None:
        """The test's store fixture closes the store."""


def services_on(store: Store, tmp_path: Path) -> Services:
    """Services whose store is ``store``."""
    return build_services(load_settings(env={}, data_dir=tmp_path), store=store)


def test_the_plan_limit_holds_when_creates_race(store: Store, tmp_path: Path) -> None:
    # Every create counts, then waits before it inserts: without the account's
    # plan lock, all four would count 0 and create.
    services = services_on(PausingStore(store, "streams", "count"), tmp_path)
    outcomes: list[str] = []

    def create(i: int) -> None:
        try:
            asyncio.run(services.streams.create("acc_free", NewStream(name=f"stream {i}")))
            outcomes.append("created")
        except PlanLimit:
            outcomes.append("plan_limit")

    race(4, create)
    assert sorted(outcomes) == ["created"] * 3 + ["plan_limit"]
    assert len(services.streams.list("acc_free")) == 3


def test_racing_registrations_of_one_token_make_one_device(store: Store, tmp_path: Path) -> None:
    # Every registration looks the token up, then waits before it inserts:
    # without the token's lock, all four would insert and three would fail.
    services = services_on(PausingStore(store, "devices", "find_by_token"), tmp_path)
    created: list[bool] = []
    request = NewDevice(token="a1b2c3d4" * 8, platform=Platform.IOS)
    race(4, lambda _: created.append(services.devices.register("acc_a", request).created))
    assert sorted(created) == [False] * 3 + [True]
    assert len(services.devices.list("acc_a")) == 1


def test_the_last_two_deliveries_settled_at_once_settle_the_notification(store: Store) -> None:
    add_notifications(store, make_notification())
    add_deliveries(
        store,
        in_flight(make_delivery("dlv_01", device_id="dev_01"), "sched-a", T0 + MINUTE),
        in_flight(make_delivery("dlv_02", device_id="dev_02"), "sched-b", T0 + MINUTE),
    )
    both_settled = threading.Barrier(2)

    def settle(i: int) -> None:
        delivery_id, owner = [("dlv_01", "sched-a"), ("dlv_02", "sched-b")][i]
        with store.transaction() as tx:
            assert tx.deliveries.settle(delivery_id, owner, D.DELIVERED, None, T0)
            # Both settled, neither committed (SQLite: the second is still
            # waiting for the writer lock, so the first goes on alone).
            with suppress(threading.BrokenBarrierError):
                both_settled.wait(PAUSE)
            # As the engine reconciles what it read without a lock (by id),
            # pausing once it has seen which deliveries are still open.
            paused = cast(Transaction, _PausingTransaction(tx, "progress", "open_among"))
            reconcile(paused, tx.notifications.by_ids(["ntf_01"]), T0)

    race(2, settle)
    with store.read() as tx:
        settled = tx.notifications.get("acc_a", "ntf_01")
    assert settled is not None
    assert settled.status is N.DELIVERED


@pytest.mark.parametrize("first", ["claim", "cancel"])
def test_a_notification_is_never_cancelled_with_a_delivery_handed(
    store: Store, tmp_path: Path, first: str
) -> None:
    add_notifications(store, make_notification(scheduled_at=T0))
    add_deliveries(store, make_delivery())
    # The cancel reads the delivery counts, then waits before it writes.
    services = services_on(PausingStore(store, "progress", "counts"), tmp_path)
    outcome: list[str] = []
    claimed: list[str] = []
    went_first = threading.Event()

    def cancel() -> None:
        if first == "claim":
            went_first.wait(5)
        try:
            services.notifications.cancel("acc_a", "ntf_01")
            outcome.append("cancelled")
        except NotCancellable:
            outcome.append("not_cancellable")

    def claim() -> None:
        if first == "cancel":
            time.sleep(PAUSE / 3)  # the cancel has read the counts and waits
        with store.transaction() as tx:
            claimed.extend(d.id for d in tx.deliveries.claim_due(T0, "sched-a", T0 + MINUTE, 10))
            went_first.set()
            time.sleep(PAUSE)  # the cancel starts while this claim is open

    race(2, lambda i: (cancel, claim)[i]())
    with store.read() as tx:
        found = tx.notifications.get("acc_a", "ntf_01")
    assert found is not None
    # Either the cancel won and nothing was handed, or the claim won and the
    # cancel was refused; never a cancelled notification with a send under way.
    assert (outcome, claimed, found.status) in (
        (["cancelled"], [], N.CANCELLED),
        (["not_cancellable"], ["dlv_01"], N.QUEUED),
    )
    expected_winner = ["cancelled"] if first == "cancel" else ["not_cancellable"]
    assert outcome == expected_winner
