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

import math

from starlette.requests import Request
from throttled import MemoryStore, RateLimiterType, Throttled, per_min
from throttled.rate_limiter import Quota

from pushcore.domain.errors import RateLimited
from pushcore_http.ratelimit import client_key

# An address: 30 attempts at once, then one every 2 s (a household or an office
# behind one address signs in now and then, not 30 times a minute).
ADDRESS_PER_MINUTE = 30
ADDRESS_BURST = 30
# An account: 10 failures at once, then one every 6 s.
ACCOUNT_FAILURES_PER_MINUTE = 10
ACCOUNT_FAILURES_BURST = 10
BUCKETS = 100_000
STATE_KEY = "signin_limits"


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

    def admit(self, address: str, account: str | None) -> None:
        """Take an attempt from ``address``; RateLimited (before any hashing) when its
        bucket, or the failures' bucket of ``account``, is empty."""
        if account is not None:
            state = self._accounts.peek(account.lower())
            if state.remaining < 1:
                raise _refusal("Too many failed sign-ins for this account", state.retry_after)
        result = self._addresses.limit(address)
        if result.limited:
            raise _refusal("Too many sign-ins from this address", result.state.retry_after)

    def failed(self, account: str) -> None:
        """Count a failed attempt against ``account``."""
        self._accounts.limit(account.lower())


def admit(request: Request, account: str | None) -> None:
    """:meth:`SigninLimits.admit` for the request's client, if the app limits sign-ins."""
    limits: SigninLimits | None = getattr(request.app.state, STATE_KEY, None)
    if limits is not None:
        limits.admit(client_key(request.scope), account)


def failed(request: Request, account: str) -> None:
    """:meth:`SigninLimits.failed`, if the app limits sign-ins."""
    limits: SigninLimits | None = getattr(request.app.state, STATE_KEY, None)
    if limits is not None:
        limits.failed(account)
