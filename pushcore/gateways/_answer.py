"""What an HTTP answer says and where a request may go, without an HTTP client.

Shared by the gateways (through ``_http``) and the event sender, whose process
posts with its own HTTP/1.1 (outbound/http1.py): importing aiohttp for these
cost that process about a third of a CPU second at each start.
"""

from __future__ import annotations

import asyncio
import ipaddress
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import attrs

from pushcore.domain.addresses import IPAddress
from pushcore.outbound.guard import NetworkGuard


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


async def guarded_address(guard: NetworkGuard, url: str) -> IPAddress:
    """The address to connect to for ``url``, past the SSRF guard (ValueError if refused)."""
    host = urlsplit(url).hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        # A name needs DNS, which blocks: keep it off the event loop.
        return (await asyncio.to_thread(guard.resolve, url))[0]
    return guard.resolve(url)[0]


# Answers are read (so the connection can be reused) up to this much: a receiver
# or push service has little to tell us in a body.
MAX_ANSWER_BYTES = 64 * 1024


@attrs.frozen
class Answer:
    """What a POST got back: its status, its Retry-After, the start of its body."""

    status: int
    retry_after: str | None
    body: bytes
