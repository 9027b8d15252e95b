"""The recurring schedules' repositories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pushcore.domain.inputs import NewNotification, StreamSend
    from pushcore.domain.recurring import Schedule
    from pushcore.domain.schedules import ScheduleState


class OccurrenceRepository(Protocol):
    """Which occurrence of which schedule has been made into which notification."""

    def claim(
        self, schedule_id: str, occurrence_at: datetime, notification_id: str, at: datetime
    ) -> bool:
        """Record that ``notification_id`` is this occurrence; False if one already is.

        Decided by the database's unique key, whichever process asks: of any
        number of concurrent claims of one occurrence exactly one is True. The
        caller makes the notification in the same transaction, so a claim and
        its notification are kept or lost together.
        """
        ...

    def claim_many(self, claims: Sequence[tuple[str, datetime, str]], at: datetime) -> set[str]:
        """:meth:`claim` for each (schedule, occurrence, notification) at once: the
        notification ids whose claims were taken (the others' occurrences are made)."""
        ...

    def notification_of(self, schedule_id: str, occurrence_at: datetime) -> str | None:
        """The notification made for this occurrence, if any."""
        ...


class ScheduleRepository(Protocol):
    """Recurring schedules, by account, and the ones whose next occurrence is near."""

    def add(self, schedule: Schedule) -> None:
        """Insert a new schedule."""
        ...

    def get(self, account_id: str, schedule_id: str, for_update: bool = False) -> Schedule | None:
        """The account's schedule, or None; ``for_update`` locks it until the transaction ends."""
        ...

    def list(
        self, account_id: str, state: ScheduleState | None, limit: int, before_id: str | None
    ) -> Sequence[Schedule]:
        """The account's schedules, newest first, in ``state`` when given, before ``before_id``."""
        ...

    def count_open(self, account_id: str) -> int:
        """How many of the account's schedules are not COMPLETED."""
        ...

    def update(self, schedule: Schedule) -> None:
        """Store a changed schedule."""
        ...

    def update_steps(self, schedules: Sequence[Schedule]) -> None:
        """Store what a materialiser pass changed of each schedule (position, counters,
        state): the other fields as they are stored."""
        ...

    def delete(self, account_id: str, schedule_id: str) -> bool:
        """Remove the schedule; False if the account has none by this id."""
        ...

    def due(self, until: datetime, streams_until: datetime, limit: int) -> Sequence[Schedule]:
        """ACTIVE schedules due by ``until`` (a stream send's by ``streams_until``), locked,
        skipping those another engine holds."""
        ...

    def earliest(self) -> datetime | None:
        """The earliest next occurrence of any ACTIVE schedule."""
        ...

    def pending_notifications(self, schedule_id: str) -> Sequence[str]:
        """The ids of the schedule's notifications still waiting (QUEUED or SCHEDULED)."""
        ...


class TemplateReader(Protocol):
    """Reads a schedule's template (its JSON) as the request it stands for."""

    def read(self, template: object, stream: bool) -> NewNotification | StreamSend:
        """A create request (with ``stream``, a stream send); ValidationError ``template.*``."""
        ...
