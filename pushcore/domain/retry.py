"""Retry policy: exponential backoff with full jitter, Retry-After honoured, bounded attempts."""

from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.frozen
class RetryPolicy:
    """When to try a failed delivery again, and when to give up.

    Full jitter (a uniform draw between 0 and the exponential ceiling) spreads
    retries of a gateway outage over time instead of returning in waves.
    A gateway's Retry-After is a floor: we never come back sooner.
    """

    max_attempts: int = 5
    base_seconds: float = 1.0
    cap_seconds: float = 300.0

    def gives_up(self, attempts: int) -> bool:
        """True when ``attempts`` tries have been made and no more are allowed."""
        return attempts >= self.max_attempts

    def delay(
        self, attempts: int, uniform: Callable[[], float], retry_after: float | None = None
    ) -> float:
        """Seconds to wait after the ``attempts``-th failed try (``uniform`` draws from [0, 1))."""
        ceiling: float = min(self.cap_seconds, self.base_seconds * 2.0 ** max(attempts - 1, 0))
        jittered = ceiling * uniform()
        if retry_after is not None:
            return max(retry_after, jittered)
        return jittered
