"""Client and AsyncClient: the HTTP API of a pushcore server, resource by resource."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import httpx

from pushcore.client._transport import AsyncSender, Policy, Sender
from pushcore.client.resources.devices import AsyncDevices, Devices
from pushcore.client.resources.inbox import AsyncInbox, Inbox
from pushcore.client.resources.keys import AsyncKeys, Keys
from pushcore.client.resources.notifications import AsyncNotifications, Notifications
from pushcore.client.resources.streams import AsyncStreams, Streams

HEADERS = {"User-Agent": "pushcore-client", "Accept": "application/json"}


class Client:
    """A pushcore server's API, synchronous; use it as a context manager or close() it.

    ``api_key`` is sent as X-API-Key and ``token`` (a JWT) as a Bearer token,
    each to the endpoints that take it. Connection failures, 429 and 503 are
    retried up to ``retries`` times with backoff, honouring Retry-After.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        http = httpx.Client(base_url=url, timeout=timeout, headers=HEADERS, transport=transport)
        sender = Sender(http, Policy(api_key=api_key, token=token, retries=retries))
        self._http = http
        self.keys = Keys(sender)
        self.devices = Devices(sender)
        self.notifications = Notifications(sender)
        self.streams = Streams(sender)
        self.inbox = Inbox(sender)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient:
    """A pushcore server's API for asyncio: the methods of :class:`Client`, awaitable."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        http = httpx.AsyncClient(
            base_url=url, timeout=timeout, headers=HEADERS, transport=transport
        )
        sender = AsyncSender(http, Policy(api_key=api_key, token=token, retries=retries))
        self._http = http
        self.keys = AsyncKeys(sender)
        self.devices = AsyncDevices(sender)
        self.notifications = AsyncNotifications(sender)
        self.streams = AsyncStreams(sender)
        self.inbox = AsyncInbox(sender)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
