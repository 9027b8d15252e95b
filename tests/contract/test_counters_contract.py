"""The stats kept as counters equal a full recount, after any sequence of writes.

A hypothesis state machine drives every write path of the repositories
(create with deliveries, fan-out, claim, settle delivered and failed, retry,
release, cancel, device removal, wake-ups, retention, bucket pruning, time
passing) and after each step compares ``tx.notifications.stats`` with the
scanning query the counters replaced, kept here as the oracle. The full run
is on SQLite; PostgreSQL gets a shorter one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from pushcore.consistency import detach_device, reconcile
from pushcore.domain.model import (
    DeliveryCounts,
    Notification,
    NotificationStats,
    StreamRef,
    Subscription,
)
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Store, Transaction
from pushcore.storage.records import delivery_counts
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sqlite import SqliteStore
from tests.contract.test_queue_contract import make_delivery, make_notification
from tests.contract.test_store_contract import T0, make_device

if TYPE_CHECKING:
    from tests.pg import Cluster

N = NotificationStatus
D = DeliveryStatus
ACCOUNTS = ("acc_a", "acc_b")
DEVICES = {"acc_a": ("dev_a1", "dev_a2"), "acc_b": ("dev_b1",)}
STREAM = "str_1"
OWNER = "engine-1"
LEASE = timedelta(seconds=30)
DAY = timedelta(hours=24)


def recount(tx: Transaction, account_id: str, since: datetime) -> NotificationStats:
    """The stats by scanning the account's rows: the query the counters replaced."""
    sql: Sql = tx._sql  # type: ignore[attr-defined]  # the oracle speaks SQL directly
    # The counters count in whole minutes (see pushcore/storage/sql/counters.py).
    since = since.replace(second=0, microsecond=0)
    by_status = {s.value: 0 for s in N}
    for status, count in sql.all(
        "SELECT status, COUNT(*) FROM notifications WHERE account_id = ? GROUP BY status",
        (account_id,),
    ):
        by_status[status] = count
    deliveries = delivery_counts(
        sql.all(
            "SELECT status, COUNT(*), 0, 0 FROM deliveries WHERE account_id = ? GROUP BY status",
            (account_id,),
        )
    )
    created, delivered, failed = sql.one(
        "SELECT COUNT(*) FILTER (WHERE created_at >= :since),"
        " COUNT(*) FILTER (WHERE status = 'DELIVERED' AND settled_at >= :since),"
        " COUNT(*) FILTER (WHERE status = 'FAILED' AND settled_at >= :since)"
        " FROM notifications WHERE account_id = :account",
        {"since": sql.dialect.time(since), "account": account_id},
    )
    return NotificationStats(by_status, deliveries, created, delivered, failed)


class CountersMachine(RuleBasedStateMachine):
    """Random writes through the repositories; the counters must match a recount."""

    open_store: Callable[[], Store]

    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.now = T0
        self.ids = itertools.count(1)
        with self.store.transaction() as tx:
            for account, devices in DEVICES.items():
                for device_id in devices:
                    tx.devices.add(make_device(device_id, account))
                tx.subscriptions.add(Subscription(f"sub_{account}", account, STREAM, T0))

    def teardown(self) -> None:
        self.store.close()

    def _rows(self, text: str, *params: object) -> list[str]:
        with self.store.read() as tx:
            sql: Sql = tx._sql  # type: ignore[attr-defined]
            return [row[0] for row in sql.all(text, params)]

    @rule(account=st.sampled_from(ACCOUNTS), devices=st.integers(0, 2), later=st.booleans())
    def create(self, account: str, devices: int, later: bool) -> None:
        due = self.now + timedelta(minutes=10) if later else self.now
        notification = make_notification(
            f"ntf_{next(self.ids):05d}", account, created_at=self.now, scheduled_at=due
        )
        targets = DEVICES[account][:devices]
        with self.store.transaction() as tx:
            tx.notifications.add(notification)
            tx.schedule.add_many(
                [
                    make_delivery(
                        f"dlv_{next(self.ids):05d}", notification.id, d, account, due_at=due
                    )
                    for d in targets
                ]
            )
            if not targets:
                reconcile(tx, [notification], self.now)

    @rule(account=st.sampled_from(ACCOUNTS))
    def stream_send(self, account: str) -> None:
        notification = make_notification(
            f"ntf_{next(self.ids):05d}",
            account,
            created_at=self.now,
            scheduled_at=self.now,
            stream=StreamRef(STREAM, "news", "falcon-7k2q"),
        )
        with self.store.transaction() as tx:
            tx.notifications.add(notification)
            if not tx.schedule.fan_out(notification, STREAM, self.now):
                # No subscriber device: a stream send fails at once.
                reconcile(tx, [notification], self.now)

    @rule(limit=st.integers(1, 4))
    def claim(self, limit: int) -> None:
        with self.store.transaction() as tx:
            tx.deliveries.claim_due(self.now, OWNER, self.now + LEASE, limit)

    def _in_flight(self, data: st.DataObject) -> list[str]:
        held = self._rows("SELECT id FROM deliveries WHERE status = 'IN_FLIGHT' ORDER BY id")
        return data.draw(st.lists(st.sampled_from(held), unique=True, max_size=3)) if held else []

    def _settle(self, ids: list[str], status: D, many: bool) -> None:
        with self.store.transaction() as tx:
            if many:
                tx.deliveries.settle_many(ids, OWNER, status, None, self.now)
            for delivery_id in [] if many else ids:
                tx.deliveries.settle(delivery_id, OWNER, status, "Unregistered", self.now)
            touched = self._notifications_of(tx, ids)
            reconcile(tx, tx.notifications.refresh(touched, for_update=True), self.now)

    def _notifications_of(self, tx: Transaction, delivery_ids: list[str]) -> list[Notification]:
        sql: Sql = tx._sql  # type: ignore[attr-defined]
        rows = sql.all(
            "SELECT DISTINCT notification_id FROM deliveries WHERE id = ANY(?)",
            (sql.dialect.array(delivery_ids),),
        )
        ids = sorted(r[0] for r in rows)
        return list(tx.notifications.by_ids(ids))

    @rule(data=st.data(), many=st.booleans())
    def settle_delivered(self, data: st.DataObject, many: bool) -> None:
        self._settle(self._in_flight(data), D.DELIVERED, many)

    @rule(data=st.data(), many=st.booleans())
    def settle_failed(self, data: st.DataObject, many: bool) -> None:
        self._settle(self._in_flight(data), D.FAILED, many)

    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        held = self._in_flight(data)
        with self.store.transaction() as tx:
            for delivery_id in held:
                tx.deliveries.retry(delivery_id, OWNER, self.now + LEASE, "timeout")

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        held = self._in_flight(data)
        with self.store.transaction() as tx:
            tx.deliveries.release(held, OWNER)

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        waiting = self._rows(
            "SELECT id FROM notifications WHERE status IN ('QUEUED', 'SCHEDULED')"
            " AND NOT EXISTS (SELECT 1 FROM deliveries WHERE notification_id = notifications.id"
            " AND attempts > 0) ORDER BY id"
        )
        if not waiting:
            return
        chosen = data.draw(st.sampled_from(waiting))
        with self.store.transaction() as tx:
            (found,) = tx.notifications.by_ids([chosen])
            tx.schedule.cancel_unsent(chosen, "cancelled")
            tx.notifications.update(
                attrs.evolve(found, status=N.CANCELLED, wake_at=None, settled_at=self.now)
            )

    @rule(device=st.sampled_from([d for ds in DEVICES.values() for d in ds]))
    def remove_device(self, device: str) -> None:
        with self.store.transaction() as tx:
            detach_device(tx, device, self.now, "Device removed")

    @rule(minutes=st.integers(0, 36 * 60))
    def advance(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes, milliseconds=minutes * 7)

    @rule()
    def wake(self) -> None:
        with self.store.transaction() as tx:
            reconcile(tx, tx.notifications.due_wakeups(self.now, 50), self.now)

    @rule(hours=st.integers(0, 48), limit=st.integers(1, 5))
    def retention(self, hours: int, limit: int) -> None:
        with self.store.transaction() as tx:
            tx.retention.delete_settled(self.now - timedelta(hours=hours), limit)

    @rule(limit=st.integers(1, 50))
    def prune(self, limit: int) -> None:
        with self.store.transaction() as tx:
            tx.retention.prune_activity(self.now - timedelta(hours=25), limit)

    @invariant()
    def counters_equal_a_recount(self) -> None:
        with self.store.read() as tx:
            for account in ACCOUNTS:
                kept = tx.notifications.stats(account, self.now - DAY)
                assert kept == recount(tx, account, self.now - DAY)


@pytest.fixture
def open_store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Store]]:
    """A function opening a fresh, empty store of the current kind (one per example)."""
    numbers = itertools.count()
    if store_kind == "sqlite":
        yield lambda: SqliteStore(tmp_path / f"counters-{next(numbers)}.db")
        return
    from pushcore.storage.postgres import PostgresStore

    url: str = request.getfixturevalue("contract_database")
    cluster: Cluster = request.getfixturevalue("pg_cluster")

    def fresh() -> Store:
        cluster.empty(url)
        return PostgresStore(url, pool_size=2)

    yield fresh


def test_counters_equal_a_full_recount(store_kind: str, open_store: Callable[[], Store]) -> None:
    CountersMachine.open_store = staticmethod(open_store)
    examples, steps = (60, 40) if store_kind == "sqlite" else (8, 25)
    run_state_machine_as_test(
        CountersMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_an_unknown_account_has_zero_counts(
    store_kind: str, open_store: Callable[[], Store]
) -> None:
    store = open_store()
    try:
        with store.read() as tx:
            stats = tx.notifications.stats("acc_nobody", T0)
        assert stats == NotificationStats({s.value: 0 for s in N}, DeliveryCounts(), 0, 0, 0)
    finally:
        store.close()


def test_concurrent_writers_of_one_account_lose_no_count(
    store_kind: str, open_store: Callable[[], Store]
) -> None:
    store = open_store()

    def write(worker: int) -> None:
        for i in range(15):
            notification = make_notification(f"ntf_{worker}_{i:02d}", created_at=T0)
            with store.transaction() as tx:
                tx.notifications.add(notification)
                tx.schedule.add_many(
                    [
                        make_delivery(f"dlv_{worker}_{i:02d}_{d}", notification.id, device)
                        for d, device in enumerate(DEVICES["acc_a"])
                    ]
                )
            if i % 2:
                with store.transaction() as tx:
                    tx.locks.notifications([notification.id])
                    tx.schedule.cancel_unsent(notification.id, "cancelled")
                    tx.notifications.update(
                        attrs.evolve(notification, status=N.CANCELLED, settled_at=T0)
                    )

    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(write, range(4)))
        with store.read() as tx:
            stats = tx.notifications.stats("acc_a", T0)
            assert stats == recount(tx, "acc_a", T0)
        assert (stats.by_status["QUEUED"], stats.by_status["CANCELLED"]) == (32, 28)
        assert (stats.deliveries.pending, stats.deliveries.cancelled) == (64, 56)
    finally:
        store.close()
