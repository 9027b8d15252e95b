"""The delivery engine.

One loop per process: it sleeps until the earliest due time the database
knows of (a new earlier notification wakes it at once; a slow tick is only
a backstop for work added by other processes), claims what is due in
batches under a lease, and has each batch handed to the gateways
concurrently when it is due, each outcome recorded as it comes (those that
come within a few ms of each other in one transaction: delivery/hands.py).

Nothing per pending notification lives in memory: the database is the
queue, so the cost of sleeping does not grow with the backlog. A heartbeat
renews the leases of what this process holds, so a slow gateway or receiver
never makes a delivery go out twice; a crashed process's claims come back
when their lease runs out (``EngineConfig.lease``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from asyncio import FIRST_COMPLETED
from collections import defaultdict
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar

from pushcore.delivery.config import EngineConfig, new_owner
from pushcore.delivery.event_process import EventProcess
from pushcore.delivery.hands import Hands, Pairs
from pushcore.delivery.lead import Lead
from pushcore.delivery.ledger import Claim, Ledger
from pushcore.delivery.pace import RecordLag
from pushcore.delivery.recorder import PARALLEL
from pushcore.delivery.recurring import Materialiser
from pushcore.delivery.release import ReleaseRoom
from pushcore.delivery.retention import Retention
from pushcore.delivery.rollup import Rollups
from pushcore.delivery.webhooks import EventSender
from pushcore.domain.errors import Unavailable
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Dispatch
from pushcore.ports import Clock, DeliveryObserver, Gateway, InboxSignal, Store

log = logging.getLogger("pushcore.delivery")
T = TypeVar("T")
# A running loop that has not got through a claim for this long is stuck.
STUCK_AFTER = timedelta(seconds=30)


async def _first(*waits: Coroutine[Any, Any, object]) -> None:
    """Wait until the first of ``waits`` ends; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


class DeliveryEngine:
    """Claims due deliveries, sends them through the gateways, records what happened."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        gateways: Mapping[Platform, Gateway],
        config: EngineConfig | None = None,
        owner: str | None = None,
        uniform: Callable[[], float] = random.random,
        observer: DeliveryObserver | None = None,
        retention: Retention | None = None,
        inbox: InboxSignal | None = None,
        events: EventSender | EventProcess | None = None,
        schedules: Materialiser | None = None,
    ) -> None:
        self._store = store
        # Event webhooks, posted beside the loop: see delivery/webhooks.py.
        self._events = events
        self._poster: asyncio.Task[None] | None = None
        # Run beside the loop, in this process: see delivery/retention.py.
        self._retention = retention
        self._sweeper: asyncio.Task[None] | None = None
        # Recurring schedules' occurrences are made beside the loop: delivery/recurring.py.
        self._schedules = schedules
        self._maker: asyncio.Task[None] | None = None
        self._observer = observer
        self._clock = clock
        self._gateways = gateways
        self.config = config or EngineConfig()
        self.owner = owner or new_owner()
        # Told after a claim put entries in inboxes: this process's live channels.
        self._ledger = Ledger(store, clock, self.config, self.owner, uniform, inbox)
        # Claims (and heartbeats) get one thread, records one per group stored at
        # once (and so SQLite connections of their own): a claim never waits behind
        # a slow record, nor a record behind the one before it (delivery/recorder.py).
        self._claimer = ThreadPoolExecutor(1, thread_name_prefix="pushcore-claim")
        self._recorder = ThreadPoolExecutor(PARALLEL, thread_name_prefix="pushcore-record")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._room: asyncio.Event | None = None  # set each time deliveries are recorded
        self._planned: datetime | None = None
        self._early: datetime | None = None  # the earliest wake-up while not planned
        # Each batch's task and the ids it was started with; ``_held`` are the
        # ids claimed here and not yet recorded or handed back (leases renewed),
        # each with the task of its claim: a deferred delivery may be claimed
        # again while the batch it was deferred from still sends the rest.
        self._tasks: dict[asyncio.Task[None], list[str]] = {}
        self._held: dict[str, asyncio.Task[None]] = {}
        # Of those, the ones claimed ahead of their due time and still waiting for it,
        # and the ones handed to a gateway and not yet recorded (``in_flight``). Only
        # the handed can arrive twice after a crash, so only they fill the cap; what
        # waits for its time has a room of its own as large (``_claim_room``), so a
        # claim lead can take a whole instant's deliveries ahead (API.md's local-time
        # sends: thousands due at one zone's 09:00) while the crash bound stays.
        self._ahead = 0
        # What is due goes to the gateways, and their answers to the database, there
        # (delivery/hands.py): as many at once as the cap and the records allow.
        self._hands = Hands(
            self._ledger, clock, gateways, self.config, self._recorder, self._recorded
        )
        # Notifications follow their recorded deliveries (delivery/rollup.py).
        self._rollups = Rollups(self._ledger)
        # What quiet hours held goes out in slices beside due work (delivery/release.py).
        self._release = ReleaseRoom(self.config)
        # How far ahead of their due time claims take work (delivery/lead.py).
        self._lead = Lead(self.config)
        self._stopping = False
        self._stopped: asyncio.Future[None] | None = None
        self._runner: asyncio.Task[None] | None = None
        self.running = False
        # When the loop last claimed (or found nothing to claim) without failing.
        self.ticked_at: datetime | None = None
        self._started_at: datetime | None = None

    @property
    def record_lag(self) -> RecordLag:
        """How long this process's gateway answers waited for their records."""
        return self._hands.record_lag

    @property
    def redelivered(self) -> int:
        """Claims of deliveries sent before whose answer was never recorded (their
        process died, or stopped beating for a whole lease): each may arrive twice."""
        return self._ledger.redelivered

    def stuck(self) -> bool:
        """Whether the loop runs but has not got through a claim for a long while
        (the database refuses it, or the loop hangs): /readyz says so."""
        started = self.ticked_at or self._started_at
        if not self.running or started is None:
            return False
        limit = max(STUCK_AFTER, timedelta(seconds=10 * self.config.tick))
        return self._clock.now() - started > limit

    # -- waking --------------------------------------------------------------

    def wake(self, at: datetime) -> None:
        """Work is due at ``at``: wake the loop if it planned to sleep past it."""
        loop = self._loop
        if loop is None or self._wakeup is None or loop.is_closed():
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            # A create on the loop itself (every HTTP request): no self-pipe write.
            self._wake_here(at)
        else:
            loop.call_soon_threadsafe(self._wake_here, at)

    def _wake_here(self, at: datetime) -> None:
        """:meth:`wake`, on the loop's thread (so it reads ``_planned`` as the loop set it)."""
        if self._wakeup is None:
            return
        if self._planned is None:
            # Working (a claim): its look at the queue may have been before this work
            # was stored, so the plan it makes must not sleep past ``at``. Not a wake-up
            # now: creates due in an hour arriving during each claim would make every
            # claim start the next one, ~60 claims a second under a stream of creates,
            # each taking the writers' lock from them (docs/benchmarks.md, "Ingest").
            self._early = at if self._early is None else min(self._early, at)
        elif at - self._lead.current < self._planned:
            self._wakeup.set()

    # -- the loop ------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Start delivering in a task of the running loop; ready when this returns."""
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._room = asyncio.Event()
        self._started_at = self._clock.now()
        self.running = True
        log.info("delivery engine started as %s", self.owner)
        self._runner = self._loop.create_task(self._run())
        if self._retention is not None:
            self._sweeper = self._loop.create_task(self._retention.run())
        if self._events is not None:
            self._poster = self._loop.create_task(self._events.run())
        if self._schedules is not None:
            self._maker = self._loop.create_task(self._schedules.run())
        return self._runner

    async def run(self) -> None:
        """Deliver until :meth:`stop` is called."""
        await self.start()

    async def _run(self) -> None:
        try:
            # What a crash left recorded and not rolled up, before anything new.
            await self._rollups.leftovers(None)
            while not self._stopping:
                if self._clock.now() >= self._ledger.beat_due:
                    await self._beat()
                    # Another process's, dead since: a live one's are a lease younger.
                    await self._rollups.leftovers(self._clock.now() - self.config.lease)
                try:
                    next_due = await self.tick()
                    self.ticked_at = self._clock.now()
                    await self._plan_lead(next_due)
                except Unavailable as exc:
                    # An outage: one line a tick, not a traceback; try again shortly.
                    log.warning("delivery engine tick failed: %s", exc)
                    next_due = None
                except Exception:
                    # A database hiccup must not kill delivery; try again shortly.
                    log.exception("delivery engine tick failed")
                    next_due = None
                await self._sleep_until(next_due)
        finally:
            self.running = False

    async def _sleep_until(self, next_due: datetime | None) -> None:
        assert self._wakeup is not None
        assert self._room is not None
        if self._claim_room() <= 0 and not self._stopping:
            # Full: claim again once a batch has finished, not on a timer.
            # Beating on time all the same: what is held is being sent.
            self._room.clear()
            await _first(
                self._room.wait(),
                self._wakeup.wait(),
                self._clock.sleep_until(self._ledger.beat_due),
            )
        now = self._clock.now()
        delay = self.config.tick
        if self._held:
            # Leases to renew: wake for the heartbeat (idle, the tick's claims beat).
            delay = min(delay, max(0.0, (self._ledger.beat_due - now).total_seconds()))
        if next_due is not None:
            # With a lead, look again at most every half (configured) lead: each
            # claim then takes what falls due in the next half lead or more, at
            # least half a lead early, instead of one delivery a wake-up.
            wake = max(next_due - self._lead.current, now + self.config.lead / 2)
            delay = min(delay, max(0.0, (wake - now).total_seconds()))
        self._planned = planned = now + timedelta(seconds=delay)
        early, self._early = self._early, None
        if early is not None and early - self._lead.current < planned:
            self._wakeup.set()  # woken while it worked, for work before this plan
        if delay > 0 and not self._wakeup.is_set():
            # Whichever comes first: the clock's time, or a wake-up for earlier work.
            waits = [self._clock.sleep_until(planned), self._wakeup.wait()]
            if not self._release.room(self._held):
                # A release waits for its slice's room (set since the tick began).
                waits.append(self._room.wait())
            await _first(*waits)
        self._wakeup.clear()
        self._planned = None

    async def _plan_lead(self, next_due: datetime | None) -> None:
        """Set the claim lead for what falls due at ``next_due`` (delivery/lead.py)."""
        if not self._lead.counts(next_due, self._clock.now()):
            self._lead.plan(None)
            return
        assert next_due is not None
        # Up to what a claim may hold: more would not be claimed ahead anyway.
        count = functools.partial(
            self._ledger.due_count, next_due + self.config.lead, 2 * self.config.max_in_flight
        )
        self._lead.plan(await self._db(self._claimer, count))

    async def _db(self, executor: ThreadPoolExecutor, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(executor, fn)

    async def tick(self) -> datetime | None:
        """Claim everything due now (within the in-flight cap) and start sending it.

        Returns when the engine should look again.
        """
        next_due: datetime | None = None
        if self._room is not None:
            self._room.clear()  # what is recorded from now on makes room for a release
        while not self._stopping and self._claim_room() > 0:
            now = self._clock.now()
            room = min(self.config.batch_size, self._claim_room())
            release = self._release.room(self._held)
            started = time.perf_counter()
            claim: Claim = await self._db(
                self._claimer,
                functools.partial(
                    self._ledger.claim, now, room, self._held, release, self._lead.current
                ),
            )
            self._lead.claimed(len(claim.dispatches), time.perf_counter() - started)
            # A claim got through: not stuck, though one tick may claim a whole
            # release's slices, 100,000 deliveries over 30 s (stuck() says 30 s).
            self.ticked_at = self._clock.now()
            next_due = claim.next_due
            if self._stopping and claim.dispatches:
                # stop() came while this claim ran: hand it back rather than
                # send it through gateways that are closing.
                ids = [d.delivery.id for d in claim.dispatches]
                await self._db(self._recorder, functools.partial(self._ledger.release, ids))
                break
            if not claim.dispatches:
                break
            released = self._release.claimed(claim.dispatches)
            self._start(claim.dispatches)
            if len(claim.dispatches) < room and not (release and released >= release):
                # Short of what it asked: nothing more is due now. A release's slice is
                # short of it by design: the next slice is claimed at once, not half a
                # lead later (the release would go at a slice a tick).
                break
        return next_due

    def _start(self, dispatches: Sequence[Dispatch]) -> None:
        # Claimed up to `lead` early: what is not due yet waits for its due
        # time, in a batch of its own (never sent early).
        now = self._clock.now()
        groups: dict[datetime | None, list[Dispatch]] = defaultdict(list)
        for dispatch in dispatches:
            due = dispatch.delivery.due_at
            groups[due if due > now else None].append(dispatch)
        loop = asyncio.get_running_loop()
        for not_before, group in groups.items():
            ids = [d.delivery.id for d in group]
            if not_before is not None:
                self._ahead += len(group)
            task = loop.create_task(self._deliver(group, not_before))
            self._held.update(dict.fromkeys(ids, task))
            self._tasks[task] = ids
            task.add_done_callback(self._finished)

    @property
    def in_flight(self) -> int:
        """Deliveries this process has handed to gateways and not yet recorded.

        What a crash of this process can make arrive twice: never more than
        ``config.max_in_flight``.
        """
        return self._hands.in_flight

    def _claim_room(self) -> int:
        """How many more deliveries a claim may take: those due (handed, or waiting
        for room to be) within ``max_in_flight``, and as many again waiting for
        their due time."""
        cap = self.config.max_in_flight
        due = len(self._held) - self._ahead
        return min(cap - due, 2 * cap - len(self._held))

    def _finished(self, task: asyncio.Task[None]) -> None:
        # What a batch that failed left unrecorded is no longer renewed: like a
        # crash's, its leases run out and another claim sends it again.
        for delivery_id in self._tasks.pop(task, []):
            if self._held.get(delivery_id) is task:
                del self._held[delivery_id]
        if self._room is not None:
            self._room.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("delivery batch failed", exc_info=task.exception())

    async def _beat(self) -> None:
        """Say this engine lives and renew the leases it holds (claims do it too)."""
        try:
            await self._db(self._claimer, functools.partial(self._ledger.beat, sorted(self._held)))
        except Exception:
            # The database is away: nobody can claim then either; beat again soon.
            log.warning("delivery engine heartbeat failed", exc_info=True)

    async def drain(self) -> None:
        """Wait until every batch started so far has been sent and recorded, and its
        notifications rolled up."""
        while self._tasks or self._rollups.running:
            await asyncio.gather(*self._tasks, *self._rollups.running, return_exceptions=True)

    async def stop(self) -> None:
        """Stop claiming; finish in-flight batches within the grace period, release the rest.

        Once: a second call waits for the first (a server begins the stop when
        its own begins, and its lifespan waits for it at the end).
        """
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopped)

    async def _stop(self) -> None:
        self._stopping = True
        self._hands.stopping = True
        if self._wakeup is not None:
            self._wakeup.set()
        for beside in (self._sweeper, self._poster, self._maker):
            if beside is not None and beside.get_loop() is asyncio.get_running_loop():
                beside.cancel()
                await asyncio.gather(beside, return_exceptions=True)
        runner = self._runner
        if runner is not None and runner.get_loop() is asyncio.get_running_loop():
            # Let the current tick end first: a claim it is waiting for is
            # either started before this point or handed back by tick().
            await asyncio.gather(runner, return_exceptions=True)
        grace_end = self._clock.now() + timedelta(seconds=self.config.shutdown_grace)
        grace = asyncio.ensure_future(self._clock.sleep_until(grace_end))
        try:
            # The batches and the roll-ups queued (even with no batch left): a roll-up
            # cut short is not lost (its notes stay), but the next start redoes it.
            while (self._tasks or self._rollups.running) and not grace.done():
                waits = [*self._tasks, *self._rollups.running, grace]
                await asyncio.wait(waits, return_when=FIRST_COMPLETED)
            unfinished = set(self._tasks)
            # What is still held was not sent, or was sent with its answer unrecorded
            # (a gateway still waiting): handed back, it is sent again.
            ids = sorted(self._held)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
            if ids:
                release = functools.partial(self._ledger.release, ids)
                released = await self._db(self._recorder, release)
                log.info("released %d unsent deliveries", released)
            # Before its thread goes: a roll-up queued on it then failed with a traceback.
            await self._rollups.close(grace)
        finally:
            grace.cancel()
        for gateway in set(self._gateways.values()):
            await gateway.aclose()
        # Nothing is queued on the executors any more; don't block the loop on them.
        self._claimer.shutdown(wait=False)
        self._recorder.shutdown(wait=False)

    # -- sending -------------------------------------------------------------

    async def _deliver(
        self, dispatches: Sequence[Dispatch], not_before: datetime | None = None
    ) -> None:
        if not_before is not None:
            try:
                # The clock decides when the due time has come, never the loop's timer.
                await self._clock.sleep_until(not_before)
            finally:
                self._ahead -= len(dispatches)
        await self._hands.send(dispatches)

    def _recorded(self, pairs: Pairs, due: datetime | None) -> None:
        """``pairs``' answers are stored (delivery/hands.py): no longer held, their
        notifications rolled up, room for the next claim, a retry's time planned."""
        for dispatch, _ in pairs:
            self._held.pop(dispatch.delivery.id, None)
        self._rollups.start(pairs)
        if self._room is not None:
            self._room.set()
        if due is not None:
            self.wake(due)
        if self._observer is not None:
            self._observer.recorded(pairs, self.config.retry)
