"""A clock tests can set and move, whose sleeps end only when its time passes them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import UTC, datetime, timedelta

import attrs


@attrs.define(eq=False)
class _Sleeper:
    until: datetime
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class FakeClock:
    """Starts at a fixed instant (or ``start``) and moves only when told.

    ``sleep_until`` waits for fake time: a sleeper wakes when :meth:`advance` or
    :meth:`set` moves the clock to or past its end, from any thread, and
    never because real time went by. So a test decides exactly when each
    wait of the engine ends, and a busy machine cannot change the outcome.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
        self._lock = threading.Lock()
        self._sleepers: list[_Sleeper] = []
        self.naps: list[datetime] = []  # the end of every sleep begun, in order

    def now(self) -> datetime:
        """The current fake time."""
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | float) -> None:
        """Move forward by ``delta`` (a timedelta or seconds), waking the sleeps it ends."""
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        with self._lock:
            self._now += step
            self._wake_due()

    def set(self, instant: datetime) -> None:
        """Jump to ``instant``, waking the sleeps that end by then."""
        with self._lock:
            self._now = instant
            self._wake_due()

    async def sleep_until(self, when: datetime) -> None:
        """Wait until the clock is moved to ``when`` or later (only yields if it is there)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self.naps.append(when)
            sleeper = None
            if when > self._now:
                sleeper = _Sleeper(when, loop, loop.create_future())
                self._sleepers.append(sleeper)
        if sleeper is None:
            await asyncio.sleep(0)
            return
        try:
            await sleeper.future
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._sleepers.remove(sleeper)

    @property
    def sleepers(self) -> list[datetime]:
        """When each sleep still waiting ends, earliest first."""
        with self._lock:
            return sorted(s.until for s in self._sleepers)

    def _wake_due(self) -> None:
        for sleeper in [s for s in self._sleepers if s.until <= self._now]:
            self._sleepers.remove(sleeper)
            # The loop of a test that has ended is closed: nothing waits there.
            with contextlib.suppress(RuntimeError):
                sleeper.loop.call_soon_threadsafe(_wake, sleeper.future)
