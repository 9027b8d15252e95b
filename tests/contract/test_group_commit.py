"""The group writer: many callers' writes in one transaction, answered only after its COMMIT.

Runs on SQLite and PostgreSQL (the ``store`` fixture). A store wrapper counts
transactions and can hold or fail a group just before its COMMIT.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from pushcore.domain.errors import NotFound, Unavailable
from pushcore.ports import Store, Together, Transaction
from pushcore.storage.group import GroupWriter
from tests.contract.test_queue_contract import make_notification
from tests.contract.test_store_contract import T0


class Watched:
    """A store whose write transactions are counted, and may be held or failed at COMMIT."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.transactions = 0
        self.at_commit = threading.Event()  # set when a group reached its COMMIT
        self.hold: threading.Event | None = None
        self.fail: Exception | None = None
        self.fail_begin: Exception | None = None

    @contextmanager
    def transaction(self, *, urgent: bool = False) -> Iterator[Transaction]:
        self.transactions += 1
        if self.fail_begin is not None:
            raise self.fail_begin
        with self.store.transaction(urgent=urgent) as tx:
            yield tx
            self.at_commit.set()
            if self.hold is not None:
                assert self.hold.wait(10)
            if self.fail is not None:
                raise self.fail

    def read(self) -> Any:
        return self.store.read()


def add(notification_id: str, account: str = "acc_a") -> Any:
    def work(tx: Transaction) -> str:
        tx.notifications.add(make_notification(notification_id, account, created_at=T0))
        return notification_id

    return work


def stored_ids(store: Store, account: str = "acc_a") -> set[str]:
    with store.read() as tx:
        return {n.id for n in tx.notifications.list(account, None, 1000, None)}


@pytest.fixture
def watched(store: Store) -> Watched:
    return Watched(store)


@pytest.fixture
def writer(watched: Watched) -> Iterator[GroupWriter]:
    # No time bound to speak of: these tests count groups on a busy machine.
    writer = GroupWriter(watched, max_group_seconds=10)  # type: ignore[arg-type]
    yield writer
    watched.hold = None
    writer.close()


def test_concurrent_writes_share_one_transaction(watched: Watched, writer: GroupWriter) -> None:
    watched.hold = threading.Event()
    first = writer.submit(add("ntf_first"))
    assert watched.at_commit.wait(5)  # the writer is busy with a group of one
    rest = [writer.submit(add(f"ntf_{i:02}")) for i in range(30)]
    watched.hold.set()
    assert first.result(5) == "ntf_first"
    assert [f.result(5) for f in rest] == [f"ntf_{i:02}" for i in range(30)]
    # The first alone, then the 30 that queued meanwhile: two transactions, not 31.
    assert watched.transactions == 2
    assert len(stored_ids(watched.store)) == 31


def test_no_caller_is_answered_before_the_commit(watched: Watched, writer: GroupWriter) -> None:
    watched.hold = threading.Event()
    futures = [writer.submit(add(f"ntf_{i}")) for i in range(5)]
    assert watched.at_commit.wait(5)
    time.sleep(0.1)
    assert not any(f.done() for f in futures)
    assert stored_ids(watched.store) == set()  # not committed, not visible
    watched.hold.set()
    assert {f.result(5) for f in futures} <= stored_ids(watched.store)


def test_a_failed_commit_fails_every_caller_of_the_group(
    watched: Watched, writer: GroupWriter
) -> None:
    watched.hold = threading.Event()
    futures = [writer.submit(add(f"ntf_{i}")) for i in range(5)]
    assert watched.at_commit.wait(5)
    watched.fail = OSError("disk full")
    watched.hold.set()
    for future in futures:
        with pytest.raises(OSError, match="disk full"):
            future.result(5)
    assert stored_ids(watched.store) == set()
    # The writer goes on with the next group.
    watched.fail = watched.hold = None
    assert writer.run(add("ntf_after")) == "ntf_after"
    assert stored_ids(watched.store) == {"ntf_after"}


def test_an_unavailable_database_fails_every_waiting_caller_at_once(
    watched: Watched, writer: GroupWriter
) -> None:
    # Each next group would wait out the store's bound again: the callers queued
    # behind a group that found the database unavailable hear so with it.
    watched.hold = threading.Event()
    first = writer.submit(add("ntf_first"))
    assert watched.at_commit.wait(5)
    waiting = [writer.submit(add(f"ntf_{i:03}")) for i in range(100)]  # more than a group
    watched.fail = Unavailable("The database is locked by another writer")
    watched.hold.set()
    for future in [first, *waiting]:
        with pytest.raises(Unavailable, match="locked"):
            future.result(5)
    # One transaction tried, not one per group of waiting callers.
    assert watched.transactions == 1
    assert stored_ids(watched.store) == set()
    watched.fail = watched.hold = None
    assert writer.run(add("ntf_after")) == "ntf_after"


def test_a_group_that_cannot_begin_fails_its_callers_and_the_writer_goes_on(
    watched: Watched, writer: GroupWriter
) -> None:
    watched.fail_begin = OSError("database is locked")
    with pytest.raises(OSError, match="locked"):
        writer.run(add("ntf_0"))
    watched.fail_begin = None
    assert writer.run(add("ntf_1")) == "ntf_1"
    assert stored_ids(watched.store) == {"ntf_1"}


def test_a_failing_work_is_undone_alone(watched: Watched, writer: GroupWriter) -> None:
    def half_then_fail(tx: Transaction) -> None:
        tx.notifications.add(make_notification("ntf_half", created_at=T0))
        raise NotFound("no such device")

    watched.hold = threading.Event()
    blocker = writer.submit(add("ntf_0"))
    assert watched.at_commit.wait(5)
    futures = [writer.submit(add("ntf_1")), writer.submit(half_then_fail)]
    futures.append(writer.submit(add("ntf_2")))
    watched.hold.set()
    blocker.result(5)
    assert futures[0].result(5) == "ntf_1"
    with pytest.raises(NotFound):
        futures[1].result(5)
    assert futures[2].result(5) == "ntf_2"
    assert stored_ids(watched.store) == {"ntf_0", "ntf_1", "ntf_2"}
    # It wrote before it failed: the group was rolled back and run again, each
    # work in a savepoint (the first group, then the two runs of the second).
    assert watched.transactions == 3
    # Its counts went with it: the stats count exactly the three kept.
    with watched.store.read() as tx:
        stats = tx.notifications.stats("acc_a", T0)
    assert stats.by_status["QUEUED"] == 3
    assert stats.created_24h == 3


def _group_around(watched: Watched, writer: GroupWriter, bad: Any) -> list[Any]:
    """ntf_0 alone, then ntf_1, ntf_2 and ``bad`` (the last: nothing after it to fail) in
    one group; their futures."""
    watched.hold = threading.Event()
    blocker = writer.submit(add("ntf_0"))
    assert watched.at_commit.wait(5)
    futures = [writer.submit(add("ntf_1")), writer.submit(add("ntf_2")), writer.submit(bad)]
    watched.hold.set()
    blocker.result(5)
    return futures


def test_a_work_refused_before_it_wrote_is_left_out_in_the_same_transaction(
    watched: Watched, writer: GroupWriter
) -> None:
    def refuse(tx: Transaction) -> None:
        tx.notifications.get("acc_a", "ntf_none")
        raise NotFound("no such notification")

    futures = _group_around(watched, writer, refuse)
    assert [futures[0].result(5), futures[1].result(5)] == ["ntf_1", "ntf_2"]
    with pytest.raises(NotFound):
        futures[2].result(5)
    assert stored_ids(watched.store) == {"ntf_0", "ntf_1", "ntf_2"}
    # Nothing to undo: the group is not run a second time.
    assert watched.transactions == 2


def test_a_work_whose_statement_failed_is_undone_alone(
    watched: Watched, writer: GroupWriter
) -> None:
    # A statement that fails spoils a PostgreSQL transaction, even when the work
    # turns the driver's error into one of its own before writing anything.
    def fail_then_refuse(tx: Transaction) -> None:
        try:
            # A negative LIMIT: PostgreSQL refuses it (SQLite reads it as no limit).
            tx.notifications.list("acc_a", None, -1, None)
            tx.notifications.add(make_notification("ntf_x", created_at=T0, title=None))
        except Exception:
            raise NotFound("nothing to list") from None

    futures = _group_around(watched, writer, fail_then_refuse)
    assert [futures[0].result(5), futures[1].result(5)] == ["ntf_1", "ntf_2"]
    with pytest.raises(NotFound):
        futures[2].result(5)
    assert stored_ids(watched.store) == {"ntf_0", "ntf_1", "ntf_2"}


def test_a_work_whose_insert_fails_with_the_groups_is_undone_alone(
    watched: Watched, writer: GroupWriter
) -> None:
    # The group's new rows go in together at its end: one of them taken fails them all,
    # and the group runs again, each work alone, so only the one it was fails.
    futures = _group_around(watched, writer, add("ntf_0"))
    assert [futures[0].result(5), futures[1].result(5)] == ["ntf_1", "ntf_2"]
    with pytest.raises(KeyError):
        futures[2].result(5)
    assert stored_ids(watched.store) == {"ntf_0", "ntf_1", "ntf_2"}
    with watched.store.read() as tx:
        assert tx.notifications.stats("acc_a", T0).created_24h == 3


def test_the_groups_held_inserts_take_no_savepoint_of_their_own(
    watched: Watched, writer: GroupWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On PostgreSQL a savepoint around an insert is two more round trips (SAVEPOINT,
    # RELEASE) for each kind of row in every group. The held inserts need none: when
    # they fail, the group runs again, each work in a savepoint of the writer's and
    # inserting alone, and there a taken id is the KeyError of its own work.
    with watched.store.read() as tx:
        dialect = type(tx._sql.dialect)  # type: ignore[attr-defined]
    keys: list[str] = []
    original = dialect.duplicate_as_key_error

    def counted(self: Any, conn: Any, key: str) -> Any:
        keys.append(key)
        return original(self, conn, key)

    monkeypatch.setattr(dialect, "duplicate_as_key_error", counted)
    futures = _group_around(watched, writer, add("ntf_3"))
    assert [f.result(5) for f in futures] == ["ntf_1", "ntf_2", "ntf_3"]
    assert keys == []
    watched.hold = threading.Event()
    # Again around a work whose id is taken (ntf_1): the group runs again, savepoints.
    watched.at_commit.clear()
    blocker = writer.submit(add("ntf_4"))
    assert watched.at_commit.wait(5)
    futures = [writer.submit(add("ntf_5")), writer.submit(add("ntf_1"))]
    watched.hold.set()
    blocker.result(5)
    assert futures[0].result(5) == "ntf_5"
    with pytest.raises(KeyError):
        futures[1].result(5)
    assert keys == []
    assert stored_ids(watched.store) == {f"ntf_{i}" for i in range(6)}


def test_a_groups_new_notifications_go_in_with_one_statement(
    watched: Watched, writer: GroupWriter
) -> None:
    statements: list[str] = []

    traced_conn: list[Any] = []

    def traced(tx: Transaction) -> None:
        conn = tx._sql.conn  # type: ignore[attr-defined]
        if hasattr(conn, "set_trace_callback"):
            conn.set_trace_callback(statements.append)
            traced_conn.append(conn)

    watched.hold = threading.Event()
    blocker = writer.submit(add("ntf_0"))
    assert watched.at_commit.wait(5)
    futures = [writer.submit(traced)] + [writer.submit(add(f"ntf_{i}")) for i in range(1, 6)]
    watched.hold.set()
    blocker.result(5)
    assert [f.result(5) for f in futures[1:]] == [f"ntf_{i}" for i in range(1, 6)]
    assert stored_ids(watched.store) == {f"ntf_{i}" for i in range(6)}
    if statements:  # SQLite: every statement the group ran is seen
        first = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO notif"))
        # Held to the group's end, then one executemany: a step per row, nothing between.
        assert all(s.startswith("INSERT INTO notifications") for s in statements[first:][:5])
        assert statements[first + 5].startswith("INSERT INTO notification_counts")
        assert not any("SAVEPOINT" in s for s in statements)
        traced_conn[0].set_trace_callback(None)


def test_groups_are_bounded_in_works_and_in_time(watched: Watched) -> None:
    writer = GroupWriter(watched, max_group=8, max_group_seconds=0.05)  # type: ignore[arg-type]
    try:
        watched.hold = threading.Event()
        writer.submit(add("ntf_first"))
        assert watched.at_commit.wait(5)
        futures = [writer.submit(add(f"ntf_{i:02}")) for i in range(20)]
        watched.hold.set()
        for f in futures:
            f.result(5)
        watched.hold = None
        assert watched.transactions == 1 + 3  # 20 in groups of at most 8

        def slow(tx: Transaction) -> None:
            time.sleep(0.06)

        watched.transactions = 0
        watched.at_commit.clear()
        watched.hold = threading.Event()
        writer.submit(add("ntf_block"))
        assert watched.at_commit.wait(5)
        futures = [writer.submit(slow), *(writer.submit(add(f"ntf_s{i}")) for i in range(3))]
        watched.hold.set()
        for f in futures:
            f.result(5)
        # The slow work used up its group's time: the rest went in the next.
        assert watched.transactions == 3
    finally:
        watched.hold = None
        writer.close()


def test_a_round_of_works_of_one_kind_is_prepared_once_and_never_cut(watched: Watched) -> None:
    # No time at all: every group is cut after its first work, but for a round.
    writer = GroupWriter(watched, max_group_seconds=0)  # type: ignore[arg-type]
    prepared: list[list[str]] = []

    def prepare(tx: Transaction, keys: Sequence[Any]) -> None:
        prepared.append(list(keys))

    try:
        watched.hold = threading.Event()
        writer.submit(add("ntf_first"))
        assert watched.at_commit.wait(5)
        keys = ["a", "b", "a", "c"]
        futures = [
            writer.submit(add(f"ntf_{i}"), Together(prepare, key)) for i, key in enumerate(keys)
        ]
        watched.hold.set()
        assert [f.result(5) for f in futures] == [f"ntf_{i}" for i in range(4)]
        watched.hold = None
        # "a" again in a second round, which the time bound carried to a group of its own.
        assert prepared == [["a", "b", "c"], ["a"]]
        assert watched.transactions == 1 + 2
    finally:
        watched.hold = None
        writer.close()


def test_other_writers_get_the_lock_between_groups(store: Store) -> None:
    """A steady stream of groups never keeps another writer (the engine's claim) out."""
    writer = GroupWriter(store)
    stop, flooding = threading.Event(), threading.Event()

    def flood() -> None:
        n = 0
        while not stop.is_set():
            futures = [writer.submit(add(f"ntf_{n + i:06}")) for i in range(50)]
            n += 50
            futures[-1].result(5)
            flooding.set()  # groups are committing one after another

    flooder = threading.Thread(target=flood)
    flooder.start()
    try:
        assert flooding.wait(5)
        waits = []
        for _ in range(20):
            asked = time.monotonic()
            with store.transaction():
                waits.append(time.monotonic() - asked)
    finally:
        stop.set()
        flooder.join()
        writer.close()
    # Each waited for at most a group or so (a group is bounded to 5 ms of work);
    # a second would mean it waited behind the stream.
    assert max(waits) < 1.0, waits


def test_a_work_cancelled_before_it_ran_stores_nothing(
    watched: Watched, writer: GroupWriter
) -> None:
    watched.hold = threading.Event()
    writer.submit(add("ntf_0"))
    assert watched.at_commit.wait(5)
    gone = writer.submit(add("ntf_gone"))
    assert gone.cancel()
    watched.hold.set()
    assert writer.run(add("ntf_1")) == "ntf_1"
    assert stored_ids(watched.store) == {"ntf_0", "ntf_1"}


def test_event_loop_callers_await_their_commit(writer: GroupWriter, watched: Watched) -> None:
    async def main() -> list[str]:
        return list(
            await asyncio.gather(*(writer.submit_async(add(f"ntf_{i}")) for i in range(40)))
        )

    assert asyncio.run(main()) == [f"ntf_{i}" for i in range(40)]
    assert len(stored_ids(watched.store)) == 40
    assert watched.transactions < 40


def test_close_commits_what_was_submitted(watched: Watched) -> None:
    writer = GroupWriter(watched)  # type: ignore[arg-type]
    futures = [writer.submit(add(f"ntf_{i}")) for i in range(10)]
    writer.close()
    assert all(f.done() for f in futures)
    assert len(stored_ids(watched.store)) == 10
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit(add("ntf_late"))
