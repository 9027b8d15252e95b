"""The event sender: posts the outbox's pending attempts to the accounts' endpoints.

A loop in the engine's process (``serve`` or ``worker``). Each round claims due
attempts under a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so several
workers never take one attempt twice), at most ``claimed_per_endpoint`` per
endpoint, of which ``per_endpoint`` are posted at once, each of those workers on a
kept-alive connection of its own (outbound/http1.py), a few pipelined on it
when the endpoint answers quickly: a slow endpoint holds only its own events,
never the others' (as the gateway lanes keep one host's slowness to itself). A 410
stops the endpoint's POSTs not yet written; at most ``per_endpoint`` were in
flight. Each POST carries the Standard Webhooks headers: ``webhook-id`` is the
event's id, the same on every retry, and during a secret's rotation
``webhook-signature`` holds both signatures. A 2xx within
15 s succeeds; a 410 disables the endpoint at once; anything else is retried
on the schedule of ``domain/events.py`` (Retry-After honoured) for 3 days,
after which the endpoint is disabled with its ``disabledReason``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, TypeVar

import attrs

from pushcore.delivery.event_answers import (
    Answered,
    Decided,
    decide_all,
    say_disabled,
)
from pushcore.delivery.event_body import event_body, signed_headers
from pushcore.delivery.retention import finish_in_thread
from pushcore.domain.events import (
    ANSWER_WITHIN,
    Attempt,
    AttemptResult,
    Event,
    WebhookEndpoint,
)
from pushcore.gateways._answer import Answer, guarded_address, retry_after_seconds
from pushcore.outbound.guard import NetworkGuard, pin
from pushcore.outbound.http1 import BadAnswer, Connection, Pool, Target
from pushcore.ports import Clock, Store, Transaction

log = logging.getLogger("pushcore.webhooks")
T = TypeVar("T")


@attrs.frozen
class SenderConfig:
    """How the sender claims and paces its work."""

    batch: int = 1024  # attempts claimed in one statement at most
    per_endpoint: int = 32  # POSTs at once to one endpoint (its keep-alive connections)
    # Claimed and unanswered for one endpoint at most: a fast one is fed without a claim
    # per POST, and a dead one's claimed events all go out within the lease (512 x 15 s /
    # 32 at once = 4 min of 5).
    claimed_per_endpoint: int = 512
    lease: timedelta = timedelta(minutes=5)
    idle: timedelta = timedelta(milliseconds=250)  # between two rounds that found nothing
    timeout: float = ANSWER_WITHIN.total_seconds()
    # How long a kept-alive connection no worker holds stays open for the next claim's
    # POSTs: under the 5 s keep-alive timeout of common servers (uvicorn, Node), so
    # one is rarely found closed by its server.
    keep_idle: float = 4.0
    # Seconds at least between two claims, and between two records, of less than a
    # batch: beside a busy engine events come due a few at a time, and a transaction
    # for each few cost both processes (on SQLite each one takes the write lock the
    # engine's records wait behind). Far under the events' second to arrive; 0.1 s
    # rather than 0.05 halved those transactions beside the engine (docs/benchmarks.md).
    gather: float = 0.1
    # POSTs written at once on one connection (HTTP/1.1 pipelining) to an endpoint whose
    # last POSTs were all answered within ``quick`` seconds, all within ``per_endpoint``
    # in flight: one send for several events, the sender's largest cost per event on a
    # fast endpoint (docs/benchmarks.md). A slower one gets one at a time, so none waits
    # more than about ``quick`` behind others toward its 15 s; 0.25 s rather than less,
    # as the sender (niceness 10 beside a busy engine) may itself be late to read. 1:
    # never pipelined.
    pipeline: int = 8
    quick: float = 0.25


class _Lane:
    """One endpoint's claimed attempts, posted by at most ``per_endpoint`` workers."""

    def __init__(self, endpoint: WebhookEndpoint) -> None:
        self.endpoint = endpoint
        self.waiting: deque[tuple[Attempt, Event]] = deque()
        self.workers = 0
        self.in_flight = 0  # posted and not yet answered, over its workers
        self.claimed = 0  # claimed here and not yet recorded
        self.answered = 0  # of those, answered and waiting for their record
        # Its address checked once a claim (not once a POST): a claim per few hundred
        # events still sees a name that moved to a forbidden address.
        self.target: Target | None = None


class EventSender:
    """Posts events to endpoints, round after round, until cancelled."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        guard: NetworkGuard,
        owner: str,
        config: SenderConfig | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._guard = guard
        self.owner = owner
        self.config = config or SenderConfig()
        self._pool = Pool(tls)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="pushcore-events")
        self._lanes: dict[str, _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # Answers not yet recorded; one recorder task writes whatever came meanwhile in
        # one transaction, while the lanes go on posting.
        self._answered: list[Answered] = []
        self._recorder: asyncio.Task[None] | None = None
        self._recorded_at = 0.0  # monotonic, the last record's start
        # Set when an endpoint has room for more: the next claim may feed it.
        self._progress = asyncio.Event()
        # Whether the last claim found attempts: then the next one claims without
        # looking first (more are likely due, and the look is a transaction too).
        self._busy = False
        # POSTs to pipeline next, by endpoint (absent: 1); 0 once one ended a pipelined
        # connection early (a server that does not keep up: one at a time from then on).
        self._depth: dict[str, int] = {}

    def start_thread(self) -> int:
        """Start the database thread now, with this thread's priority; its native id."""
        return self._thread.submit(threading.get_native_id).result()

    async def run(self) -> None:
        """Claim and post until cancelled; a failed round is logged and tried again."""
        try:
            while True:
                claimed_at = time.monotonic()
                try:
                    started = await self.round()
                except Exception:
                    log.exception("claiming events to post failed")
                    started = 0
                if not started:
                    await self._rest()
                elif self._full():
                    # An endpoint took its whole share, so more of its events are due:
                    # claim again once it has answered half of it (a fast one's backlog
                    # goes out at its own pace), or at the gather if that comes first.
                    await self._rest(claimed_at + self.config.gather)
                elif started < self.config.batch:  # more may come due meanwhile
                    await asyncio.sleep(claimed_at + self.config.gather - time.monotonic())
        finally:
            await self.aclose()
            self._thread.shutdown(wait=False)

    async def _rest(self, until: float | None = None) -> None:
        """Until an endpoint has room again, or ``idle`` passes (work may have come, from
        this process or another), or the monotonic ``until``. Room made since the round
        began counts (:meth:`round` clears it): cleared here, room made while the claim
        ran was missed, and a sender whose answers were recorded meanwhile rested."""
        if until is None:
            waited = self._clock.sleep_until(self._clock.now() + self.config.idle)
        else:
            waited = asyncio.sleep(until - time.monotonic())
        sleep = asyncio.ensure_future(waited)
        woken = asyncio.ensure_future(self._progress.wait())
        try:
            await asyncio.wait([sleep, woken], return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            woken.cancel()

    async def round(self) -> int:
        """Record the answers gathered since the last record, claim what is due and start
        posting it (in the background); how many were claimed."""
        self._pool.close_idle(time.monotonic() - self.config.keep_idle)
        # The answers waiting for the recorder are recorded in the claim's transaction:
        # one write transaction for both, which on SQLite is one turn of the lock the
        # engine's outcome records wait for, not two (claims and records both come
        # every ``gather`` while events flow).
        answered, self._answered = self._answered, []
        if answered:
            self._recorded_at = time.monotonic()
        # Counted as done before the claim, recorded or not (if not, their leases stand):
        # the endpoints whose share they free take more in this claim. Counted after it, an
        # endpoint sent its whole share between two claims was passed over by the next,
        # which found nothing and rested (``idle``): 512 events a third of a second, and
        # the events of a burst (5,000 written at once) waited for it (docs/benchmarks.md).
        self._account(answered)
        self._progress.clear()
        # Endpoints with their share claimed here take no more until some ends.
        claimed = await self._db(functools.partial(self._claim, answered, self._full()))
        self._busy = bool(claimed)
        for attempt, event, endpoint in claimed:
            lane = self._lanes.get(endpoint.id)
            if lane is None:
                lane = self._lanes[endpoint.id] = _Lane(endpoint)
            lane.endpoint, lane.target = endpoint, None  # its latest secrets and address
            lane.waiting.append((attempt, event))
            lane.claimed += 1
        for lane in self._lanes.values():
            self._staff(lane)
        return len(claimed)

    def _staff(self, lane: _Lane) -> None:
        """Workers for the lane's waiting attempts, up to ``per_endpoint`` (those a
        pipelining worker leaves nothing to end at once)."""
        while lane.workers < min(self.config.per_endpoint, len(lane.waiting)):
            lane.workers += 1
            self._spawn(self._work(lane))

    async def drain(self) -> None:
        """Wait for every POST started so far to be sent and recorded."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop the POSTs in flight (their attempts stay leased, then are claimed again)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._lanes.clear()
        self._answered.clear()
        self._pool.close()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _claim(
        self, answered: list[Answered], busy: list[str]
    ) -> list[tuple[Attempt, Event, WebhookEndpoint]]:
        now = self._clock.now()
        config = self.config
        decided = decide_all(answered, now)
        if not self._busy and not decided:
            with self._store.read() as tx:
                # A look first: most rounds find nothing, and an idle round must not take
                # the write lock four times a second (on SQLite the engine's outcome
                # records wait behind whoever holds it).
                due = tx.events.next_due_at()
            if due is None or due > now:
                return []
        with self._store.transaction() as tx:
            disabled = self._record_in(tx, decided)
            attempts = tx.events.claim(
                now,
                self.owner,
                now + config.lease,
                config.batch,
                config.claimed_per_endpoint,
                busy,
            )
        say_disabled(disabled)
        if not attempts:
            return []
        # Read after the lease is committed, outside the write transaction: on SQLite its
        # lock is the one the engine's outcome records wait for, and these reads (the
        # events' data decoded, the endpoints) were most of its hold. An event does not
        # change once written; an endpoint read now is the fresher for it.
        with self._store.read() as tx:
            events = {e.id: e for e in tx.events.by_ids(sorted({a.event_id for a in attempts}))}
            ids = sorted({a.endpoint_id for a in attempts})
            endpoints = {e.id: e for e in tx.webhooks.by_ids(ids)}
        return [
            (a, events[a.event_id], endpoints[a.endpoint_id])
            for a in attempts
            if a.event_id in events and a.endpoint_id in endpoints
        ]

    async def _work(self, lane: _Lane) -> None:
        """Post the lane's attempts, one or a few pipelined at a time, until none waits."""
        held: list[Connection] = []  # this worker's connection, once it has one
        config = self.config
        try:
            while lane.waiting:
                depth = self._depth.get(lane.endpoint.id, 1) or 1
                take = min(depth, len(lane.waiting), config.per_endpoint - lane.in_flight)
                if take <= 0:
                    break  # the lane's share is in flight on its other workers' connections
                chunk = [lane.waiting.popleft() for _ in range(take)]
                lane.in_flight += take
                try:
                    results = await self._send(chunk, lane, held)
                except Exception:
                    # Left leased: claimed again once the lease runs out.
                    log.exception("posting %d events to %s failed", take, lane.endpoint.id)
                    self._settled(lane, take)
                    continue
                finally:
                    lane.in_flight -= take
                self._pace(lane.endpoint.id, take, results, held)
                # Those the server did not answer (it ended the connection): sent again.
                lane.waiting.extendleft(reversed(chunk[len(results) :]))
                self._staff(lane)  # one at a time again: as many workers as before
                for (attempt, _), result in zip(chunk, results, strict=False):
                    self._answered.append((attempt, lane.endpoint, result))
                self._unanswered(lane, len(results))
                if any(result.gone for result in results):
                    # The endpoint is being disabled: its other claimed events stay unsent
                    # (the disabling fails them, or their lease runs out).
                    dropped = len(lane.waiting)
                    lane.waiting.clear()
                    self._settled(lane, dropped)
                if self._recorder is None or self._recorder.done():
                    self._recorder = self._spawn(self._record_answers())
        finally:
            self._pool.give_back(held)
            lane.workers -= 1
            if lane.claimed <= 0 and not lane.waiting and not lane.workers:
                self._lanes.pop(lane.endpoint.id, None)

    def _pace(
        self, endpoint_id: str, sent: int, results: list[AttemptResult], held: list[Connection]
    ) -> None:
        """How many POSTs the endpoint's next chunk pipelines, from this one's answers."""
        if self._depth.get(endpoint_id) == 0 or self.config.pipeline <= 1:
            return
        if len(results) < sent:
            self._depth[endpoint_id] = 0  # it ended a pipelined connection early
        elif (
            all(r.status is not None for r in results)
            and results[-1].duration_ms <= 1000 * self.config.quick
            and held
            and held[0].is_open
        ):
            self._depth[endpoint_id] = self.config.pipeline
        else:
            self._depth.pop(endpoint_id, None)

    async def _record_answers(self) -> None:
        """Record the answers that came, in one transaction, until none is left."""
        while self._answered:
            # While claims come every ``gather`` (the last found attempts), the next one
            # records these in its transaction: this waits for it, and records only if
            # it is late.
            pace = self.config.gather * (2 if self._busy else 1)
            wait = self._recorded_at + pace - time.monotonic()
            if wait > 0 and len(self._answered) < self.config.batch:
                await asyncio.sleep(wait)  # more answers come meanwhile
            answered, self._answered = self._answered, []
            if not answered:
                break  # a claim took them meanwhile, into its transaction
            self._recorded_at = time.monotonic()
            try:
                await self._db(functools.partial(self._record, answered))
            except Exception:
                # Their leases stand: they are posted again when those run out.
                log.exception("recording %d webhook answers failed", len(answered))
            self._account(answered)

    def _account(self, answered: list[Answered]) -> None:
        """The answered attempts are done with, in their lanes."""
        counts = Counter(endpoint.id for _, endpoint, _ in answered)
        for endpoint_id, n in counts.items():
            lane = self._lanes.get(endpoint_id)
            if lane is not None:
                lane.answered = max(0, lane.answered - n)
                self._settled(lane, n)

    def _full(self) -> list[str]:
        """The endpoints with their whole share claimed here, in id order."""
        cap = self.config.claimed_per_endpoint
        return sorted(e for e, lane in self._lanes.items() if lane.claimed >= cap)

    def _unanswered(self, lane: _Lane, n: int) -> None:
        """``n`` more of the lane's attempts are answered (recorded at the next claim):
        wake a claimer waiting for its share once half of it is answered."""
        half = self.config.claimed_per_endpoint // 2
        before = lane.claimed - lane.answered
        lane.answered += n
        if lane.claimed - lane.answered <= half < before:
            self._progress.set()

    def _settled(self, lane: _Lane, n: int) -> None:
        """``n`` of the lane's attempts are done with; wake the claimer when it has room."""
        before, lane.claimed = lane.claimed, lane.claimed - n
        if lane.claimed <= 0 and not lane.waiting and not lane.workers:
            self._lanes.pop(lane.endpoint.id, None)
        # Half its share free: worth a claim (not one claim per answer).
        if lane.claimed <= self.config.claimed_per_endpoint // 2 < before or lane.claimed <= 0:
            self._progress.set()

    async def _send(
        self, chunk: list[tuple[Attempt, Event]], lane: _Lane, held: list[Connection]
    ) -> list[AttemptResult]:
        """POST the chunk's events on one connection; their results, in order (fewer
        when the server ended the connection before answering them all)."""
        endpoint = lane.endpoint
        now = self._clock.now()
        stamp = int(now.timestamp())
        secrets = endpoint.secrets_at(now)
        bodies = [(event.id, event_body(event)) for _, event in chunk]
        signed = [(signed_headers(i, stamp, body, secrets), body) for i, body in bodies]
        started = time.monotonic()

        def took() -> int:
            return round((time.monotonic() - started) * 1000)

        target = lane.target
        if target is None:
            try:
                address = await guarded_address(self._guard, endpoint.url)
            except ValueError as exc:
                return [AttemptResult(False, None, took(), reason=f"Refused: {exc}")] * len(chunk)
            target = lane.target = Target.of(pin(endpoint.url, address))
        connection = self._pool.take(target, held)
        results: list[AttemptResult] = []

        def answered(answer: Answer) -> None:
            after = retry_after_seconds(answer.retry_after, self._clock.now())
            results.append(AttemptResult(200 <= answer.status < 300, answer.status, took(), after))

        requests = [connection.request(headers, body) for headers, body in signed]
        try:
            # Every request was written at the start: each has its 15 s from there.
            async with asyncio.timeout(self.config.timeout):
                await connection.post_many(requests, answered)
            return results
        except TimeoutError:
            connection.close()
            reason = "Timed out"
        except (OSError, asyncio.IncompleteReadError, BadAnswer):
            reason = "Unreachable"
        missed = AttemptResult(False, None, took(), reason=reason)
        return results + [missed] * (len(chunk) - len(results))

    def _record(self, answered: list[Answered]) -> None:
        decided = decide_all(answered, self._clock.now())
        with self._store.transaction() as tx:
            disabled = self._record_in(tx, decided)
        say_disabled(disabled)

    def _record_in(self, tx: Transaction, decided: list[Decided]) -> list[tuple[str, str]]:
        """Store the decided attempts in ``tx``; the endpoints it disabled, and why."""
        if not decided:
            return []
        # One statement for the answers that disable nothing (nearly all of them).
        tx.events.record_many([tried for _, tried, off in decided if off is None], self.owner)
        disabled = []
        for endpoint, tried, disable in decided:
            if disable is not None and tx.events.record(tried, self.owner):
                tx.webhooks.disable(endpoint.id, disable)
                disabled.append((endpoint.id, disable))
        return disabled

    async def _db(self, work: Callable[[], T]) -> T:
        return await finish_in_thread(self._thread, work)
