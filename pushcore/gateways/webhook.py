"""Webhook devices: POST the platform-neutral JSON payload to the device's URL.

UnifiedPush-compatible: the body is the payload, a 2xx is delivered. 404 and
410 mean the endpoint is gone (the device is deactivated); 429 and 5xx are
retried (honouring Retry-After); any other answer, redirects included, is a
permanent failure. The SSRF guard runs again at delivery, and the request
connects to the very address it checked.

aiohttp rather than httpx here: measured on this project's 2-core machine,
httpx's pool managed about 500 small POSTs a second and aiohttp about 3,500,
and a webhook fan-out is exactly that workload.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Sequence

import aiohttp

from pushcore.adapters.net import NetworkGuard, pin
from pushcore.domain.addresses import IPAddress
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.payload import neutral_payload
from pushcore.gateways._http import (
    BatchResolver,
    new_session,
    retry_after_seconds,
    status_reason,
)
from pushcore.ports import Clock

USER_AGENT = "pushcore-webhook/1"
# Answers are read (so the connection can be reused) up to this much; a
# receiver has nothing to tell us in a body.
MAX_ANSWER_BYTES = 64 * 1024


class HostSlots:
    """At most ``limit`` requests at once per host; a host's semaphore lives while in use."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._hosts: dict[str, tuple[asyncio.Semaphore, int]] = {}

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        """Hold one of ``host``'s slots for the block."""
        semaphore, users = self._hosts.get(host) or (asyncio.Semaphore(self._limit), 0)
        self._hosts[host] = (semaphore, users + 1)
        try:
            async with semaphore:
                yield
        finally:
            semaphore, users = self._hosts[host]
            if users == 1:
                del self._hosts[host]  # nobody waits: forget the host
            else:
                self._hosts[host] = (semaphore, users - 1)


class WebhookGateway:
    """Sends to webhook devices over one shared aiohttp session (made on first use)."""

    def __init__(
        self,
        guard: NetworkGuard,
        clock: Clock,
        *,
        tls: ssl.SSLContext | None = None,
        timeout: float = 10.0,
        connect_timeout: float = 5.0,
        concurrency: int = 64,
        host_concurrency: int = 16,
    ) -> None:
        self._guard = guard
        self._clock = clock
        self._tls = tls
        self._timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        self._concurrency = concurrency
        # Requests wait for a slot here, not in aiohttp's pool, whose wait would
        # count against the request's own timeout and fail deliveries that
        # were only queued behind slower ones.
        self._slots = asyncio.Semaphore(concurrency)
        # A fan-out of thousands to one receiver (or their retries, when it
        # comes back from an outage) must not take every slot at once.
        self._hosts = HostSlots(host_concurrency)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        # A session belongs to the loop it was made in: make it inside the engine's.
        if self._session is None:
            self._session = new_session(self._tls, self._concurrency, self._timeout)
        return self._session

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Post every dispatch concurrently (bounded); one outcome each."""
        # A fan-out batch is one payload to many URLs on few hosts: encode each
        # payload once and check each host once per batch.
        bodies: dict[str, bytes] = {}
        resolve = BatchResolver(self._guard)
        sends = []
        for dispatch in dispatches:
            notification = dispatch.notification
            if notification.id not in bodies:
                payload = neutral_payload(notification)
                bodies[notification.id] = json.dumps(payload, separators=(",", ":")).encode()
            url = dispatch.device.token
            sends.append(self._send_one(url, resolve(url), bodies[notification.id]))
        return await asyncio.gather(*sends)

    async def _send_one(self, url: str, resolving: asyncio.Task[IPAddress], body: bytes) -> Outcome:
        try:
            address = await asyncio.shield(resolving)
        except ValueError as exc:
            return Failed(f"Webhook refused: {exc}")
        pinned = pin(url, address)
        headers = {
            "Host": pinned.host_header,
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        }
        async with self._hosts.slot(pinned.host_header), self._slots:
            try:
                async with self._client().post(
                    pinned.url,
                    data=body,
                    headers=headers,
                    server_hostname=pinned.server_name,
                    allow_redirects=False,
                ) as response:
                    status = response.status
                    retry_after = response.headers.get("Retry-After")
                    await response.content.read(MAX_ANSWER_BYTES)
            except TimeoutError:
                return Retry("Webhook timed out")
            except aiohttp.ClientError:
                return Retry("Webhook unreachable")
        if 200 <= status < 300:
            return Delivered()
        reason = status_reason(status)
        if status in (404, 410):
            return TokenInvalid(reason)
        if status == 429 or status >= 500:
            return Retry(reason, retry_after_seconds(retry_after, self._clock.now()))
        return Failed(reason)

    async def aclose(self) -> None:
        """Close the session."""
        if self._session is not None:
            await self._session.close()
            self._session = None
