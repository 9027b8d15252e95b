"""PATCH /api/notifications/:id: an edit, decided in the group writer's transaction.

API.md, "After sending": an edit holds while no delivery has been handed to a
gateway (409 ``not_editable`` after), against the revision it names (409
``revision_mismatch``). NotificationService.edit hands the write below to the group
writer, which runs a group's edits after one locked read for all of them
(:func:`lock_edited`); a claim skips what is locked, so either the edit commits
before any claim, and every delivery sends the new revision, or it is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

from pushcore.consistency import new_deliveries
from pushcore.domain.errors import (
    DeviceNotFound,
    FieldError,
    NotEditable,
    NotFound,
    RevisionMismatch,
    ValidationError,
)
from pushcore.domain.expiry import expires_at_of, expiry_errors
from pushcore.domain.given import kept_as_given
from pushcore.domain.inputs import NewNotification
from pushcore.domain.localtime import due_by_zone, earliest, latest
from pushcore.domain.model import DeliveryCounts, Notification
from pushcore.domain.revisions import NOT_EDITABLE_HINT
from pushcore.domain.scheduling import DEFAULT_DELAY, schedule_errors
from pushcore.domain.states import NotificationStatus
from pushcore.ports import Clock, IdGenerator, Transaction
from pushcore.services.localtime import request_due, timing_errors


def lock_edited(tx: Transaction, notification_ids: Sequence[str]) -> None:
    """The group writer's one read for a group's edits (see ``Together``)."""
    tx.notifications.lock_for_edit(notification_ids)


def edit_in(
    tx: Transaction,
    clock: Clock,
    ids: IdGenerator,
    account_id: str,
    notification_id: str,
    if_revision: int | None,
    apply: Callable[[Notification], NewNotification],
) -> tuple[Notification, DeliveryCounts | None]:
    """Edit ``account_id``'s notification in ``tx`` as ``apply`` says: the edited
    notification, and its delivery counts when the edit left them as they were (None:
    read them again, its targets changed). NotFound, RevisionMismatch, NotEditable
    (a delivery handed), ValidationError, DeviceNotFound as API.md says."""
    found, counts = tx.notifications.editable(account_id, notification_id)
    if found is None:
        raise NotFound("Notification not found")
    if if_revision is not None and found.revision != if_revision:
        raise RevisionMismatch(f"Notification is at revision {found.revision}, not {if_revision}")
    hint = NOT_EDITABLE_HINT.format(notification_id)
    if found.status not in (NotificationStatus.QUEUED, NotificationStatus.SCHEDULED):
        raise NotEditable(f"Notification is {found.status.value}: {hint}")
    if counts.handed:
        raise NotEditable(f"Notification is being delivered; {hint}")
    request = apply(found)
    now = clock.now()
    errors = timing_errors(request, now) or schedule_errors(
        now, request.delay, request.custom_delay, request.scheduled_at
    )
    if errors:
        raise ValidationError(errors)
    local = request.deliver_at
    timed = request.delay is not None or request.scheduled_at is not None or local is not None
    if timed and local is None and found.stream is not None:
        raise ValidationError([FieldError("body", "a stream send is timed by deliverAt alone")])
    due = found.scheduled_at
    dues: dict[str, datetime] = {}
    if local is not None and found.stream is not None:
        dues = due_by_zone(local, tx.local_times.unsent_zones(notification_id), now)
        due = earliest(dues, now)
    elif timed:
        due = request_due(tx, account_id, request, now)
    ttl_from = latest(dues, now) if dues else due
    errors = expiry_errors(due, request.ttl, request.expires_at)
    if errors:
        raise ValidationError(errors)
    given = kept_as_given(request)
    edited = attrs.evolve(
        found,
        **{
            **given,
            "delay": (request.delay or DEFAULT_DELAY.value) if timed else found.delay,
            "custom_delay": request.custom_delay if timed else found.custom_delay,
            "metadata": dict(request.metadata or {}),
            "scheduled_at": due,
            "expires_at": expires_at_of(ttl_from, request.ttl, request.expires_at),
            "deliver_at": local if timed else found.deliver_at,
        },
        # A notification with no delivery yet is looked at again at its due time.
        wake_at=due if found.wake_at == found.scheduled_at else found.wake_at,
        revision=found.revision + 1,
    )
    token = request.target_device_token
    if token != found.target_device_token and not dues:
        edited = _retarget(tx, ids, edited, token)
        tx.notifications.edit(edited)
        return edited, None
    if dues:
        tx.local_times.reschedule_unsent(notification_id, dues)
    elif timed:  # an edit of its content alone leaves its deliveries as they are
        tx.schedule.reschedule_unsent(notification_id, due)
    tx.notifications.edit(edited)
    return edited, counts


def _retarget(
    tx: Transaction, ids: IdGenerator, edited: Notification, token: str | None
) -> Notification:
    """The edited notification for its new target set, whose deliveries replace the old."""
    if edited.stream is not None:
        raise ValidationError(
            [FieldError("targetDeviceToken", "a stream send goes to its subscribers")]
        )
    if token is not None and tx.devices.find_by_token(edited.account_id, token) is None:
        raise DeviceNotFound("No device with this targetDeviceToken on this account")
    targets = tx.devices.active_targets(edited.account_id, token)
    # The old target set's deliveries, none handed yet, are not made.
    tx.schedule.cancel_unsent(edited.id, "retargeted")
    tx.schedule.add_many(new_deliveries(ids, edited, targets, edited.scheduled_at))
    due = edited.scheduled_at
    waiting = edited.status is NotificationStatus.QUEUED and not targets
    return attrs.evolve(
        edited, devices_targeted=len(targets), wake_at=due if waiting else edited.wake_at
    )
