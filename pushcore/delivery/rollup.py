"""Notifications follow their recorded deliveries: the engine's roll-ups.

The engine records a gateway's answers first, in a short transaction
(:meth:`Ledger.record`), so that a crash repeats only the last ~100 ms of
answers (API.md, "Limits and fairness"), and derives the notifications'
statuses afterwards (:meth:`Ledger.roll_up`), here: on a thread (and so a
database connection) of their own, those that come together in one go, so
that a roll-up never delays the next record. What a crash leaves between the
two is rolled up by :meth:`Rollups.leftovers`. A stop lets the queued roll-ups
finish within its grace period before the thread goes (:meth:`Rollups.close`); those
it cuts short, and any recorded after, keep their notes for the next start.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from asyncio import FIRST_COMPLETED
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from pushcore.delivery.coalesce import Coalescer
from pushcore.delivery.ledger import Ledger
from pushcore.domain.outcomes import Dispatch, Outcome

log = logging.getLogger("pushcore.delivery")


class Rollups:
    """The roll-ups of one engine, running beside its loop."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="pushcore-rollup")
        self._coalescer: Coalescer[tuple[Dispatch, Outcome], None] = Coalescer(self._flush)
        # Roll-ups started and not yet done: a drain or a stop waits for them.
        self.running: set[asyncio.Task[None]] = set()
        self._closed = False

    def start(self, pairs: list[tuple[Dispatch, Outcome]]) -> None:
        """Roll up the notifications of ``pairs``, just recorded, in the background."""
        if self._closed:
            return  # stopped: their notes stay, and the next start rolls them up
        task = asyncio.get_running_loop().create_task(self._roll_up(pairs))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def leftovers(self, before: datetime | None) -> None:
        """Roll up the notes recorded before ``before`` (None: all) that nobody did."""
        try:
            await self._in_thread(functools.partial(self._ledger.roll_up_leftovers, before))
        except Exception:
            log.warning("rolling up what a stopped engine left failed", exc_info=True)

    async def close(self, grace: asyncio.Future[None]) -> None:
        """Let the roll-ups started finish until ``grace`` ends, cancel the rest, then let
        the thread go. What is cut short keeps its notes: the next start rolls it up."""
        self._closed = True
        while self.running and not grace.done():
            await asyncio.wait([*self.running, grace], return_when=FIRST_COMPLETED)
        left = list(self.running)
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        # Cancelled here, the coalescer ends quietly: a flush it still starts finds the
        # thread gone and fails into futures that nobody waits for any more.
        self._thread.shutdown(wait=False)

    async def _roll_up(self, pairs: list[tuple[Dispatch, Outcome]]) -> None:
        try:
            await self._coalescer.submit(pairs)
        except Exception:
            # Recorded all the same; their notes stay, and the next start (or any
            # engine, a lease later) rolls them up.
            log.warning("rolling up %d outcomes failed", len(pairs), exc_info=True)

    async def _flush(self, pairs: list[tuple[Dispatch, Outcome]]) -> None:
        await self._in_thread(functools.partial(self._ledger.roll_up, pairs))

    async def _in_thread(self, work: Callable[[], object]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, work)
