"""A stored recurring schedule and what its materialiser decides, as pure functions.

The timing rules are pushcore/domain/schedules.py's and the time model
pushcore/domain/recurrence.py's; this module holds the entity and decides,
given ``now``, which occurrences become notifications, which are missed and
where the expansion resumes next time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import attrs

from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.recurrence import Occurrence, Position, parse_rule, positioned
from pushcore.domain.schedules import (
    RECIPIENT,
    CatchUp,
    CatchUpMode,
    ScheduleState,
    Timing,
    catch_up,
    zone_of,
)
from pushcore.ports.recurrence import RuleExpander

# How far ahead of its due time an occurrence becomes a notification: enough
# for a one-second loop to be late many times over (a busy database, a slow
# transaction) and still hand the engine a notification before it is due, so
# it goes out with the engine's precision; short enough that a pause, a PATCH
# or a DELETE rarely finds the occurrence already made.
LEAD = timedelta(seconds=60)
# An occurrence due less than this ago when first looked at is sent late, not
# caught up: the loop's own tick (and a schedule created "now") must not count
# as an outage.
GRACE = timedelta(seconds=5)
# The most occurrences a sender's request may step over to find its first one
# (a MINUTELY rule from 1900 would be tens of millions: seconds of CPU per request).
WALK_MAX = 10_000
# The most occurrences one pass makes of one schedule (a MINUTELY rule makes
# one per minute; the rest wait for the next pass).
PASS_MAX = 20


@attrs.frozen
class Schedule:
    """A recurring schedule as stored: its fields (API.md), its counters and its position."""

    id: str
    account_id: str
    name: str
    state: ScheduleState
    rrule: str
    start: datetime  # naive: a wall time in time_zone
    time_zone: str
    exdates: tuple[datetime, ...]
    catch_up_mode: CatchUpMode
    catch_up_window: int
    template: Mapping[str, Any]  # the template's JSON, as validated
    stream_id: str | None
    next_occurrence_at: datetime | None
    last_occurrence_at: datetime | None
    sent: int
    missed: int
    revision: int
    created_at: datetime
    # Where the next expansion starts (recurrence.Position), at or before next_occurrence_at.
    anchor: datetime  # naive: the rule's wall (or frame) time
    anchor_before: int
    paused_at: datetime | None = None

    @property
    def timing(self) -> Timing:
        """The checked timing; the stored rule was checked at its creation."""
        zone = zone_of(self.time_zone)
        return Timing(
            parse_rule(self.rrule), self.start, zone, self.exdates, self.time_zone == RECIPIENT
        )

    @property
    def catch_up(self) -> CatchUp:
        """The ``catchUp`` field."""
        return CatchUp(self.catch_up_mode, self.catch_up_window)

    @property
    def position(self) -> Position:
        """Where the expansion resumes."""
        return Position(self.anchor, self.anchor_before)


@attrs.frozen
class Plan:
    """What one pass does with a schedule: occurrences to make (instant, due), and its new self."""

    make: tuple[tuple[datetime, datetime], ...]
    schedule: Schedule


def _following(schedule: Schedule, expander: RuleExpander, since: datetime | None) -> Any:
    """The schedule's occurrences from its position, those before ``since`` left out."""
    timing = schedule.timing
    found = positioned(
        timing.rule,
        timing.start,
        timing.zone,
        expander,
        timing.exdates,
        schedule.position,
    )
    for occurrence, position in found:
        if since is None or occurrence.at >= since:
            yield occurrence, position


def reposition(
    schedule: Schedule, expander: RuleExpander, since: datetime, walk: int | None = None
) -> tuple[Schedule, int]:
    """The schedule moved to its first occurrence at or after ``since``; and how many it passed.

    Used on resume (what fell in the pause is passed, and counted missed) and
    after a PATCH; a schedule with nothing left is COMPLETED. Past ``walk``
    occurrences, a 400 naming ``start``.
    """
    passed = 0
    anchor = schedule.position
    for occurrence, position in _following(schedule, expander, schedule.next_occurrence_at):
        if position is not None:
            anchor = position
        if occurrence.at >= since:
            return attrs.evolve(
                schedule,
                next_occurrence_at=occurrence.at,
                anchor=anchor.anchor,
                anchor_before=anchor.before,
            ), passed
        passed += 1
        if walk is not None and passed > walk:
            raise ValidationError(
                [FieldError("start", "is too long before now for this rule: give a later start")]
            )
    return attrs.evolve(schedule, next_occurrence_at=None, state=ScheduleState.COMPLETED), passed


def plan(schedule: Schedule, expander: RuleExpander, now: datetime, lead: timedelta = LEAD) -> Plan:
    """One materialiser pass over an ACTIVE schedule whose next occurrence is near.

    Occurrences due before ``now - GRACE`` were not made while the service was
    down: the catch-up rule picks which of them are still sent (due now) and
    counts the rest missed. Those due until ``now + lead`` are made, due at
    their time. The position moves past what was decided.
    """
    overdue: list[datetime] = []
    make: list[tuple[datetime, datetime]] = []
    anchor = schedule.position
    upcoming: Occurrence | None = None
    for occurrence, position in _following(schedule, expander, schedule.next_occurrence_at):
        if occurrence.at > now + lead or len(make) >= PASS_MAX:
            upcoming = occurrence
            if position is not None:
                anchor = position
            break
        if position is not None:
            anchor = position
        if occurrence.at < now - GRACE:
            overdue.append(occurrence.at)
        else:
            make.append((occurrence.at, max(occurrence.at, now)))
    send, missed = catch_up(overdue, now, schedule.catch_up)
    make = [(at, now) for at in send] + make
    made_last = max((at for at, _ in make), default=schedule.last_occurrence_at)
    after = attrs.evolve(
        schedule,
        next_occurrence_at=None if upcoming is None else upcoming.at,
        anchor=anchor.anchor,
        anchor_before=anchor.before,
        missed=schedule.missed + missed,
        last_occurrence_at=made_last,
        state=ScheduleState.ACTIVE if upcoming is not None else ScheduleState.COMPLETED,
    )
    return Plan(tuple(make), after)
