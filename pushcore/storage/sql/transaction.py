"""One transaction's repositories, its lock intents and the engines' heartbeats."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pushcore.storage.sql.accounts import Accounts, ApiKeys, Devices, Repository
from pushcore.storage.sql.counters import flush
from pushcore.storage.sql.dialect import Dialect, Sql
from pushcore.storage.sql.idempotency import IdempotencyKeys
from pushcore.storage.sql.inbox import Inbox
from pushcore.storage.sql.localtime import LocalTimes
from pushcore.storage.sql.notifications import Notifications, Progress
from pushcore.storage.sql.queue import Queue, Schedule
from pushcore.storage.sql.streams import Streams, Subscriptions
from pushcore.storage.sql.tally import Tally

if TYPE_CHECKING:
    from pushcore.storage.sql.events import Events, Webhooks
    from pushcore.storage.sql.oidc import SignIns
    from pushcore.storage.sql.people import Passwords, RefreshTokens, SessionRevocations
    from pushcore.storage.sql.receipts import DeliveryLog
    from pushcore.storage.sql.recipient import Recipients
    from pushcore.storage.sql.retention import Retention
    from pushcore.storage.sql.schedules import Occurrences, Schedules
    from pushcore.storage.sql.withdrawals import Withdrawals

# Namespaces (the first key of an advisory lock) of the decisions that must
# be serialised across processes but have no row to lock yet. "push" in
# ASCII, plus one, so the numbers are unlikely to meet another application's.
MIGRATION_LOCK = 0x70757368
PLAN_LIMIT_LOCK = MIGRATION_LOCK + 1
DEVICE_TOKEN_LOCK = MIGRATION_LOCK + 2
COLLAPSE_KEY_LOCK = MIGRATION_LOCK + 4  # + 3 is the inbox's (inbox.py)
# MIGRATION_LOCK + 3: the inbox's turn (sql/inbox.py).


class Locks:
    """Lock intents: PostgreSQL row and advisory locks; nothing under SQLite's one writer."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql

    def _advisory(self, namespace: int, key: str) -> None:
        # A statement of its own: under READ COMMITTED every later statement
        # then sees what the previous holder committed.
        statement = self._sql.dialect.advisory_lock
        if self._sql.locking and statement is not None:
            self._sql.run(statement, (namespace, key))

    def plan_limits(self, account_id: str) -> None:
        """Serialise the account's plan-limit checks until the transaction ends."""
        self._advisory(PLAN_LIMIT_LOCK, account_id)

    def device_token(self, account_id: str, token: str) -> None:
        """Serialise registrations of this token until the transaction ends."""
        self._advisory(DEVICE_TOKEN_LOCK, f"{account_id} {token}")

    def collapse_key(self, account_id: str, key: str) -> None:
        """Serialise the account's creates with this collapse key until the transaction ends."""
        self._advisory(COLLAPSE_KEY_LOCK, f"{account_id} {key}")

    def notifications(self, notification_ids: Sequence[str]) -> None:
        """Lock these notifications, in id order, until the transaction ends."""
        if self._sql.locking and notification_ids:
            self._sql.run(
                "SELECT 1 FROM notifications WHERE id = ANY(?) ORDER BY id FOR NO KEY UPDATE",
                (self._sql.dialect.array(sorted(notification_ids)),),
            )


class Engines(Repository):
    def beat(self, engine_id: str, at: datetime) -> None:
        """Record that the engine was alive at ``at``; an earlier time never replaces a later."""
        self._sql.run(
            "INSERT INTO engines (id, seen_at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE"
            " SET seen_at = excluded.seen_at WHERE engines.seen_at < excluded.seen_at",
            (engine_id, self._dialect.time(at)),
        )

    def last_seen(self) -> datetime | None:
        """The latest heartbeat of any engine, or None."""
        (value,) = self._sql.one("SELECT MAX(seen_at) FROM engines")
        return self._dialect.opt_read_time(value)


class Health(Repository):
    def mark(self, at: datetime) -> None:
        """A write of one row, committed by the caller: readiness proves a write works."""
        self._sql.run(
            "INSERT INTO health (id, checked_at) VALUES ('ready', ?) ON CONFLICT (id)"
            " DO UPDATE SET checked_at = excluded.checked_at",
            (self._dialect.time(at),),
        )


class ServerKeys(Repository):
    def claim(self, name: str, value: str, at: datetime) -> str:
        """``value`` stored under ``name`` unless one is already; the stored value."""
        self._sql.run(
            "INSERT INTO server_keys (name, value, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO NOTHING",
            (name, value, self._dialect.time(at)),
        )
        (stored,) = self._sql.one("SELECT value FROM server_keys WHERE name = ?", (name,))
        return str(stored)


class Transaction:
    """The repositories of one transaction, sharing its connection."""

    def __init__(self, conn: Any, dialect: Dialect, writing: bool) -> None:
        self._sql = sql = Sql(conn, dialect, writing)
        self.locks = Locks(sql)
        self.accounts = Accounts(sql)
        self.api_keys = ApiKeys(sql)
        self.devices = Devices(sql)
        self.notifications = Notifications(sql)
        self.progress = Progress(sql)
        self.deliveries = Queue(sql)
        self.schedule = Schedule(sql, self.locks.notifications)
        self.streams = Streams(sql)
        self.subscriptions = Subscriptions(sql)
        self.engines = Engines(sql)
        self.health = Health(sql)
        self.server_keys = ServerKeys(sql)
        self.idempotency_keys = IdempotencyKeys(sql)
        self.inbox = Inbox(sql)
        self.local_times = LocalTimes(sql)

    # The repositories most transactions never use are made on first use, with their
    # modules (and their entities): a local send loads none of them.

    @cached_property
    def passwords(self) -> Passwords:
        from pushcore.storage.sql.people import Passwords

        return Passwords(self._sql)

    @cached_property
    def refresh_tokens(self) -> RefreshTokens:
        from pushcore.storage.sql.people import RefreshTokens

        return RefreshTokens(self._sql)

    @cached_property
    def session_revocations(self) -> SessionRevocations:
        from pushcore.storage.sql.people import SessionRevocations

        return SessionRevocations(self._sql)

    @cached_property
    def sign_ins(self) -> SignIns:
        from pushcore.storage.sql.oidc import SignIns

        return SignIns(self._sql)

    @cached_property
    def retention(self) -> Retention:
        from pushcore.storage.sql.retention import Retention

        return Retention(self._sql)

    @cached_property
    def occurrences(self) -> Occurrences:
        from pushcore.storage.sql.schedules import Occurrences

        return Occurrences(self._sql)

    @cached_property
    def schedules(self) -> Schedules:
        from pushcore.storage.sql.schedules import Schedules

        return Schedules(self._sql)

    @cached_property
    def recipients(self) -> Recipients:
        from pushcore.storage.sql.recipient import Recipients

        return Recipients(self._sql)

    @cached_property
    def webhooks(self) -> Webhooks:
        from pushcore.storage.sql.events import Webhooks

        return Webhooks(self._sql)

    @cached_property
    def events(self) -> Events:
        from pushcore.storage.sql.events import Events

        return Events(self._sql)

    @cached_property
    def receipts(self) -> DeliveryLog:
        from pushcore.storage.sql.receipts import DeliveryLog

        return DeliveryLog(self._sql)

    @cached_property
    def withdrawals(self) -> Withdrawals:
        from pushcore.storage.sql.withdrawals import Withdrawals

        return Withdrawals(self._sql)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A part of the transaction undone alone, counts included, when the block raises.

        A driver error that means an outage leaves it as Unavailable: a group
        commit's work hands its own error to its caller, who must hear that.
        """
        sql = self._sql
        # The part tallies apart: its counts join the transaction's only if it is kept.
        outer, sql.tally = sql.tally, Tally()
        try:
            with sql.dialect.outages():
                sql.run("SAVEPOINT part")
                try:
                    yield
                except BaseException:
                    sql.run("ROLLBACK TO SAVEPOINT part")
                    sql.run("RELEASE SAVEPOINT part")
                    raise
                else:
                    sql.run("RELEASE SAVEPOINT part")
                    outer.merge(sql.tally)
        finally:
            sql.tally = outer

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """A group commit's works: their new notifications and deliveries inserted
        together (before any other statement, and at the end), their devices read once.

        Read once: every work of a group was submitted before the group began, so
        what its caller saw committed is there at the first read; a statement
        that writes forgets what was read.
        """
        sql = self._sql
        sql.held = {}
        try:
            yield
            sql.send_held()
        finally:
            sql.held = None
            sql.seen.clear()

    def changes(self) -> int:
        """How many statements so far wrote or failed (either may need undoing)."""
        return self._sql.changes

    def finish(self) -> None:
        """Bring the accounts' counts up to date; the store calls this just before COMMIT."""
        flush(self._sql.tally, self._sql)
