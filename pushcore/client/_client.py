"""Client and AsyncClient: the HTTP API of a pushcore server, resource by resource."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

import attrs
import httpx

from pushcore.client._session import Session, Tokens, login_call, logout_call
from pushcore.client._transport import AsyncSender, Policy, Sender
from pushcore.client.resources.account import Account
from pushcore.client.resources.devices import Devices
from pushcore.client.resources.inbox import Inbox
from pushcore.client.resources.keys import Keys
from pushcore.client.resources.notifications import Notifications
from pushcore.client.resources.schedules import Schedules
from pushcore.client.resources.streams import Streams
from pushcore.client.resources.webhooks import Events, Webhooks
from pushcore.converter import SessionView

HEADERS = {"User-Agent": "pushcore-client", "Accept": "application/json"}


def signed_in(
    policy: Policy, answer: SessionView, on_change: Callable[[Tokens], None] | None
) -> Policy:
    """``policy`` with the session a sign-in answered; its keeper told of the first pair."""
    session = Session(Tokens.of(answer, time.time()), on_change=on_change)
    if on_change is not None:
        on_change(session.tokens)
    return attrs.evolve(policy, session=session)


class Client:
    """A pushcore server's API, synchronous; use it as a context manager or close() it.

    ``api_key`` is sent as X-API-Key and ``token`` (a JWT) as a Bearer token,
    each to the endpoints that take it; or sign in with :meth:`login`, whose
    client renews its access token by itself (``session``). Connection
    failures, 429 and 503 are retried up to ``retries`` times with backoff,
    honouring Retry-After.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        token: str | None = None,
        session: Session | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        http = httpx.Client(base_url=url, timeout=timeout, headers=HEADERS, transport=transport)
        policy = Policy(api_key=api_key, token=token, session=session, retries=retries)
        sender = Sender(http, policy)
        self._sender = sender
        self._http = http
        self.keys = Keys(sender)
        self.devices = Devices(sender)
        self.notifications = Notifications(sender)
        self.streams = Streams(sender)
        self.schedules = Schedules(sender)
        self.inbox = Inbox(sender)
        self.account = Account(sender)
        self.webhooks = Webhooks(sender)
        self.events = Events(sender)

    @classmethod
    def login(
        cls,
        url: str,
        account: str,
        password: str,
        *,
        on_change: Callable[[Tokens], None] | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> Self:
        """A client signed in as ``account``: it renews its access token by itself.

        ``on_change`` is told of each new pair of tokens (the first one
        included), for a caller that keeps them between runs.
        """
        client = cls(url, timeout=timeout, retries=retries, transport=transport)
        try:
            answer = client._sender.send(login_call(account, password))
        except BaseException:
            client.close()
            raise
        client._sender.policy = signed_in(client._sender.policy, answer, on_change)
        return client

    @property
    def session(self) -> Session | None:
        """The tokens of a signed-in client; None for a key or a token given."""
        return self._sender.policy.session

    def logout(self) -> None:
        """End the session on the server (its refresh token is revoked)."""
        session = self._sender.policy.session
        if session is not None:
            self._sender.send(logout_call(session.tokens.refresh_token))
            self._sender.policy = attrs.evolve(self._sender.policy, session=None)

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
        session: Session | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        http = httpx.AsyncClient(
            base_url=url, timeout=timeout, headers=HEADERS, transport=transport
        )
        policy = Policy(api_key=api_key, token=token, session=session, retries=retries)
        sender = AsyncSender(http, policy)
        self._sender = sender
        self._http = http
        self.keys = Keys(sender)
        self.devices = Devices(sender)
        self.notifications = Notifications(sender)
        self.streams = Streams(sender)
        self.schedules = Schedules(sender)
        self.inbox = Inbox(sender)
        self.account = Account(sender)
        self.webhooks = Webhooks(sender)
        self.events = Events(sender)

    @classmethod
    async def login(
        cls,
        url: str,
        account: str,
        password: str,
        *,
        on_change: Callable[[Tokens], None] | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> Self:
        """A client signed in as ``account`` (see :meth:`Client.login`)."""
        client = cls(url, timeout=timeout, retries=retries, transport=transport)
        try:
            answer = await client._sender.send(login_call(account, password))
        except BaseException:
            await client.aclose()
            raise
        client._sender.policy = signed_in(client._sender.policy, answer, on_change)
        return client

    @property
    def session(self) -> Session | None:
        """The tokens of a signed-in client; None for a key or a token given."""
        return self._sender.policy.session

    async def logout(self) -> None:
        """End the session on the server (its refresh token is revoked)."""
        session = self._sender.policy.session
        if session is not None:
            await self._sender.send(logout_call(session.tokens.refresh_token))
            self._sender.policy = attrs.evolve(self._sender.policy, session=None)

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
