"""The SQLite store: one file, WAL mode, one connection per thread, versioned migrations."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from pushcore.storage.migrate import Migration, load_migrations, split_statements
from pushcore.storage.sqlite.queue import Deliveries, Notifications
from pushcore.storage.sqlite.repos import Accounts, ApiKeys, Devices


class Transaction:
    """The repositories of one transaction, sharing its connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.accounts = Accounts(conn)
        self.api_keys = ApiKeys(conn)
        self.devices = Devices(conn)
        self.notifications = Notifications(conn)
        self.deliveries = Deliveries(conn)


class SqliteStore:
    """A SQLite database file shared by threads and processes (WAL, BEGIN IMMEDIATE)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._migrate(load_migrations("sqlite"))
        except BaseException:
            self.close()  # nobody else holds this store to close it
            raise

    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed store.")
            # isolation_level=None: the module must not open transactions
            # behind our back, we issue BEGIN ourselves. check_same_thread=False
            # only so close() may close other threads' connections; each
            # connection is otherwise used by its own thread alone.
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._connections.append(conn)
        conn.row_factory = sqlite3.Row
        try:
            # busy_timeout first: switching to WAL needs a lock another process may hold.
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL is durable across application crashes in WAL mode; only a power
            # loss can lose the last commits, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            # Off by default in SQLite; on, so that a foreign key a migration declares holds.
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            with self._lock:
                self._connections.remove(conn)
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        conn = self._connection()
        for migration in migrations:
            # The version is checked inside the write lock, so when two processes
            # start at once the second sees the first's work and skips it.
            with self._begin("BEGIN IMMEDIATE"):
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                applied = conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
                ).fetchone()
                if applied is not None:
                    continue
                for statement in split_statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at)"
                    " VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    (migration.version, migration.name),
                )

    @contextmanager
    def _begin(self, begin: str, *, read_only: bool = False) -> Iterator[Transaction]:
        conn = self._connection()
        if read_only:
            conn.execute("PRAGMA query_only = ON")
        try:
            conn.execute(begin)
            try:
                yield Transaction(conn)
                conn.execute("COMMIT")
            finally:
                # Still open here means the block raised or COMMIT failed; leaving
                # it open would make this thread's next BEGIN fail.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            if read_only:
                conn.execute("PRAGMA query_only = OFF")

    def transaction(self) -> AbstractContextManager[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        # IMMEDIATE takes the write lock up front, so a read-then-write inside the
        # block cannot fail half-way with SQLITE_BUSY; busy_timeout makes others wait.
        return self._begin("BEGIN IMMEDIATE")

    def read(self) -> AbstractContextManager[Transaction]:
        """A read-only snapshot; writing through it raises sqlite3.OperationalError."""
        return self._begin("BEGIN", read_only=True)

    def ping(self) -> None:
        """Raise if the database cannot be reached."""
        self._connection().execute("SELECT 1").fetchone()

    def close(self) -> None:
        """Close every connection this store opened, in any thread."""
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
