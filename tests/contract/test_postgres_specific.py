"""What only the PostgreSQL store promises: migrations, types, and several writers at once.

Separate stores have separate connection pools, which PostgreSQL treats
exactly as it would separate processes; the concurrency tests below use
them so, and the e2e tests (tests/e2e/test_postgres.py) use real processes.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pushcore import Services, build_services, load_settings
from pushcore.consistency import reconcile
from pushcore.domain.errors import ConfigError, NotCancellable, PlanLimit
from pushcore.domain.inputs import NewDevice, NewStream
from pushcore.domain.model import Account, Plan, Platform
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Store
from pushcore.storage import open_store
from pushcore.storage.migrate import Migration, load_migrations
from pushcore.storage.postgres import PostgresStore
from pushcore.storage.postgres import store as postgres_module
from pushcore.storage.records import TABLES
from tests.contract.test_queue_contract import (
    add_deliveries,
    add_notifications,
    claim,
    in_flight,
    make_delivery,
    make_notification,
)
from tests.contract.test_store_contract import MINUTE, T0, make_device, make_key
from tests.contract.threads import race
from tests.pg import Cluster

pytestmark = pytest.mark.postgres

D = DeliveryStatus
N = NotificationStatus


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    """A database of this test's own, migrated."""
    return pg_cluster.create_database()


@pytest.fixture
def blank_url(pg_cluster: Cluster) -> str:
    """A database of this test's own with no schema at all."""
    return pg_cluster.create_database(template="template0")


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    """An open store on this test's database."""
    opened = PostgresStore(url)
    yield opened
    opened.close()


def query(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` read without the store."""
    with psycopg.connect(url) as conn:
        return conn.execute(sql.encode(), params).fetchall()


def migration_rows(url: str) -> list[tuple[int, str, datetime]]:
    return [
        (int(v), str(n), a)
        for v, n, a in query(
            url, "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        )
    ]


# Migrations


def test_migrations_are_recorded_once_and_a_second_run_is_a_no_op(blank_url: str) -> None:
    PostgresStore(blank_url).close()
    recorded = migration_rows(blank_url)
    assert [(v, n) for v, n, _ in recorded] == [
        (m.version, m.name) for m in load_migrations("postgres")
    ]
    assert recorded[0][:2] == (1, "initial")
    schema = query(
        blank_url,
        "SELECT table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = 'public' ORDER BY 1, 2",
    )
    PostgresStore(blank_url).close()
    assert migration_rows(blank_url) == recorded
    with psycopg.connect(blank_url, autocommit=True) as conn:
        postgres_module.migrate(conn, load_migrations("postgres"))
    assert migration_rows(blank_url) == recorded
    assert (
        query(
            blank_url,
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' ORDER BY 1, 2",
        )
        == schema
    )


def test_processes_starting_together_apply_each_migration_once(blank_url: str) -> None:
    opened: list[PostgresStore] = []
    race(4, lambda _: opened.append(PostgresStore(blank_url)))
    for each in opened:
        each.close()
    assert [v for v, _, _ in migration_rows(blank_url)] == [
        m.version for m in load_migrations("postgres")
    ]


def test_a_failing_migration_leaves_no_trace(
    blank_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = Migration(
        99, "broken", "CREATE TABLE half_done (x int);\nINSERT INTO nowhere VALUES (1);"
    )
    monkeypatch.setattr(
        postgres_module, "load_migrations", lambda _d: [*load_migrations("postgres"), broken]
    )
    with pytest.raises(psycopg.errors.UndefinedTable, match="nowhere"):
        PostgresStore(blank_url)
    assert [v for v, _, _ in migration_rows(blank_url)] == [
        m.version for m in load_migrations("postgres")
    ]
    assert query(blank_url, "SELECT to_regclass('half_done')") == [(None,)]
    monkeypatch.undo()
    PostgresStore(blank_url).close()  # the good migrations still open the database


def test_the_schema_has_its_tables_types_and_unique_constraints(
    store: PostgresStore, url: str
) -> None:
    tables = {
        r[0] for r in query(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    }
    assert tables == {"schema_migrations", *TABLES}
    types = {
        (t, c): d
        for t, c, d in query(
            url,
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public'",
        )
    }
    assert types["notifications", "metadata"] == "jsonb"
    assert types["api_keys", "scopes"] == "ARRAY"
    assert types["devices", "is_active"] == "boolean"
    timestamps = {k for k, v in types.items() if v == "timestamp with time zone"}
    assert {("accounts", "created_at"), ("deliveries", "due_at"), ("streams", "deleted_at")} <= (
        timestamps
    )
    assert not {k for k, v in types.items() if v == "timestamp without time zone"}
    unique = {
        (t, tuple(cols))
        for t, cols in query(
            url,
            "SELECT c.conrelid::regclass::text, array_agg(a.attname ORDER BY k.n)"
            " FROM pg_constraint AS c, unnest(c.conkey) WITH ORDINALITY AS k(attnum, n),"
            " pg_attribute AS a WHERE c.contype = 'u' AND a.attrelid = c.conrelid"
            " AND c.connamespace = 'public'::regnamespace"
            " AND a.attnum = k.attnum GROUP BY c.oid, c.conrelid",
        )
    }
    assert unique == {
        ("api_keys", ("key_hash",)),
        ("devices", ("account_id", "token")),
        ("refresh_tokens", ("token_hash",)),
        ("inbox", ("notification_id", "account_id")),
        ("streams", ("code",)),
        ("subscriptions", ("account_id", "stream_id")),
    }


# Types


def test_times_keep_their_microseconds_and_come_back_in_utc(store: PostgresStore, url: str) -> None:
    exact = datetime(2026, 11, 21, 10, 15, 30, 123456, tzinfo=UTC)
    paris = timezone(timedelta(hours=1))
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, exact.astimezone(paris)))
        tx.api_keys.add(make_key(created_at=exact, last_used_at=exact + timedelta(microseconds=1)))
    assert query(url, "SELECT created_at FROM accounts") == [(exact,)]
    with store.read() as tx:
        account = tx.accounts.get("acc_a")
        key = tx.api_keys.get("acc_a", "key_01")
    assert account == Account("acc_a", Plan.FREE, exact)
    assert account is not None
    assert account.created_at.tzinfo is UTC
    assert key == make_key(created_at=exact, last_used_at=exact + timedelta(microseconds=1))


def test_a_naive_time_is_refused(store: PostgresStore) -> None:
    with pytest.raises(ValueError, match="naive"), store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0.replace(tzinfo=None)))
    with store.read() as tx:
        assert tx.accounts.get("acc_a") is None


def test_metadata_is_jsonb_and_round_trips(store: PostgresStore, url: str) -> None:
    metadata = {"build": "1.2.3", "émoji": '✅ "quoted" \\ back', "empty": ""}
    add_notifications(store, make_notification(metadata=metadata))
    assert query(url, "SELECT jsonb_typeof(metadata), metadata ->> 'build' FROM notifications") == [
        ("object", "1.2.3")
    ]
    with store.read() as tx:
        found = tx.notifications.get("acc_a", "ntf_01")
    assert found is not None
    assert found.metadata == metadata


def test_ids_sort_by_code_point_whatever_the_database_collation(pg_cluster: Cluster) -> None:
    # en-US collation would put dev_a before dev_B and ignore the underscore;
    # the memory store, SQLite and the paging cursor go by code point.
    name = "test_icu_collation"
    pg_cluster.admin(
        f"CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
    )
    store = PostgresStore(pg_cluster.url(name))
    try:
        ids = ["dev_a", "dev_B", "dev_1", "devZ"]
        with store.transaction() as tx:
            for device_id in ids:
                tx.devices.add(make_device(device_id))
        add_notifications(store, *(make_notification(f"ntf_{i}") for i in ("a", "B", "1")))
        with store.read() as tx:
            assert [d.id for d in tx.devices.list("acc_a")] == sorted(ids, reverse=True)
            page = tx.notifications.list("acc_a", None, 10, "ntf_a")
        assert [n.id for n in page] == ["ntf_B", "ntf_1"]
    finally:
        store.close()


def test_writing_inside_read_raises_and_writes_nothing(store: PostgresStore) -> None:
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), store.read() as tx:
        tx.devices.add(make_device("dev_01"))
    # The pooled connection is writable again once the read is over.
    with store.transaction() as tx:
        assert tx.devices.get("acc_a", "dev_01") is None
        tx.devices.add(make_device("dev_02"))
    with store.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_02"]


def test_a_read_is_one_snapshot(store: PostgresStore, url: str) -> None:
    with store.read() as tx:
        assert tx.devices.list("acc_a") == []
        other = PostgresStore(url)
        try:
            with other.transaction() as writer:
                writer.devices.add(make_device("dev_01"))
        finally:
            other.close()
        assert tx.devices.list("acc_a") == []
    with store.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_01"]


# Opening


def test_both_url_schemes_open_a_postgres_store(url: str) -> None:
    for scheme in ("postgresql://", "postgres://"):
        opened = open_store(url.replace("postgresql://", scheme), pool_size=2)
        try:
            assert isinstance(opened, PostgresStore)
            opened.ping()
        finally:
            opened.close()


def test_an_unreachable_server_is_a_config_error_naming_the_setting(pg_cluster: Cluster) -> None:
    nowhere = pg_cluster.url().replace("port=5432", "port=1")
    with pytest.raises(ConfigError, match=r"^PUSHCORE_DATABASE_URL: cannot connect to PostgreSQL"):
        open_store(nowhere)


def test_an_unknown_database_is_a_config_error(pg_cluster: Cluster) -> None:
    with pytest.raises(ConfigError, match=r'PUSHCORE_DATABASE_URL: .*"no_such_db" does not exist'):
        open_store(pg_cluster.url("no_such_db"))


def test_a_malformed_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="PUSHCORE_DATABASE_URL: invalid PostgreSQL URL"):
        open_store("postgresql://localhost/db?no_such_option=1")


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` fail
    with pytest.raises(ConfigError, match=r"PUSHCORE_DATABASE_URL: .*pushcore\[postgres\]"):
        open_store("postgresql://localhost/pushcore")


def test_ping_fails_once_closed(url: str) -> None:
    opened = PostgresStore(url)
    opened.ping()
    opened.close()
    with pytest.raises(psycopg.Error):
        opened.ping()


# Several writers at once


def warm_up(store: Store, connections: int) -> None:
    """Make the pool open ``connections`` connections, so that threads then run truly at once.

    A pool opens connections one by one as they are first needed: without
    this the first threads would take turns on the one connection it has.
    """
    barrier = threading.Barrier(connections)

    def hold(_: int) -> None:
        with store.read():
            barrier.wait(5)

    race(connections, hold)


def test_concurrent_claims_never_share_a_delivery(url: str) -> None:
    total = 600
    add_stores = PostgresStore(url)
    try:
        add_deliveries(
            add_stores,
            *(
                make_delivery(f"dlv_{i:04}", f"ntf_{i % 7}", f"dev_{i:04}", due_at=T0 - i * MINUTE)
                for i in range(total)
            ),
        )
        add_notifications(add_stores, *(make_notification(f"ntf_{i}") for i in range(7)))
    finally:
        add_stores.close()
    claimed: dict[int, list[str]] = {}
    # Connected before they are released together: connecting inside the race let the
    # first connected worker claim all 600 before the others had a connection.
    stores = [PostgresStore(url, pool_size=1) for _ in range(4)]
    for one in stores:
        with one.read() as tx:
            tx.deliveries.next_due_at()

    def claim_until_empty(worker: int) -> None:
        store = stores[worker]
        mine = claimed.setdefault(worker, [])
        while batch := claim(store, f"sched-{worker}", limit=25):
            mine += (d.id for d in batch)

    try:
        race(4, claim_until_empty)
    finally:
        for one in stores:
            one.close()
    everything = [i for ids in claimed.values() for i in ids]
    assert len(everything) == len(set(everything)) == total
    assert sum(1 for ids in claimed.values() if ids) >= 2  # they did run side by side


def test_a_claim_skips_what_another_open_claim_holds(store: PostgresStore, url: str) -> None:
    add_deliveries(store, *(make_delivery(f"dlv_{i}", due_at=T0 - i * MINUTE) for i in range(4)))
    other = PostgresStore(url)
    try:
        with store.transaction() as first:
            held = first.deliveries.claim_due(T0, "sched-a", T0 + MINUTE, 2)
            # Not committed yet: the second claim neither waits nor takes them.
            started = time.monotonic()
            second = claim(other, "sched-b")
            assert time.monotonic() - started < 2
        assert sorted(d.id for d in held) == ["dlv_2", "dlv_3"]
        assert sorted(d.id for d in second) == ["dlv_0", "dlv_1"]
    finally:
        other.close()


@pytest.fixture
def services(url: str, tmp_path: Path) -> Iterator[Services]:
    """Services on this test's database, with 8 pooled connections open and ready."""
    built = build_services(
        load_settings(env={}, data_dir=tmp_path, database_url=url, database_pool_size=8)
    )
    try:
        warm_up(built.store, 8)
        yield built
    finally:
        built.close()


def test_the_free_plan_limit_holds_under_eight_concurrent_creates(services: Services) -> None:
    outcomes: list[str] = []

    def create(i: int) -> None:
        try:
            asyncio.run(services.streams.create("acc_free", NewStream(name=f"stream {i}")))
            outcomes.append("created")
        except PlanLimit:
            outcomes.append("plan_limit")

    race(8, create)
    assert sorted(outcomes) == ["created"] * 3 + ["plan_limit"] * 5
    assert len(services.streams.list("acc_free")) == 3


def test_concurrent_registrations_of_one_token_make_one_device(services: Services) -> None:
    created: list[bool] = []
    request = NewDevice(token="a1b2c3d4" * 8, platform=Platform.IOS)
    race(8, lambda _: created.append(services.devices.register("acc_a", request).created))
    assert sorted(created) == [False] * 7 + [True]
    assert len(services.devices.list("acc_a")) == 1


def test_the_last_two_deliveries_settled_at_once_settle_the_notification(
    store: PostgresStore, url: str
) -> None:
    add_notifications(store, make_notification())
    add_deliveries(
        store,
        in_flight(make_delivery("dlv_01", device_id="dev_01"), "sched-a", T0 + MINUTE),
        in_flight(make_delivery("dlv_02", device_id="dev_02"), "sched-b", T0 + MINUTE),
    )
    other = PostgresStore(url)
    first_done, second_started = threading.Event(), threading.Event()

    def settle(target: PostgresStore, delivery_id: str, owner: str) -> None:
        with target.transaction() as tx:
            assert tx.deliveries.settle(delivery_id, owner, D.DELIVERED, None, T0)
            # As the engine records a batch: refresh what it claimed, then reconcile.
            reconcile(tx, tx.notifications.refresh([make_notification()], for_update=True), T0)
            if owner == "sched-a":
                # Stay uncommitted while the other settles: without the
                # notification lock each would see the other's delivery as open.
                first_done.set()
                second_started.wait(5)
                time.sleep(0.3)

    def second() -> None:
        first_done.wait(5)
        second_started.set()
        settle(other, "dlv_02", "sched-b")

    worker = threading.Thread(target=second)
    worker.start()
    try:
        settle(store, "dlv_01", "sched-a")
    finally:
        worker.join()
        other.close()
    with store.read() as tx:
        settled = tx.notifications.get("acc_a", "ntf_01")
    assert settled is not None
    assert settled.status is N.DELIVERED


def test_a_cancel_waits_for_a_claim_under_way_and_then_refuses(
    services: Services, store: PostgresStore
) -> None:
    add_notifications(store, make_notification(scheduled_at=T0))
    add_deliveries(store, make_delivery())
    outcome: list[str] = []
    claimed = threading.Event()

    def cancel() -> None:
        claimed.wait(5)
        try:
            services.notifications.cancel("acc_a", "ntf_01")
            outcome.append("cancelled")
        except NotCancellable:
            outcome.append("not_cancellable")

    worker = threading.Thread(target=cancel)
    worker.start()
    with store.transaction() as tx:
        assert [d.id for d in tx.deliveries.claim_due(T0, "sched-a", T0 + MINUTE, 10)] == ["dlv_01"]
        claimed.set()
        time.sleep(0.3)  # the cancel is now waiting for this claim
    worker.join()
    assert outcome == ["not_cancellable"]


def test_a_claim_leaves_alone_the_deliveries_of_a_notification_being_cancelled(
    store: PostgresStore, url: str
) -> None:
    add_notifications(store, make_notification(), make_notification("ntf_02"))
    add_deliveries(
        store, make_delivery("dlv_01"), make_delivery("dlv_02", "ntf_02", due_at=T0 - MINUTE)
    )
    other = PostgresStore(url)
    try:
        with store.transaction() as cancelling:
            assert cancelling.notifications.get("acc_a", "ntf_01", for_update=True) is not None
            assert [d.id for d in claim(other, "sched-b")] == ["dlv_02"]
            cancelling.schedule.cancel_unsent("ntf_01", "cancelled")
        assert claim(other, "sched-b") == []
    finally:
        other.close()
