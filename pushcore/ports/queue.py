"""Store ports of the engine's queue: deliveries put on it and taken off by the
services, claimed and recorded by the engine.

Raises, besides what a docstring says: the database's own errors when it
fails, ValueError for a naive datetime.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import Delivery, Notification, QueueDepth
from pushcore.domain.states import DeliveryStatus


class DeliveryQueue(Protocol):
    """The engine's side of the queue. Claims are leases decided by the database."""

    def claim_due(
        self,
        now: datetime,
        owner: str,
        lease_until: datetime,
        limit: int,
        release: int | None = None,
    ) -> Sequence[Delivery]:
        """Lease up to ``limit`` deliveries to ``owner``: PENDING ones due at ``now``,
        earliest first, and IN_FLIGHT ones whose lease has run out, then HELD ones
        whose quiet ended (at most ``release`` of those, when given). Each claim
        adds one to ``attempts``. Two owners never hold the same delivery, and
        a PENDING delivery whose notification is held ``for_update`` (a cancel
        deciding) is left alone."""
        ...

    def next_due_at(self, held: bool = True) -> datetime | None:
        """The earliest time a claim could find work (a due time or a lease end; the end
        of a quiet unless ``held`` is False)."""
        ...

    def due_count(self, by: datetime, limit: int) -> int:
        """How many PENDING deliveries are due by ``by``, counted up to ``limit``."""
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

    def to_roll_up(self, delivery_ids: Sequence[str], at: datetime) -> None:
        """Note these deliveries, settled in this transaction, as recorded with their
        notifications' statuses still to derive (a note per delivery: two deliveries
        of one notification never wait for each other's note)."""
        ...

    def rolled_up(self, delivery_ids: Sequence[str]) -> list[str]:
        """Take (delete) these deliveries' notes; the notifications, in id order, of the
        notes that were still there."""
        ...

    def leftover_rollups(self, before: datetime | None, limit: int) -> list[str]:
        """Take up to ``limit`` notes recorded before ``before`` (None: any) that no other
        transaction is taking; their notifications, in id order (after a crash)."""
        ...

    def retry(
        self,
        delivery_id: str,
        owner: str,
        due_at: datetime,
        reason: str,
        at: datetime | None = None,
    ) -> bool:
        """Back to PENDING, due at ``due_at``, if ``owner`` still holds the lease; ``at``
        (when given) is kept as the delivery's last attempt."""
        ...

    def defer(self, due: Sequence[tuple[str, datetime]], owner: str) -> set[str]:
        """Hand leased deliveries back unsent, each PENDING again at its own due time,
        the claim's attempt undone; the ids ``owner`` still held."""
        ...

    def release(
        self, delivery_ids: Sequence[str], owner: str, due_at: datetime | None = None
    ) -> int:
        """Hand leased deliveries back unsent: PENDING (due at ``due_at`` when given),
        the claim's attempt undone; how many ``owner`` still held."""
        ...

    def renew(
        self, delivery_ids: Sequence[str], owner: str, lease_until: datetime, before: datetime
    ) -> int:
        """Extend the leases ``owner`` holds on these deliveries that end before
        ``before`` to ``lease_until``; how many. Never waits for a row another
        transaction holds (it is being settled): such a row is left as it is."""
        ...

    def queue_depth(self, now: datetime) -> QueueDepth:
        """Counts of PENDING (and due at ``now``) and IN_FLIGHT deliveries of every
        account, and the earliest PENDING due time. Cheap enough for every metrics
        scrape: it reads the scheduler's own indexes, never the settled history."""
        ...


class DeliverySchedule(Protocol):
    """The services' side of the queue: deliveries made, fanned out and cancelled."""

    def add_many(self, deliveries: Sequence[Delivery]) -> None:
        """Insert new deliveries (in bulk), all or none: KeyError when an id is taken."""
        ...

    def fan_out(self, notification: Notification, stream_id: str, due_at: datetime) -> int:
        """One PENDING delivery of ``notification`` per active device of every subscriber
        of the stream, inserted in bulk by the database; how many."""
        ...

    def fan_out_again(
        self, notification: Notification, original_id: str, due_at: datetime, waiting: bool = False
    ) -> int:
        """One PENDING delivery of ``notification`` per active device of every account
        the stream send ``original_id`` reached (its inbox entries; with ``waiting``, also
        a local-time send's subscribers still waiting for their time); how many."""
        ...

    def reschedule_unsent(self, notification_id: str, due: datetime) -> None:
        """Move the notification's PENDING deliveries never handed to a gateway to ``due``."""
        ...

    def cancel_unsent(self, notification_id: str, reason: str) -> int:
        """Cancel the notification's PENDING deliveries never handed to a gateway."""
        ...

    def cancel_for_device(self, device_id: str, reason: str) -> Sequence[str]:
        """Cancel the device's PENDING deliveries; the ids of the notifications touched,
        which stay locked (as by ``tx.locks.notifications``): they are reconciled next."""
        ...
