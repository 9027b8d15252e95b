"""Webhook devices: POST the platform-neutral JSON payload to the device's URL.

UnifiedPush-compatible: the body is the payload, a 2xx is delivered. A device
registered with a secret gets each delivery signed as Standard Webhooks says
(domain/webhooks.py): ``webhook-id`` is the delivery's id, the same on a retry. 404 and
410 mean the endpoint is gone (the device is deactivated); 429 and 5xx are
retried (honouring Retry-After); any other answer, redirects included, is a
permanent failure. The SSRF guard runs again at delivery, and the request
connects to the very address it checked.

Posted through pushcore's own HTTP/1.1 (outbound/http1.py), not aiohttp: a
webhook's answer is a status and a Retry-After, and aiohttp's request and answer
machinery was half of the engine's event-loop CPU per delivery; without it a
webhook delivery costs about a quarter less CPU and one process delivers about 40%
more a second (docs/benchmarks.md, "Webhooks over pushcore's own HTTP/1.1"). A
connection is kept alive for the next post to its address (up to 4 s idle); the
status is the answer, and a body that does not follow at once is not waited for.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import time
from collections.abc import Sequence

from pushcore.domain.addresses import IPAddress
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.webhooks import signature_headers
from pushcore.gateways._answer import retry_after_seconds
from pushcore.gateways._http import BatchResolver, status_reason
from pushcore.gateways.after_sending import neutral_body
from pushcore.gateways.lanes import Lanes
from pushcore.gateways.receipts import Stamped
from pushcore.outbound.guard import NetworkGuard, Pinned, pin
from pushcore.outbound.http1 import BadAnswer, Connection, Head, Pool, Target
from pushcore.ports import Clock
from pushcore.ports.delivery import Ready

USER_AGENT = "pushcore-webhook/1"
# A request's deadline ran out, or the host refused the connection: the
# host's lane takes fewer requests at once (a dead host soon holds one slot).
TIMED_OUT = "Webhook timed out"
UNREACHED = "Webhook unreachable"
UNREACHABLE = frozenset({TIMED_OUT, UNREACHED})
# How long a kept-alive connection waits idle for the next post to its address:
# under the 5 s keep-alive timeout of common servers (uvicorn, Node).
KEEP_IDLE = 4.0
# How long the body of an answer may take once its status came; a body slower than
# that is not read, and its connection is closed rather than kept.
BODY_WAIT = 0.05


class WebhookGateway:
    """Sends to webhook devices, over connections kept alive by address."""

    def __init__(
        self,
        guard: NetworkGuard,
        clock: Clock,
        *,
        tls: ssl.SSLContext | None = None,
        timeout: float = 10.0,
        connect_timeout: float = 5.0,
        concurrency: int = 256,
        host_concurrency: int = 16,
        account_concurrency: int = 64,
        max_wait: float = 5.0,
    ) -> None:
        self._guard = guard
        self._clock = clock
        self._timeout = timeout
        # Requests wait for a slot in the lanes, fairly by host and by account (the URLs
        # are the accounts' choice), and each takes a connection of its own.
        self.lanes = Lanes(
            concurrency=concurrency,
            host_concurrency=host_concurrency,
            account_concurrency=account_concurrency,
            max_wait=max_wait,
            unreachable=UNREACHABLE,
        )
        self._pool = Pool(tls, connect_timeout)
        self._swept = time.monotonic()

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Post every dispatch concurrently (bounded); one outcome each."""
        return await asyncio.gather(*self.send_each(dispatches))

    def send_each(
        self, dispatches: Sequence[Dispatch], ready: Ready | None = None
    ) -> Sequence[asyncio.Future[Outcome]]:
        """Start posting every dispatch its lanes admit (the others are Deferred); each
        post awaits ``ready`` first, when given."""
        # A fan-out batch is one payload to many URLs on few hosts: encode each
        # payload once and check each host once per batch.
        bodies: Stamped[bytes] = Stamped(_encode)
        resolve = BatchResolver(self._guard)

        async def post(dispatch: Dispatch) -> Outcome:
            url, body = dispatch.device.token, bodies(dispatch)
            secret = dispatch.device.webhook_secret
            signed = (
                {}
                if secret is None
                else signature_headers(
                    secret, dispatch.delivery.id, int(self._clock.now().timestamp()), body
                )
            )
            return await self._send_one(url, resolve(url), body, signed)

        return self.lanes.send_each(dispatches, post, ready)

    async def _send_one(
        self,
        url: str,
        resolving: asyncio.Task[IPAddress],
        body: bytes,
        signed: dict[str, str],
    ) -> Outcome:
        try:
            address = await asyncio.shield(resolving)
        except ValueError as exc:
            return Failed(f"Webhook refused: {exc}")
        lines = "".join(f"{name}: {value}\r\n" for name, value in signed.items())
        headers = f"Content-Type: application/json\r\nUser-Agent: {USER_AGENT}\r\n{lines}"
        now = time.monotonic()
        if now - self._swept >= 1.0:  # at most once a second: a look at every idle one
            self._swept = now
            self._pool.close_idle(now - KEEP_IDLE)
        held: list[Connection] = []
        connection = self._pool.take(_target(pin(url, address)), held)
        try:
            return await self._post(connection, headers, body)
        finally:
            self._pool.give_back(held)  # kept for the next post there, if still open

    async def _post(self, connection: Connection, headers: str, body: bytes) -> Outcome:
        head: Head | None = None
        loop = asyncio.get_running_loop()
        ends = loop.time() + self._timeout
        try:
            async with asyncio.timeout_at(ends) as deadline:
                head = await connection.post_head(headers, body)
                # The status is the answer: its body gets a moment, not the deadline.
                deadline.reschedule(min(ends, loop.time() + BODY_WAIT))
                await connection.drop_body(head)
        except TimeoutError:
            connection.close()
            if head is None:
                return Retry(TIMED_OUT)
        except (OSError, asyncio.IncompleteReadError, BadAnswer):
            connection.close()
            if head is None:
                return Retry(UNREACHED)
        except BaseException:
            connection.close()  # cancelled mid-answer: not fit for another post
            raise
        return self._outcome(head.status, head.retry_after)

    def _outcome(self, status: int, retry_after: str | None) -> Outcome:
        if 200 <= status < 300:
            return Delivered()
        reason = status_reason(status)
        if status in (404, 410):
            return TokenInvalid(reason)
        if status == 429 or status >= 500:
            return Retry(reason, retry_after_seconds(retry_after, self._clock.now()))
        return Failed(reason)

    async def aclose(self) -> None:
        """Close the connections."""
        self._pool.close()


@functools.lru_cache(maxsize=4096)
def _target(pinned: Pinned) -> Target:
    # The request line and Host header of a URL, made once per URL and address.
    return Target.of(pinned)


def _encode(dispatch: Dispatch, receipt: str | None) -> bytes:
    return json.dumps(neutral_body(dispatch, receipt), separators=(",", ":")).encode()
