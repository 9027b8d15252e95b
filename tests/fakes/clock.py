"""A clock tests can set and move."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class FakeClock:
    """Starts at a fixed instant (or ``start``) and moves only when told."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The current fake time."""
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | float) -> None:
        """Move forward by ``delta`` (a timedelta or seconds)."""
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        with self._lock:
            self._now += step

    def set(self, instant: datetime) -> None:
        """Jump to ``instant``."""
        with self._lock:
            self._now = instant
