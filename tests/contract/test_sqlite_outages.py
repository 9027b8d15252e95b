"""SQLite outages: every wait for a lock is bounded, and what cannot be done is Unavailable.

The waits are made short here (the defaults are 3 s each); what is tested is
that they end, with Unavailable, and that nothing is left locked afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pushcore.domain.errors import Unavailable
from pushcore.storage.sqlite import SqliteStore
from pushcore.storage.sqlite import store as sqlite_module
from pushcore.storage.sqlite.dialect import SQLITE
from pushcore.storage.sqlite.locks import FileLock
from tests.contract.test_store_contract import make_device

WAIT = 0.3


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the database file goes; the stores opened on it wait WAIT for each lock."""
    monkeypatch.setattr(sqlite_module, "LOCK_WAIT_SECONDS", WAIT)
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT_MS", int(WAIT * 1000))
    return tmp_path / "pushcore.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(path)
    yield opened
    opened.close()


def add(store: SqliteStore, device_id: str) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device(device_id))


def listed(store: SqliteStore) -> list[str]:
    with store.read() as tx:
        return [d.id for d in tx.devices.list("acc_a")]


def test_a_write_lock_held_by_another_program_is_unavailable_and_reads_go_on(
    store: SqliteStore, path: Path
) -> None:
    add(store, "dev_01")
    holder = sqlite3.connect(path, isolation_level=None)  # the sqlite3 shell, a backup
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(Unavailable, match="locked"):
            add(store, "dev_02")
        assert time.monotonic() - started < 5 * WAIT
        assert listed(store) == ["dev_01"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    add(store, "dev_02")
    assert listed(store) == ["dev_02", "dev_01"]


@contextlib.contextmanager
def stuck_writer(store: SqliteStore) -> Iterator[Callable[[], None]]:
    """A thread holding a write transaction of ``store`` (it added dev_01) until the
    callable given, or the block's end, lets it go."""
    inside, release = threading.Event(), threading.Event()

    def stuck() -> None:
        with store.transaction() as tx:
            tx.devices.add(make_device("dev_01"))
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=stuck)
    holder.start()

    def let_go() -> None:
        release.set()
        holder.join()

    try:
        assert inside.wait(5)
        yield let_go
    finally:
        let_go()


def test_threads_queued_behind_a_stuck_writer_give_up_after_the_wait(store: SqliteStore) -> None:
    with stuck_writer(store):
        started = time.monotonic()
        with pytest.raises(Unavailable, match="locked"):
            add(store, "dev_02")
        assert WAIT * 0.9 <= time.monotonic() - started < 5 * WAIT
    add(store, "dev_02")  # the lock was handed on, not lost to the waiter that left
    assert listed(store) == ["dev_02", "dev_01"]


def test_a_writer_of_another_process_stuck_past_the_wait_is_unavailable(path: Path) -> None:
    # Two stores on one file, as two processes have: they meet on the writers' flock.
    first, second = SqliteStore(path), SqliteStore(path)
    try:
        with stuck_writer(first) as let_go:
            for _ in range(2):  # the second waiter after a first gave up too
                started = time.monotonic()
                with pytest.raises(Unavailable, match="locked"):
                    add(second, "dev_02")
                assert time.monotonic() - started < 5 * WAIT
            let_go()
            # Neither store is left locked out by a lock taken for a waiter that gave up.
            for n in range(3):
                add(second, f"dev_1{n}")
                add(first, f"dev_2{n}")
            assert len(listed(first)) == 7
    finally:
        first.close()
        second.close()


def test_a_file_lock_taken_for_a_caller_that_gave_up_goes_to_the_next_or_is_let_go(
    tmp_path: Path,
) -> None:
    name = tmp_path / "lock"
    # Two open files, as two processes have.
    fds = [os.open(name, os.O_RDWR | os.O_CREAT) for _ in range(2)]
    a, b = FileLock(fds[0]), FileLock(fds[1])
    assert a.acquire(1)
    assert not b.acquire(0.1)  # its helper now waits in flock()
    a.release()  # the helper gets it, with no one waiting: let go
    assert a.acquire(1)
    a.release()
    assert b.acquire(1)
    assert not a.acquire(0.1)
    b.release()
    assert a.acquire(1)
    a.release()
    for lock, fd in zip((a, b), fds, strict=True):
        lock.close()
        os.close(fd)


def test_a_full_database_and_a_locked_one_are_outages_a_bad_statement_is_not() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.execute("PRAGMA max_page_count = 3")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
    unavailable = SQLITE.unavailable(full.value)
    assert unavailable is not None
    assert "disk is full" in unavailable.message
    with pytest.raises(sqlite3.OperationalError) as bad:
        conn.execute("SELECT nothing FROM nowhere")
    assert SQLITE.unavailable(bad.value) is None
    assert SQLITE.unavailable(ValueError("not a driver error")) is None
