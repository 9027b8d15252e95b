"""The SQLite store: one file, WAL mode, a few connections each lent to one transaction at
a time, versioned migrations."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pushcore.domain.errors import Unavailable
from pushcore.storage.migrate import (
    Migration,
    apply_if_missing,
    load_migrations,
    packaged_versions,
)
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.transaction import Transaction
from pushcore.storage.sqlite.dialect import SQLITE
from pushcore.storage.sqlite.locks import FairLock, FileLock

# Python 3.11's sqlite3 binds None and bool slowly: they are not among the types it binds
# as they are, so each such parameter goes through the adapters' registry (a key tuple
# built, a miss) and then looks for ``__adapt__`` and ``__conform__``: about 0.5 µs a
# parameter. A notification row binds about 18 NULLs and a bool, a delivery row about 10
# NULLs: a third of a batch item's insert. With adapters that give the same value back
# in C (an empty dict's ``get`` gives None; ``int`` gives 1 or 0, what a bool is bound
# as anyway), the registry finds them at once and the stored values are as before.
# sqlite3's adapters are the process's: these change no value anyone binds, only how
# fast it is bound (docs/benchmarks.md, "Ingest": 11% fewer instructions a batch item).
_NULL: dict[None, None] = {}
sqlite3.register_adapter(type(None), _NULL.get)
sqlite3.register_adapter(bool, int)

CHECKPOINT_INTERVAL = 1.0
# A WAL longer than this (4 KiB pages: 16 MiB) is made to start over (see _checkpoints);
# one that grew past JOURNAL_SIZE_LIMIT is cut back to it when it does.
WAL_RESET_FRAMES = 4096
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
# How long a writer waits for this process's and the other processes' writers
# (FairLock, then FileLock, one deadline for both); and, again, how long SQLite
# itself waits for its lock (a writer that bypasses the flock, such as the
# sqlite3 shell or a backup; a reader while WAL mode is switched on) before
# "locked". So a transaction waits at most twice this for locks and then
# fails with Unavailable: well inside the 10 s in which API.md wants a 503,
# and far above what a write here holds the lock for (milliseconds).
LOCK_WAIT_SECONDS = 3.0
BUSY_TIMEOUT_MS = 3000


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, waiting out other connections that open the file at the same moment.

    The switch needs a lock for which SQLite may answer "database is locked"
    at once, without its busy handler, when another connection is opening or
    switching the same new file: a fresh data directory used by the server
    and pushctl together.
    """
    for attempt in range(100):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 99:
                raise
            time.sleep(0.05)


class SqliteStore:
    """A SQLite database file shared by threads and processes (WAL, BEGIN IMMEDIATE)."""

    def __init__(self, path: Path, *, remove_at_close: Path | None = None) -> None:
        self._path = path
        # memory:// stores live in a private temporary directory, gone at close.
        self._remove_at_close = remove_at_close
        self._lock = threading.Lock()
        # Told when a lent connection comes back: close() waits for those in use, as
        # closing one under another thread's statement crashes the interpreter.
        self._returned = threading.Condition(self._lock)
        self._lent = 0
        self._write_lock = FairLock()
        # Connections are the store's, lent to one transaction at a time, not
        # one per thread: thread pools replace idle threads (anyio's after 10 s),
        # and a connection per thread piled up (153 after 20 minutes of a soak,
        # each with its page cache, RSS rising 1.2 MB a minute; closing them with
        # their thread did not help, as SQLite keeps a closed connection's file
        # open while others hold locks on the file, which under load is always).
        self._connections: list[sqlite3.Connection] = []
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        self._stop = threading.Event()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer_fd = os.open(f"{path}-writer", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._file_lock = FileLock(self._writer_fd)
        try:
            with SQLITE.outages():
                if not self._migrated():
                    self._migrate(load_migrations("sqlite"))
        except BaseException:
            self.close()  # nobody else holds this store to close it
            raise
        self._checkpointer = threading.Thread(
            target=self._checkpoints, name="pushcore-checkpoint", daemon=True
        )
        self._checkpointer.start()

    def _checkpoints(self) -> None:
        """Copy the WAL back into the database once a second, and let it start over.

        The copy is PASSIVE, outside the writers' lock: it never blocks a
        writer. But SQLite starts the WAL file over only when a writer begins
        right after a checkpoint copied every frame, and under a steady load
        another commit nearly always comes in between: the WAL then grows
        without end (1 GB a minute at 200 creates/s). So once it is longer
        than WAL_RESET_FRAMES, a second PASSIVE copy (of the frames written
        meanwhile, a short one) runs under the writers' lock, and the next
        writer starts the file over.
        """
        while not self._stop.wait(CHECKPOINT_INTERVAL):
            try:
                self.checkpoint()
            except (sqlite3.Error, Unavailable):  # locked or full: the next second tries again
                if self._stop.is_set():
                    return

    def checkpoint(self) -> None:
        """One checkpoint, as the background thread runs them (see :meth:`_checkpoints`)."""
        with self._lease() as conn:
            _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if frames > WAL_RESET_FRAMES:
                with self._writer():
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed store.")
            # isolation_level=None: the module must not open transactions
            # behind our back, we issue BEGIN ourselves. check_same_thread=False:
            # a connection serves one transaction at a time, from any thread.
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._connections.append(conn)
        try:
            # busy_timeout first: switching to WAL needs a lock another process may hold.
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enable_wal(conn)
            # NORMAL is durable across application crashes in WAL mode; only a power
            # loss can lose the last commits, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            # Off by default in SQLite; on, so that a foreign key a migration declares holds.
            conn.execute("PRAGMA foreign_keys = ON")
            # Checkpoints run in a background thread (see _checkpoints): done by
            # whichever commit crosses the threshold, they put a file sync into
            # a scheduler claim now and then, a visible delay in delivery times.
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
        except BaseException:
            with self._lock:
                self._connections.remove(conn)
            conn.close()
            raise
        return conn

    @contextmanager
    def _lease(self) -> Iterator[sqlite3.Connection]:
        """A connection for the block alone: the one given back last (its cache warmest),
        or a new one when all are in use."""
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed store.")
            conn = self._idle.pop() if self._idle else None
            self._lent += 1
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        finally:
            with self._lock:
                self._lent -= 1
                self._returned.notify_all()
                # One left inside a transaction (its ROLLBACK failed) is not lent again.
                if conn is not None and not self._closed and not conn.in_transaction:
                    self._idle.append(conn)

    def _migrated(self) -> bool:
        """Whether every packaged migration is recorded: one read, no writer's lock, so that
        a command on an up-to-date database (a local pushctl send) starts without the
        migrator's transaction per migration."""
        with self._lease() as conn:
            try:
                rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
            except sqlite3.OperationalError:  # a new database: no such table yet
                return False
        return packaged_versions() <= {version for (version,) in rows}

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        with self._lease() as conn:
            for migration in migrations:
                with self._writer(), self._on(conn, "BEGIN IMMEDIATE"):
                    apply_if_missing(Sql(conn, SQLITE, writing=True), migration)

    @contextmanager
    def _begin(self, begin: str, *, read_only: bool = False) -> Iterator[Transaction]:
        with self._lease() as conn, self._on(conn, begin, read_only=read_only) as tx:
            yield tx

    @contextmanager
    def _on(
        self, conn: sqlite3.Connection, begin: str, *, read_only: bool = False
    ) -> Iterator[Transaction]:
        """A transaction on ``conn``: committed when the block ends, rolled back if it raises."""
        if read_only:
            conn.execute("PRAGMA query_only = ON")
        try:
            conn.execute(begin)
            try:
                tx = Transaction(conn, SQLITE, writing=not read_only)
                yield tx
                tx.finish()
                conn.execute("COMMIT")
            finally:
                # Still open here means the block raised or COMMIT failed; leaving
                # it open would make the connection's next BEGIN fail.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            if read_only:
                conn.execute("PRAGMA query_only = OFF")

    @contextmanager
    def transaction(self, *, urgent: bool = False) -> Iterator[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        Unavailable when the database stays locked past the lock waits or
        cannot write (a full disk, an I/O error).
        """
        # IMMEDIATE takes the write lock up front, so a read-then-write inside the
        # block cannot fail half-way with SQLITE_BUSY; busy_timeout makes other
        # processes wait. Threads of this process queue on a Python lock first:
        # SQLite's busy handler waits by sleeping (1, 2, 5, 10... ms), far longer
        # than a write here takes, so two threads contending through it would
        # each lose milliseconds per transaction.
        with SQLITE.outages(), self._writer(urgent), self._begin("BEGIN IMMEDIATE") as tx:
            yield tx

    @contextmanager
    def _writer(self, urgent: bool = False) -> Iterator[None]:
        """The writers' locks, held for a write transaction: this process's threads'
        (a FairLock), then the processes' (an flock on ``<db>-writer``), both taken
        within LOCK_WAIT_SECONDS, else Unavailable.

        Between processes SQLite's busy handler waits by sleeping (1, 2, 5, 10 ...
        100 ms) and trying again: with an API and workers writing all the time,
        those sleeps left a third of two cores idle. A writer blocked on the flock
        wakes as soon as the holder lets go. It holds only for one transaction,
        and the kernel releases it when its process dies; a writer that ignores
        it (the sqlite3 shell) is still kept out by SQLite's own lock.
        """
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        if not self._write_lock.acquire(LOCK_WAIT_SECONDS, urgent=urgent):
            raise _locked()
        try:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed store.")
            if not self._file_lock.acquire(max(0.0, deadline - time.monotonic())):
                raise _locked()
            try:
                yield
            finally:
                self._file_lock.release()
        finally:
            self._write_lock.release()

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        """A read-only snapshot; writing through it raises sqlite3.OperationalError."""
        with SQLITE.outages(), self._begin("BEGIN", read_only=True) as tx:
            yield tx

    def ping(self) -> None:
        """Raise Unavailable unless the database can be read and written now."""
        with self.transaction() as tx:
            tx.health.mark(datetime.now(UTC))

    def close(self) -> None:
        """Close every connection this store opened, in any thread."""
        self._stop.set()
        checkpointer = getattr(self, "_checkpointer", None)
        if checkpointer is not None and checkpointer is not threading.current_thread():
            checkpointer.join(5)
        with self._lock:
            already = self._closed
            self._closed = True
            # A transaction still running in another thread (an engine's roll-up at a
            # stop) ends first; one that does not within CLOSE_WAIT_SECONDS is cut off.
            self._returned.wait_for(lambda: self._lent == 0, CLOSE_WAIT_SECONDS)
            connections, self._connections, self._idle = self._connections, [], []
        for conn in connections:
            conn.close()
        if not already:
            self._file_lock.close()
            os.close(self._writer_fd)
            if self._remove_at_close is not None:
                shutil.rmtree(self._remove_at_close, ignore_errors=True)


CLOSE_WAIT_SECONDS = 5.0


def _locked() -> Unavailable:
    return Unavailable(
        f"The database is locked by another writer (waited {LOCK_WAIT_SECONDS:g} s);"
        " try again shortly"
    )


def temporary_store() -> SqliteStore:
    """The ``memory://`` store: SQLite in a private temporary directory, removed at close.

    The same SQL and rules as a file the user keeps; nothing outlives the store.
    """
    folder = Path(tempfile.mkdtemp(prefix="pushcore-memory-"))
    try:
        return SqliteStore(folder / "pushcore.db", remove_at_close=folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
