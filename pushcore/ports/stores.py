"""The store: transactions, the lock intents of read-then-writes, engine heartbeats.

Store ports are written so that several processes can share one database:
every decision that must be global (uniqueness, "at most once a minute",
plan limits) is made by the database inside a transaction, never by state
held in one process. Where a transaction decides on what it read, the caller
says so: a ``tx.locks`` call or a ``for_update=True`` read, before the read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    from pushcore.ports.accounts import AccountRepository, ApiKeyRepository, DeviceRepository
    from pushcore.ports.events import EventRepository, WebhookRepository
    from pushcore.ports.idempotency import IdempotencyRepository
    from pushcore.ports.inbox import InboxRepository
    from pushcore.ports.localtime import LocalTimeSchedule
    from pushcore.ports.notifications import (
        DeliveryProgress,
        NotificationRepository,
        RetentionRepository,
    )
    from pushcore.ports.oidc import SignInRepository
    from pushcore.ports.people import (
        PasswordRepository,
        RefreshTokenRepository,
        SessionRevocationRepository,
    )
    from pushcore.ports.queue import DeliveryQueue, DeliverySchedule
    from pushcore.ports.receipts import DeliveryLogRepository
    from pushcore.ports.recipient import RecipientRepository
    from pushcore.ports.schedules import OccurrenceRepository, ScheduleRepository
    from pushcore.ports.streams import StreamRepository, SubscriptionRepository


class Locks(Protocol):
    """Lock intents: held until the transaction ends, taken before the reads they guard.

    PostgreSQL takes row or advisory locks (its writers run at once); SQLite
    does nothing (it has one writer at a time). No-ops in :meth:`Store.read`.
    Each raises only the database's own errors (a deadlock, a lock timeout).
    """

    def plan_limits(self, account_id: str) -> None:
        """Serialise the account's plan-limit checks (count, then insert); the account
        row cannot serve, as it may not exist yet."""
        ...

    def device_token(self, account_id: str, token: str) -> None:
        """Serialise registrations of one token (look up, then insert or update)."""
        ...

    def collapse_key(self, account_id: str, key: str) -> None:
        """Serialise the account's creates with one collapse key (insert, then look for
        the older ones): of two at once, the later sees the earlier and supersedes it."""
        ...

    def notifications(self, notification_ids: Sequence[str]) -> None:
        """Lock these notifications (in id order, so overlapping sets cannot deadlock)
        before deriving their status from their deliveries."""
        ...


class EngineRepository(Protocol):
    """Heartbeats of delivery engines (serve, worker), so others can tell one is running."""

    def beat(self, engine_id: str, at: datetime) -> None:
        """Record that ``engine_id`` was alive at ``at`` (a later beat is never undone)."""
        ...

    def last_seen(self) -> datetime | None:
        """The latest heartbeat of any engine, or None when none ever beat."""
        ...


class ServerKeyRepository(Protocol):
    """Facts every process on one database must share (the VAPID public key)."""

    def claim(self, name: str, value: str, at: datetime) -> str:
        """Store ``value`` under ``name`` unless a value is there; the stored value (the
        first claim wins, whichever process made it)."""
        ...


T = TypeVar("T")


class WithdrawalRepository(Protocol):
    """A notification's withdrawal, stored with its queued sends (storage/sql/withdrawals.py)."""

    def mark(self, notification_id: str, at: datetime) -> bool:
        """Set the notification's ``withdrawn_at``, once; whether this call set it."""
        ...

    def cancel_pending(self, notification_id: str, reason: str) -> int:
        """Cancel every PENDING delivery of the notification (retries too); how many."""
        ...

    def queue(self, notification_id: str, due: datetime) -> int:
        """Turn its DELIVERED deliveries into withdrawals due at ``due`` (live devices':
        WITHDRAWN at once); how many were queued for a gateway."""
        ...

    def queue_withdrawn(self, notification_ids: Sequence[str], due: datetime) -> int:
        """:meth:`queue` for those of these notifications that are withdrawn; how many."""
        ...


class Transaction(Protocol):
    """One unit of work: the repositories, seeing and changing one consistent state."""

    def savepoint(self) -> AbstractContextManager[None]:
        """A part undone alone (its writes and counts) when the block raises; the
        transaction goes on."""
        ...

    def grouped(self) -> AbstractContextManager[None]:
        """For a group commit's works: new rows inserted together at the end (or before
        the next statement), devices read once."""
        ...

    def changes(self) -> int:
        """How many statements so far wrote or failed: a part that made none needs no undoing."""
        ...

    @property
    def accounts(self) -> AccountRepository:
        """Accounts."""
        ...

    @property
    def passwords(self) -> PasswordRepository:
        """Password hashes."""
        ...

    @property
    def refresh_tokens(self) -> RefreshTokenRepository:
        """Refresh tokens of sessions."""
        ...

    @property
    def session_revocations(self) -> SessionRevocationRepository:
        """Sessions signed out before their access tokens expire."""
        ...

    @property
    def api_keys(self) -> ApiKeyRepository:
        """API keys."""
        ...

    @property
    def devices(self) -> DeviceRepository:
        """Devices."""
        ...

    @property
    def notifications(self) -> NotificationRepository:
        """Notifications."""
        ...

    @property
    def progress(self) -> DeliveryProgress:
        """How notifications' deliveries stand."""
        ...

    @property
    def deliveries(self) -> DeliveryQueue:
        """The engine's queue: claims and outcomes."""
        ...

    @property
    def schedule(self) -> DeliverySchedule:
        """Deliveries made, fanned out and cancelled by the services."""
        ...

    @property
    def local_times(self) -> LocalTimeSchedule:
        """Deliveries due at each recipient's local time (local-time sends)."""
        ...

    @property
    def retention(self) -> RetentionRepository:
        """Deleting settled history (PUSHCORE_RETENTION)."""
        ...

    @property
    def streams(self) -> StreamRepository:
        """Streams."""
        ...

    @property
    def subscriptions(self) -> SubscriptionRepository:
        """Subscriptions."""
        ...

    @property
    def locks(self) -> Locks:
        """Lock intents of this transaction."""
        ...

    @property
    def engines(self) -> EngineRepository:
        """Engine heartbeats."""
        ...

    @property
    def server_keys(self) -> ServerKeyRepository:
        """Facts every process on the database shares."""
        ...

    @property
    def idempotency_keys(self) -> IdempotencyRepository:
        """Idempotency-Key claims and the answers kept for replay."""
        ...

    @property
    def recipients(self) -> RecipientRepository:
        """The recipient's settings (zone, quiet hours, snooze, mutes); HELD deliveries."""
        ...

    @property
    def occurrences(self) -> OccurrenceRepository:
        """Recurring schedules' occurrences and the notifications made of them."""
        ...

    @property
    def schedules(self) -> ScheduleRepository:
        """Recurring schedules."""
        ...

    @property
    def receipts(self) -> DeliveryLogRepository:
        """The deliveries list and its receipts."""
        ...

    @property
    def withdrawals(self) -> WithdrawalRepository:
        """Notifications taken back, and the withdrawals queued to their devices."""
        ...

    @property
    def sign_ins(self) -> SignInRepository:
        """Single sign-on's round trips and one-time codes."""
        ...

    @property
    def inbox(self) -> InboxRepository:
        """Inbox entries."""
        ...

    @property
    def webhooks(self) -> WebhookRepository:
        """Event webhook endpoints."""
        ...

    @property
    def events(self) -> EventRepository:
        """Events for senders (the outbox) and their attempts."""
        ...


class Store(Protocol):
    """A database. Writes happen in :meth:`transaction`, reads may use :meth:`read`."""

    def transaction(self, *, urgent: bool = False) -> AbstractContextManager[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        ``urgent``: where writers take turns (SQLite), it goes before the other
        writers still waiting (the engine's record of what a gateway answered).

        A read-then-write inside one is safe once its lock intent is taken
        (:class:`Locks`, ``for_update``): SQLite runs one writer at a time,
        PostgreSQL writers run at once and lock what they declare.
        """
        ...

    def read(self) -> AbstractContextManager[Transaction]:
        """A read-only snapshot; writing through it raises the database's error."""
        ...

    def ping(self) -> None:
        """Raise the database's error if the database cannot be reached."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class Together(NamedTuple):
    """How a work of a group may run with the group's others of its kind.

    The writer runs a group's works with the same ``prepare`` one after
    another, at the place of the first of them (any order of a group's works
    is one their callers may see: none is answered before the COMMIT), after
    one ``prepare(tx, keys)`` of all their keys, in their order: one read of
    the rows they will lock, say, which each work then finds instead of
    reading its own. ``prepare`` only reads; the works still decide and fail
    one by one, and run alone (no ``prepare``) when the group runs again with
    a savepoint per work.
    """

    prepare: Callable[[Transaction, Sequence[Any]], None]
    key: Any


class Writes(Protocol):
    """Group commit: short writes of many callers committed together (one writer).

    A work is a function of a transaction; it runs in a group's transaction,
    on the writer's thread, undone alone when it raises. It must not wait for another work
    (that would wait for ever) and should be short: a group is bounded in time.

    Which path a write takes: the writes that come in floods and answer one
    request each go here (creating, batch-creating, editing and cancelling
    notifications, and a key's best-effort ``lastUsedAt``), so that a
    thousand of them a second cost a few COMMITs (one WAL flush each) instead
    of a thousand. Everything else uses :meth:`Store.transaction` directly:
    writes that are rare (keys, devices, streams, accounts, sign-ins), that must hold
    locks across several statements the group would serialise
    behind unrelated work (the engine's claims and records, stream fan-out,
    retention), or that must not wait behind a group (a claim must never
    queue behind ingest). A new use case picks this port only for a short,
    frequent, per-request write.
    """

    def submit(
        self, work: Callable[[Transaction], T], together: Together | None = None
    ) -> Future[T]:
        """Queue ``work``; the future holds its result once the group committed, or
        its own error (its writes undone), or the error that kept the group from
        committing. ``together``: see :class:`Together`."""
        ...

    def submit_async(
        self, work: Callable[[Transaction], T], together: Together | None = None
    ) -> asyncio.Future[T]:
        """:meth:`submit` for a caller on a running event loop, which awaits the answer;
        ``together``: see :class:`Together`."""
        ...

    def run(self, work: Callable[[Transaction], T]) -> T:
        """:meth:`submit` and wait: the result, or the error raised."""
        ...

    def close(self) -> None:
        """Finish what was submitted and stop."""
        ...
