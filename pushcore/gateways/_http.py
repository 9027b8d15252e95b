"""Small HTTP helpers shared by the gateways."""

from __future__ import annotations

import asyncio
import functools
import http
import ssl
from urllib.parse import urlsplit

import aiohttp
import attrs
from yarl import URL

from pushcore.domain.addresses import IPAddress
from pushcore.gateways._answer import MAX_ANSWER_BYTES, Answer, guarded_address
from pushcore.gateways.lanes import Lanes
from pushcore.outbound.guard import NetworkGuard, Pinned


def status_reason(status: int) -> str:
    """``Gone``, ``Too Many Requests``...; ``HTTP 599`` for unknown codes."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


class BatchResolver:
    """Checks each host of a batch once: a fan-out is many URLs on few hosts."""

    def __init__(self, guard: NetworkGuard) -> None:
        self._guard = guard
        self._tasks: dict[tuple[str, str, int | None], asyncio.Task[IPAddress]] = {}

    def __call__(self, url: str) -> asyncio.Task[IPAddress]:
        """The (shared) check of ``url``'s host; await it through asyncio.shield."""
        key = _origin(url)
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(guarded_address(self._guard, url))
        return self._tasks[key]


# Parsing a URL is a noticeable share of a post's CPU (several urlsplit calls a
# delivery); a fan-out posts to the same few URLs again and again. These are pure
# functions of the string, so cached.
@functools.lru_cache(maxsize=4096)
def _origin(url: str) -> tuple[str, str, int | None]:
    try:
        parts = urlsplit(url)
        return (parts.scheme, parts.hostname or "", parts.port)
    except ValueError:
        return ("", url, None)  # a malformed URL: the guard will say why


@functools.lru_cache(maxsize=4096)
def _parsed(url: str) -> URL:
    # What aiohttp makes of the string on each request, made once per URL.
    return URL(url)


@attrs.frozen
class Limits:
    """How many posts a gateway makes at once: in all, to one host, for one account;
    and how long one may wait for its turn before it is Deferred."""

    concurrency: int
    per_host: int
    per_account: int
    max_wait: float


class Poster:
    """What the webhook and Web Push gateways post through: one aiohttp session behind
    the lanes that share its slots.

    Requests wait for a slot in the lanes, not in aiohttp's pool, whose wait
    would count against each request's own timeout and fail deliveries that were
    only queued behind slower ones. The URLs are the accounts' choice, so the
    lanes share the slots fairly by host (a push service its full share, a dead
    host soon one) and by account (see gateways/lanes.py). ``unreachable`` are
    the retry reasons that count against a host.
    """

    def __init__(
        self,
        tls: ssl.SSLContext | None,
        timeout: aiohttp.ClientTimeout,
        limits: Limits,
        unreachable: frozenset[str],
    ) -> None:
        self._tls = tls
        self._timeout = timeout
        self._concurrency = limits.concurrency
        self.lanes = Lanes(
            concurrency=limits.concurrency,
            host_concurrency=limits.per_host,
            account_concurrency=limits.per_account,
            max_wait=limits.max_wait,
            unreachable=unreachable,
        )
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        """The session; made on first use, since it belongs to the loop it is made in
        (the engine's)."""
        if self._session is None:
            tls = self._tls if self._tls is not None else True
            connector = aiohttp.TCPConnector(limit=self._concurrency, ssl=tls)
            # No cookie jar: a receiver's cookies must not travel to another
            # account's URL on the same host (the default jar would not keep them
            # anyway, for the pinned URLs name an address), and the jar's look-up on
            # every request and every answer is CPU spent for nothing.
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def aclose(self) -> None:
        """Close the session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


async def post_pinned(
    session: aiohttp.ClientSession, pinned: Pinned, body: bytes, headers: dict[str, str]
) -> Answer:
    """POST ``body`` to the pinned address, never following a redirect.

    Raises TimeoutError when the request's deadline ran out, aiohttp.ClientError
    when the host could not be reached or broke off.
    """
    async with session.post(
        _parsed(pinned.url),
        data=body,
        headers={"Host": pinned.host_header, **headers},
        server_hostname=pinned.server_name,
        allow_redirects=False,
    ) as response:
        answer = await response.content.read(MAX_ANSWER_BYTES)
        return Answer(response.status, response.headers.get("Retry-After"), answer)
