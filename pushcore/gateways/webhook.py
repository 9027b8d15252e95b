"""Webhook devices: POST the platform-neutral JSON payload to the device's URL.

UnifiedPush-compatible: the body is the payload, a 2xx is delivered. 404 and
410 mean the endpoint is gone (the device is deactivated); 429 and 5xx are
retried (honouring Retry-After); any other answer is a permanent failure.
The SSRF guard runs again at delivery, and the request connects to the very
address it checked.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx

from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.payload import neutral_payload
from pushcore.gateways._http import retry_after_seconds, status_reason
from pushcore.net import NetworkGuard, pinned_request
from pushcore.ports import Clock

USER_AGENT = "pushcore-webhook/1"


class WebhookGateway:
    """Sends to webhook devices with one shared async HTTP client."""

    def __init__(
        self, guard: NetworkGuard, client: httpx.AsyncClient, clock: Clock, concurrency: int = 256
    ) -> None:
        self._guard = guard
        self._client = client
        self._clock = clock
        self._slots = asyncio.Semaphore(concurrency)

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Post every dispatch concurrently (bounded); one outcome each."""
        return await asyncio.gather(*(self._send_one(d) for d in dispatches))

    async def _resolve(self, url: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        host = urlsplit(url).hostname or ""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            # A name needs DNS, which blocks: keep it off the event loop.
            return (await asyncio.to_thread(self._guard.resolve, url))[0]
        return self._guard.resolve(url)[0]

    async def _send_one(self, dispatch: Dispatch) -> Outcome:
        url = dispatch.device.token
        try:
            address = await self._resolve(url)
        except ValueError as exc:
            return Failed(f"Webhook refused: {exc}")
        target, headers, extensions = pinned_request(url, address)
        headers["Content-Type"] = "application/json"
        headers["User-Agent"] = USER_AGENT
        body = json.dumps(neutral_payload(dispatch.notification), separators=(",", ":"))
        async with self._slots:
            try:
                response = await self._client.post(
                    target, content=body.encode(), headers=headers, extensions=extensions
                )
            except httpx.TimeoutException:
                return Retry("Webhook timed out")
            except httpx.HTTPError:
                return Retry("Webhook unreachable")
        status = response.status_code
        if 200 <= status < 300:
            return Delivered()
        reason = status_reason(status)
        if status in (404, 410):
            return TokenInvalid(reason)
        if status == 429 or status >= 500:
            after = retry_after_seconds(response.headers.get("retry-after"), self._clock.now())
            return Retry(reason, after)
        return Failed(reason)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
