"""Rate limits: a token bucket per account, and one per client address for failed
authentications (API.md, "Limits and fairness").

The buckets live in this process's memory, so limits hold per process: N API
processes behind one load balancer let an account through N times as fast.

A refused request must cost almost nothing, or one account over its limit
still slows the others down. So the middleware refuses before any route runs
(no body read, no authentication, no thread-pool hop) whenever it can tell:
a credential that authenticated before is remembered (by digest) with its
account, and the account's bucket is looked at without taking from it. The
bucket is charged only by the route layer (:mod:`pushcore_http.layers`), on
every request to an endpoint that takes a credential, once it knows the
account: that is the check that decides; the early refusal only spares the
work for requests that would be refused anyway.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import math
import random

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from throttled import MemoryStore, RateLimiterType, Throttled, per_sec

from pushcore.config import Settings
from pushcore.domain.errors import RateLimited
from pushcore_http.connections import HOLD_EXTENSION
from pushcore_http.errors import error_response

# API.md: failed authentications per client address, "10 per second, burst 50".
FAILED_AUTH_RATE = 10
FAILED_AUTH_BURST = 50
# Buckets are an LRU: past this many, the least recently seen is dropped (it
# comes back full, which only matters to a client idle while 100,000 others
# were active).
BUCKETS = 100_000
# Remembered credentials; past this many the memory starts over (each entry is
# re-learnt by its next successful authentication).
REMEMBERED = 10_000
# How long a request refused before authentication waits for its 429, on average;
# each waits between half and one and a half of it (see refusal_delay).
REFUSAL_DELAY = 0.5
CREDENTIAL_HEADERS = (b"x-api-key", b"authorization")


def _bucket(rate: int, burst: int) -> Throttled:
    # GCRA is the token bucket kept as one timestamp per key, refilled
    # continuously; throttled-py's TOKEN_BUCKET refills once a whole second,
    # which lets a hammering account's waiting requests in all together at
    # each second boundary (a burst of real work that others then queue behind).
    return Throttled(
        using=RateLimiterType.GCRA.value,
        quota=per_sec(rate, burst=burst),
        store=MemoryStore(options={"MAX_SIZE": BUCKETS}),
    )


def client_key(scope: Scope) -> str:
    """The address a client's failed authentications count against: an IPv6 host by
    its /64 (one machine usually holds the whole /64), anything else as it is."""
    client = scope.get("client")
    host = str(client[0]) if client else "unknown"
    if ":" in host:
        try:
            return str(ipaddress.IPv6Network(f"{host}/64", strict=False))
        except ValueError:
            return host
    return host


def credential_digest(scope: Scope) -> bytes | None:
    """A digest of the request's credential headers; None when it carries none."""
    found = [value for name, value in scope["headers"] if name in CREDENTIAL_HEADERS]
    if not found:
        return None
    # Digests, so that the memory of known credentials holds no secret.
    return hashlib.blake2b(b"\n".join(found), digest_size=16).digest()


class RateLimits:
    """The token buckets of one process."""

    def __init__(self, rate: int, burst: int) -> None:
        self._accounts = _bucket(rate, burst)
        self._failures = _bucket(FAILED_AUTH_RATE, FAILED_AUTH_BURST)
        self._known: dict[bytes, str] = {}
        self._over = (
            f"Rate limit exceeded: at most {rate} requests per second"
            f" (bursts of {burst}) per account"
        )

    def charge_account(self, account_id: str, credential: bytes | None) -> None:
        """Take a token from the account's bucket; RateLimited when it is empty."""
        if credential is not None:
            if len(self._known) >= REMEMBERED:
                self._known.clear()
            self._known[credential] = account_id
        result = self._accounts.limit(account_id)
        if result.limited:
            raise RateLimited(self._over, _retry_after(result.state.retry_after))

    def charge_failure(self, address: str) -> None:
        """Count one failed authentication against ``address``."""
        self._failures.limit(address)

    def early_refusal(self, credential: bytes, address: str) -> RateLimited | None:
        """Why a request with ``credential`` from ``address`` is refused before it is
        authenticated, if it is: its (remembered) account's bucket is empty, or
        it is not a known credential and its address has failed too often."""
        account_id = self._known.get(credential)
        if account_id is not None:
            state = self._accounts.peek(account_id)
            if state.remaining < 1:
                return RateLimited(self._over, _retry_after(state.retry_after))
            return None
        state = self._failures.peek(address)
        if state.remaining < 1:
            return RateLimited(
                "Too many failed authentications from this address",
                _retry_after(state.retry_after),
            )
        return None


def rate_limits(settings: Settings) -> RateLimits | None:
    """The buckets of an app on ``settings``; None when PUSHCORE_RATE_LIMIT is 0 (off)."""
    if settings.rate_limit <= 0:
        return None
    return RateLimits(settings.rate_limit, settings.rate_limit_burst)


def refusal_delay() -> float:
    """Seconds the next early 429 is held: REFUSAL_DELAY, give or take half of it.

    Not the same for all: a fixed hold moves a client's connections in step. Each
    0.5 s all of them came back at once, the tokens its bucket gained meanwhile
    were spent in that moment (50 requests at 100/s), and the refusals of the
    rest were sent together: another account's request arriving then waited
    behind the lot (its p99, not its p50: 90 ms against 2 ms idle with 400 such
    connections at 400/s, docs/benchmarks.md). Spread out, they come one at a time.
    """
    return REFUSAL_DELAY * (0.5 + random.random())  # noqa: S311 (not a secret)


def _retry_after(seconds: float) -> int:
    """Retry-After as API.md has it: whole seconds, at least 1."""
    return max(1, math.ceil(seconds))


class RateLimit:
    """Pure ASGI middleware: refuses early what the buckets already refuse, and counts
    every 401 against the client's address. Does nothing when ``limits`` is None (off)."""

    def __init__(self, app: ASGIApp, limits: RateLimits | None) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limits = self.limits
        if limits is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        credential = credential_digest(scope)
        address = client_key(scope)
        if credential is not None:
            refusal = limits.early_refusal(credential, address)
            if refusal is not None:
                # Answering at once would let a client that ignores Retry-After
                # loop as fast as the server can refuse, and the event loop
                # would spend its time on that client; a sleeping request costs
                # no CPU. It holds a connection, though: the server may close it
                # first when it needs the slot (pushcore_http/connections.py).
                hold = scope.get("extensions", {}).get(HOLD_EXTENSION)
                if hold is not None:
                    hold["hold"]()
                await asyncio.sleep(refusal_delay())
                response = error_response(
                    429,
                    refusal.message,
                    refusal.code,
                    {"Retry-After": str(refusal.retry_after)},
                )
                await response(scope, receive, send)
                return

        async def send_and_count(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                limits.charge_failure(address)
            await send(message)

        await self.app(scope, receive, send_and_count)
