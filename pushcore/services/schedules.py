"""Recurring schedules: create, list, inspect, edit, delete, pause, resume, trigger, preview."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from pushcore.domain.errors import (
    FieldError,
    NotCancellable,
    NotFound,
    PlanLimit,
    RevisionMismatch,
    ScheduleEnded,
    ValidationError,
)
from pushcore.domain.model import Plan
from pushcore.domain.paging import Page, check_limit, cut
from pushcore.domain.recurrence import Occurrence, positioned
from pushcore.domain.recurring import WALK_MAX, Schedule, reposition
from pushcore.domain.schedules import (
    FREE_PLAN_SCHEDULES,
    ScheduleAction,
    ScheduleState,
    next_state,
    parse_timing,
)
from pushcore.domain.timefmt import in_milliseconds
from pushcore.ports import Clock, IdGenerator, RuleExpander, Store, Transaction, Writes
from pushcore.ports.schedules import TemplateReader
from pushcore.services.notifications import cancel_in
from pushcore.services.occurrences import Maker

NAME_MAX = 100
FIELDS = ("name", "rrule", "start", "timeZone", "exdates", "catchUp", "template", "streamId")


def merge(original: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386 JSON merge patch: ``null`` removes a member, objects merge, the rest replaces."""
    merged = dict(original)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def fields_of(schedule: Schedule) -> dict[str, Any]:
    """The schedule's fields as a create's body would give them (what a PATCH merges into)."""
    body: dict[str, Any] = {
        "name": schedule.name,
        "rrule": schedule.rrule,
        "start": schedule.start.isoformat(timespec="seconds"),
        "timeZone": schedule.time_zone,
        "exdates": [d.isoformat(timespec="seconds") for d in schedule.exdates],
        "catchUp": {"mode": schedule.catch_up_mode.value, "window": schedule.catch_up_window},
        "template": dict(schedule.template),
    }
    if schedule.stream_id is not None:
        body["streamId"] = schedule.stream_id
    return body


@attrs.define(slots=False, eq=False, repr=False)
class ScheduleService:
    """Use cases on recurring schedules; the materialiser is :class:`Maker`."""

    _store: Store
    _writes: Writes
    _clock: Clock
    _ids: IdGenerator
    _expander: RuleExpander
    _templates: TemplateReader
    maker: Maker

    def _checked(self, body: object, now: datetime) -> Schedule:
        """A schedule (not stored, no id yet) from a create's body; ValidationError naming all."""
        if not isinstance(body, Mapping):
            raise ValidationError([FieldError("body", "must be a JSON object")])
        errors = [FieldError(str(k), "is not a known field") for k in body if k not in FIELDS]
        name = body.get("name")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= NAME_MAX:
            errors.append(FieldError("name", f"must be text of 1 to {NAME_MAX} characters"))
        stream_id = body.get("streamId")
        if stream_id is not None and not isinstance(stream_id, str):
            errors.append(FieldError("streamId", "must be a stream's id"))
        try:
            self._templates.read(body.get("template"), stream_id is not None)
        except ValidationError as exc:
            errors += exc.details
        timing = catch_up = None
        try:
            timing, catch_up = parse_timing(body, now, self._expander)
        except ValidationError as exc:
            errors += exc.details
        if errors or timing is None or catch_up is None:
            raise ValidationError(errors)
        return Schedule(
            id="",
            account_id="",
            name=str(name).strip(),
            state=ScheduleState.ACTIVE,
            rrule=timing.rule.text,
            start=timing.start,
            time_zone=timing.zone.key,
            exdates=timing.exdates,
            catch_up_mode=catch_up.mode,
            catch_up_window=catch_up.window,
            template=dict(body["template"]),
            stream_id=stream_id if isinstance(stream_id, str) else None,
            next_occurrence_at=None,
            last_occurrence_at=None,
            sent=0,
            missed=0,
            revision=1,
            created_at=now,
            anchor=timing.start,
            anchor_before=0,
        )

    def _placed(self, schedule: Schedule, now: datetime) -> Schedule:
        """At its first occurrence from now (this second, so a start of now fires now)."""
        placed, _ = reposition(schedule, self._expander, now.replace(microsecond=0), WALK_MAX)
        return placed

    @staticmethod
    def _check_stream(tx: Transaction, schedule: Schedule) -> None:
        stream_id = schedule.stream_id
        if stream_id is not None and tx.streams.get(schedule.account_id, stream_id) is None:
            raise NotFound("Stream not found")

    def create(self, account_id: str, body: object) -> Schedule:
        """A new ACTIVE schedule; 403 ``plan_limit`` past the free plan's 20 not completed."""
        now = self._clock.now()
        schedule = self._checked(body, now)
        schedule = attrs.evolve(schedule, id=self._ids.new_id("sch"), account_id=account_id)
        schedule = self._placed(schedule, now)

        def write(tx: Transaction) -> Schedule:
            self._check_stream(tx, schedule)
            account = tx.accounts.get(account_id)
            if account is None or account.plan is Plan.FREE:
                # Counted and inserted under one lock: two creates cannot both be the 20th.
                tx.locks.plan_limits(account_id)
                if tx.schedules.count_open(account_id) >= FREE_PLAN_SCHEDULES:
                    raise PlanLimit(
                        f"The free plan allows {FREE_PLAN_SCHEDULES} schedules that are not"
                        " completed; delete one or move to the pro plan"
                    )
            tx.schedules.add(schedule)
            return schedule

        created = self._writes.run(write)
        self.maker.wake(created.next_occurrence_at)
        return created

    def get(self, account_id: str, schedule_id: str) -> Schedule:
        """The account's schedule; NotFound for another account's."""
        with self._store.read() as tx:
            found = tx.schedules.get(account_id, schedule_id)
        if found is None:
            raise NotFound("Schedule not found")
        return found

    def list(
        self,
        account_id: str,
        state: ScheduleState | None = None,
        limit: int = 20,
        before_id: str | None = None,
    ) -> Page[Schedule]:
        """A page of the account's schedules, newest first."""
        check_limit(limit)
        with self._store.read() as tx:
            found = tx.schedules.list(account_id, state, limit + 1, before_id)
        return cut(found, limit, lambda s: s.id)

    def _change(
        self, account_id: str, schedule_id: str, change: Callable[[Transaction, Schedule], Schedule]
    ) -> Schedule:
        """Apply ``change`` to the locked schedule and store what it returns."""

        def write(tx: Transaction) -> Schedule:
            found = tx.schedules.get(account_id, schedule_id, for_update=True)
            if found is None:
                raise NotFound("Schedule not found")
            changed = change(tx, found)
            tx.schedules.update(changed)
            return changed

        changed = self._writes.run(write)
        self.maker.wake(changed.next_occurrence_at)
        return changed

    def update(
        self, account_id: str, schedule_id: str, if_revision: int | None, patch: object
    ) -> Schedule:
        """A JSON merge patch of the schedule's fields; ``revision`` + 1.

        A change of timing places the schedule at its first occurrence from now.
        An occurrence already made is an ordinary notification: it stays as made.
        """
        if not isinstance(patch, Mapping) or not patch:
            raise ValidationError([FieldError("body", "must be a non-empty JSON object")])
        now = self._clock.now()

        def change(tx: Transaction, found: Schedule) -> Schedule:
            if if_revision is not None and found.revision != if_revision:
                raise RevisionMismatch(
                    f"Schedule is at revision {found.revision}, not {if_revision}"
                )
            if found.state is ScheduleState.COMPLETED:
                raise ScheduleEnded("The schedule has completed; it cannot be changed")
            checked = self._checked(merge(fields_of(found), patch), now)
            edited = attrs.evolve(
                checked,
                id=found.id,
                account_id=found.account_id,
                state=found.state,
                created_at=found.created_at,
                sent=found.sent,
                missed=found.missed,
                last_occurrence_at=found.last_occurrence_at,
                paused_at=found.paused_at,
                revision=found.revision + 1,
            )
            self._check_stream(tx, edited)
            timing = ("rrule", "start", "timeZone", "exdates")
            if all(fields_of(edited)[k] == fields_of(found)[k] for k in timing):
                return attrs.evolve(
                    edited,
                    next_occurrence_at=found.next_occurrence_at,
                    anchor=found.anchor,
                    anchor_before=found.anchor_before,
                )
            return self._placed(edited, now)

        return self._change(account_id, schedule_id, change)

    def delete(self, account_id: str, schedule_id: str) -> None:
        """Remove the schedule and cancel its occurrence not yet handed to a gateway."""
        now = self._clock.now()

        def write(tx: Transaction) -> None:
            if tx.schedules.get(account_id, schedule_id, for_update=True) is None:
                raise NotFound("Schedule not found")
            self._cancel_pending(tx, account_id, schedule_id, now)
            tx.schedules.delete(account_id, schedule_id)

        self._writes.run(write)

    @staticmethod
    def _cancel_pending(tx: Transaction, account_id: str, schedule_id: str, now: datetime) -> int:
        """Cancel the schedule's notifications no gateway has taken; how many were."""
        cancelled = 0
        for notification_id in tx.schedules.pending_notifications(schedule_id):
            try:
                cancel_in(tx, account_id, notification_id, now)
            except NotCancellable:
                continue  # already being delivered: it goes out
            cancelled += 1
        return cancelled

    def pause(self, account_id: str, schedule_id: str) -> Schedule:
        """PAUSED: no new occurrences; one made and not yet handed is cancelled (and missed)."""
        now = self._clock.now()

        def change(tx: Transaction, found: Schedule) -> Schedule:
            state = next_state(found.state, ScheduleAction.PAUSE)
            if found.state is ScheduleState.PAUSED:
                return found
            cancelled = self._cancel_pending(tx, account_id, schedule_id, now)
            return attrs.evolve(
                found,
                state=state,
                paused_at=now,
                sent=found.sent - cancelled,
                missed=found.missed + cancelled,
            )

        return self._change(account_id, schedule_id, change)

    def resume(self, account_id: str, schedule_id: str) -> Schedule:
        """ACTIVE again, from now: what fell in the pause counts as missed."""
        now = self._clock.now()

        def change(tx: Transaction, found: Schedule) -> Schedule:
            state = next_state(found.state, ScheduleAction.RESUME)
            if found.state is ScheduleState.ACTIVE:
                return found
            placed, passed = reposition(found, self._expander, now)
            if placed.state is ScheduleState.COMPLETED:
                state = ScheduleState.COMPLETED
            return attrs.evolve(placed, state=state, paused_at=None, missed=found.missed + passed)

        return self._change(account_id, schedule_id, change)

    def trigger(self, account_id: str, schedule_id: str) -> Schedule:
        """One notification now (``occurrenceAt`` the trigger's time), counted in ``sent``."""
        now = in_milliseconds(self._clock.now())

        def change(tx: Transaction, found: Schedule) -> Schedule:
            next_state(found.state, ScheduleAction.TRIGGER)
            made = self.maker.make(tx, found, now, now, now)
            return attrs.evolve(found, sent=found.sent + made)

        triggered = self._change(account_id, schedule_id, change)
        self.maker.wake(now)
        return triggered

    def occurrences(
        self, account_id: str, schedule_id: str, since: datetime | None, limit: int
    ) -> Sequence[Occurrence]:
        """The next ``limit`` occurrences at or after ``since`` (default now)."""
        schedule = self.get(account_id, schedule_id)
        since = since or self._clock.now()
        timing = schedule.timing
        # From the stored position when it lies before `since`: no expansion from DTSTART.
        resume = None
        if schedule.next_occurrence_at is not None and since >= schedule.next_occurrence_at:
            resume = schedule.position
        found: list[Occurrence] = []
        walked = 0
        for occurrence, _ in positioned(
            timing.rule, timing.start, timing.zone, self._expander, timing.exdates, resume
        ):
            if len(found) >= limit:
                break
            if occurrence.at >= since:
                found.append(occurrence)
            elif (walked := walked + 1) > WALK_MAX:
                raise ValidationError(
                    [FieldError("from", "is too far from the schedule's start for this rule")]
                )
        return found
