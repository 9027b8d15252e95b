"""Notifications: schedule, inspect, list, cancel, count."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import attrs

from pushcore.consistency import new_deliveries
from pushcore.domain.errors import (
    DeviceNotFound,
    FieldError,
    NotCancellable,
    NotFound,
    ValidationError,
)
from pushcore.domain.expiry import expires_at_of, expiry_errors
from pushcore.domain.given import kept_as_given
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import (
    Delivery,
    DeliveryCounts,
    Device,
    Notification,
    NotificationStats,
)
from pushcore.domain.paging import Page, check_limit, cut
from pushcore.domain.scheduling import DEFAULT_DELAY, MAX_BATCH, resolve_due_time, schedule_errors
from pushcore.domain.states import NotificationEvent, NotificationStatus, next_notification_status
from pushcore.domain.timefmt import in_milliseconds
from pushcore.ports import (
    Clock,
    IconProbe,
    IdGenerator,
    Store,
    Together,
    Transaction,
    Waker,
    Writes,
)
from pushcore.services.collapse import supersede_in_batch, supersede_older
from pushcore.services.edits import edit_in, lock_edited
from pushcore.services.icons import probe_icons
from pushcore.services.localtime import request_due, timing_errors

STATS_WINDOW = timedelta(hours=24)


@attrs.frozen
class NotificationDetail:
    """A notification with how its deliveries stand."""

    notification: Notification
    deliveries: DeliveryCounts


def item_field(index: int) -> str:
    """The name of a batch item in error details: ``notifications[3]``."""
    return f"notifications[{index}]"


def _batch_icons(requests: Sequence[NewNotification]) -> dict[str, str | None]:
    """The sender icons of a batch, by their fields' names (items without one left out)."""
    return {
        f"{item_field(i)}.senderIcon": r.sender_icon
        for i, r in enumerate(requests)
        if r.sender_icon is not None
    }


def _item_index(error: FieldError) -> int:
    # Details in item order (notifications[10] after [9]); a stable sort keeps
    # each item's own fields in the order they were found.
    index = error.field.removeprefix("notifications[").partition("]")[0]
    return int(index) if index.isdigit() else -1


def _checked_due(
    now: datetime, request: NewNotification
) -> tuple[list[FieldError], datetime | None]:
    """A request's timing and expiry problems, and its due time when it needs no zone
    (a ``deliverAt`` one follows from the owner's zone, read in the write: request_due)."""
    if request.deliver_at is not None:
        errors = timing_errors(request, now)
        return errors or expiry_errors(now, request.ttl, request.expires_at), None
    errors = schedule_errors(now, request.delay, request.custom_delay, request.scheduled_at)
    if errors:
        return errors, None
    due = resolve_due_time(now, request.delay, request.custom_delay, request.scheduled_at)
    return expiry_errors(due, request.ttl, request.expires_at), in_milliseconds(due)


class _Drawn:
    """Ids drawn in bulk up front (one clock read and one lock for a batch's thousand),
    handed out one at a time as an :class:`IdGenerator` would."""

    def __init__(self, ids: IdGenerator, counts: dict[str, int]) -> None:
        self._left = {prefix: iter(ids.new_ids(prefix, n)) for prefix, n in counts.items()}

    def new_id(self, prefix: str) -> str:
        """The next id drawn for ``prefix``."""
        return next(self._left[prefix])

    def new_ids(self, prefix: str, count: int) -> list[str]:
        """The next ``count`` ids drawn for ``prefix``."""
        return [next(self._left[prefix]) for _ in range(count)]


class WakeRelay:
    """Forwards wake-ups to the engine of this process, once one runs.

    Services are built before the engine (and the CLI runs none); without an
    engine here, a server's engine finds the work on its own safety tick.
    """

    def __init__(self) -> None:
        self.engine: Waker | None = None

    def wake(self, at: datetime) -> None:
        """Pass ``at`` on to the engine, if any."""
        if self.engine is not None:
            self.engine.wake(at)


def cancel_in(
    tx: Transaction, account_id: str, notification_id: str, now: datetime
) -> Notification:
    """Cancel in ``tx`` while no delivery has been handed to a gateway; 409 otherwise."""
    found = tx.notifications.get(account_id, notification_id, for_update=True)
    if found is None:
        raise NotFound("Notification not found")
    if found.status not in (NotificationStatus.QUEUED, NotificationStatus.SCHEDULED):
        raise NotCancellable(f"Notification is {found.status.value} and can no longer be cancelled")
    if tx.progress.counts(notification_id).handed:
        raise NotCancellable(
            "Notification is already being delivered and can no longer be cancelled"
        )
    tx.schedule.cancel_unsent(notification_id, "cancelled")
    cancelled = attrs.evolve(
        found,
        status=next_notification_status(found.status, NotificationEvent.CANCEL),
        wake_at=None,
        settled_at=now,
    )
    tx.notifications.update(cancelled)
    return cancelled


@attrs.define(slots=False, eq=False, repr=False)
class NotificationService:
    """Use cases on notifications."""

    _store: Store
    _writes: Writes
    _clock: Clock
    _ids: IdGenerator
    _icons: IconProbe
    _waker: Waker

    async def create(
        self, account_id: str, request: NewNotification, supersedes: str | None = None
    ) -> Notification:
        """Schedule a notification; it and its deliveries are committed before this returns.

        Awaited on an event loop: the sender icon is checked there (ValidationError
        with the other invalid fields) and the group writer stores the
        notification while this task waits, so a create holds no thread.
        """
        icons = await probe_icons(self._icons, account_id, {"senderIcon": request.sender_icon})
        write = self._create_write(account_id, request, icons, supersedes)
        created = await self._writes.submit_async(write)
        self._waker.wake(created.scheduled_at)
        return created

    def _create_write(
        self,
        account_id: str,
        request: NewNotification,
        bad_icons: Sequence[FieldError],
        supersedes: str | None = None,
    ) -> Callable[[Transaction], Notification]:
        """The write that stores ``request``; ValidationError now for invalid fields."""
        now = self._clock.now()
        errors, known = _checked_due(now, request)
        errors += bad_icons
        if errors:
            raise ValidationError(errors)

        def write(tx: Transaction) -> Notification:
            token = request.target_device_token
            if token is not None and tx.devices.find_by_token(account_id, token) is None:
                raise DeviceNotFound("No device with this targetDeviceToken on this account")
            targets = tx.devices.active_targets(account_id, token)
            # Worked out by the checks unless it needs the owner's zone (read here).
            due = known if known is not None else request_due(tx, account_id, request, now)
            created = self._add(tx, account_id, request, now, targets, due, supersedes)
            supersede_older(tx, created, now)
            return created

        return write

    async def create_many(
        self, account_id: str, requests: Sequence[NewNotification]
    ) -> list[Notification]:
        """Schedule 1 to :data:`MAX_BATCH` notifications in one transaction: all or none.

        Every invalid field of every item is reported at once, named
        ``notifications[3].title`` (ValidationError); so is a ``senderIcon``
        that is no image, and a ``targetDeviceToken`` the account does not have
        (not the 404 of :meth:`create`: one answer lists every item to fix).
        Awaited as :meth:`create`.
        """
        self._check_batch_size(requests)
        icons = await probe_icons(self._icons, account_id, _batch_icons(requests))
        write = self._create_many_write(account_id, requests, icons)
        created = await self._writes.submit_async(write)
        # One wake-up, for the earliest: the engine finds the later ones itself.
        self._waker.wake(min(n.scheduled_at for n in created))
        return created

    @staticmethod
    def _check_batch_size(requests: Sequence[NewNotification]) -> None:
        if not 1 <= len(requests) <= MAX_BATCH:
            raise ValidationError(
                [FieldError("notifications", f"must hold 1 to {MAX_BATCH} notifications")]
            )

    def _create_many_write(
        self,
        account_id: str,
        requests: Sequence[NewNotification],
        bad_icons: Sequence[FieldError],
    ) -> Callable[[Transaction], list[Notification]]:
        """The write that stores every item or none; ValidationError now for invalid fields."""
        now = self._clock.now()
        errors: list[FieldError] = []
        # The due times that need no zone, worked out once by the checks, not again
        # in the write.
        dues: list[datetime | None] = []
        # A batch's items mostly share their timing: each kind checked once (3 µs an item).
        checked: dict[tuple[object, ...], tuple[list[FieldError], datetime | None]] = {}
        for i, request in enumerate(requests):
            timing = (
                request.delay,
                request.custom_delay,
                request.scheduled_at,
                request.deliver_at,
                request.ttl,
                request.expires_at,
            )
            known = checked.get(timing)
            if known is None:
                known = checked[timing] = _checked_due(now, request)
            found, due = known
            errors += [FieldError(f"{item_field(i)}.{e.field}", e.message) for e in found]
            dues.append(due)
        errors += bad_icons
        if errors:
            raise ValidationError(sorted(errors, key=_item_index))

        def write(tx: Transaction) -> list[Notification]:
            targets: dict[str | None, Sequence[Device]] = {}
            missing: list[FieldError] = []
            for i, request in enumerate(requests):
                token = request.target_device_token
                if token in targets:
                    continue
                if token is not None and tx.devices.find_by_token(account_id, token) is None:
                    missing.append(
                        FieldError(
                            f"{item_field(i)}.targetDeviceToken",
                            "no device with this token on this account",
                        )
                    )
                    continue
                targets[token] = tx.devices.active_targets(account_id, token)
            if missing:
                raise ValidationError(missing)
            created: list[Notification] = []
            deliveries: list[Delivery] = []
            fanned = sum(len(targets[r.target_device_token]) for r in requests)
            ids = _Drawn(self._ids, {"ntf": len(requests), "dlv": fanned})
            for i, request in enumerate(requests):
                devices = targets[request.target_device_token]
                try:
                    known = dues[i]
                    due = known if known is not None else request_due(tx, account_id, request, now)
                except ValidationError as exc:
                    raise ValidationError(
                        [FieldError(f"{item_field(i)}.{e.field}", e.message) for e in exc.details]
                    ) from None
                notification_id = ids.new_id("ntf")
                created.append(
                    self.compose(account_id, request, now, devices, due, notification_id)
                )
                due = created[-1].scheduled_at
                deliveries += new_deliveries(ids, created[-1], devices, due)
            # Two statements for the whole batch (one round trip each on PostgreSQL).
            tx.notifications.add_many(created)
            tx.schedule.add_many(deliveries)
            return supersede_in_batch(tx, created, now)

        return write

    def _add(
        self,
        tx: Transaction,
        account_id: str,
        request: NewNotification,
        now: datetime,
        targets: Sequence[Device],
        due: datetime,
        supersedes: str | None = None,
    ) -> Notification:
        """Store a new notification, due ``due``, and its deliveries."""
        notification = self.compose(account_id, request, now, targets, due)
        if supersedes is not None:
            notification = attrs.evolve(notification, supersedes=supersedes)
        self.store(tx, notification, targets)
        return notification

    def store(self, tx: Transaction, notification: Notification, targets: Sequence[Device]) -> None:
        """Store a new notification in ``tx`` with a delivery per target, due with it."""
        tx.notifications.add(notification)
        due = notification.scheduled_at
        tx.schedule.add_many(new_deliveries(self._ids, notification, targets, due))

    def compose(
        self,
        account_id: str,
        request: NewNotification,
        now: datetime,
        targets: Sequence[Device],
        due: datetime | None = None,
        notification_id: str | None = None,
    ) -> Notification:
        """A new notification for ``targets``, due ``due`` (or as ``request`` says)."""
        if due is None:
            due = in_milliseconds(
                resolve_due_time(now, request.delay, request.custom_delay, request.scheduled_at)
            )
        given = kept_as_given(request)
        return Notification(
            **{
                **given,
                # What the request says differently from what is kept:
                "delay": request.delay or DEFAULT_DELAY.value,
                "metadata": dict(request.metadata or {}),
                "scheduled_at": due,
                "expires_at": expires_at_of(due, request.ttl, request.expires_at),
            },
            id=notification_id or self._ids.new_id("ntf"),
            account_id=account_id,
            status=NotificationStatus.QUEUED,
            created_at=now,
            devices_targeted=len(targets),
            # With no device yet, the engine looks again at the due time.
            wake_at=None if targets else due,
        )

    def get(self, account_id: str, notification_id: str) -> NotificationDetail:
        """The notification with its delivery counts; NotFound for another account's."""
        with self._store.read() as tx:
            found = tx.notifications.get(account_id, notification_id)
            if found is None:
                raise NotFound("Notification not found")
            return NotificationDetail(found, tx.progress.counts(notification_id))

    def list(
        self,
        account_id: str,
        status: NotificationStatus | None = None,
        limit: int = 20,
        before_id: str | None = None,
        collapse_key: str | None = None,
        stream_id: str | None = None,
        schedule_id: str | None = None,
    ) -> Page[Notification]:
        """A page of the account's notifications, newest first."""
        check_limit(limit)
        with self._store.read() as tx:
            # One more than asked tells whether another page follows.
            found = tx.notifications.list(
                account_id, status, limit + 1, before_id, collapse_key, stream_id, schedule_id
            )
        return cut(found, limit, lambda n: n.id)

    def cancel(self, account_id: str, notification_id: str) -> Notification:
        """Cancel while no delivery has been handed to a gateway; 409 otherwise."""
        now = self._clock.now()

        # One write transaction decides against the engine's claim: a claim
        # marks a delivery handed (attempts > 0) in its own transaction.
        return self._writes.run(lambda tx: cancel_in(tx, account_id, notification_id, now))

    async def edit(
        self,
        account_id: str,
        notification_id: str,
        if_revision: int | None,
        apply: Callable[[Notification], NewNotification],
        sender_icon: str | None = None,
    ) -> NotificationDetail:
        """Edit while no delivery has been handed to a gateway: 409 ``not_editable`` after.

        ``apply`` turns the locked notification into the edited request (the
        merge patch, structured by the create's rules), so an edit is checked
        against the revision it is applied to. Decided in one write transaction
        holding the notification FOR UPDATE, which a claim skips: either the
        edit commits before any claim, and every delivery sends the new
        revision, or a delivery was handed first and this is a 409. The
        answer (with its delivery counts) is read in that same transaction, as
        a create's is: no second transaction, no thread of the pool.
        """
        icons = await probe_icons(self._icons, account_id, {"senderIcon": sender_icon})
        if icons:
            raise ValidationError(list(icons))

        def write(tx: Transaction) -> NotificationDetail:
            edited, counts = edit_in(
                tx, self._clock, self._ids, account_id, notification_id, if_revision, apply
            )
            if counts is None:
                counts = tx.progress.counts(notification_id)
            return NotificationDetail(edited, counts)

        # The group's edits lock their notifications and read their counts in one
        # go, and their UPDATEs go out together.
        detail = await self._writes.submit_async(write, Together(lock_edited, notification_id))
        self._waker.wake(detail.notification.scheduled_at)
        return detail

    def stats(self, account_id: str) -> NotificationStats:
        """Counts by status and delivery, and the last 24 hours."""
        with self._store.read() as tx:
            return tx.notifications.stats(account_id, self._clock.now() - STATS_WINDOW)
