"""The ports: what the services need from the outside world, as Protocols.

Adapters (storage, clocks, gateways, URL guards) satisfy these structurally;
in-memory fakes in ``pushcore.storage.memory`` and ``tests/fakes`` do too, and
``mypy --strict`` checks both.

Store ports are written so that several processes can share one database:
every decision that must be global (uniqueness, "at most once a minute",
plan limits) is made by the database inside a transaction, never by state
held in one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import (
    Account,
    ApiKey,
    Delivery,
    DeliveryCounts,
    Device,
    Notification,
    NotificationStats,
    Plan,
    QueueDepth,
    Stream,
    StreamView,
    Subscription,
)
from pushcore.domain.outcomes import Dispatch, Outcome
from pushcore.domain.retry import RetryPolicy
from pushcore.domain.states import DeliveryStatus, NotificationStatus


class Clock(Protocol):
    """The time, and waiting for it. Tests pass a clock they can move."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    async def sleep_until(self, when: datetime) -> None:
        """Wait until this clock says ``when`` has come (at once if it has); cancellable.

        Everything that waits for time (the engine's due times, backstop tick,
        grace period) waits here, so a test's clock decides when it ends. An
        absolute time, not a duration: a wait decided at one instant and begun
        a little later still ends when it was meant to.
        """
        ...


class IdGenerator(Protocol):
    """Makes the opaque, creation-sortable ids of API.md (``key_01J…``)."""

    def new_id(self, prefix: str) -> str:
        """A fresh id ``<prefix>_<26 chars>``, greater than every earlier one of this process."""
        ...


class Random(Protocol):
    """Secret randomness for keys and codes."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        ...


class AccountRepository(Protocol):
    """Accounts by id."""

    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        ...

    def ensure(self, account: Account) -> Account:
        """Insert ``account`` unless one with its id exists; return the stored one."""
        ...

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account (at ``now``) if it does not exist."""
        ...


class ApiKeyRepository(Protocol):
    """API keys; only hashes are ever stored."""

    def add(self, key: ApiKey) -> None:
        """Insert a new key."""
        ...

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        """The key with this id in this account, or None (another account's key is None)."""
        ...

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key whose SHA-256 hash is ``key_hash``, or None."""
        ...

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        ...

    def update(self, key: ApiKey) -> None:
        """Store the key's changed state (is_active, revoked_at, last_used_at)."""
        ...

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        """Set last_used_at to ``at`` if it is unset or before ``older_than``.

        Returns whether a write happened. The condition is evaluated by the
        database, so several processes write at most once per interval.
        """
        ...


class DeviceRepository(Protocol):
    """Devices of accounts."""

    def add(self, device: Device) -> None:
        """Insert a new device. The (account, token) pair must be new."""
        ...

    def update(self, device: Device) -> None:
        """Store a changed device (name, keys, is_active, last_delivered_at)."""
        ...

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        ...

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None."""
        ...

    def active_targets(self, account_id: str, token: str | None) -> Sequence[Device]:
        """The account's active devices, or its active device with ``token``."""
        ...

    def by_ids(self, device_ids: Sequence[str]) -> Sequence[Device]:
        """The devices with these ids (any account; for the engine)."""
        ...

    def mark_delivered(self, device_ids: Sequence[str], at: datetime) -> None:
        """Set last_delivered_at of these devices (those that still exist)."""
        ...

    def deactivate(self, device_id: str) -> bool:
        """Mark the device inactive (its token is dead); False when it is gone."""
        ...

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        ...

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        ...


class NotificationRepository(Protocol):
    """Notifications. Reads by the API are scoped by account; the engine's are not."""

    def add(self, notification: Notification) -> None:
        """Insert a new notification."""
        ...

    def get(self, account_id: str, notification_id: str) -> Notification | None:
        """The notification with this id in this account, or None."""
        ...

    def by_ids(self, notification_ids: Sequence[str]) -> Sequence[Notification]:
        """The notifications with these ids (any account; for the engine)."""
        ...

    def list(
        self,
        account_id: str,
        status: NotificationStatus | None,
        limit: int,
        before_id: str | None,
    ) -> Sequence[Notification]:
        """The account's notifications, newest first, optionally of one status,
        with ids below ``before_id`` (the paging cursor)."""
        ...

    def update(self, notification: Notification) -> None:
        """Store the changed state (status, failure_reason, wake_at, settled_at)."""
        ...

    def update_many(self, notifications: Sequence[Notification]) -> None:
        """:meth:`update` of several notifications at once."""
        ...

    def refresh(self, notifications: Sequence[Notification]) -> Sequence[Notification]:
        """These notifications with their changeable state (status, failure_reason,
        wake_at, settled_at, devices_targeted) as stored now; deleted ones left out.

        Cheaper than :meth:`by_ids` for objects already in hand: the engine
        reads back what it claimed without decoding every column again.
        """
        ...

    def waiting_for(self, account_id: str, token: str, now: datetime) -> Sequence[Notification]:
        """Notifications a new or reactivated device with ``token`` should also get.

        Those SCHEDULED (waiting for a device), and those QUEUED and not yet
        due (their targets are resolved at the due time), that target all
        devices or this token.
        """
        ...

    def due_wakeups(self, now: datetime, limit: int) -> Sequence[Notification]:
        """Notifications whose ``wake_at`` has come, earliest first."""
        ...

    def next_wake_at(self) -> datetime | None:
        """The earliest ``wake_at``, or None."""
        ...

    def stats(self, account_id: str, since: datetime) -> NotificationStats:
        """Counts by status, delivery counts, and what happened since ``since``."""
        ...


class DeliveryRepository(Protocol):
    """Deliveries: the engine's queue. Claims are leases decided by the database."""

    def add_many(self, deliveries: Sequence[Delivery]) -> None:
        """Insert new deliveries (in bulk)."""
        ...

    def counts(self, notification_id: str) -> DeliveryCounts:
        """How the notification's deliveries stand."""
        ...

    def fan_out(self, notification: Notification, stream_id: str, due_at: datetime) -> int:
        """One PENDING delivery of ``notification`` per active device of every subscriber
        of the stream, inserted in bulk by the database; how many."""
        ...

    def has_open(self, notification_id: str) -> bool:
        """Whether any delivery of the notification is PENDING or IN_FLIGHT (cheap)."""
        ...

    def open_among(self, notification_ids: Sequence[str]) -> set[str]:
        """Which of these notifications have a PENDING or IN_FLIGHT delivery (cheap:
        it stops at the first one of each, however large a fan-out)."""
        ...

    def counts_many(self, notification_ids: Sequence[str]) -> dict[str, DeliveryCounts]:
        """:meth:`counts` of several notifications at once (absent: no deliveries)."""
        ...

    def for_notification(self, notification_id: str) -> Sequence[Delivery]:
        """The notification's deliveries."""
        ...

    def queue_depth(self, now: datetime) -> QueueDepth:
        """Counts of PENDING (and due at ``now``) and IN_FLIGHT deliveries of every
        account, and the earliest PENDING due time. Cheap enough for every metrics
        scrape: it reads the scheduler's own indexes, never the settled history."""
        ...

    def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> Sequence[Delivery]:
        """Lease up to ``limit`` deliveries to ``owner``: PENDING ones due at ``now``,
        earliest first, and IN_FLIGHT ones whose lease has run out. Each claim
        adds one to ``attempts``. Two owners never hold the same delivery."""
        ...

    def next_due_at(self) -> datetime | None:
        """The earliest time a claim could find work (a due time or a lease end)."""
        ...

    def settle(
        self,
        delivery_id: str,
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> bool:
        """DELIVERED or FAILED, if ``owner`` still holds the lease; whether it did."""
        ...

    def settle_many(
        self,
        delivery_ids: Sequence[str],
        owner: str,
        status: DeliveryStatus,
        reason: str | None,
        at: datetime,
    ) -> set[str]:
        """:meth:`settle` of several deliveries at once; the ids ``owner`` still held."""
        ...

    def retry(self, delivery_id: str, owner: str, due_at: datetime, reason: str) -> bool:
        """Back to PENDING, due at ``due_at``, if ``owner`` still holds the lease."""
        ...

    def release(self, delivery_ids: Sequence[str], owner: str) -> int:
        """Hand leased deliveries back unsent: PENDING, the claim's attempt undone."""
        ...

    def cancel_unsent(self, notification_id: str, reason: str) -> int:
        """Cancel the notification's PENDING deliveries never handed to a gateway."""
        ...

    def cancel_for_device(self, device_id: str, reason: str) -> Sequence[str]:
        """Cancel the device's PENDING deliveries; the ids of the notifications touched."""
        ...


class StreamRepository(Protocol):
    """Streams. A deleted stream is gone for the API but keeps its code taken forever."""

    def add(self, stream: Stream) -> None:
        """Insert a stream; KeyError when its code was ever used (a collision: draw again)."""
        ...

    def get(self, account_id: str, stream_id: str) -> StreamView | None:
        """The account's live stream with this id, or None."""
        ...

    def by_code(self, code: str) -> StreamView | None:
        """The live stream with this code (any account), or None."""
        ...

    def list(self, account_id: str) -> Sequence[StreamView]:
        """The account's live streams, newest first."""
        ...

    def count(self, account_id: str) -> int:
        """How many live streams the account has (for its plan's limit)."""
        ...

    def delete(self, account_id: str, stream_id: str, at: datetime) -> bool:
        """Delete the stream and its subscriptions; False when there is no such stream."""
        ...

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        """The active devices of every subscriber of the stream."""
        ...


class SubscriptionRepository(Protocol):
    """Subscriptions of users to streams."""

    def add(self, subscription: Subscription) -> None:
        """Insert; KeyError when the account already subscribes to that stream."""
        ...

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        """The account's subscription with this id, or None."""
        ...

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        """The account's subscription to the stream, or None."""
        ...

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The account's subscriptions with their streams, newest first."""
        ...

    def delete(self, account_id: str, subscription_id: str) -> bool:
        """Remove the subscription; False when the account has no such subscription."""
        ...


class Transaction(Protocol):
    """One unit of work: the repositories, seeing and changing one consistent state."""

    @property
    def accounts(self) -> AccountRepository:
        """Accounts."""
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
    def deliveries(self) -> DeliveryRepository:
        """Deliveries."""
        ...

    @property
    def streams(self) -> StreamRepository:
        """Streams."""
        ...

    @property
    def subscriptions(self) -> SubscriptionRepository:
        """Subscriptions."""
        ...


class Store(Protocol):
    """A database. Writes happen in :meth:`transaction`, reads may use :meth:`read`."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        Writers are serialised (SQLite ``BEGIN IMMEDIATE``; row locks in PostgreSQL),
        so a read-then-write inside one transaction is safe.
        """
        ...

    def read(self) -> AbstractContextManager[Transaction]:
        """A read-only snapshot; writing through it is an error."""
        ...

    def ping(self) -> None:
        """Raise if the database cannot be reached."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class Gateway(Protocol):
    """A push gateway (APNs, FCM, Web Push, webhook): sends and reports per delivery."""

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """One outcome per dispatch, in order. Never raises for a delivery's failure:
        a failure is an outcome (Retry, TokenInvalid, Failed)."""
        ...

    async def aclose(self) -> None:
        """Close connections."""
        ...


class DeliveryObserver(Protocol):
    """Hears what the delivery engine recorded (metrics); the engine works without one."""

    def recorded(self, outcomes: Sequence[tuple[Dispatch, Outcome]], retry: RetryPolicy) -> None:
        """Called once per batch, after its outcomes were committed, on the engine's loop.

        ``retry`` is the policy they were recorded under: a Retry of a delivery on
        its last allowed attempt was recorded as a failure. Must be quick and must
        not raise: it runs between a batch and the next.
        """
        ...


class IconProbe(Protocol):
    """Checks that a URL serves an icon the apps can show."""

    def check(self, url: str) -> None:
        """Raise ValueError (with a message for people) unless the URL serves a PNG or
        JPEG of at most 5 MB from an allowed address."""
        ...


class Waker(Protocol):
    """Tells the delivery engine that work may be due earlier than it planned."""

    def wake(self, at: datetime) -> None:
        """Work is due at ``at``. Safe to call from any thread."""
        ...


class UrlGuard(Protocol):
    """Decides whether the service may connect to a URL given by a user (SSRF guard)."""

    def check(self, url: str) -> None:
        """Raise ValidationError-worthy ValueError when the URL's host is not allowed."""
        ...
