"""The engine process's loop that makes recurring schedules' occurrences into notifications.

A pass a second (or sooner when a schedule due within the lead is created or
resumed in this process) in a thread of its own; the first pass after a start
is the catch-up (pushcore/domain/recurring.py decides what an outage missed).
Every wait is :meth:`Clock.sleep_until`, so tests run it on fake time.

Passes run half a second past whole seconds (:func:`next_pass`). Occurrences
fall on whole seconds (a rule's times are, mostly whole minutes), and the pass
that makes the ones 60 s ahead fell due at the same instant: ticks a second
apart from an arbitrary start began it anywhere in the second after, now and
then on a burst of due deliveries, whose claim and sends then waited for the
pass's Python work (one GIL) and its round trips (docs/benchmarks.md,
"Recurring schedules").
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from pushcore.delivery.retention import finish_in_thread
from pushcore.ports import Clock
from pushcore.services.occurrences import Maker

log = logging.getLogger("pushcore.schedules")
TICK = timedelta(seconds=1)
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def next_pass(now: datetime, tick: timedelta = TICK) -> datetime:
    """When the next pass runs: half a tick past a whole tick, half a tick to 1.5 ticks on."""
    half = tick / 2
    at = _EPOCH + half + ((now - _EPOCH - half) // tick + 1) * tick
    return at + tick if at - now < half else at


class Materialiser:
    """Runs :meth:`Maker.make_due` each tick (at once again while more is due) until cancelled."""

    def __init__(self, maker: Maker, clock: Clock, tick: timedelta = TICK) -> None:
        self._maker = maker
        self._clock = clock
        self._tick = tick
        # One thread: on SQLite one connection, never a second writer of ours.
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="pushcore-schedules")
        self._nudged: asyncio.Event | None = None

    async def _pass(self) -> bool:
        """One pass in the thread; whether more is due at once."""
        _, more = await finish_in_thread(self._thread, self._maker.make_due)
        return more

    async def run(self) -> None:
        """Make what is due, pass after pass, until cancelled."""
        loop = asyncio.get_running_loop()
        nudged = self._nudged = asyncio.Event()

        def nudge() -> None:
            loop.call_soon_threadsafe(nudged.set)

        self._maker.nudge = nudge
        try:
            while True:
                nudged.clear()
                try:
                    # A catch-up (10,000 minutely schedules after an outage) is many
                    # passes' worth: a tick between them would be seconds of waiting.
                    if await self._pass():
                        continue
                except Exception:
                    # A database hiccup must not end the schedules; the next pass tries again.
                    log.exception("making schedules' occurrences failed")
                sleep = asyncio.ensure_future(
                    self._clock.sleep_until(next_pass(self._clock.now(), self._tick))
                )
                poked = asyncio.ensure_future(nudged.wait())
                try:
                    await asyncio.wait([sleep, poked], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleep.cancel()
                    poked.cancel()
        finally:
            self._maker.nudge = None
            self._thread.shutdown(wait=False)
