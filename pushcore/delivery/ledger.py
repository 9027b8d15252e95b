"""The engine's database work: claims, heartbeats, outcomes and hand-backs.

Each method is one transaction and runs in one of the engine's threads,
never on its event loop. What a claim leases is kept for as long as this
process lives: :meth:`Ledger.beat` renews the leases of what the engine
still holds, so only a process that stopped beating (it died, or froze for a
whole lease) ever has its deliveries claimed by another and sent again.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta

import attrs

from pushcore.consistency import detach_device, reconcile
from pushcore.delivery.claimed import sort_claimed, to_inboxes, write_claimed
from pushcore.delivery.config import EngineConfig
from pushcore.delivery.journal import say_deactivated, say_deferred, say_failed, say_retry
from pushcore.domain.model import Notification
from pushcore.domain.outcomes import (
    Deferred,
    Delivered,
    Dispatch,
    Failed,
    Outcome,
    Retry,
    TokenInvalid,
    delivery_event,
)
from pushcore.domain.states import DeliveryStatus, next_delivery_status
from pushcore.domain.withdraw import is_withdrawal, settled_as
from pushcore.events import failure_changes, record_events
from pushcore.ports import Clock, InboxSignal, Store, Transaction
from pushcore.receipts import ReceiptKey

# Notifications rolled up per transaction: on SQLite each holds the one write
# lock, which the next outcomes' record may be waiting for.
ROLLUP_CHUNK = 128
# Leases renewed per transaction (see Ledger._beat).
RENEW_CHUNK = 256


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
        self,
        now: datetime,
        limit: int,
        held: Collection[str] = (),
        release: int | None = None,
        lead: timedelta | None = None,
    ) -> Claim:
        """Lease what is due by ``now`` plus the lead (``lead``, else the configured
        one), up to ``limit``; of it at most ``release`` that quiet hours held, when
        given; ``held`` are in flight here already.

        Three steps, so that no write transaction of a claim reads or decides
        much: a record of answers waits for one of them at most (API.md's
        100 ms). The first only marks the rows (the lease, and the handed
        attempt that a PATCH or cancel is ordered against); the reads then
        hold no write lock; the last writes what they decided (delivery/claimed.py).
        """
        config = self._config
        key = self._receipts.get()
        if now >= self.beat_due:
            # The heartbeat senders look for (pushctl send warns without one), and the
            # renewals, before the lease and apart from it (see _beat).
            self._beat(now, sorted(held))
        with self._store.transaction() as tx:
            # Due notifications without deliveries: settled and in their owners'
            # inboxes in one transaction (a wake-up before the due time is set
            # for the due time), or neither.
            woken = tx.notifications.due_wakeups(now, config.batch_size)
            reconcile(tx, woken, now)
            horizon = now + (config.lead if lead is None else lead)
            lease_end = now + config.lease
            deliveries = tx.deliveries.claim_due(horizon, self.owner, lease_end, limit, release)
            own = [n for n in woken if n.stream is None]
            keyed = [n for n in own if n.collapse_key]
            inboxed = to_inboxes(tx, [n.id for n in own], keyed, [], now) if own else 0
        self._told(inboxed)
        try:
            with self._store.read() as tx:
                found = sort_claimed(tx, deliveries, held, now, key)
                # Read after the claim's writes: a held delivery's lease is gone then.
                candidates = [] if found.writes else _next_due(tx, release)
            if found.writes:
                with self._store.transaction() as tx:
                    inboxed = write_claimed(tx, found, self.owner, now)
                    candidates = _next_due(tx, release)
                self._told(inboxed)
        except BaseException:
            # Nothing of these was sent: back to the queue now, not a lease from now
            # (when the database is away this fails too, and the lease runs out).
            fresh = [d.id for d in deliveries if d.id not in held]
            with contextlib.suppress(Exception):
                self.release(fresh)
            raise
        self.redelivered += found.redelivered
        next_due = min((c for c in candidates if c is not None), default=None)
        return Claim(found.send, next_due)

    def _told(self, inboxed: int) -> None:
        """Tell this process's live channels of committed inbox entries, if any."""
        if inboxed and self._inbox is not None:
            self._inbox.committed()

    def due_count(self, by: datetime, limit: int) -> int:
        """How many deliveries wait for a due time by ``by`` (up to ``limit``)."""
        with self._store.read() as tx:
            return tx.deliveries.due_count(by, limit)

    def beat(self, held: Sequence[str]) -> int:
        """Say this engine lives and renew the leases of ``held``; how many were renewed.
        Due every ``config.heartbeat`` (``beat_due``); a claim does it when due."""
        return self._beat(self._clock.now(), held)

    def _beat(self, now: datetime, held: Sequence[str]) -> int:
        with self._store.transaction() as tx:
            tx.engines.beat(self.owner, now)
        self.beat_due = now + self._config.heartbeat
        # A lease is renewed once half of it is left: each row is written about
        # twice a lease, not on every beat. In transactions of RENEW_CHUNK rows: a
        # renewal holds its rows' locks until it commits, and on PostgreSQL a record
        # of their answers waits for that (a backlog held past half a lease renews
        # thousands at once; inside the claim's transaction, for all of it).
        lease = self._config.lease
        renewed = 0
        for start in range(0, len(held), RENEW_CHUNK):
            chunk = held[start : start + RENEW_CHUNK]
            with self._store.transaction() as tx:
                renewed += tx.deliveries.renew(chunk, self.owner, now + lease, now + lease / 2)
        return renewed

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
            reconcile(tx, current, now, reasons, locked=True)

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
                reconcile(tx, current, now, locked=True)
                done += len(ids)

    def _next_status(self, dispatch: Dispatch, outcome: Outcome) -> DeliveryStatus:
        may_retry = not self._config.retry.gives_up(dispatch.delivery.attempts)
        status = next_delivery_status(dispatch.delivery.status, delivery_event(outcome, may_retry))
        return settled_as(dispatch.delivery, status)

    def release(self, delivery_ids: Sequence[str]) -> int:
        """Hand leased deliveries back unsent; how many this owner still held."""
        with self._store.transaction() as tx:
            return tx.deliveries.release(delivery_ids, self.owner)


def _next_due(tx: Transaction, release: int | None) -> list[datetime | None]:
    """The earliest due time or lease end of a delivery, and the earliest wake-up."""
    # No room for released ones: their quiet's end is not when to look again.
    return [tx.deliveries.next_due_at(held=release != 0), tx.notifications.next_wake_at()]


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
