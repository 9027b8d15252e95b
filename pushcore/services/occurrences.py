"""Making recurring schedules' occurrences into ordinary notifications, exactly once each.

Each occurrence becomes its notification in one transaction with its row in
``schedule_occurrences``, whose primary key (schedule, occurrence time) lets one
transaction in; whichever engine (or the same one after kill -9 and a restart)
comes second makes nothing. Due schedules are read ``FOR UPDATE SKIP LOCKED``,
so two engines on PostgreSQL also share the work rather than collide on it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import attrs

from pushcore.consistency import new_deliveries
from pushcore.domain.errors import Unavailable
from pushcore.domain.events import EventType
from pushcore.domain.inputs import NewNotification, StreamSend
from pushcore.domain.localtime import DeliverAt
from pushcore.domain.model import Delivery, Device, Notification, ScheduleRef
from pushcore.domain.recurring import LEAD, Plan, Schedule, plan
from pushcore.domain.schedules import RECIPIENT, RECIPIENT_FRAME, ScheduleState
from pushcore.domain.timefmt import in_milliseconds
from pushcore.events import Change, record_events
from pushcore.ports import Clock, IdGenerator, InboxSignal, RuleExpander, Store, Transaction, Waker
from pushcore.ports.schedules import TemplateReader
from pushcore.services.collapse import supersede_in_batch, supersede_older
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
        request = self._request(schedule, occurrence_at, template)
        if isinstance(request, StreamSend):
            view = None
            if schedule.stream_id is not None:
                view = tx.streams.get(schedule.account_id, schedule.stream_id)
            if view is None:
                return 0  # the stream was deleted: nothing to send to
            send_in(tx, notification_id, view, request, due, ref)
            return 1
        targets = _Targets(tx)
        made = self._compose(tx, schedule, request, notification_id, ref, due, now, targets)
        self._notifications.store(tx, made, targets.of(schedule.account_id, request))
        # As a create with this due time: a newer one of its collapseKey replaces the older.
        supersede_older(tx, made, now)
        return 1

    def _request(
        self,
        schedule: Schedule,
        occurrence_at: datetime,
        template: NewNotification | StreamSend | None,
    ) -> NewNotification | StreamSend:
        """What the occurrence sends: the template, at the occurrence's local time for a
        schedule in the recipients' zones."""
        request = template or self._templates.read(
            schedule.template, schedule.stream_id is not None
        )
        if schedule.time_zone == RECIPIENT:
            # The occurrence's wall time, read in the rule's frame, in each recipient's zone.
            wall = occurrence_at.astimezone(RECIPIENT_FRAME)
            local = DeliverAt(wall.strftime("%H:%M"), wall.date().isoformat())
            request = attrs.evolve(request, deliver_at=local)
        return request

    def _compose(
        self,
        tx: Transaction,
        schedule: Schedule,
        request: NewNotification,
        notification_id: str,
        ref: ScheduleRef,
        due: datetime,
        now: datetime,
        targets: _Targets,
    ) -> Notification:
        """The occurrence's notification, not stored yet, for the targets its template names."""
        account_id = schedule.account_id
        devices = targets.of(account_id, request)
        if request.deliver_at is not None:
            due = own_due(tx, account_id, request.deliver_at, due)
        made = self._notifications.compose(account_id, request, now, devices, due, notification_id)
        return attrs.evolve(made, schedule=ref)

    def make_many(self, tx: Transaction, steps: Sequence[Step], now: datetime) -> None:
        """Every occurrence of ``steps`` not made yet, in a few statements for them all
        (each step's ``made`` counts its own): its occurrences' keys in one INSERT, the
        notifications in one, their deliveries in one. Own sends only (no stream)."""
        claims = [
            (step, occurrence_at, at, self._ids.new_id("ntf"))
            for step in steps
            for occurrence_at, at in step.plan.make
        ]
        keys = [(step.schedule.id, o, notification_id) for step, o, _, notification_id in claims]
        won = tx.occurrences.claim_many(keys, now)
        targets = _Targets(tx)
        made: list[Notification] = []
        deliveries: list[Delivery] = []
        for step, occurrence_at, at, notification_id in claims:
            if notification_id not in won:
                continue  # made already (another engine, or before a crash)
            schedule = step.schedule
            request = self._request(schedule, occurrence_at, step.template)
            assert isinstance(request, NewNotification)
            ref = ScheduleRef(schedule.id, occurrence_at)
            made.append(
                self._compose(tx, schedule, request, notification_id, ref, at, now, targets)
            )
            devices = targets.of(schedule.account_id, request)
            deliveries += new_deliveries(self._ids, made[-1], devices, made[-1].scheduled_at)
            step.made += 1
        if made:
            tx.notifications.add_many(made)
            tx.schedule.add_many(deliveries)
            # In the order made: the last of a collapseKey replaces the others.
            supersede_in_batch(tx, made, now)

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

    def _step(self, schedule: Schedule, now: datetime) -> Step:
        """What a pass does with one schedule, decided (nothing written yet)."""
        # A stream send reaches its subscribers' inboxes as it is made, so it is
        # made when due (within the loop's tick), not a lead ahead.
        lead = timedelta(0) if schedule.stream_id is not None else LEAD
        step = plan(schedule, self._expander, now, lead=lead)
        # Read once for all its occurrences (a catch-up makes two or more).
        template = None
        if step.make:
            template = self._templates.read(schedule.template, schedule.stream_id is not None)
        return Step(schedule, step, template)

    def _make_one(self, tx: Transaction, step: Step, now: datetime) -> None:
        """The step's occurrences one by one (a stream send's, or after a batch failed)."""
        for occurrence_at, at in step.plan.make:
            step.made += self.make(tx, step.schedule, occurrence_at, at, now, step.template)

    def _make(self, tx: Transaction, steps: list[Step], now: datetime) -> list[Step]:
        """Make the steps' occurrences; the steps made (one that failed is left out)."""
        own = [s for s in steps if s.schedule.stream_id is None and s.plan.make]
        alone = [s for s in steps if s.schedule.stream_id is not None and s.plan.make]
        try:
            with tx.savepoint():
                self.make_many(tx, own, now)
        except Unavailable:
            raise
        except Exception:
            # One schedule that cannot be made (a bug, a device gone bad) must not hold
            # back the others of its batch: each alone then, the bad one left out.
            log.warning("a batch of occurrences could not be made at once", exc_info=True)
            for step in own:
                step.made = 0
            alone += own
        failed: set[str] = set()
        for step in alone:
            try:
                with tx.savepoint():
                    self._make_one(tx, step, now)
            except Exception:
                log.exception("schedule %s: its occurrences could not be made", step.schedule.id)
                failed.add(step.schedule.id)
        return [s for s in steps if s.schedule.id not in failed]

    def _batch(self) -> tuple[int, int, datetime | None]:
        now = in_milliseconds(self._clock.now())
        with self._store.read() as tx:
            # A look first: most passes (one a second) find nothing due, and an idle
            # pass must not take the write lock the engine's outcome records wait for.
            first = tx.schedules.earliest()
        if first is None or first > now + LEAD:
            return 0, 0, None
        with self._store.transaction() as tx:
            due = tx.schedules.due(now + LEAD, now, BATCH)
            steps: list[Step] = []
            for schedule in due:
                try:
                    # A template an upgrade no longer takes must not stop the others.
                    steps.append(self._step(schedule, now))
                except Exception:
                    log.exception("schedule %s: its occurrences could not be made", schedule.id)
            steps = self._make(tx, steps, now)
            moved = [attrs.evolve(s.plan.schedule, sent=s.schedule.sent + s.made) for s in steps]
            tx.schedules.update_steps(moved)
            changes = [
                c for s, m in zip(steps, moved, strict=True) for c in _changes(s.schedule, m)
            ]
            # The batch's events in one statement, in the transaction that moved the
            # schedules on (so none is told of a step that was rolled back).
            if changes:
                record_events(tx, changes, now)
        if any(s.schedule.stream_id is not None and s.made for s in steps):
            self._inbox.committed()
        firsts = [at for s in steps for _, at in s.plan.make]
        return sum(s.made for s in steps), len(due), min(firsts, default=None)


@attrs.define
class Step:
    """One schedule's part of a pass: its plan, its template as read, how many were made."""

    schedule: Schedule
    plan: Plan
    template: NewNotification | StreamSend | None
    made: int = 0


class _Targets:
    """The devices each template targets, read once per account and token in a transaction."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx
        self._found: dict[tuple[str, str | None], Sequence[Device]] = {}

    def of(self, account_id: str, request: NewNotification) -> Sequence[Device]:
        """The account's active devices (the one with the template's token, if it names one)."""
        token = request.target_device_token
        key = (account_id, token)
        found = self._found.get(key)
        if found is None:
            tx = self._tx
            known = token is None or tx.devices.find_by_token(account_id, token) is not None
            found = self._found[key] = tx.devices.active_targets(account_id, token) if known else []
        return found


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
