"""Withdraw: take a notification back from every surface that got it (API.md,
"After sending").

One write transaction decides, holding the notification FOR UPDATE (which a
claim skips, as for cancel): a notification no gateway has taken yet is
cancelled; otherwise what is still to go is cancelled, each device it reached
gets a withdrawal queued in its delivery's row, and its inbox entries leave
every inbox (`event: withdrawn`). The withdrawal time is set once, so a second
withdrawal answers the first and sends nothing again.
"""

from __future__ import annotations

import attrs

from pushcore.consistency import reconcile
from pushcore.domain.errors import NotFound
from pushcore.domain.events import EventType
from pushcore.domain.inbox import Withdrawn
from pushcore.domain.model import Notification
from pushcore.domain.states import NotificationEvent, NotificationStatus, next_notification_status
from pushcore.events import record_event
from pushcore.ports import Clock, InboxSignal, Transaction, Waker, Writes

WITHDRAWN = "withdrawn"  # the failure reason of what a withdrawal cancelled
_OPEN = (NotificationStatus.QUEUED, NotificationStatus.SCHEDULED)


@attrs.frozen
class _Done:
    notification: Notification
    queued: int
    taken: dict[str, list[str]]
    told: frozenset[str]  # accounts whose channels the database tells (NOTIFY)


@attrs.define(slots=False, eq=False, repr=False)
class WithdrawService:
    """POST /api/notifications/:id/withdraw."""

    _writes: Writes
    _clock: Clock
    _waker: Waker
    _inbox: InboxSignal

    def withdraw(self, account_id: str, notification_id: str) -> Notification:
        """Withdraw the account's notification; NotFound for another account's."""
        done = self._writes.run(lambda tx: self._withdraw(tx, account_id, notification_id))
        for account, ids in done.taken.items():
            if account not in done.told:
                self._inbox.changed(account, Withdrawn(tuple(ids)))
        if done.queued:
            self._waker.wake(self._clock.now())
        return done.notification

    def _withdraw(self, tx: Transaction, account_id: str, notification_id: str) -> _Done:
        now = self._clock.now()
        found = tx.notifications.get(account_id, notification_id, for_update=True)
        if found is None:
            raise NotFound("Notification not found")
        if found.withdrawn_at is not None:
            return _Done(found, 0, {}, frozenset())
        tx.withdrawals.mark(notification_id, now)
        withdrawn_event = EventType.NOTIFICATION_WITHDRAWN
        record_event(
            tx,
            account_id,
            withdrawn_event,
            now,
            notification_id=notification_id,
            status="WITHDRAWN",
        )
        withdrawn = attrs.evolve(found, withdrawn_at=now)
        queued = 0
        if found.status in _OPEN and not tx.progress.counts(notification_id).handed:
            # Nothing went out yet: a withdrawal is a cancel.
            tx.schedule.cancel_unsent(notification_id, WITHDRAWN)
            withdrawn = attrs.evolve(
                withdrawn,
                status=next_notification_status(found.status, NotificationEvent.CANCEL),
                wake_at=None,
                settled_at=now,
            )
            tx.notifications.update(withdrawn)
        elif found.status is not NotificationStatus.CANCELLED:
            # What is still to go (retries too) is not sent; what went is taken back.
            tx.withdrawals.cancel_pending(notification_id, WITHDRAWN)
            queued = tx.withdrawals.queue(notification_id, now)
            if found.status in _OPEN:
                (withdrawn,) = reconcile(tx, [withdrawn], now) or [withdrawn]
        taken = tx.inbox.withdraw([notification_id])
        told = frozenset(
            a for a, ids in taken.items() if tx.inbox.announce(a, Withdrawn(tuple(ids)))
        )
        return _Done(withdrawn, queued, taken, told)
