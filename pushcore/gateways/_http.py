"""Small HTTP helpers shared by the gateways."""

from __future__ import annotations

import asyncio
import http
import ipaddress
import ssl
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import aiohttp
import attrs

from pushcore.domain.addresses import IPAddress
from pushcore.outbound.guard import NetworkGuard, Pinned


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def status_reason(status: int) -> str:
    """``Gone``, ``Too Many Requests``...; ``HTTP 599`` for unknown codes."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


async def guarded_address(guard: NetworkGuard, url: str) -> IPAddress:
    """The address to connect to for ``url``, past the SSRF guard (ValueError if refused)."""
    host = urlsplit(url).hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        # A name needs DNS, which blocks: keep it off the event loop.
        return (await asyncio.to_thread(guard.resolve, url))[0]
    return guard.resolve(url)[0]


class BatchResolver:
    """Checks each host of a batch once: a fan-out is many URLs on few hosts."""

    def __init__(self, guard: NetworkGuard) -> None:
        self._guard = guard
        self._tasks: dict[tuple[str, str, int | None], asyncio.Task[IPAddress]] = {}

    def __call__(self, url: str) -> asyncio.Task[IPAddress]:
        """The (shared) check of ``url``'s host; await it through asyncio.shield."""
        try:
            parts = urlsplit(url)
            key = (parts.scheme, parts.hostname or "", parts.port)
        except ValueError:
            key = ("", url, None)  # a malformed URL: the guard will say why
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(guarded_address(self._guard, url))
        return self._tasks[key]


def new_session(
    tls: ssl.SSLContext | None, concurrency: int, timeout: aiohttp.ClientTimeout
) -> aiohttp.ClientSession:
    """An aiohttp session for a gateway (made inside the loop that will use it)."""
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=tls if tls is not None else True)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)


# Answers are read (so the connection can be reused) up to this much: a receiver
# or push service has little to tell us in a body.
MAX_ANSWER_BYTES = 64 * 1024


@attrs.frozen
class Answer:
    """What a POST got back: its status, its Retry-After, the start of its body."""

    status: int
    retry_after: str | None
    body: bytes


async def post_pinned(
    session: aiohttp.ClientSession, pinned: Pinned, body: bytes, headers: dict[str, str]
) -> Answer:
    """POST ``body`` to the pinned address, never following a redirect.

    Raises TimeoutError when the request's deadline ran out, aiohttp.ClientError
    when the host could not be reached or broke off.
    """
    async with session.post(
        pinned.url,
        data=body,
        headers={"Host": pinned.host_header, **headers},
        server_hostname=pinned.server_name,
        allow_redirects=False,
    ) as response:
        answer = await response.content.read(MAX_ANSWER_BYTES)
        return Answer(response.status, response.headers.get("Retry-After"), answer)
