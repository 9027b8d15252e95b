"""The engine's database work: claims, heartbeats, outcomes and hand-backs.

Each method is one transaction and runs in one of the engine's threads,
never on its event loop. What a claim leases is kept for as long as this
process lives: :meth:`Ledger.beat` renews the leases of what the engine
still holds, so only a process that stopped beating (it died, or froze for a
whole lease) ever has its deliveries claimed by another and sent again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta

import attrs

from pushcore.consistency import detach_device, reconcile
from pushcore.delivery.config import EngineConfig
from pushcore.delivery.journal import say_deactivated, say_deferred, say_failed, say_retry
from pushcore.delivery.quiet import screen
from pushcore.domain.expiry import EXPIRED, has_expired
from pushcore.domain.model import Delivery, Notification
from pushcore.domain.outcomes import (
    Deferred,
    Delivered,
    Dispatch,
    Failed,
    Outcome,
    Retry,
    TokenInvalid,
    delivery_event,
    is_redelivery,
)
from pushcore.domain.receipts import receipt_token
from pushcore.domain.states import DeliveryStatus, next_delivery_status
from pushcore.domain.withdraw import is_withdrawal, settled_as
from pushcore.events import expired_change, failure_changes, record_events
from pushcore.ports import Clock, InboxSignal, Store, Transaction
from pushcore.receipts import ReceiptKey

# Notifications rolled up per transaction: on SQLite each holds the one write
# lock, which the next outcomes' record may be waiting for.
ROLLUP_CHUNK = 128


@attrs.frozen
class Claim:
    """What one claim transaction found."""

    dispatches: Sequence[Dispatch]
    next_due: datetime | None


class Ledger:
    """The engine's transactions, for one lease owner."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: EngineConfig,
        owner: str,
        uniform: Callable[[], float],
        inbox: InboxSignal | None = None,
    ) -> None:
        self._store = store
        self._inbox = inbox
        self._clock = clock
        self._config = config
        self.owner = owner
        self._uniform = uniform
        self.beat_due = datetime.min.replace(tzinfo=UTC)
        # Claims of deliveries sent before whose answer was never recorded
        # (their lease ran out, so their process is gone): each may arrive twice.
        self.redelivered = 0
        # Each dispatch carries its delivery's receipt token (for the payload).
        self._receipts = ReceiptKey(store, clock)

    def claim(
        self, now: datetime, limit: int, held: Collection[str] = (), release: int | None = None
    ) -> Claim:
        """Lease what is due (up to ``limit``; of it at most ``release`` that quiet hours
        held, when given); ``held`` are in flight here already."""
        config = self._config
        key = self._receipts.get()
        with self._store.transaction() as tx:
            if now >= self.beat_due:
                # The heartbeat senders look for (pushctl send warns without one).
                self._beat(tx, now, sorted(held))
            woken = tx.notifications.due_wakeups(now, config.batch_size)
            reconcile(tx, woken, now)
            horizon, lease_end = now + config.lead, now + config.lease
            deliveries = tx.deliveries.claim_due(horizon, self.owner, lease_end, limit, release)
            notification_ids = sorted({d.notification_id for d in deliveries})
            device_ids = sorted({d.device_id for d in deliveries})
            notifications = {n.id: n for n in tx.notifications.by_ids(notification_ids)}
            devices = {d.id: d for d in tx.devices.by_ids(device_ids)}
            dispatches: list[Dispatch] = []
            orphaned: dict[str, str] = {}
            for delivery in deliveries:
                if delivery.id in held:
                    # Its lease ran out while this process could not renew it (the
                    # database was away) and its answer is still to be recorded:
                    # the claim only renewed the lease; it is not sent again.
                    continue
                notification = notifications.get(delivery.notification_id)
                device = devices.get(delivery.device_id)
                status = settled_as(delivery, DeliveryStatus.FAILED)
                if notification is not None and _expired(delivery, notification, now):
                    # Past its expiresAt (waiting for its time, a device or a retry):
                    # not made, and never handed to a gateway.
                    status, reason = DeliveryStatus.EXPIRED, EXPIRED
                elif notification is not None and device is not None and device.is_active:
                    receipt = receipt_token(key, delivery.id)
                    dispatches.append(Dispatch(delivery, device, notification, receipt))
                    self.redelivered += is_redelivery(delivery)
                    continue
                else:
                    # The device went away between scheduling and now: nothing to send.
                    reason = "Device inactive" if device is not None else "Device removed"
                tx.deliveries.settle(delivery.id, self.owner, status, reason, now)
                if status is DeliveryStatus.EXPIRED:
                    record_events(tx, [expired_change(delivery, device, reason)], now)
                orphaned[delivery.notification_id] = reason
            # The recipients' quiet hours, snoozes and mutes (delivery/quiet.py).
            screened = screen(tx, dispatches, now, self.owner)
            dispatches = screened.send
            orphaned.update(screened.ended)
            if orphaned:
                reconcile(tx, tx.notifications.by_ids(sorted(orphaned)), now, orphaned)
            # No room for released ones: their quiet's end is not when to look again.
            candidates = [
                tx.deliveries.next_due_at(held=release != 0),
                tx.notifications.next_wake_at(),
            ]
            # The notifications that fall due now, devices or none, reach their
            # owners' inboxes in this transaction, last: it holds the inbox's turn
            # until COMMIT (storage/sql/inbox.py). A woken one is due (a wake-up
            # before the due time is set for the due time); a claimed delivery's
            # notification is due by the claim's lead. Stream sends were put in
            # their subscribers' inboxes when sent (StreamService.send).
            due = {n.id for n in (*woken, *notifications.values()) if n.stream is None}
            inboxed = tx.inbox.deliver_own(sorted(due), now) if due else 0
            # A local-time stream send reaches each subscriber's inbox with the first
            # of its deliveries there to fall due (StreamService.send wrote none).
            local = [d.id for d in deliveries if _local_stream(notifications, d)]
            inboxed += tx.inbox.deliver_local(local, now) if local else 0
            if inboxed:
                keyed = {n.id: n for n in (*woken, *notifications.values()) if n.collapse_key}
                tx.inbox.replace_older([n for i, n in sorted(keyed.items()) if i in due], now)
        if inboxed and self._inbox is not None:
            self._inbox.committed()
        next_due = min((c for c in candidates if c is not None), default=None)
        return Claim(dispatches, next_due)

    def beat(self, held: Sequence[str]) -> int:
        """Say this engine lives and renew the leases of ``held``; how many were renewed.
        Due every ``config.heartbeat`` (``beat_due``); a claim does it when due."""
        with self._store.transaction() as tx:
            return self._beat(tx, self._clock.now(), held)

    def _beat(self, tx: Transaction, now: datetime, held: Sequence[str]) -> int:
        tx.engines.beat(self.owner, now)
        self.beat_due = now + self._config.heartbeat
        if not held:
            return 0
        # A lease is renewed once half of it is left: each row is written about
        # twice a lease, not on every beat.
        lease = self._config.lease
        return tx.deliveries.renew(held, self.owner, now + lease, now + lease / 2)

    def record(self, pairs: Sequence[tuple[Dispatch, Outcome]]) -> datetime | None:
        """Store outcomes, in a short transaction; the earliest time a delivery is due
        again, if any. The notifications follow in :meth:`roll_up`."""
        now = self._clock.now()
        policy = self._config.retry
        earliest: datetime | None = None
        # The transition table decides each delivery's next status from its
        # outcome; a dispatch whose delivery is not in flight raises.
        decided = [
            (dispatch, outcome, self._next_status(dispatch, outcome)) for dispatch, outcome in pairs
        ]
        delivered = [d.delivery.id for d, _, st in decided if st is DeliveryStatus.DELIVERED]
        # Withdrawals the gateway took (a refused one is settled below, with its reason).
        withdrawn = [
            d.delivery.id
            for d, o, st in decided
            if st is DeliveryStatus.WITHDRAWN and isinstance(o, Delivered)
        ]
        # Said once the transaction has committed: a line for what really happened.
        said: list[Callable[[], None]] = []
        # Only the deliveries' rows, a note each and the counters: what a crash must
        # not send again is on disk within the 100 ms of API.md ("Limits and
        # fairness"); deriving the notifications' statuses, which locks and reads
        # them, is roll_up()'s, afterwards. Urgent: on SQLite it goes before the
        # claims and roll-ups waiting for the write lock.
        deferred: dict[str, tuple[datetime, Callable[[], None]]] = {}
        with self._store.transaction(urgent=True) as tx:
            settled: list[str] = []
            if delivered:
                # Most of a batch, most of the time: settled in one statement.
                settled += tx.deliveries.settle_many(
                    delivered, self.owner, DeliveryStatus.DELIVERED, None, now
                )
            if withdrawn:
                settled += tx.deliveries.settle_many(
                    withdrawn, self.owner, DeliveryStatus.WITHDRAWN, None, now
                )
            for dispatch, outcome, status in decided:
                delivery = dispatch.delivery
                if isinstance(outcome, Delivered):
                    continue
                if isinstance(outcome, Deferred):
                    due = _until_expiry(dispatch, now + timedelta(seconds=outcome.after))
                    deferred[delivery.id] = (
                        due,
                        functools.partial(say_deferred, dispatch, outcome),
                    )
                    continue
                if status is DeliveryStatus.PENDING:
                    assert isinstance(outcome, Retry)
                    delay = policy.delay(delivery.attempts, self._uniform, outcome.after)
                    # Never later than its expiry: the claim then ends it EXPIRED.
                    due = _until_expiry(dispatch, now + timedelta(seconds=delay))
                    if tx.deliveries.retry(delivery.id, self.owner, due, outcome.reason, now):
                        earliest = due if earliest is None else min(earliest, due)
                        said.append(functools.partial(say_retry, dispatch, outcome, delay))
                    continue
                if not tx.deliveries.settle(delivery.id, self.owner, status, outcome.reason, now):
                    continue
                settled.append(delivery.id)
                said.append(functools.partial(say_failed, dispatch, outcome))
                if isinstance(outcome, TokenInvalid):
                    # Nothing more is sent to it from now; its other deliveries are
                    # cancelled by the roll-up (or failed by the claim that meets them).
                    tx.devices.deactivate(delivery.device_id)
                    said.append(functools.partial(say_deactivated, dispatch, outcome))
            # Handed back together: a busy destination defers hundreds in one batch.
            back = [(i, due) for i, (due, _) in deferred.items()]
            for delivery_id in sorted(tx.deliveries.defer(back, self.owner)):
                due, say = deferred[delivery_id]
                earliest = due if earliest is None else min(earliest, due)
                said.append(say)
            tx.deliveries.to_roll_up(settled, now)
            # delivery.failed and device.deactivated, in this transaction (the outbox).
            record_events(tx, failure_changes(decided, settled), now)
        for say in said:
            say()
        return earliest

    def roll_up(self, pairs: Sequence[tuple[Dispatch, Outcome]]) -> None:
        """Derive the statuses of the notifications of outcomes :meth:`record` stored,
        in short transactions (``ROLLUP_CHUNK`` notifications each)."""
        by_notification: dict[str, list[tuple[Dispatch, Outcome]]] = {}
        for dispatch, outcome in pairs:
            by_notification.setdefault(dispatch.delivery.notification_id, []).append(
                (dispatch, outcome)
            )
        ids = sorted(by_notification)
        for start in range(0, len(ids), ROLLUP_CHUNK):
            chunk = [p for n in ids[start : start + ROLLUP_CHUNK] for p in by_notification[n]]
            self._roll_up(chunk)

    def _roll_up(self, pairs: Sequence[tuple[Dispatch, Outcome]]) -> None:
        now = self._clock.now()
        with self._store.transaction() as tx:
            taken = set(tx.deliveries.rolled_up(sorted(d.delivery.id for d, _ in pairs)))
            if not taken:
                return  # retries and hand-backs change no notification; or rolled up already
            mine = [(d, o) for d, o in pairs if d.delivery.notification_id in taken]
            devices = sorted({d.device.id for d, o in mine if isinstance(o, Delivered)})
            if devices:
                tx.devices.mark_delivered(devices, now)
            for dispatch, outcome in mine:
                if isinstance(outcome, TokenInvalid):
                    detach_device(tx, dispatch.device.id, now, "Device deactivated")
            # A failed notification's reason is that of the answer that failed it.
            reasons = {
                d.delivery.notification_id: o.reason
                for d, o in mine
                if isinstance(o, Failed | TokenInvalid | Retry)
            }
            unique = list({d.notification.id: d.notification for d, _ in mine}.values())
            current = tx.notifications.refresh(unique, for_update=True)
            _withdraw_late(tx, current, now)
            reconcile(tx, current, now, reasons)

    def roll_up_leftovers(self, before: datetime | None) -> int:
        """Roll up the notes recorded before ``before`` (None: all) that nobody rolled up
        (their process died between the two); how many notifications."""
        done = 0
        while True:
            with self._store.transaction() as tx:
                ids = tx.deliveries.leftover_rollups(before, ROLLUP_CHUNK)
                if not ids:
                    return done
                now = self._clock.now()
                found = tx.notifications.by_ids(ids)
                current = tx.notifications.refresh(found, for_update=True)
                _withdraw_late(tx, current, now)
                reconcile(tx, current, now)
                done += len(ids)

    def _next_status(self, dispatch: Dispatch, outcome: Outcome) -> DeliveryStatus:
        may_retry = not self._config.retry.gives_up(dispatch.delivery.attempts)
        status = next_delivery_status(dispatch.delivery.status, delivery_event(outcome, may_retry))
        return settled_as(dispatch.delivery, status)

    def release(self, delivery_ids: Sequence[str]) -> int:
        """Hand leased deliveries back unsent; how many this owner still held."""
        with self._store.transaction() as tx:
            return tx.deliveries.release(delivery_ids, self.owner)


def _expired(delivery: Delivery, notification: Notification, now: datetime) -> bool:
    """Whether a claimed delivery of the notification would arrive past its expiry
    (claimed up to the lead early: it goes at its due time). A withdrawal always goes."""
    at = max(now, delivery.due_at)
    return not is_withdrawal(delivery) and has_expired(notification.expires_at, at)


def _until_expiry(dispatch: Dispatch, due: datetime) -> datetime:
    """``due``, or the notification's expiry when that comes first."""
    expires_at = dispatch.notification.expires_at
    if expires_at is None or is_withdrawal(dispatch.delivery):
        return due
    return min(due, expires_at)


def _withdraw_late(tx: Transaction, notifications: Sequence[Notification], now: datetime) -> None:
    """Queue the withdrawal of deliveries a gateway took while their notification was
    being withdrawn (in flight then, delivered since). Under the notification's lock:
    the withdrawal's own transaction queues what was delivered before it, this what
    was delivered after; none is missed."""
    tx.withdrawals.queue_withdrawn([n.id for n in notifications], now)


def _local_stream(notifications: dict[str, Notification], delivery: Delivery) -> bool:
    """Whether ``delivery`` is one of a local-time stream send's (a notification)."""
    n = notifications.get(delivery.notification_id)
    return n is not None and n.stream is not None and n.deliver_at is not None
