"""Rate limits of sign-in: per client address and per account (API.md, "Sign-in").

Apart from the API's per-account buckets (pushcore_http/ratelimit.py): a
sign-in carries no credential yet, and what it costs is a password hash. Every
attempt (sign-in, sign-up, password change) takes from its address's bucket; a
failed one also from the account's, so that guessing one account's password is
slow from any number of addresses, while its owner, who gets it right, is not
held back by its own sign-ins. Like the other limits, per process, in memory,
and off when PUSHCORE_RATE_LIMIT is 0.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from throttled import MemoryStore, RateLimiterType, Throttled, per_min
from throttled.rate_limiter import Quota

from pushcore.domain.errors import RateLimited
from pushcore_http.connections import HOLD_EXTENSION
from pushcore_http.ratelimit import client_key, refusal_delay

# An address: 30 attempts at once, then one every 2 s (a household or an office
# behind one address signs in now and then, not 30 times a minute).
ADDRESS_PER_MINUTE = 30
ADDRESS_BURST = 30
# An account: 10 failures at once, then one every 6 s.
ACCOUNT_FAILURES_PER_MINUTE = 10
ACCOUNT_FAILURES_BURST = 10
BUCKETS = 100_000
STATE_KEY = "signin_limits"
# A refused sign-in is held this many times the API's hold (so 1 to 3 s): nobody
# signs in again within a second, and a flood of refusals held 0.5 s still kept
# the event loop busy enough to triple other accounts' p99 (benchmarks/signin.py).
HOLD_FACTOR = 4


def _bucket(quota: Quota) -> Throttled:
    # GCRA: refilled continuously, not a whole minute's worth at once.
    return Throttled(
        using=RateLimiterType.GCRA.value,
        quota=quota,
        store=MemoryStore(options={"MAX_SIZE": BUCKETS}),
    )


def _refusal(message: str, seconds: float) -> RateLimited:
    return RateLimited(message, max(1, math.ceil(seconds)))


class SigninLimits:
    """The sign-in buckets of one process."""

    def __init__(self) -> None:
        self._addresses = _bucket(per_min(ADDRESS_PER_MINUTE, burst=ADDRESS_BURST))
        self._accounts = _bucket(per_min(ACCOUNT_FAILURES_PER_MINUTE, burst=ACCOUNT_FAILURES_BURST))

    def address(self, address: str) -> None:
        """Take an attempt from ``address``; RateLimited when its bucket is empty."""
        result = self._addresses.limit(address)
        if result.limited:
            raise _refusal("Too many sign-ins from this address", result.state.retry_after)

    def account(self, account: str) -> None:
        """RateLimited when the failures' bucket of ``account`` is empty (takes nothing)."""
        state = self._accounts.peek(account.lower())
        if state.remaining < 1:
            raise _refusal("Too many failed sign-ins for this account", state.retry_after)

    def failed(self, account: str) -> None:
        """Count a failed attempt against ``account``."""
        self._accounts.limit(account.lower())


def _limits(request: Request) -> SigninLimits | None:
    limits: SigninLimits | None = getattr(request.app.state, STATE_KEY, None)
    return limits


def admit_address(request: Request) -> None:
    """Take an attempt from the request's client address, if the app limits sign-ins;
    called before the body is read, so that a refusal costs next to nothing."""
    limits = _limits(request)
    if limits is not None:
        limits.address(client_key(request.scope))


def admit_account(request: Request, account: str) -> None:
    """Refuse an attempt on ``account`` while it has failed too often."""
    limits = _limits(request)
    if limits is not None:
        limits.account(account)


def failed(request: Request, account: str) -> None:
    """Count a failed attempt against ``account``, if the app limits sign-ins."""
    limits = _limits(request)
    if limits is not None:
        limits.failed(account)


Route = Callable[[Request], Awaitable[Response]]


def held_refusals(route: Route) -> Route:
    """``route``, with its 429s held 1 to 3 s before they are sent.

    A client that ignores Retry-After would otherwise loop as fast as the server can
    refuse, and the event loop would spend its time on that client; a sleeping
    request costs no CPU (as for the API's own limits, pushcore_http/ratelimit.py).
    """

    @functools.wraps(route)
    async def held(request: Request) -> Response:
        try:
            return await route(request)
        except RateLimited:
            hold = request.scope.get("extensions", {}).get(HOLD_EXTENSION)
            if hold is not None:
                hold["hold"]()  # the connection bound closes a held connection first
            await asyncio.sleep(refusal_delay() * HOLD_FACTOR)
            raise

    return held
