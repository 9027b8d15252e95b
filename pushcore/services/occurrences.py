"""Making recurring schedules' occurrences into ordinary notifications, exactly once each.

Each occurrence becomes its notification in one transaction with its row in
``schedule_occurrences``, whose primary key (schedule, occurrence time) lets one
transaction in; whichever engine (or the same one after kill -9 and a restart)
comes second makes nothing. Due schedules are read ``FOR UPDATE SKIP LOCKED``,
so two engines on PostgreSQL also share the work rather than collide on it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import attrs

from pushcore.domain.events import EventType
from pushcore.domain.expiry import expires_at_of
from pushcore.domain.inputs import NewNotification, StreamSend
from pushcore.domain.localtime import DeliverAt
from pushcore.domain.model import ScheduleRef
from pushcore.domain.recurring import LEAD, Schedule, plan
from pushcore.domain.schedules import RECIPIENT, RECIPIENT_FRAME, ScheduleState
from pushcore.domain.timefmt import in_milliseconds
from pushcore.events import Change, record_events
from pushcore.ports import Clock, IdGenerator, InboxSignal, RuleExpander, Store, Transaction, Waker
from pushcore.ports.schedules import TemplateReader
from pushcore.services.collapse import supersede_older
from pushcore.services.localtime import own_due
from pushcore.services.notifications import NotificationService
from pushcore.services.streams import send_in

log = logging.getLogger("pushcore.schedules")
# Schedules planned in one transaction: short, so SQLite's one writer is soon free.
BATCH = 50
# Batches in one pass at most: the next pass (a second later) goes on.
PASS_BATCHES = 20


@attrs.define(slots=False, eq=False, repr=False)
class Maker:
    """Turns due occurrences into notifications; one pass at a time (:meth:`run_once`)."""

    _store: Store
    _clock: Clock
    _ids: IdGenerator
    _expander: RuleExpander
    _templates: TemplateReader
    _notifications: NotificationService
    _engine: Waker
    _inbox: InboxSignal
    # Set by the loop of this process (delivery/recurring.py): a schedule due
    # within the lead is looked at now, not at the next tick.
    nudge: Callable[[], None] | None = None

    def wake(self, at: datetime | None) -> None:
        """A schedule's next occurrence is ``at``: nudge the loop if it is within the lead."""
        if at is not None and self.nudge is not None and at <= self._clock.now() + LEAD:
            self.nudge()

    def make(
        self,
        tx: Transaction,
        schedule: Schedule,
        occurrence_at: datetime,
        due: datetime,
        now: datetime,
        template: NewNotification | StreamSend | None = None,
    ) -> int:
        """The occurrence's notification, due ``due``, unless one was made: 1 if made, else 0.

        ``template``: the schedule's template as read, when the caller read it already.
        """
        notification_id = self._ids.new_id("ntf")
        if not tx.occurrences.claim(schedule.id, occurrence_at, notification_id, now):
            return 0
        ref = ScheduleRef(schedule.id, occurrence_at)
        streamed = schedule.stream_id is not None
        request = template or self._templates.read(schedule.template, streamed)
        if schedule.time_zone == RECIPIENT:
            # The occurrence's wall time, read in the rule's frame, in each recipient's zone.
            wall = occurrence_at.astimezone(RECIPIENT_FRAME)
            local = DeliverAt(wall.strftime("%H:%M"), wall.date().isoformat())
            request = attrs.evolve(request, deliver_at=local)
        if isinstance(request, StreamSend):
            view = None
            if schedule.stream_id is not None:
                view = tx.streams.get(schedule.account_id, schedule.stream_id)
            if view is None:
                return 0  # the stream was deleted: nothing to send to
            send_in(tx, notification_id, view, request, due, ref)
            return 1
        self._add(tx, schedule, request, notification_id, ref, due, now)
        return 1

    def _add(
        self,
        tx: Transaction,
        schedule: Schedule,
        request: NewNotification,
        notification_id: str,
        ref: ScheduleRef,
        due: datetime,
        now: datetime,
    ) -> None:
        account_id, token = schedule.account_id, request.target_device_token
        known = token is None or tx.devices.find_by_token(account_id, token) is not None
        targets = tx.devices.active_targets(account_id, token) if known else []
        if request.deliver_at is not None:
            due = own_due(tx, account_id, request.deliver_at, due)
        made = self._notifications.compose(account_id, request, now, targets)
        made = attrs.evolve(
            made,
            id=notification_id,
            scheduled_at=due,
            expires_at=expires_at_of(due, request.ttl, request.expires_at),
            # With no device yet, the engine looks again at the due time.
            wake_at=None if targets else due,
            schedule=ref,
        )
        self._notifications.store(tx, made, targets)
        # As a create with this due time: a newer one of its collapseKey replaces the older.
        supersede_older(tx, made, now)

    def run_once(self) -> int:
        """One pass over every schedule due within the lead, in batches; the notifications made."""
        return self.make_due()[0]

    def make_due(self) -> tuple[int, bool]:
        """One pass (see :meth:`run_once`): the notifications made, and whether it stopped at
        its last batch with more due (the loop then goes on at once, not a tick later)."""
        total = 0
        for _ in range(PASS_BATCHES):
            made, looked, earliest = self._batch()
            total += made
            if earliest is not None:
                self._engine.wake(earliest)
            if looked < BATCH:
                return total, False
        return total, True

    def _advance(
        self, tx: Transaction, schedule: Schedule, now: datetime
    ) -> tuple[int, datetime | None, list[Change]]:
        """Make what is due of one schedule and move it on: how many made, the first's due,
        and the events to record."""
        # A stream send reaches its subscribers' inboxes as it is made, so it is
        # made when due (within the loop's tick), not a lead ahead.
        lead = timedelta(0) if schedule.stream_id is not None else LEAD
        step = plan(schedule, self._expander, now, lead=lead)
        sent = 0
        # Read once for all its occurrences (a catch-up makes two or more).
        template = None
        if step.make:
            template = self._templates.read(schedule.template, schedule.stream_id is not None)
        for occurrence_at, at in step.make:
            sent += self.make(tx, schedule, occurrence_at, at, now, template)
        moved = attrs.evolve(step.schedule, sent=schedule.sent + sent)
        tx.schedules.update(moved)
        return sent, min((at for _, at in step.make), default=None), _changes(schedule, moved)

    def _batch(self) -> tuple[int, int, datetime | None]:
        now = in_milliseconds(self._clock.now())
        with self._store.read() as tx:
            # A look first: most passes (one a second) find nothing due, and an idle
            # pass must not take the write lock the engine's outcome records wait for.
            first = tx.schedules.earliest()
        if first is None or first > now + LEAD:
            return 0, 0, None
        made = 0
        earliest: datetime | None = None
        streams = False
        changes: list[Change] = []
        with self._store.transaction() as tx:
            due = tx.schedules.due(now + LEAD, now, BATCH)
            for schedule in due:
                try:
                    # One schedule that cannot be made (a bug, a template an upgrade no
                    # longer takes) must not hold back the others in its batch.
                    with tx.savepoint():
                        sent, first, told = self._advance(tx, schedule, now)
                except Exception:
                    log.exception("schedule %s: its occurrences could not be made", schedule.id)
                    continue
                changes += told
                if first is not None:
                    earliest = first if earliest is None else min(earliest, first)
                streams = streams or (schedule.stream_id is not None and sent > 0)
                made += sent
            # The batch's events in one statement, in the transaction that moved the
            # schedules on (so none is told of a step that was rolled back).
            if changes:
                record_events(tx, changes, now)
        if streams:
            self._inbox.committed()
        return made, len(due), earliest


def _changes(before: Schedule, after: Schedule) -> list[Change]:
    """The sender's `schedule.missed` and `schedule.completed` events of one step."""
    changes: list[Change] = []
    if after.missed > before.missed:
        missed = {
            "scheduleId": before.id,
            "status": after.state.value,
            "reason": "occurrences fell due while the service was down",
            "missed": after.missed - before.missed,
        }
        changes.append(Change(before.account_id, EventType.SCHEDULE_MISSED, missed))
    if after.state is ScheduleState.COMPLETED and before.state is not ScheduleState.COMPLETED:
        completed = {"scheduleId": before.id, "status": ScheduleState.COMPLETED.value}
        changes.append(Change(before.account_id, EventType.SCHEDULE_COMPLETED, completed))
    return changes
