"""The recurrence port: expanding an RFC 5545 rule into naive wall times."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Protocol


class RuleExpander(Protocol):
    """Expands an RRULE value on naive wall time; knows nothing of zones.

    pushcore localises what it yields by its own daylight-saving rule
    (pushcore/domain/recurrence.py), so the library's handling of zones never
    decides when anything is sent.
    """

    def walls(self, rrule: str, start: datetime) -> Iterator[datetime]:
        """The rule's naive date-times from ``start`` (DTSTART), in order; ValueError if invalid."""
        ...
