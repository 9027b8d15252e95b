"""Retry policy: exponential backoff with jitter and a floor, long enough to outlast an outage."""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs


@attrs.frozen
class RetryPolicy:
    """When to try a failed delivery again, and when to give up.

    The ``attempts``-th failure waits between half and all of a ceiling that
    doubles with each failure, from ``2 * min_delay`` up to ``max_delay``:
    never sooner than ``min_delay`` (the first retry after a 5xx does not
    follow within milliseconds), never later than ``max_delay``, and spread
    over half the ceiling, so the thousands of deliveries of a fan-out that
    failed together come back to a recovering gateway over minutes, not in
    one wave. Jitter over only the upper half keeps a known least wait per
    failure, so the number of tries that covers ``max_age`` is known without
    storing when the first one failed.

    A delivery is given up once both are spent: ``max_attempts`` tries, and
    enough tries that even the shortest waits span ``max_age``. A gateway's
    Retry-After is a floor: we never come back sooner.
    """

    max_attempts: int = 5
    max_age: float = 3600.0
    min_delay: float = 1.0
    max_delay: float = 600.0

    def ceiling(self, attempts: int) -> float:
        """The longest wait after the ``attempts``-th failed try."""
        # Capped exponent: 2 ** 64 * min_delay is far past any max_delay.
        return min(self.max_delay, self.min_delay * 2.0 ** min(max(attempts, 1), 64))

    def least_delay(self, attempts: int) -> float:
        """The shortest wait after the ``attempts``-th failed try (no Retry-After)."""
        return max(self.min_delay, self.ceiling(attempts) / 2)

    @functools.cached_property
    def attempt_limit(self) -> int:
        """How many tries are made before giving up: the larger of the two limits."""
        tries, window = 1, 0.0
        # Bounded: settings refuse a schedule that needs more than 1000 tries.
        while window < self.max_age and tries <= 100_000:
            window += self.least_delay(tries)
            tries += 1
        return max(self.max_attempts, tries)

    def gives_up(self, attempts: int) -> bool:
        """True when ``attempts`` tries have been made and no more are allowed."""
        return attempts >= self.attempt_limit

    def delay(
        self, attempts: int, uniform: Callable[[], float], retry_after: float | None = None
    ) -> float:
        """Seconds to wait after the ``attempts``-th failed try (``uniform`` draws from [0, 1))."""
        ceiling = self.ceiling(attempts)
        low = self.least_delay(attempts)
        jittered = low + (ceiling - low) * uniform()
        if retry_after is not None:
            return max(retry_after, jittered)
        return jittered
