"""The delivery engine.

One loop per process: it sleeps until the earliest due time the database
knows of (a new earlier notification wakes it at once; a slow tick is only
a backstop for work added by other processes), claims what is due in
batches under a lease, hands each batch to the gateways concurrently, and
records the outcomes in one transaction per batch.

Nothing per pending notification lives in memory: the database is the
queue, so the cost of sleeping does not grow with the backlog, and a
crashed process's claims come back when their lease runs out.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from asyncio import FIRST_COMPLETED
from collections import defaultdict
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import attrs

from pushcore.delivery.coalesce import Coalescer
from pushcore.delivery.config import EngineConfig, new_owner
from pushcore.delivery.journal import say_deactivated, say_failed, say_retry
from pushcore.delivery.retention import Retention
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import (
    Delivered,
    Dispatch,
    Failed,
    Outcome,
    Retry,
    TokenInvalid,
    delivery_event,
    is_redelivery,
)
from pushcore.domain.states import DeliveryStatus, next_delivery_status
from pushcore.ports import Clock, DeliveryObserver, Gateway, Store
from pushcore.services.queueing import detach_device, reconcile

log = logging.getLogger("pushcore.delivery")
T = TypeVar("T")
# How often a working engine says so in the database (engines.seen_at).
HEARTBEAT = timedelta(seconds=2)


async def _first(*waits: Coroutine[Any, Any, object]) -> None:
    """Wait until the first of ``waits`` ends; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


@attrs.frozen
class Claim:
    """What one claim transaction found."""

    dispatches: Sequence[Dispatch]
    next_due: datetime | None


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
    ) -> None:
        self._store = store
        # Run beside the loop, in this process: see delivery/retention.py.
        self._retention = retention
        self._sweeper: asyncio.Task[None] | None = None
        self._observer = observer
        self._clock = clock
        self._gateways = gateways
        self.config = config or EngineConfig()
        self.owner = owner or new_owner()
        self._uniform = uniform
        # Claims and records each get one thread (and so one SQLite connection):
        # a claim never waits behind a slow record in the same queue.
        self._claimer = ThreadPoolExecutor(1, thread_name_prefix="pushcore-claim")
        self._recorder = ThreadPoolExecutor(1, thread_name_prefix="pushcore-record")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._room: asyncio.Event | None = None  # set each time a batch finishes
        self._planned: datetime | None = None
        self._tasks: dict[asyncio.Task[None], list[str]] = {}
        self._in_flight = 0
        # Outcomes of batches that finish together go in one transaction.
        self._records: Coalescer[tuple[Dispatch, Outcome], datetime | None] = Coalescer(
            self._record_in_thread
        )
        self._stopping = False
        self._runner: asyncio.Task[None] | None = None
        self.running = False
        # Claims of deliveries sent before whose answer was never recorded
        # (their lease ran out): each may arrive twice.
        self.redelivered = 0
        self._beat_due = datetime.min.replace(tzinfo=UTC)

    # -- waking --------------------------------------------------------------

    def wake(self, at: datetime) -> None:
        """Work is due at ``at``: wake the loop if it planned to sleep past it."""
        loop, event = self._loop, self._wakeup
        if loop is None or event is None or loop.is_closed():
            return
        if self._planned is None or at - self.config.lead < self._planned:
            loop.call_soon_threadsafe(event.set)

    # -- the loop ------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Start delivering in a task of the running loop; ready when this returns."""
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._room = asyncio.Event()
        self.running = True
        log.info("delivery engine started as %s", self.owner)
        self._runner = self._loop.create_task(self._run())
        if self._retention is not None:
            self._sweeper = self._loop.create_task(self._retention.run())
        return self._runner

    async def run(self) -> None:
        """Deliver until :meth:`stop` is called."""
        await self.start()

    async def _run(self) -> None:
        try:
            while not self._stopping:
                try:
                    next_due = await self.tick()
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
        if self._in_flight >= self.config.max_in_flight and not self._stopping:
            # Full: claim again once a batch has finished, not on a timer.
            self._room.clear()
            await _first(self._room.wait(), self._wakeup.wait())
        now = self._clock.now()
        delay = self.config.tick
        if next_due is not None:
            lead = self.config.lead
            # With a lead, look again at most every half lead: each claim then
            # takes what falls due in the next half lead or more, at least half
            # a lead early, instead of one delivery a wake-up.
            wake = max(next_due - lead, now + lead / 2)
            delay = min(delay, max(0.0, (wake - now).total_seconds()))
        self._planned = planned = now + timedelta(seconds=delay)
        if delay > 0 and not self._wakeup.is_set():
            # Whichever comes first: the clock's time, or a wake-up for earlier work.
            await _first(self._clock.sleep_until(planned), self._wakeup.wait())
        self._wakeup.clear()
        self._planned = None

    async def _db(self, executor: ThreadPoolExecutor, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(executor, fn)

    async def tick(self) -> datetime | None:
        """Claim everything due now (within the in-flight cap) and start sending it.

        Returns when the engine should look again.
        """
        next_due: datetime | None = None
        while not self._stopping and self._in_flight < self.config.max_in_flight:
            now = self._clock.now()
            room = min(self.config.batch_size, self.config.max_in_flight - self._in_flight)
            claim = await self._db(self._claimer, functools.partial(self._claim, now, room))
            next_due = claim.next_due
            if self._stopping and claim.dispatches:
                # stop() came while this claim ran: hand it back rather than
                # send it through gateways that are closing.
                ids = [d.delivery.id for d in claim.dispatches]
                await self._db(self._recorder, functools.partial(self._release, ids))
                break
            if not claim.dispatches:
                break
            self._start(claim.dispatches)
            if len(claim.dispatches) < room:
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
            self._in_flight += len(group)
            task = loop.create_task(self._deliver(group, not_before))
            self._tasks[task] = [d.delivery.id for d in group]
            task.add_done_callback(self._finished)

    @property
    def in_flight(self) -> int:
        """Deliveries this process has claimed and not yet recorded or handed back.

        What a crash of this process can make arrive twice: never more than
        ``config.max_in_flight``.
        """
        return self._in_flight

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._in_flight -= len(self._tasks.pop(task, []))
        if self._room is not None:
            self._room.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("delivery batch failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait until every batch started so far has been sent and recorded."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def stop(self) -> None:
        """Stop claiming; finish in-flight batches within the grace period, release the rest."""
        self._stopping = True
        if self._wakeup is not None:
            self._wakeup.set()
        sweeper = self._sweeper
        if sweeper is not None and sweeper.get_loop() is asyncio.get_running_loop():
            sweeper.cancel()
            await asyncio.gather(sweeper, return_exceptions=True)
        runner = self._runner
        if runner is not None and runner.get_loop() is asyncio.get_running_loop():
            # Let the current tick end first: a claim it is waiting for is
            # either started before this point or handed back by tick().
            await asyncio.gather(runner, return_exceptions=True)
        if self._tasks:
            grace_end = self._clock.now() + timedelta(seconds=self.config.shutdown_grace)
            grace = asyncio.ensure_future(self._clock.sleep_until(grace_end))
            try:
                while self._tasks and not grace.done():
                    await asyncio.wait([*self._tasks, grace], return_when=FIRST_COMPLETED)
            finally:
                grace.cancel()
        unfinished = set(self._tasks)
        ids = [i for task in unfinished for i in self._tasks.get(task, [])]
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*unfinished, return_exceptions=True)
        if ids:
            released = await self._db(self._recorder, functools.partial(self._release, ids))
            log.info("released %d unsent deliveries", released)
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
            # The clock decides when the due time has come, never the loop's timer.
            await self._clock.sleep_until(not_before)
        by_platform: dict[Platform, list[Dispatch]] = defaultdict(list)
        for dispatch in dispatches:
            by_platform[dispatch.device.platform].append(dispatch)
        results = await asyncio.gather(
            *(self._send(platform, group) for platform, group in by_platform.items())
        )
        pairs = [pair for result in results for pair in result]
        due = await self._records.submit(pairs)
        if due is not None:
            self.wake(due)
        if self._observer is not None:
            self._observer.recorded(pairs, self.config.retry)

    async def _record_in_thread(self, pairs: list[tuple[Dispatch, Outcome]]) -> datetime | None:
        return await self._db(self._recorder, functools.partial(self._record, pairs))

    async def _send(
        self, platform: Platform, group: Sequence[Dispatch]
    ) -> list[tuple[Dispatch, Outcome]]:
        gateway = self._gateways.get(platform)
        if gateway is None:
            return [(d, Failed(f"No gateway for {platform.value} devices")) for d in group]
        try:
            outcomes = await gateway.send(group)
        except Exception as exc:
            # A gateway bug or outage must not lose the deliveries: retry them.
            log.exception("gateway %s failed", platform.value)
            outcomes = [Retry(f"Gateway error: {type(exc).__name__}") for _ in group]
        return list(zip(group, outcomes, strict=True))

    # -- database work (runs in the executor threads) -----------------------

    def _claim(self, now: datetime, limit: int) -> Claim:
        with self._store.transaction() as tx:
            if now >= self._beat_due:
                # The heartbeat senders look for (pushctl send warns without one); the
                # loop claims at least once a tick, so it beats while idle too.
                tx.engines.beat(self.owner, now)
                self._beat_due = now + HEARTBEAT
            reconcile(tx, tx.notifications.due_wakeups(now, self.config.batch_size), now)
            horizon, lease_end = now + self.config.lead, now + self.config.lease
            deliveries = tx.deliveries.claim_due(horizon, self.owner, lease_end, limit)
            notification_ids = sorted({d.notification_id for d in deliveries})
            device_ids = sorted({d.device_id for d in deliveries})
            notifications = {n.id: n for n in tx.notifications.by_ids(notification_ids)}
            devices = {d.id: d for d in tx.devices.by_ids(device_ids)}
            dispatches: list[Dispatch] = []
            orphaned: dict[str, str] = {}
            for delivery in deliveries:
                notification = notifications.get(delivery.notification_id)
                device = devices.get(delivery.device_id)
                if notification is not None and device is not None and device.is_active:
                    dispatches.append(Dispatch(delivery, device, notification))
                    self.redelivered += is_redelivery(delivery)
                    continue
                # The device went away between scheduling and now: nothing to send.
                reason = "Device inactive" if device is not None else "Device removed"
                tx.deliveries.settle(delivery.id, self.owner, DeliveryStatus.FAILED, reason, now)
                orphaned[delivery.notification_id] = reason
            if orphaned:
                reconcile(tx, tx.notifications.by_ids(sorted(orphaned)), now, orphaned)
            candidates = [tx.deliveries.next_due_at(), tx.notifications.next_wake_at()]
        next_due = min((c for c in candidates if c is not None), default=None)
        return Claim(dispatches, next_due)

    def _record(self, pairs: Sequence[tuple[Dispatch, Outcome]]) -> datetime | None:
        """Store outcomes; returns the earliest retry time scheduled, if any."""
        now = self._clock.now()
        policy = self.config.retry
        earliest: datetime | None = None
        reasons: dict[str, str] = {}
        # The transition table decides each delivery's next status from its
        # outcome; a dispatch whose delivery is not in flight raises.
        decided = [
            (dispatch, outcome, self._next_status(dispatch, outcome)) for dispatch, outcome in pairs
        ]
        # The notifications as claimed; refreshed below, not decoded again.
        touched = {d.delivery.notification_id: d.notification for d, _ in pairs}
        delivered = [d.delivery for d, _, status in decided if status is DeliveryStatus.DELIVERED]
        # Said once the transaction has committed: a line for what really happened.
        said: list[Callable[[], None]] = []
        with self._store.transaction() as tx:
            if delivered:
                # Most of a batch, most of the time: settled in one statement.
                settled = tx.deliveries.settle_many(
                    [d.id for d in delivered], self.owner, DeliveryStatus.DELIVERED, None, now
                )
                devices = sorted({d.device_id for d in delivered if d.id in settled})
                if devices:
                    tx.devices.mark_delivered(devices, now)
            for dispatch, outcome, status in decided:
                delivery = dispatch.delivery
                if isinstance(outcome, Delivered):
                    continue
                if status is DeliveryStatus.PENDING:
                    assert isinstance(outcome, Retry)
                    delay = policy.delay(delivery.attempts, self._uniform, outcome.after)
                    due = now + timedelta(seconds=delay)
                    if tx.deliveries.retry(delivery.id, self.owner, due, outcome.reason):
                        earliest = due if earliest is None else min(earliest, due)
                        said.append(functools.partial(say_retry, dispatch, outcome, delay))
                    continue
                failed = tx.deliveries.settle(delivery.id, self.owner, status, outcome.reason, now)
                if failed:
                    reasons[delivery.notification_id] = outcome.reason
                    said.append(functools.partial(say_failed, dispatch, outcome))
                if failed and isinstance(outcome, TokenInvalid):
                    tx.devices.deactivate(delivery.device_id)
                    detach_device(tx, delivery.device_id, now, "Device deactivated")
                    said.append(functools.partial(say_deactivated, dispatch, outcome))
            reconcile(
                tx, tx.notifications.refresh(list(touched.values()), for_update=True), now, reasons
            )
        for say in said:
            say()
        return earliest

    def _next_status(self, dispatch: Dispatch, outcome: Outcome) -> DeliveryStatus:
        may_retry = not self.config.retry.gives_up(dispatch.delivery.attempts)
        return next_delivery_status(dispatch.delivery.status, delivery_event(outcome, may_retry))

    def _release(self, delivery_ids: Sequence[str]) -> int:
        with self._store.transaction() as tx:
            return tx.deliveries.release(delivery_ids, self.owner)
