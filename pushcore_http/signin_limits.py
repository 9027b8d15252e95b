"""Rate limits of sign-in: per client address and per account (API.md, "Sign-in",
"People-side limits").

Apart from the API's per-account buckets (pushcore_http/ratelimit.py): a
sign-in carries no credential yet, and what it costs is a password hash. Every
attempt (sign-in, sign-up, password change) takes from its address's bucket.

Wrong passwords never lock the owner out (OWASP's per-(account, address)
limits, chosen over a device cookie because the owner may come from a client
that keeps no cookie, pushctl or a new browser): a failure takes from the
bucket of its (account, address) pair, so one address guessing one account is
slowed at once, and an address is refused for that account only once its own
pair is empty. The account's own bucket (failures from every address) slows
guessing spread over many addresses, but it refuses only addresses that are
guessing at that account themselves (GUESSING_FAILURES failures within
GUESSING_WINDOW): an address that has not failed there signs in with the right
password whatever others do. A spread-out guesser thus gets a few guesses per
address per window, then the account's rate.

Like the other limits, per process, in memory, and off when PUSHCORE_RATE_LIMIT
is 0. (Refresh, logout, sign-up and the OIDC exchange also have a bucket per
address each: pushcore_http/address_limits.py.)
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections import OrderedDict
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
# One address at one account: 10 failures at once, then one every 6 s.
PAIR_FAILURES_PER_MINUTE = 10
PAIR_FAILURES_BURST = 10
# An account, from the addresses guessing at it: the same.
ACCOUNT_FAILURES_PER_MINUTE = 10
ACCOUNT_FAILURES_BURST = 10
# An address is guessing at an account after this many failures there, until this many
# seconds pass without another (an owner who mistypes once or twice is not).
GUESSING_FAILURES = 3
GUESSING_WINDOW = 15 * 60.0
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


class Guessing:
    """Which addresses failed at which accounts lately: (account, address) pairs with
    their failures and the time of the last, the least recently failed dropped first
    past ``size`` (it would only be counted afresh)."""

    def __init__(self, failures: int, window: float, size: int = BUCKETS) -> None:
        self._failures, self._window, self._size = failures, window, size
        self._seen: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()

    def failed(self, pair: tuple[str, str]) -> None:
        """Count a failure of ``pair`` now."""
        count, last = self._seen.pop(pair, (0, 0.0))
        now = time.monotonic()
        self._seen[pair] = (1 if now - last > self._window else count + 1, now)
        if len(self._seen) > self._size:
            self._seen.popitem(last=False)

    def __contains__(self, pair: tuple[str, str]) -> bool:
        count, last = self._seen.get(pair, (0, 0.0))
        return count >= self._failures and time.monotonic() - last <= self._window


class SigninLimits:
    """The sign-in buckets of one process."""

    def __init__(self) -> None:
        self._addresses = _bucket(per_min(ADDRESS_PER_MINUTE, burst=ADDRESS_BURST))
        self._pairs = _bucket(per_min(PAIR_FAILURES_PER_MINUTE, burst=PAIR_FAILURES_BURST))
        self._accounts = _bucket(per_min(ACCOUNT_FAILURES_PER_MINUTE, burst=ACCOUNT_FAILURES_BURST))
        self._guessing = Guessing(GUESSING_FAILURES, GUESSING_WINDOW)

    def address(self, address: str) -> None:
        """Take an attempt from ``address``; RateLimited when its bucket is empty."""
        result = self._addresses.limit(address)
        if result.limited:
            raise _refusal("Too many sign-ins from this address", result.state.retry_after)

    def account(self, account: str, address: str) -> None:
        """RateLimited when ``address`` failed at ``account`` too often, or is guessing
        there while the account's failures' bucket is empty (takes nothing)."""
        pair = (account.lower(), address)
        state = self._pairs.peek(" ".join(pair))
        if state.remaining < 1 or pair in self._guessing:
            shared = self._accounts.peek(pair[0])
            if state.remaining >= 1 and shared.remaining >= 1:
                return
            wait = max(state.retry_after, shared.retry_after)
            raise _refusal("Too many failed sign-ins for this account", wait)

    def failed(self, account: str, address: str) -> None:
        """Count a failed attempt of ``address`` against ``account``."""
        pair = (account.lower(), address)
        self._pairs.limit(" ".join(pair))
        self._accounts.limit(pair[0])
        self._guessing.failed(pair)


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
    """Refuse an attempt on ``account`` while the request's address has failed there too
    often (never an address that is not guessing there)."""
    limits = _limits(request)
    if limits is not None:
        limits.account(account, client_key(request.scope))


def failed(request: Request, account: str) -> None:
    """Count a failed attempt against ``account``, if the app limits sign-ins."""
    limits = _limits(request)
    if limits is not None:
        limits.failed(account, client_key(request.scope))


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
