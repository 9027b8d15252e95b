"""Recurring schedules' time model: an RRULE in a zone, by pushcore's daylight-saving rule.

The rule's own expansion is the recurrence port's (naive wall times, RFC 5545);
what is decided here is when each occurrence happens:

- ``FREQ=DAILY`` and coarser expand on wall time and each wall time is localised
  with :func:`pushcore.domain.localtime.to_utc`: it keeps its wall-clock time, a
  time that does not exist is shifted by the gap (``shifted``), a doubled time is
  the first of the two.
- ``FREQ=HOURLY`` and ``MINUTELY`` step in elapsed time, so there is exactly one
  occurrence per interval however the clocks change. The stepping (with
  ``BYMINUTE``/``BYSECOND``) runs on a frame at the zone's offset at the start;
  the limiting parts ``BYMONTH``, ``BYMONTHDAY``, ``BYDAY`` and ``BYHOUR`` are
  checked against the wall clock at each instant (``BYHOUR=9,10,...,17`` means
  what the clocks there show). ``BYYEARDAY``, ``BYWEEKNO``, ``BYSETPOS`` and
  ordinal ``BYDAY`` are refused with these frequencies.

``COUNT`` counts the rule's instances before ``exdates`` remove any (RFC 5545);
``UNTIL`` ending in ``Z`` is an instant, without it a wall time.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import attrs

from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.localtime import to_utc
from pushcore.ports.recurrence import RuleExpander

MAX_RRULE_LENGTH = 500
MAX_EXDATES = 500
MIN_SPACING = timedelta(seconds=60)
# Occurrences looked at when a rule is checked for being closer than MIN_SPACING.
SPACING_SAMPLE = 500
# No zone's offset is beyond this: a wall time's instant is never earlier than
# the wall time read as UTC minus it, which bounds how far ahead to look when
# shifted times are put back in order.
_MAX_OFFSET = timedelta(hours=15)

_PARTS = {
    "FREQ", "INTERVAL", "COUNT", "UNTIL", "WKST", "BYSECOND", "BYMINUTE", "BYHOUR",
    "BYDAY", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYMONTH", "BYSETPOS",
}  # fmt: skip
_FREQS = {"YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY"}
_ELAPSED = {"HOURLY", "MINUTELY"}
_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_BYDAY = re.compile(r"^([+-]?(?:[1-9]|[1-4]\d|5[0-3]))?(MO|TU|WE|TH|FR|SA|SU)$")
_RANGES = (
    ("BYSECOND", 0, 59), ("BYMINUTE", 0, 59), ("BYHOUR", 0, 23), ("BYMONTH", 1, 12),
    ("BYMONTHDAY", -31, 31), ("BYYEARDAY", -366, 366), ("BYWEEKNO", -53, 53),
    ("BYSETPOS", -366, 366),
)  # fmt: skip
_UNTIL = re.compile(r"^(\d{8})(?:T(\d{6})(Z?))?$")


@attrs.frozen
class Occurrence:
    """One time a schedule fires: its instant, the wall time it stands for, and if shifted."""

    at: datetime
    local_time: datetime
    shifted: bool


@attrs.frozen
class Rule:
    """A checked RRULE: what the expander steps, and what pushcore applies itself."""

    text: str
    freq: str
    stepping: str
    count: int | None
    until_instant: datetime | None
    until_wall: datetime | None
    limits: tuple[tuple[str, frozenset[int]], ...]

    @property
    def elapsed(self) -> bool:
        """Whether the rule steps in elapsed time (HOURLY, MINUTELY)."""
        return self.freq in _ELAPSED


def _bad(field: str, message: str) -> ValidationError:
    return ValidationError([FieldError(field, message)])


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def parse_zone(name: object, field: str = "timeZone") -> ZoneInfo:
    """The IANA zone ``name`` names; 400 for an offset, an unknown name or a non-string."""
    if not isinstance(name, str) or name not in _zone_names():
        raise _bad(field, "must be an IANA time zone name, such as Europe/Berlin")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # pragma: no cover - listed yet unreadable
        raise _bad(field, "must be an IANA time zone name, such as Europe/Berlin") from exc


def _ints(field: str, key: str, value: str, low: int, high: int) -> frozenset[int]:
    try:
        numbers = frozenset(int(v) for v in value.split(","))
    except ValueError:
        raise _bad(field, f"{key} must be a list of numbers") from None
    # Negative positions (BYMONTHDAY=-1, the last day) count from the end; 0 is none.
    if not all(low <= n <= high for n in numbers) or (low < 0 and 0 in numbers):
        raise _bad(field, f"{key} values must be between {low} and {high}")
    return numbers


def _until(field: str, value: str) -> tuple[datetime | None, datetime | None]:
    match = _UNTIL.match(value)
    if match is None:
        raise _bad(field, "UNTIL must be a date-time such as 20271231T235959Z or 20271231T235959")
    day, clock, zulu = match.groups()
    try:
        wall = datetime.strptime(day + (clock or "235959"), "%Y%m%d%H%M%S")
    except ValueError:
        raise _bad(field, "UNTIL is not a real date") from None
    return (wall.replace(tzinfo=UTC), None) if zulu else (None, wall)


def _split(text: object, field: str) -> dict[str, str]:
    if not isinstance(text, str) or not text.strip():
        raise _bad(field, "must be an RFC 5545 RRULE value, such as FREQ=DAILY;BYHOUR=9")
    if len(text) > MAX_RRULE_LENGTH:
        raise _bad(field, f"must be at most {MAX_RRULE_LENGTH} characters")
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[6:]
    parts: dict[str, str] = {}
    for item in body.split(";"):
        key, sep, value = item.partition("=")
        key = key.strip().upper()
        if key == "DTSTART":
            raise _bad(field, "must not contain DTSTART: give the schedule's start instead")
        if not sep or key not in _PARTS or key in parts or not value.strip():
            raise _bad(field, f"has an unknown, repeated or empty part {key or item!r}")
        parts[key] = value.strip().upper()
    return parts


def _check_parts(parts: dict[str, str], field: str) -> str:
    freq = parts.get("FREQ", "")
    if freq == "SECONDLY":
        raise _bad(field, "FREQ=SECONDLY is not allowed: occurrences must be at least 60 s apart")
    if freq not in _FREQS:
        raise _bad(field, "FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY or MINUTELY")
    if "COUNT" in parts and "UNTIL" in parts:
        raise _bad(field, "may have COUNT or UNTIL, not both")
    if "INTERVAL" in parts:
        _ints(field, "INTERVAL", parts["INTERVAL"], 1, 10**6)
    for key, low, high in _RANGES:
        if key in parts:
            _ints(field, key, parts[key], low, high)
    # Two seconds in one minute are always less than 60 s apart.
    if len(parts.get("BYSECOND", "").split(",")) > 1:
        raise _bad(field, "occurrences must be at least 60 s apart (one BYSECOND value at most)")
    if "WKST" in parts and parts["WKST"] not in _DAYS:
        raise _bad(field, "WKST must be a day (MO...SU)")
    if "BYDAY" in parts and not all(_BYDAY.match(d) for d in parts["BYDAY"].split(",")):
        raise _bad(field, "BYDAY must list days (MO, TU... or 1MO, -1FR)")
    return freq


def _count(parts: dict[str, str], field: str) -> int | None:
    if "COUNT" not in parts:
        return None
    value = parts.pop("COUNT")
    if not value.isdigit() or not 1 <= int(value) <= 10**9:
        raise _bad(field, "COUNT must be a number from 1")
    return int(value)


def _wall_limits(
    freq: str, parts: dict[str, str], field: str
) -> tuple[tuple[str, frozenset[int]], ...]:
    """Take out the parts an elapsed-time rule checks against the wall clock itself."""
    if freq not in _ELAPSED:
        return ()
    for key in ("BYYEARDAY", "BYWEEKNO", "BYSETPOS"):
        if key in parts:
            raise _bad(field, f"{key} is not supported with FREQ={freq}")
    limits: list[tuple[str, frozenset[int]]] = []
    for key, low, high in (("BYMONTH", 1, 12), ("BYMONTHDAY", -31, 31), ("BYHOUR", 0, 23)):
        if key in parts:
            limits.append((key, _ints(field, key, parts.pop(key), low, high)))
    if "BYDAY" in parts:
        days = parts.pop("BYDAY").split(",")
        if not all(d in _DAYS for d in days):
            raise _bad(field, f"BYDAY with FREQ={freq} takes days without a number (MO,TU...)")
        limits.append(("BYDAY", frozenset(_DAYS.index(d) for d in days)))
    return tuple(limits)


def parse_rule(text: object, field: str = "rrule") -> Rule:
    """Check an RRULE value as API.md pins it (no DTSTART, no SECONDLY, at most 500 characters)."""
    parts = _split(text, field)
    freq = _check_parts(parts, field)
    count = _count(parts, field)
    until_instant, until_wall = (
        _until(field, parts.pop("UNTIL")) if "UNTIL" in parts else (None, None)
    )
    limits = _wall_limits(freq, parts, field)
    stepping = ";".join(f"{k}={v}" for k, v in parts.items())
    return Rule(str(text), freq, stepping, count, until_instant, until_wall, limits)


def _month_day_matches(wall: datetime, days: frozenset[int]) -> bool:
    last = ((wall.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)).day
    return wall.day in days or (wall.day - last - 1) in days


def _limits_match(rule: Rule, wall: datetime) -> bool:
    for key, values in rule.limits:
        if key == "BYMONTH" and wall.month not in values:
            return False
        if key == "BYHOUR" and wall.hour not in values:
            return False
        if key == "BYDAY" and wall.weekday() not in values:
            return False
        if key == "BYMONTHDAY" and not _month_day_matches(wall, values):
            return False
    return True


def _frame_offset(start: datetime, zone: ZoneInfo) -> timedelta:
    """The offset of an elapsed-time rule's frame: the zone's at the start."""
    first, _ = to_utc(start, zone)
    return first.astimezone(zone).utcoffset() or timedelta(0)


def _elapsed(
    rule: Rule, start: datetime, zone: ZoneInfo, expander: RuleExpander, anchor: datetime | None
) -> Iterator[Occurrence]:
    offset = _frame_offset(start, zone)
    frame_start = anchor if anchor is not None else (to_utc(start, zone)[0] + offset)
    for frame in expander.walls(rule.stepping, frame_start.replace(tzinfo=None)):
        at = (frame - offset).replace(tzinfo=UTC)
        wall = at.astimezone(zone).replace(tzinfo=None)
        if _limits_match(rule, wall):
            yield Occurrence(at, wall, False)


def _by_wall(
    rule: Rule, start: datetime, zone: ZoneInfo, expander: RuleExpander, anchor: datetime | None
) -> Iterator[Occurrence]:
    if anchor is not None:
        start = anchor
    # A shifted time can come after later wall times (02:30 shifted to 03:30 follows
    # 03:00): hold occurrences until no later wall time can come before them.
    pending: list[tuple[datetime, datetime, bool]] = []
    for wall in expander.walls(rule.stepping, start):
        at, shifted = to_utc(wall, zone)
        heapq.heappush(pending, (at, wall, shifted))
        floor = (wall - _MAX_OFFSET).replace(tzinfo=UTC)
        while pending and pending[0][0] < floor:
            yield Occurrence(*heapq.heappop(pending))
    while pending:
        yield Occurrence(*heapq.heappop(pending))


@attrs.frozen
class Position:
    """Where an expansion may restart: the rule's wall (or frame) time and the instances before it.

    Restarting there yields the same occurrences as expanding from the start and
    skipping, without the cost of expanding from the start (a minutely rule's
    millionth occurrence is one step away, not a million).
    """

    anchor: datetime
    before: int = 0


def occurrences(
    rule: Rule,
    start: datetime,
    zone: ZoneInfo,
    expander: RuleExpander,
    exdates: Iterable[datetime] = (),
) -> Iterator[Occurrence]:
    """Every occurrence of ``rule`` from the wall time ``start`` in ``zone``, in strict order."""
    for occurrence, _ in positioned(rule, start, zone, expander, exdates):
        yield occurrence


def _restartable(rule: Rule, zone: ZoneInfo, occurrence: Occurrence) -> bool:
    """Whether expanding from this occurrence's wall time yields it first, as from the start.

    Elapsed rules step on a fixed frame, so always. Wall-time rules only at an
    unshifted time with no clock change in the day before it: around a change a
    shifted time may come after later wall times (02:30 shifted to 03:30 follows
    03:00), and restarting at 03:00 would lose it.
    """
    if rule.elapsed:
        return True
    day_before = occurrence.at - timedelta(days=1)
    return not occurrence.shifted and (
        day_before.astimezone(zone).utcoffset() == occurrence.at.astimezone(zone).utcoffset()
    )


def positioned(
    rule: Rule,
    start: datetime,
    zone: ZoneInfo,
    expander: RuleExpander,
    exdates: Iterable[datetime] = (),
    resume: Position | None = None,
) -> Iterator[tuple[Occurrence, Position | None]]:
    """The occurrences (from ``resume`` if given), each with where to restart at it, if one can."""
    skipped = frozenset(exdates)
    anchor = None if resume is None else resume.anchor
    source = (_elapsed if rule.elapsed else _by_wall)(rule, start, zone, expander, anchor)
    offset = _frame_offset(start, zone) if rule.elapsed else timedelta(0)
    last: datetime | None = None
    for made, occurrence in enumerate(source, start=0 if resume is None else resume.before):
        if rule.count is not None and made >= rule.count:
            return
        if rule.until_instant is not None and occurrence.at > rule.until_instant:
            return
        if rule.until_wall is not None and occurrence.local_time > rule.until_wall:
            return
        if occurrence.local_time in skipped or (last is not None and occurrence.at <= last):
            continue
        last = occurrence.at
        position = None
        if _restartable(rule, zone, occurrence):
            wall = (occurrence.at + offset).replace(tzinfo=None) if rule.elapsed else None
            position = Position(wall or occurrence.local_time, made)
        yield occurrence, position


def occurrences_from(
    rule: Rule,
    start: datetime,
    zone: ZoneInfo,
    expander: RuleExpander,
    since: datetime,
    exdates: Iterable[datetime] = (),
) -> Iterator[Occurrence]:
    """The occurrences at or after the instant ``since``."""
    for occurrence in occurrences(rule, start, zone, expander, exdates):
        if occurrence.at >= since:
            yield occurrence


def check_spacing(
    rule: Rule, start: datetime, zone: ZoneInfo, expander: RuleExpander, field: str = "rrule"
) -> None:
    """400 when the expander refuses the rule or two of its first occurrences are < 60 s apart."""
    last: datetime | None = None
    try:
        for index, occurrence in enumerate(occurrences(rule, start, zone, expander)):
            if last is not None and occurrence.at - last < MIN_SPACING:
                raise _bad(field, "occurrences must be at least 60 s apart")
            last = occurrence.at
            if index >= SPACING_SAMPLE:
                return
    except ValueError as exc:
        raise _bad(field, f"is not a valid RRULE: {exc}") from None
