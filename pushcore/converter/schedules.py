"""Recurring schedules as API JSON, and their templates read as notification requests."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._base import structure_request
from pushcore.converter._views import CREATED, View, count, ident
from pushcore.converter.notifications import CURSOR_EXAMPLE, CURSOR_PATTERN
from pushcore.converter.paging import Cursor, PageView
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.inputs import NewNotification, StreamSend
from pushcore.domain.recurrence import Occurrence
from pushcore.domain.recurring import Schedule
from pushcore.domain.schedules import CatchUpMode, ScheduleState
from pushcore.domain.validation import about

SCHEDULE_ID = re.compile(r"sch_[0-9A-HJKMNP-TV-Z]{26}")
SCHEDULE_CURSOR = Cursor(SCHEDULE_ID, CURSOR_PATTERN, CURSOR_EXAMPLE)
# A template's timing is the schedule's: an occurrence sets each notification's.
TIMING_FIELDS = ("delay", "customDelay", "scheduledAt", "deliverAt")
_LOCAL = about("A local date-time without offset.", example="2027-03-14T09:00:00")


def _local(value: datetime) -> str:
    return value.isoformat(timespec="seconds")


@attrs.frozen
class CatchUpView(View):
    """What happens to occurrences that fell due while the service was down."""

    mode: CatchUpMode
    window: int = attrs.field(metadata=about("Seconds (60 to 604800).", minimum=60))


@attrs.frozen
class ScheduleView(View):
    """A recurring schedule."""

    id: str = attrs.field(metadata=ident("sch", "schedule"))
    name: str
    state: ScheduleState
    rrule: str = attrs.field(metadata=about("An RFC 5545 RRULE value, without DTSTART."))
    start: str = attrs.field(metadata=_LOCAL)
    time_zone: str = attrs.field(metadata=about("An IANA zone name.", example="Europe/Berlin"))
    exdates: tuple[str, ...]
    catch_up: CatchUpView
    template: dict[str, Any] = attrs.field(
        metadata=about(
            "The notification (or, with `streamId`, the stream send) each makes.",
            example={"title": "Stand-up"},
        )
    )
    stream_id: str | None
    next_occurrence_at: datetime | None
    last_occurrence_at: datetime | None
    sent: int = attrs.field(metadata=count("Notifications made (triggers included)."))
    missed: int = attrs.field(metadata=count("Occurrences not sent (outage, pause)."))
    revision: int = attrs.field(metadata=about("1 at creation, +1 on each PATCH (`If-Match`)."))
    created_at: datetime = attrs.field(metadata=CREATED)

    @classmethod
    def of(cls, s: Schedule) -> ScheduleView:
        """The view of a stored schedule."""
        return cls(
            id=s.id,
            name=s.name,
            state=s.state,
            rrule=s.rrule,
            start=_local(s.start),
            time_zone=s.time_zone,
            exdates=tuple(_local(d) for d in s.exdates),
            catch_up=CatchUpView(s.catch_up_mode, s.catch_up_window),
            template=dict(s.template),
            stream_id=s.stream_id,
            next_occurrence_at=s.next_occurrence_at,
            last_occurrence_at=s.last_occurrence_at,
            sent=s.sent,
            missed=s.missed,
            revision=s.revision,
            created_at=s.created_at,
        )


@attrs.frozen
class SchedulePageView(PageView):
    """One page of schedules, newest first."""

    item = ScheduleView.of
    cursor = SCHEDULE_CURSOR

    items: tuple[ScheduleView, ...]
    next_cursor: str | None = SCHEDULE_CURSOR.field()


@attrs.frozen
class OccurrenceView(View):
    """One time a schedule fires."""

    at: datetime
    local_time: str = attrs.field(metadata=_LOCAL)
    shifted: bool = attrs.field(
        metadata=about("The wall time did not exist that day; it fires shifted by the gap.")
    )

    @classmethod
    def of(cls, o: Occurrence) -> OccurrenceView:
        """The view of an occurrence."""
        return cls(o.at, _local(o.local_time), o.shifted)


class TemplateReader:
    """Reads a schedule's template as the request it stands for, as the API checks one."""

    def read(self, template: object, stream: bool) -> NewNotification | StreamSend:
        """The template as a create (or a stream send); ValidationError naming ``template.*``."""
        if not isinstance(template, Mapping):
            raise ValidationError([FieldError("template", "must be a JSON object")])
        timed = [name for name in TIMING_FIELDS if name in template]
        rest = {k: v for k, v in template.items() if k not in timed}
        errors = [
            FieldError(f"template.{name}", "the schedule's occurrences set the time")
            for name in timed
        ]
        request: NewNotification | StreamSend | None = None
        try:
            if stream:
                request = structure_request(StreamSend, rest)
            else:
                request = structure_request(NewNotification, rest)
        except ValidationError as exc:
            errors += [FieldError(f"template.{e.field}", e.message) for e in exc.details]
        if errors or request is None:
            raise ValidationError(errors)
        return request


@attrs.frozen
class CatchUpFields:
    """``catchUp``: what happens to occurrences due while the service was down."""

    mode: CatchUpMode = CatchUpMode.LATEST
    window: int = attrs.field(default=3600, metadata=about("Seconds, 60 to 604800."))


@attrs.frozen
class NewSchedule:
    """A schedule's fields (POST /api/schedules; a PATCH merges any of them)."""

    name: str = attrs.field(metadata=about("1 to 100 characters.", example="Stand-up"))
    rrule: str = attrs.field(
        metadata=about(
            "An RFC 5545 RRULE value without DTSTART, at most 500 characters; no SECONDLY,"
            " occurrences at least 60 s apart.",
            example="FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=0",
        )
    )
    template: dict[str, Any] = attrs.field(
        metadata=about(
            "The fields of POST /api/notifications except timing; with `streamId`, the"
            " fields of a stream send.",
            example={"title": "Stand-up", "body": "9:00 in the small room"},
        )
    )
    start: str | None = attrs.field(
        default=None,
        metadata=about(
            "The rule's DTSTART, a local date-time; default: the current minute"
            " (not the second: the rule would take its seconds)."
        ),
    )
    time_zone: str = attrs.field(
        default="UTC", metadata=about("An IANA zone name.", example="Europe/Berlin")
    )
    exdates: tuple[str, ...] = attrs.field(
        default=(), metadata=about("Up to 500 local date-times that are skipped.")
    )
    catch_up: CatchUpFields | None = None
    stream_id: str | None = attrs.field(
        default=None, metadata=about("Send each occurrence to this stream's subscribers.")
    )
