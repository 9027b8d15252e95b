"""Webhook devices: POST the platform-neutral JSON payload to the device's URL.

UnifiedPush-compatible: the body is the payload, a 2xx is delivered. A device
registered with a secret gets each delivery signed as Standard Webhooks says
(domain/webhooks.py): ``webhook-id`` is the delivery's id, the same on a retry. 404 and
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
import json
import ssl
from collections.abc import Sequence

import aiohttp

from pushcore.domain.addresses import IPAddress
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.webhooks import signature_headers
from pushcore.gateways._answer import retry_after_seconds
from pushcore.gateways._http import (
    BatchResolver,
    Limits,
    Poster,
    post_pinned,
    status_reason,
)
from pushcore.gateways.after_sending import neutral_body
from pushcore.gateways.receipts import Stamped
from pushcore.outbound.guard import NetworkGuard, pin
from pushcore.ports import Clock

USER_AGENT = "pushcore-webhook/1"
# A request's deadline ran out, or the host refused the connection: the
# host's lane takes fewer requests at once (a dead host soon holds one slot).
TIMED_OUT = "Webhook timed out"
UNREACHED = "Webhook unreachable"
UNREACHABLE = frozenset({TIMED_OUT, UNREACHED})


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
        concurrency: int = 256,
        host_concurrency: int = 16,
        account_concurrency: int = 64,
        max_wait: float = 5.0,
    ) -> None:
        self._guard = guard
        self._clock = clock
        timeouts = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        limits = Limits(concurrency, host_concurrency, account_concurrency, max_wait)
        self._poster = Poster(tls, timeouts, limits, UNREACHABLE)

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Post every dispatch concurrently (bounded); one outcome each."""
        return await asyncio.gather(*self.send_each(dispatches))

    def send_each(self, dispatches: Sequence[Dispatch]) -> Sequence[asyncio.Future[Outcome]]:
        """Start posting every dispatch its lanes admit (the others are Deferred)."""
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

        return self._poster.lanes.send_each(dispatches, post)

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
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **signed}
        try:
            answer = await post_pinned(self._poster.session(), pin(url, address), body, headers)
        except TimeoutError:
            return Retry(TIMED_OUT)
        except aiohttp.ClientError:
            return Retry(UNREACHED)
        status, retry_after = answer.status, answer.retry_after
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
        await self._poster.aclose()


def _encode(dispatch: Dispatch, receipt: str | None) -> bytes:
    return json.dumps(neutral_body(dispatch, receipt), separators=(",", ":")).encode()
