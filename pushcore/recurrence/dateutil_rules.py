"""The recurrence port on python-dateutil's RFC 5545 implementation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from dateutil.rrule import rrulestr


class DateutilExpander:
    """RuleExpander on ``dateutil.rrule``: naive in, naive out, no zone ever attached."""

    def walls(self, rrule: str, start: datetime) -> Iterator[datetime]:
        """The rule's naive date-times from ``start``, in order; ValueError if invalid."""
        if start.tzinfo is not None:
            raise ValueError("start must be a naive wall time")
        try:
            rule = rrulestr(rrule, dtstart=start)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(str(exc) or "not an RRULE") from exc
        return iter(rule)
