"""POST /api/notifications/:id/replace: a new notification to the original's audience.

API.md, "After sending": the replacement carries the original's collapse key
(or, where it had none, the original's id, as if it had had that key), so it
supersedes the original if no gateway has taken it yet and replaces it where
it arrived otherwise. A direct send goes to its target again (a create); a
stream send goes to the subscribers the original reached (a local-time send's still
waiting for their time too), now.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from pushcore.consistency import reconcile
from pushcore.domain.errors import FieldError, NotFound, ValidationError
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.scheduling import DEFAULT_DELAY
from pushcore.domain.states import NotificationStatus
from pushcore.ports import (
    Clock,
    IconProbe,
    IdGenerator,
    InboxSignal,
    Store,
    Transaction,
    Waker,
    Writes,
)
from pushcore.services.collapse import SUPERSEDED, supersede_older
from pushcore.services.icons import probe_icons
from pushcore.services.notifications import NotificationService


def replacement_key(original: Notification) -> str:
    """The collapse key a replacement of ``original`` carries."""
    return original.collapse_key or original.id


@attrs.define(slots=False, eq=False, repr=False)
class ReplacementService:
    """Replace a notification, sent or not, by a new one to the same audience."""

    _store: Store
    _writes: Writes
    _clock: Clock
    _ids: IdGenerator
    _icons: IconProbe
    _waker: Waker
    _inbox: InboxSignal
    _notifications: NotificationService

    def original(self, account_id: str, notification_id: str) -> Notification:
        """The notification to replace; NotFound for another account's."""
        with self._store.read() as tx:
            found = tx.notifications.get(account_id, notification_id)
        if found is None:
            raise NotFound("Notification not found")
        return found

    async def replace(
        self, account_id: str, original: Notification, request: NewNotification
    ) -> Notification:
        """Create the replacement of ``original`` as ``request`` says (its collapse key
        already the original's); it names the original in ``supersedes``. A stream
        send's replacement goes out now, whatever timing ``request`` has."""
        if original.stream is None:
            return await self._notifications.create(account_id, request, supersedes=original.id)
        errors = []
        if request.target_device_token is not None:
            errors.append(FieldError("targetDeviceToken", "a stream send goes to its subscribers"))
        errors += await probe_icons(self._icons, account_id, {"senderIcon": request.sender_icon})
        if errors:
            raise ValidationError(errors)
        sent = await self._writes.submit_async(
            lambda tx: self._resend(tx, original, request, self._clock.now())
        )
        self._inbox.committed()
        self._waker.wake(sent.scheduled_at)
        return sent

    def _resend(
        self, tx: Transaction, original: Notification, request: NewNotification, now: datetime
    ) -> Notification:
        """The stream send again, now, to the accounts the original reached."""
        given = {name: getattr(request, name) for name in _KEPT}
        notification = attrs.evolve(
            original,
            **given,
            metadata=dict(request.metadata or {}),
            id=self._ids.new_id("ntf"),
            delay=DEFAULT_DELAY.value,
            custom_delay=None,
            scheduled_at=now,
            status=NotificationStatus.QUEUED,
            created_at=now,
            devices_targeted=0,
            failure_reason=None,
            wake_at=None,
            settled_at=None,
            revision=1,
            supersedes=original.id,
            deliver_at=None,  # it goes now, to every recipient
        )
        tx.notifications.add(notification)
        supersede_older(tx, notification, now)
        # A local-time send's subscribers whose time has not come are its audience too:
        # they get the replacement now, and the original's deliveries no gateway has
        # taken never go (superseded), so nobody gets the old one after the new.
        waiting = original.deliver_at is not None
        sent = tx.schedule.fan_out_again(notification, original.id, now, waiting)
        notification = attrs.evolve(notification, devices_targeted=sent)
        tx.notifications.update(notification)
        if not sent:
            (notification,) = reconcile(tx, [notification], now) or [notification]
        if tx.schedule.cancel_unsent(original.id, SUPERSEDED):
            reconcile(tx, tx.notifications.by_ids([original.id]), now)
        # Last: the inbox's turn is held until COMMIT (storage/sql/inbox.py).
        tx.inbox.fan_out_again(notification, original.id, now, waiting)
        tx.inbox.replace_older([notification], now)
        return notification


# What a stream replacement takes from the request as it is (the rest is the send's own).
_KEPT = (
    "title",
    "body",
    "icon_style",
    "sound",
    "priority",
    "sender_name",
    "sender_icon",
    "collapse_key",
    "renotify",
)
