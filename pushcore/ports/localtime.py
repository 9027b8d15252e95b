"""The local-time sends' side of the queue (pushcore/storage/sql/localtime.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import Notification


class LocalTimeSchedule(Protocol):
    """Deliveries due at each recipient's local time: made, and moved by an edit."""

    def stream_zones(self, stream_id: str) -> list[str]:
        """The zones (IANA names, ``UTC`` where unset) of the stream's subscribers."""
        ...

    def unsent_zones(self, notification_id: str) -> list[str]:
        """The zones of the owners of the devices the notification has not reached yet."""
        ...

    def fan_out(
        self, notification: Notification, stream_id: str, dues: Mapping[str, datetime]
    ) -> int:
        """One PENDING delivery per active device of every subscriber, due at ``dues``
        of its owner's zone; how many."""
        ...

    def reschedule_unsent(self, notification_id: str, dues: Mapping[str, datetime]) -> None:
        """Move every delivery never handed to a gateway to ``dues`` of its owner's zone."""
        ...
