"""The event sender: posts the outbox's pending attempts to the accounts' endpoints.

A loop in the engine's process (``serve`` or ``worker``). Each round claims due
attempts under a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so several
workers never take one attempt twice), at most ``claimed_per_endpoint`` per
endpoint, of which ``per_endpoint`` are posted at once: a slow endpoint
holds only its own events, never the others' (as the gateway lanes keep one
host's slowness to itself). Each POST carries the Standard Webhooks headers:
``webhook-id`` is the event's id, the same on every retry, and during a
secret's rotation ``webhook-signature`` holds both signatures. A 2xx within
15 s succeeds; a 410 disables the endpoint at once; anything else is retried
on the schedule of ``domain/events.py`` (Retry-After honoured) for 3 days,
after which the endpoint is disabled with its ``disabledReason``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TypeVar

import aiohttp
import attrs

from pushcore.converter import to_json
from pushcore.converter.events import EventView
from pushcore.delivery.coalesce import Coalescer
from pushcore.delivery.retention import finish_in_thread
from pushcore.domain.events import (
    ANSWER_WITHIN,
    Attempt,
    AttemptResult,
    AttemptStatus,
    Event,
    WebhookEndpoint,
    gives_up,
    next_attempt_delay,
)
from pushcore.domain.webhooks import signature
from pushcore.gateways._http import guarded_address, post_pinned, retry_after_seconds
from pushcore.outbound.guard import NetworkGuard, pin
from pushcore.ports import Clock, Store

log = logging.getLogger("pushcore.webhooks")
USER_AGENT = "pushcore-events/1"
GONE = "The endpoint answered 410 Gone"
GAVE_UP = "No successful answer for 3 days"
T = TypeVar("T")


@attrs.frozen
class SenderConfig:
    """How the sender claims and paces its work."""

    batch: int = 256
    per_endpoint: int = 16  # POSTs at once to one endpoint
    # Claimed and unanswered for one endpoint at most: a fast one is fed without a claim
    # per POST, and a dead one's claimed events all go out within the lease (64 x 15 s /
    # 16 at once = 1 min of 5).
    claimed_per_endpoint: int = 64
    lease: timedelta = timedelta(minutes=5)
    idle: timedelta = timedelta(milliseconds=250)  # between two rounds that found nothing
    timeout: float = ANSWER_WITHIN.total_seconds()


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
        self._tls = tls
        self._session: aiohttp.ClientSession | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="pushcore-events")
        # Attempts claimed here and not yet recorded, by endpoint; each endpoint's gate
        # lets per_endpoint of them post at once; the POSTs' tasks.
        self._busy: dict[str, int] = {}
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # Set when an attempt is recorded: an endpoint may have room again.
        self._progress = asyncio.Event()
        # Answers that come together are recorded in one transaction.
        self._records: Coalescer[_Answered, None] = Coalescer(self._record_many)

    async def run(self) -> None:
        """Claim and post until cancelled; a failed round is logged and tried again."""
        try:
            while True:
                try:
                    started = await self.round()
                except Exception:
                    log.exception("claiming events to post failed")
                    started = 0
                if not started:
                    await self._rest()
        finally:
            await self.aclose()
            self._thread.shutdown(wait=False)

    async def _rest(self) -> None:
        """Until a POST ends (its endpoint may take more) or ``idle`` passes (work may
        have come, from this process or another)."""
        self._progress.clear()
        sleep = asyncio.ensure_future(self._clock.sleep_until(self._clock.now() + self.config.idle))
        woken = asyncio.ensure_future(self._progress.wait())
        try:
            await asyncio.wait([sleep, woken], return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            woken.cancel()

    async def round(self) -> int:
        """Claim what is due and start posting it (in the background); how many."""
        claimed = await self._db(self._claim)
        for attempt, event, endpoint in claimed:
            self._busy[endpoint.id] = self._busy.get(endpoint.id, 0) + 1
            if endpoint.id not in self._gates:
                self._gates[endpoint.id] = asyncio.Semaphore(self.config.per_endpoint)
            task = asyncio.get_running_loop().create_task(self._post(attempt, event, endpoint))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return len(claimed)

    async def drain(self) -> None:
        """Wait for every POST started so far to be sent and recorded."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop the POSTs in flight (their attempts stay leased, then are claimed again)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _claim(self) -> list[tuple[Attempt, Event, WebhookEndpoint]]:
        now = self._clock.now()
        config = self.config
        with self._store.read() as tx:
            # A look first: most rounds find nothing, and an idle round must not take
            # the write lock four times a second (on SQLite the engine's outcome
            # records wait behind whoever holds it).
            due = tx.events.next_due_at()
        if due is None or due > now:
            return []
        with self._store.transaction() as tx:
            attempts = tx.events.claim(
                now,
                self.owner,
                now + config.lease,
                config.batch,
                config.claimed_per_endpoint,
                # Endpoints with their share claimed here take no more until some ends.
                sorted(e for e, n in self._busy.items() if n >= config.claimed_per_endpoint),
            )
            if not attempts:
                return []
            events = {e.id: e for e in tx.events.by_ids(sorted({a.event_id for a in attempts}))}
            ids = sorted({a.endpoint_id for a in attempts})
            endpoints = {e.id: e for e in tx.webhooks.by_ids(ids)}
        return [
            (a, events[a.event_id], endpoints[a.endpoint_id])
            for a in attempts
            if a.event_id in events and a.endpoint_id in endpoints
        ]

    async def _post(self, attempt: Attempt, event: Event, endpoint: WebhookEndpoint) -> None:
        try:
            async with self._gates[endpoint.id]:
                result = await self._send(event, endpoint)
            await self._records.submit([(attempt, endpoint, result)])
        except Exception:
            log.exception("posting event %s to %s failed", event.id, endpoint.id)
        finally:
            left = self._busy.get(endpoint.id, 1) - 1
            if left:
                self._busy[endpoint.id] = left
            else:
                self._busy.pop(endpoint.id, None)
                self._gates.pop(endpoint.id, None)
            self._progress.set()

    async def _send(self, event: Event, endpoint: WebhookEndpoint) -> AttemptResult:
        body = json.dumps(to_json(EventView.of(event)), separators=(",", ":")).encode()
        now = self._clock.now()
        stamp = int(now.timestamp())
        signatures = " ".join(
            signature(secret, event.id, stamp, body) for secret in endpoint.secrets_at(now)
        )
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "webhook-id": event.id,
            "webhook-timestamp": str(stamp),
            "webhook-signature": signatures,
        }
        started = time.monotonic()

        def took() -> int:
            return round((time.monotonic() - started) * 1000)

        try:
            address = await guarded_address(self._guard, endpoint.url)
        except ValueError as exc:
            return AttemptResult(False, None, took(), reason=f"Refused: {exc}")
        try:
            answer = await post_pinned(self._open(), pin(endpoint.url, address), body, headers)
        except TimeoutError:
            return AttemptResult(False, None, took(), reason="Timed out")
        except aiohttp.ClientError:
            return AttemptResult(False, None, took(), reason="Unreachable")
        after = retry_after_seconds(answer.retry_after, self._clock.now())
        return AttemptResult(200 <= answer.status < 300, answer.status, took(), after)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self.config.timeout)
            connector = aiohttp.TCPConnector(ssl=self._tls if self._tls is not None else True)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=timeout, trust_env=False
            )
        return self._session

    async def _record_many(self, answered: list[_Answered]) -> None:
        await self._db(lambda: self._record(answered))

    def _record(self, answered: list[_Answered]) -> None:
        now = self._clock.now()
        decided = [
            (endpoint, *_decide(attempt, result, now)) for attempt, endpoint, result in answered
        ]
        with self._store.transaction() as tx:
            for endpoint, tried, disable in decided:
                if tx.events.record(tried, self.owner) and disable is not None:
                    tx.webhooks.disable(endpoint.id, disable)
        for endpoint, _, disable in decided:
            if disable is not None:
                log.warning("webhook endpoint %s disabled: %s", endpoint.id, disable)

    async def _db(self, work: Callable[[], T]) -> T:
        return await finish_in_thread(self._thread, work)


_Answered = tuple[Attempt, WebhookEndpoint, AttemptResult]


def _decide(attempt: Attempt, result: AttemptResult, now: datetime) -> tuple[Attempt, str | None]:
    """The attempt after this try, and why its endpoint is to be disabled (if it is)."""
    tries = attempt.attempts + 1
    tried = attrs.evolve(
        attempt,
        attempts=tries,
        attempted_at=now,
        response_status=result.status,
        duration_ms=result.duration_ms,
        next_attempt_at=None,
    )
    if result.ok:
        return attrs.evolve(tried, status=AttemptStatus.SUCCEEDED), None
    if result.gone:
        return attrs.evolve(tried, status=AttemptStatus.FAILED), GONE
    due = now + next_attempt_delay(tries, result.retry_after)
    if gives_up(attempt.created_at, due):
        return attrs.evolve(tried, status=AttemptStatus.FAILED), GAVE_UP
    return attrs.evolve(tried, next_attempt_at=due), None
