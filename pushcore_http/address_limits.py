"""Per-address buckets of the sign-in side's cheap endpoints (API.md, "People-side limits").

``/api/auth/oidc/exchange``, ``/refresh``, ``/logout`` and ``/signup`` are each
rate limited per client address (a bucket per endpoint, by name), the size of
the failed-authentication one (10 per second, burst 50): far above what a
person does, far below what a script that hammers it does. Like the other
limits, per process, in memory, and off when PUSHCORE_RATE_LIMIT is 0.
"""

from __future__ import annotations

import math

from starlette.requests import Request
from throttled import MemoryStore, RateLimiterType, Throttled, per_sec

from pushcore.domain.errors import RateLimited
from pushcore_http.ratelimit import BUCKETS, FAILED_AUTH_BURST, FAILED_AUTH_RATE, client_key

STATE_KEY = "address_limits"


class AddressLimits:
    """One bucket per client address for each named endpoint, in this process."""

    def __init__(self, rate: int = FAILED_AUTH_RATE, burst: int = FAILED_AUTH_BURST) -> None:
        self._rate = rate
        self._burst = burst
        self._buckets: dict[str, Throttled] = {}

    def admit(self, endpoint: str, address: str) -> None:
        """Take a request of ``endpoint`` from ``address``; RateLimited when it is empty."""
        bucket = self._buckets.get(endpoint)
        if bucket is None:
            # GCRA, as the API's buckets: refilled continuously.
            bucket = self._buckets[endpoint] = Throttled(
                using=RateLimiterType.GCRA.value,
                quota=per_sec(self._rate, burst=self._burst),
                store=MemoryStore(options={"MAX_SIZE": BUCKETS}),
            )
        result = bucket.limit(address)
        if result.limited:
            retry = max(1, math.ceil(result.state.retry_after))
            raise RateLimited("Too many requests from this address", retry)


def admit(request: Request, endpoint: str) -> None:
    """Take a request of ``endpoint`` from the request's client address, if the app
    limits rates; called before the body is read, so that a refusal costs next to nothing."""
    limits: AddressLimits | None = getattr(request.app.state, STATE_KEY, None)
    if limits is not None:
        limits.admit(endpoint, client_key(request.scope))
