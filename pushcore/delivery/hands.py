"""What the engine claimed, handed to the gateways, and each answer recorded.

The engine (delivery/engine.py) claims what is due and says when each batch may go;
:class:`Hands` sends it, never more at once than the in-flight cap and the records'
pace allow (delivery/pace.py), and records each answer as it comes, retrying while
the database cannot take it: an answer unrecorded is sent again once its lease runs
out, so it is never dropped here.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from pushcore.delivery.config import EngineConfig
from pushcore.delivery.ledger import Ledger
from pushcore.delivery.pace import RecordCost, RecordLag, RecordPace
from pushcore.delivery.recorder import GroupRecorder
from pushcore.delivery.sending import send
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Dispatch, Outcome
from pushcore.ports import Clock, Gateway

log = logging.getLogger("pushcore.delivery")
# Waits between tries to record outcomes while the database cannot take them.
RECORD_RETRY = (0.5, 30.0)

Pairs = list[tuple[Dispatch, Outcome]]


class Hands:
    """Sends claimed deliveries through the gateways and records what each answered.

    ``recorded(pairs, due)`` is called once the answers ``pairs`` are stored (with
    the earliest due time the record made, a retry's), before anything else runs
    on the loop: the engine lets go of them there.
    """

    def __init__(
        self,
        ledger: Ledger,
        clock: Clock,
        gateways: Mapping[Platform, Gateway],
        config: EngineConfig,
        executor: ThreadPoolExecutor,
        recorded: Callable[[Pairs, datetime | None], None],
    ) -> None:
        self._ledger = ledger
        self._clock = clock
        self._gateways = gateways
        self._config = config
        self._executor = executor
        self._recorded = recorded
        # Set when the engine stops: a record that fails is then not tried again.
        self.stopping = False
        # Each handed id with the hand that sent it: a deferred delivery may be claimed
        # and handed again while the hand it was deferred from still sends the rest.
        self._sending: dict[str, object] = {}
        # Set when handed ones are recorded (bound to a loop at its first wait).
        self._handed = asyncio.Event()
        # Sends wait while answers go unrecorded too long, and no more is handed at
        # once than one record stores in time (delivery/pace.py).
        self._pace = RecordPace()
        self._record_cost = RecordCost(config.record_cost)
        # Outcomes that come within a few ms of each other go in one transaction.
        self._records: GroupRecorder[tuple[Dispatch, Outcome], datetime | None] = GroupRecorder(
            self._record_in_thread
        )

    @property
    def record_lag(self) -> RecordLag:
        """How long this process's gateway answers waited for their records."""
        return self._pace.lag

    @property
    def in_flight(self) -> int:
        """Deliveries handed to gateways and not yet recorded."""
        return len(self._sending)

    def room(self) -> int:
        """How many more may be handed to gateways now: the in-flight cap, or fewer
        where the records could not store that many answers in time (pace.py)."""
        cap = min(self._config.max_in_flight, self._record_cost.keeps())
        return cap - len(self._sending)

    async def send(self, dispatches: Sequence[Dispatch]) -> None:
        """Hand ``dispatches`` as the room allows (more may come due at one instant
        than the cap holds), and return when every answer is recorded."""
        rest, hands = list(dispatches), []
        try:
            while rest:
                room = self.room()
                if room <= 0:
                    self._handed.clear()
                    await self._handed.wait()
                    continue
                hand, rest = rest[:room], rest[room:]
                token = object()
                self._sending.update((d.delivery.id, token) for d in hand)
                hands.append(asyncio.ensure_future(self._hand(hand, token)))
            await asyncio.gather(*hands)
        except asyncio.CancelledError:
            for task in hands:
                task.cancel()  # stopping: what was handed goes back with the rest
            raise

    async def _hand(self, dispatches: Sequence[Dispatch], token: object) -> None:
        by_platform: dict[Platform, list[Dispatch]] = defaultdict(list)
        for dispatch in dispatches:
            by_platform[dispatch.device.platform].append(dispatch)
        try:
            await asyncio.gather(
                *(
                    send(self._gateways.get(platform), platform, group, self._settle, self._pace)
                    for platform, group in by_platform.items()
                )
            )
        finally:
            # Recorded (each as it was, in _settle), or failed or cancelled: no longer
            # the gateway's, unless handed again since.
            for dispatch in dispatches:
                if self._sending.get(dispatch.delivery.id) is token:
                    del self._sending[dispatch.delivery.id]
            self._handed.set()

    async def _settle(self, pairs: Pairs) -> None:
        """Record ``pairs``; until the database takes them, they stay held (and renewed)."""
        pause = RECORD_RETRY[0]
        stored = False
        try:
            while True:
                try:
                    due = await self._records.submit(pairs)
                    stored = True
                    break
                except Exception:
                    if self.stopping:
                        raise
                    # Forgetting them would send them again once their leases ran out.
                    log.warning(
                        "recording %d outcomes failed; trying again", len(pairs), exc_info=True
                    )
                    await self._clock.sleep_until(self._clock.now() + timedelta(seconds=pause))
                    pause = min(pause * 2, RECORD_RETRY[1])
        finally:
            # Recorded, or given up (stopping): no longer what sends wait for.
            waited = self._pace.recorded((d.delivery.id for d, _ in pairs), stored)
            self._record_cost.waited(waited, asyncio.get_running_loop().time())
        for dispatch, _ in pairs:
            self._sending.pop(dispatch.delivery.id, None)
        self._handed.set()
        self._recorded(pairs, due)

    async def _record_in_thread(self, pairs: Pairs) -> datetime | None:
        record = functools.partial(_timed, self._ledger.record, pairs)
        loop = asyncio.get_running_loop()
        due, seconds = await loop.run_in_executor(self._executor, record)
        self._record_cost.took(len(pairs), seconds)
        return due


def _timed(fn: Callable[[Pairs], datetime | None], arg: Pairs) -> tuple[datetime | None, float]:
    """``fn(arg)`` and the seconds it took (in its thread: the wait for the writer too)."""
    started = time.perf_counter()
    return fn(arg), time.perf_counter() - started
