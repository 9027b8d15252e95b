"""Recurring schedules' pure rules: their timing fields, states, preview and catch-up.

When each occurrence happens is pushcore/domain/recurrence.py's; this module
checks a schedule's timing as API.md pins it and decides what a state change
or an outage does, with no I/O or clock of its own (``now`` is given).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import attrs

from pushcore.domain.errors import FieldError, ScheduleEnded, ValidationError
from pushcore.domain.recurrence import (
    MAX_EXDATES,
    Occurrence,
    Rule,
    check_spacing,
    occurrences_from,
    parse_rule,
    parse_zone,
)
from pushcore.ports.recurrence import RuleExpander

PREVIEW_DEFAULT = 10
PREVIEW_MAX = 100
CATCH_UP_ALL_MAX = 10
WINDOW_MIN, WINDOW_MAX, WINDOW_DEFAULT = 60, 604_800, 3600
FREE_PLAN_SCHEDULES = 20


class ScheduleState(enum.StrEnum):
    """Where a schedule is: firing, held, or past its last occurrence."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"


class ScheduleAction(enum.StrEnum):
    """What a sender asks of a schedule."""

    PAUSE = "pause"
    RESUME = "resume"
    TRIGGER = "trigger"


def next_state(state: ScheduleState, action: ScheduleAction) -> ScheduleState:
    """The state after ``action``; 409 ``schedule_ended`` once COMPLETED.

    Pausing a paused schedule or resuming an active one changes nothing and is
    no error: a retried request gets the same answer.
    """
    if state is ScheduleState.COMPLETED:
        raise ScheduleEnded(f"The schedule has completed; it cannot be {action}d")
    if action is ScheduleAction.PAUSE:
        return ScheduleState.PAUSED
    if action is ScheduleAction.RESUME:
        return ScheduleState.ACTIVE
    return state


class CatchUpMode(enum.StrEnum):
    """What happens to occurrences that fell due while the service was down."""

    LATEST = "latest"
    SKIP = "skip"
    ALL = "all"


@attrs.frozen
class CatchUp:
    """The ``catchUp`` field: a mode and a window in seconds."""

    mode: CatchUpMode = CatchUpMode.LATEST
    window: int = WINDOW_DEFAULT


# `timeZone: "recipient"`: each occurrence is a local-time send. Its rule is read in
# the zone whose clocks are the first to show any wall time (UTC+14, no daylight
# saving), so an occurrence's instant is the earliest any recipient needs it: it
# is made then (or its lead before) and each recipient's delivery waits for that
# wall time in its own zone.
RECIPIENT = "recipient"
RECIPIENT_FRAME = ZoneInfo("Etc/GMT-14")


def zone_of(name: str) -> ZoneInfo:
    """The zone a stored ``timeZone`` reads the rule in (``recipient``: the frame above)."""
    return RECIPIENT_FRAME if name == RECIPIENT else ZoneInfo(name)


@attrs.frozen
class Timing:
    """A schedule's checked timing: rule, start (wall time), zone and excluded wall times."""

    rule: Rule
    start: datetime
    zone: ZoneInfo
    exdates: tuple[datetime, ...] = ()
    recipient: bool = False  # timeZone "recipient": ``zone`` is RECIPIENT_FRAME

    @property
    def zone_name(self) -> str:
        """The ``timeZone`` as the API shows it."""
        return RECIPIENT if self.recipient else self.zone.key

    def preview(self, expander: RuleExpander, since: datetime, limit: int) -> list[Occurrence]:
        """The next ``limit`` occurrences at or after the instant ``since``."""
        found = occurrences_from(self.rule, self.start, self.zone, expander, since, self.exdates)
        return list(islice(found, limit))


def parse_local(value: object, field: str, errors: list[FieldError]) -> datetime | None:
    """A local date-time without offset (``2027-03-14T03:30:00``), or an error noted."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is None and "T" in value:
            return parsed
    errors.append(
        FieldError(field, "must be a local date-time without offset (2027-03-14T09:00:00)")
    )
    return None


def _catch_up(value: object, errors: list[FieldError]) -> CatchUp:
    if value is None:
        return CatchUp()
    if not isinstance(value, Mapping) or set(value) - {"mode", "window"}:
        errors.append(
            FieldError("catchUp", 'must be {"mode": latest | skip | all, "window": seconds}')
        )
        return CatchUp()
    mode = value.get("mode", CatchUpMode.LATEST.value)
    window = value.get("window", WINDOW_DEFAULT)
    if mode not in {m.value for m in CatchUpMode}:
        errors.append(FieldError("catchUp.mode", "must be latest, skip or all"))
        mode = CatchUpMode.LATEST.value
    if (
        isinstance(window, bool)
        or not isinstance(window, int)
        or not WINDOW_MIN <= window <= WINDOW_MAX
    ):
        errors.append(
            FieldError("catchUp.window", f"must be whole seconds from {WINDOW_MIN} to {WINDOW_MAX}")
        )
        window = WINDOW_DEFAULT
    return CatchUp(CatchUpMode(mode), window)


def _exdates(value: object, errors: list[FieldError]) -> tuple[datetime, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_EXDATES:
        errors.append(
            FieldError("exdates", f"must be a list of at most {MAX_EXDATES} local date-times")
        )
        return ()
    found = [parse_local(v, f"exdates[{i}]", errors) for i, v in enumerate(value)]
    return tuple(d for d in found if d is not None)


def parse_timing(
    body: Mapping[str, object], now: datetime, expander: RuleExpander
) -> tuple[Timing, CatchUp]:
    """Check a schedule's timing fields, naming every bad one; ``start`` defaults to now there."""
    errors: list[FieldError] = []
    rule = zone = start = None
    try:
        rule = parse_rule(body.get("rrule"))
    except ValidationError as exc:
        errors.extend(exc.details)
    name = body.get("timeZone", "UTC")
    if name == RECIPIENT:
        zone = RECIPIENT_FRAME
    else:
        try:
            zone = parse_zone(name)
        except ValidationError as exc:
            errors.extend(exc.details)
    if body.get("start") is not None:
        start = parse_local(body["start"], "start", errors)
    elif zone is not None:
        # The minute, not the second: RFC 5545 takes what a rule leaves out (BYSECOND,
        # and BYMINUTE for an hourly rule) from DTSTART, so "now" with its seconds made
        # FREQ=DAILY;BYHOUR=9;BYMINUTE=0 fire at 09:00:45.
        start = now.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
    exdates = _exdates(body.get("exdates"), errors)
    catch_up = _catch_up(body.get("catchUp"), errors)
    if errors or rule is None or zone is None or start is None:
        raise ValidationError(errors)
    check_spacing(rule, start, zone, expander)
    return Timing(rule, start, zone, exdates, name == RECIPIENT), catch_up


def preview_limit(value: str | None) -> int:
    """The occurrences preview's ``limit``: 1 to 100, default 10."""
    if value is None:
        return PREVIEW_DEFAULT
    if not value.isdigit() or not 1 <= int(value) <= PREVIEW_MAX:
        raise ValidationError(
            [FieldError("limit", f"must be a whole number from 1 to {PREVIEW_MAX}")]
        )
    return int(value)


def catch_up(
    missed: Sequence[datetime], now: datetime, rule: CatchUp
) -> tuple[list[datetime], int]:
    """Of the occurrences (in order) that fell due during an outage: which to send, how many missed.

    ``latest`` sends the newest still within the window, ``all`` every one within
    it (the newest ten when there are more), ``skip`` none; the rest are missed.
    """
    recent = [at for at in missed if now - at <= timedelta(seconds=rule.window)]
    if rule.mode is CatchUpMode.SKIP:
        send: list[datetime] = []
    elif rule.mode is CatchUpMode.LATEST:
        send = recent[-1:]
    else:
        send = recent[-CATCH_UP_ALL_MAX:]
    return send, len(missed) - len(send)
