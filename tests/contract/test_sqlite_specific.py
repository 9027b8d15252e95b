"""What only the SQLite store promises: durability, migrations, WAL, locking, threads."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from pushcore.domain.model import Account, Plan
from pushcore.domain.states import NotificationStatus
from pushcore.storage.records import TABLES
from pushcore.storage.sqlite import Migration, SqliteStore, load_migrations, split_statements
from pushcore.storage.sqlite import store as sqlite_module
from tests.contract.test_queue_contract import add_notifications, make_notification
from tests.contract.test_store_contract import T0, make_device, make_key
from tests.contract.threads import race


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Where the database file goes."""
    return tmp_path / "pushcore.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    """An open SQLite store at ``path``."""
    opened = SqliteStore(path)
    yield opened
    opened.close()


def migration_rows(path: Path) -> list[tuple[int, str, str]]:
    """``schema_migrations`` as (version, name, applied_at), read without the store."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
    return [(int(v), str(n), str(a)) for v, n, a in rows]


def test_data_survives_a_restart(path: Path) -> None:
    first = SqliteStore(path)
    with first.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.PRO, T0))
        tx.api_keys.add(make_key())
        tx.devices.add(make_device())
    first.close()
    second = SqliteStore(path)
    try:
        with second.read() as tx:
            assert tx.accounts.get("acc_a") == Account("acc_a", Plan.PRO, T0)
            assert tx.api_keys.get("acc_a", "key_01") == make_key()
            assert tx.devices.get("acc_a", "dev_01") == make_device()
    finally:
        second.close()


def test_the_parent_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "not" / "yet" / "there.db"
    SqliteStore(path).close()
    assert path.is_file()


def test_migrations_are_recorded_once(path: Path) -> None:
    SqliteStore(path).close()
    recorded = migration_rows(path)
    assert [(v, n) for v, n, _ in recorded] == [
        (m.version, m.name) for m in load_migrations("sqlite")
    ]
    assert recorded[0][:2] == (1, "initial")
    assert datetime.fromisoformat(recorded[0][2]).tzinfo == UTC
    SqliteStore(path).close()
    assert migration_rows(path) == recorded


def test_processes_starting_together_apply_each_migration_once(path: Path) -> None:
    # Separate stores have separate connections, which SQLite locks exactly
    # as it would separate processes.
    opened: list[SqliteStore] = []
    race(4, lambda _: opened.append(SqliteStore(path)))
    for each in opened:
        each.close()
    assert [v for v, _, _ in migration_rows(path)] == [m.version for m in load_migrations("sqlite")]


def test_a_failing_migration_leaves_no_trace(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = Migration(99, "broken", "CREATE TABLE half_done (x);\nINSERT INTO nowhere VALUES (1);")
    monkeypatch.setattr(
        sqlite_module, "load_migrations", lambda _dialect: [*load_migrations("sqlite"), broken]
    )
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        SqliteStore(path)
    assert [v for v, _, _ in migration_rows(path)] == [m.version for m in load_migrations("sqlite")]
    assert "half_done" not in sqlite_utils.Database(path).table_names()
    monkeypatch.undo()
    SqliteStore(path).close()  # the good migrations still open the database


def test_the_schema_has_its_tables_and_indexes(store: SqliteStore, path: Path) -> None:
    db = sqlite_utils.Database(path)
    # sqlite_sequence: SQLite's own, kept for the inbox's AUTOINCREMENT numbers.
    assert set(db.table_names()) == {"schema_migrations", "sqlite_sequence", *TABLES}
    key_indexes = {tuple(i.columns): i.unique for i in db.table("api_keys").indexes}
    assert key_indexes[("key_hash",)] == 1
    assert key_indexes[("account_id", "id")] == 0
    device_indexes = {tuple(i.columns): i.unique for i in db.table("devices").indexes}
    assert device_indexes[("account_id", "token")] == 1
    assert device_indexes[("account_id", "id")] == 0


def test_wal_mode_is_on(store: SqliteStore, path: Path) -> None:
    assert sqlite_utils.Database(path).journal_mode == "wal"


def test_times_are_stored_as_utc_milliseconds(store: SqliteStore, path: Path) -> None:
    created = datetime(2026, 11, 21, 10, 15, 30, 123456, tzinfo=UTC)
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, created))
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT created_at FROM accounts").fetchone()
    assert raw == int(T0.timestamp() * 1000) == 1_795_256_130_123
    with store.read() as tx:
        # Sub-millisecond digits are cut, not rounded: the contract is milliseconds.
        assert tx.accounts.get("acc_a") == Account("acc_a", Plan.FREE, T0)


def test_unset_fields_are_stored_as_sql_null(store: SqliteStore, path: Path) -> None:
    # The store binds None and bools through adapters of its own (for speed): still SQL
    # NULL and the integers 1 and 0, in a batch's rows as in one's, and read back as were.
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0))
        tx.notifications.add(make_notification("ntf_1"))
        tx.notifications.add_many(
            [make_notification("ntf_2"), make_notification("ntf_3", renotify=False)]
        )
    with sqlite3.connect(path) as conn:
        kinds = conn.execute(
            "SELECT typeof(sender_name), typeof(custom_delay), typeof(settled_at), count(*)"
            " FROM notifications GROUP BY 1, 2, 3"
        ).fetchall()
        unset = conn.execute("SELECT count(*) FROM notifications WHERE sender_name IS NULL")
        assert unset.fetchone() == (3,)
        flags = conn.execute("SELECT id, renotify, typeof(renotify) FROM notifications")
        assert sorted(flags.fetchall()) == [
            ("ntf_1", 1, "integer"),
            ("ntf_2", 1, "integer"),
            ("ntf_3", 0, "integer"),
        ]
    assert kinds == [("null", "null", "null", 3)]
    with store.read() as tx:
        stored = tx.notifications.get("acc_a", "ntf_2")
        quiet = tx.notifications.get("acc_a", "ntf_3")
    assert stored is not None
    assert quiet is not None
    assert (stored.sender_name, stored.custom_delay, stored.settled_at) == (None, None, None)
    assert (stored.renotify, quiet.renotify) == (True, False)


def test_a_naive_time_is_refused(store: SqliteStore) -> None:
    with pytest.raises(ValueError, match="naive"), store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0.replace(tzinfo=None)))
    with store.read() as tx:
        assert tx.accounts.get("acc_a") is None


def test_writing_inside_read_raises_and_writes_nothing(store: SqliteStore) -> None:
    with pytest.raises(sqlite3.OperationalError, match="readonly"), store.read() as tx:
        tx.devices.add(make_device("dev_01"))
    # The connection is writable again once the read is over.
    with store.transaction() as tx:
        assert tx.devices.get("acc_a", "dev_01") is None
        tx.devices.add(make_device("dev_02"))
    with store.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_02"]


def test_concurrent_writers_all_succeed(store: SqliteStore) -> None:
    def write_fifty(thread: int) -> None:
        for i in range(50):
            with store.transaction() as tx:
                tx.devices.add(make_device(f"dev_{thread}_{i:02}"))

    race(2, write_fifty)
    with store.read() as tx:
        assert len(tx.devices.list("acc_a")) == 100


def test_a_writer_waits_for_the_write_lock_instead_of_failing(store: SqliteStore) -> None:
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with store.transaction() as tx:
            tx.devices.add(make_device("dev_01"))
            locked.set()
            release.wait(timeout=5)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        assert locked.wait(timeout=5)
        threading.Timer(0.3, release.set).start()
        with store.transaction() as tx:  # blocks in BEGIN IMMEDIATE until the holder commits
            assert tx.devices.get("acc_a", "dev_01") == make_device("dev_01")
            tx.devices.add(make_device("dev_02"))
    finally:
        release.set()
        holder.join()
    with store.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_02", "dev_01"]


def test_writers_of_two_stores_queue_on_the_writer_lock_not_on_sqlite(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two stores on one file, as two processes have: the second writer waits
    # longer than SQLite's own busy timeout (made short here) and still gets
    # in, because it waits on the writers' flock, not in SQLite's busy handler.
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT_MS", 50)
    first, second = SqliteStore(path), SqliteStore(path)
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with first.transaction() as tx:
            tx.devices.add(make_device("dev_01"))
            locked.set()
            release.wait(timeout=5)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        assert locked.wait(timeout=5)
        threading.Timer(0.5, release.set).start()
        started = time.monotonic()
        with second.transaction() as tx:
            assert time.monotonic() - started >= 0.4  # it did wait for the holder
            assert tx.devices.get("acc_a", "dev_01") == make_device("dev_01")
            tx.devices.add(make_device("dev_02"))
    finally:
        release.set()
        holder.join()
        first.close()
    with second.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_02", "dev_01"]
    second.close()
    assert (path.parent / "pushcore.db-writer").stat().st_mode & 0o777 == 0o600


def test_close_releases_connections_of_every_thread(path: Path) -> None:
    store = SqliteStore(path)
    worker = threading.Thread(target=store.ping)
    worker.start()
    worker.join()
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.ping()
    with pytest.raises(sqlite3.ProgrammingError):
        # A thread that never used the store cannot open a new connection either.
        race(1, lambda _: store.ping())


def test_split_statements_respects_quotes_comments_and_triggers() -> None:
    script = """
        -- a comment; with a semicolon
        CREATE TABLE t (x TEXT DEFAULT 'a;b');
        CREATE TRIGGER tr AFTER INSERT ON t BEGIN
            UPDATE t SET x = 'c;d'; DELETE FROM t WHERE x = ';';
        END;
        /* closing ; comment */
    """
    statements = split_statements(script)
    assert len(statements) == 3
    assert statements[0].startswith("-- a comment")
    assert statements[0].endswith("'a;b');")
    assert statements[1].startswith("CREATE TRIGGER tr")
    assert statements[1].endswith("END;")
    assert statements[2] == "/* closing ; comment */"
    conn = sqlite3.connect(":memory:")
    for statement in statements:
        conn.execute(statement)
    conn.close()


def test_the_wal_is_checkpointed_in_the_background(path: Path) -> None:
    store = SqliteStore(path)
    try:
        before = path.stat().st_size
        with store.transaction() as tx:
            for i in range(300):
                tx.devices.add(make_device(f"dev_{i:04}", token=f"token-{i}" + "x" * 200))
        deadline = time.monotonic() + 5
        while path.stat().st_size <= before and time.monotonic() < deadline:
            time.sleep(0.1)
        # Nothing here asked for a checkpoint, and autocheckpoint is off: the
        # store's own thread copied the WAL into the database file.
        assert path.stat().st_size > before
    finally:
        store.close()


def open_files(path: Path) -> int:
    """How many file descriptors of this process point at ``path``."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


def test_threads_that_come_and_go_open_no_more_connections(store: SqliteStore, path: Path) -> None:
    # Thread pools replace their idle threads; a connection per thread piled up
    # in a long-running server. The store lends its own connections instead.
    def read_once() -> None:
        with store.read() as tx:
            tx.accounts.get("acc_a")

    def churn() -> int:
        for _ in range(30):
            thread = threading.Thread(target=read_once)
            thread.start()
            thread.join()
        gc.collect()
        return open_files(path)

    # Later rounds reuse what the first opened (a checkpoint may be running
    # at the moment: a few more), not 30 new ones each.
    first = churn()
    churn()
    assert churn() <= first + 10
    with store.transaction() as tx:  # the store still works, and closes cleanly
        tx.accounts.ensure(Account("acc_a", Plan.FREE, datetime(2026, 1, 1, tzinfo=UTC)))


def test_close_waits_for_a_transaction_running_in_another_thread(path: Path) -> None:
    # An engine's roll-up thread can be mid-transaction when its process stops: closing
    # its connection under it crashed the interpreter (a segfault in sqlite3).
    store = SqliteStore(path)
    inside, finished = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def slow_write() -> None:
        try:
            with store.transaction() as tx:
                tx.accounts.add(Account("late", Plan.FREE, T0))
                inside.set()
                time.sleep(0.3)
                tx.accounts.get("late")
            finished.set()
        except BaseException as exc:  # pragma: no cover - what the test reports
            failures.append(exc)

    writer = threading.Thread(target=slow_write)
    writer.start()
    assert inside.wait(5)
    store.close()
    # close() returned only once the other thread's transaction had committed.
    assert finished.is_set()
    writer.join(5)
    assert failures == []
    reopened = SqliteStore(path)
    try:
        with reopened.read() as tx:
            assert tx.accounts.get("late") is not None
    finally:
        reopened.close()


def test_update_many_is_one_statement_whatever_the_count(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine's roll-up stores up to 128 notifications' states in one call. As an
    # executemany that was a step a row, and each step let the interpreter lock go: with
    # the event loop busy, each took up to 5 ms to get it back, while holding SQLite's one
    # writer (a roll-up held it 0.3-1.1 s during a burst; docs/benchmarks.md).
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    store = SqliteStore(path)
    try:
        ids = [f"ntf_{i:03}" for i in range(200)]
        add_notifications(store, *(make_notification(i) for i in ids))
        delivered = [
            make_notification(i, status=NotificationStatus.DELIVERED, settled_at=T0) for i in ids
        ]
        with store.transaction() as tx:
            statements.clear()
            tx.notifications.update_many(delivered)
            updates = [s for s in statements if s.lstrip().startswith("UPDATE notifications")]
        assert len(updates) == 1
        with store.read() as tx:
            assert list(tx.notifications.by_ids(ids)) == delivered
    finally:
        store.close()
