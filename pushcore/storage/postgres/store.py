"""The PostgreSQL store: a connection pool, READ COMMITTED writers with row locks, migrations.

Unlike SQLite, writers here run at once, in every thread of every process;
where a transaction reads and then writes on what it read, it declares a
lock intent (``tx.locks``, ``for_update``) that this store takes as row or
advisory locks, so a read-then-write is safe without a global write lock,
and schedulers in several processes claim deliveries side by side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import IsolationLevel
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from pushcore.storage.migrate import Migration, apply_if_missing, load_migrations
from pushcore.storage.postgres.bounds import Breaker, Watch, Watchdog
from pushcore.storage.postgres.dialect import POSTGRES
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.transaction import MIGRATION_LOCK, Transaction

Connection = psycopg.Connection[tuple[Any, ...]]
POOL_SIZE = 10
# The bounds that make an outage a prompt 503 (API.md: an answer within 10 s;
# /readyz ready again within 5 s of the database's return), each far above
# what the service's statements take (milliseconds; a fan-out to 100,000
# devices, 0.4 s). In seconds:
CONNECT_TIMEOUT = 3  # a new connection (libpq's own default is to wait for ever)
POOL_WAIT = 3.0  # a free connection from the pool
STATEMENT_TIMEOUT = 5.0  # a statement, and a lock wait in it (server side) ...
LOCK_TIMEOUT = 3.0
TRANSACTION_DEADLINE = 6.0  # ... and a whole transaction, client side (a frozen server)
# psycopg_pool retries a failed connection with a backoff that doubles (1, 2,
# 4 ... s) for reconnect_timeout (5 minutes by default): after a long outage
# its next try came up to a minute after the server was back. Giving up after
# 2 s lets the next request that needs a connection start a fresh try at once.
RECONNECT_TIMEOUT = 2.0


def connection_info(url: str) -> str:
    """``url`` as libpq connection parameters, with pushcore's defaults where it sets none."""
    params = conninfo_to_dict(url)
    params.setdefault("connect_timeout", CONNECT_TIMEOUT)
    params.setdefault("application_name", "pushcore")
    return make_conninfo("", **params)


def _configure(conn: Connection) -> None:
    # timestamptz values come back in the session's zone: UTC, as the domain keeps them.
    # The timeouts end a statement that waits on a lock or runs away while the
    # server still answers, with an error that leaves the connection usable.
    conn.execute(
        f"SET TIME ZONE 'UTC'; SET statement_timeout = {int(STATEMENT_TIMEOUT * 1000)};"
        f" SET lock_timeout = {int(LOCK_TIMEOUT * 1000)}"
    )


class PostgresStore:
    """A PostgreSQL database shared by threads and processes, through a connection pool."""

    def __init__(self, url: str, pool_size: int = POOL_SIZE) -> None:
        self._conninfo = connection_info(url)
        # A connection of its own first: it reports an unreachable server or a
        # refused login with libpq's own message, where a pool would only time
        # out; and the schema is ready before any pooled connection is used.
        with psycopg.connect(self._conninfo, autocommit=True) as conn:
            migrate(conn, load_migrations("postgres"))
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            configure=_configure,
            name="pushcore",
            timeout=POOL_WAIT,
            reconnect_timeout=RECONNECT_TIMEOUT,
            open=True,
        )
        self._watchdog = Watchdog(TRANSACTION_DEADLINE)
        self._breaker = Breaker()

    @contextmanager
    def _begin(self, *, writing: bool) -> Iterator[Transaction]:
        with POSTGRES.outages(), self._breaker.admit(), self._connection() as conn:
            # Set on the connection and sent with BEGIN: no extra round trip.
            # Writers need READ COMMITTED whatever the server's default: after
            # waiting for a lock, each statement must see what its holder
            # committed. Reads get one snapshot for the whole block, as on SQLite.
            conn.read_only = not writing
            conn.isolation_level = (
                IsolationLevel.READ_COMMITTED if writing else IsolationLevel.REPEATABLE_READ
            )
            with conn.transaction():
                tx = Transaction(conn, POSTGRES, writing)
                yield tx
                tx.finish()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection for the block, under the transaction deadline; the breaker
        opens when a wait for the server runs out and closes when a block succeeds."""
        watch: Watch | None = None
        try:
            with self._pool.connection() as conn, self._watchdog.watch(conn) as watch:
                yield conn
        except PoolTimeout:
            self._breaker.trip()
            raise
        except Exception:
            if watch is not None and watch.cut:
                self._breaker.trip()
            raise
        self._breaker.reset()

    def transaction(self, *, urgent: bool = False) -> AbstractContextManager[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises
        (``urgent`` changes nothing: PostgreSQL's writers do not take turns).

        Unavailable when the server cannot be reached or does not answer within
        the bounds above, is locked past the lock timeout, or cannot write.
        """
        return self._begin(writing=True)

    def read(self) -> AbstractContextManager[Transaction]:
        """A read-only snapshot; writing through it raises psycopg.errors.ReadOnlySqlTransaction."""
        return self._begin(writing=False)

    def ping(self) -> None:
        """Raise Unavailable unless the database can be read and written now."""
        with self.transaction() as tx:
            tx.health.mark(datetime.now(UTC))

    def close(self) -> None:
        """Close every pooled connection."""
        self._watchdog.close()
        self._pool.close()


def migrate(conn: Connection, migrations: Sequence[Migration]) -> None:
    """Apply the migrations not yet recorded, each in a transaction of its own.

    Every migration's transaction first takes the migration lock (an advisory
    lock), so processes starting together apply each exactly once.
    """
    for migration in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (MIGRATION_LOCK,))
            apply_if_missing(Sql(conn, POSTGRES, writing=True), migration)
