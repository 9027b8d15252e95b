"""The real clock, randomness and id generator (the ports' production adapters)."""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
from datetime import UTC, datetime

from pushcore.domain.timefmt import in_milliseconds
from pushcore.ports import Clock

# Crockford's base32: no I, L, O, U, so ids are easy to read aloud and URL-safe.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class MillisecondClock:
    """Another clock read to the millisecond: the precision the stores keep and the API
    shows, so what a service answers on creating something is what it reads back."""

    def __init__(self, inner: Clock) -> None:
        self._inner = inner

    def now(self) -> datetime:
        """The inner clock's time, its microseconds cut to whole milliseconds."""
        return in_milliseconds(self._inner.now())

    async def sleep_until(self, when: datetime) -> None:
        """The inner clock's wait."""
        await self._inner.sleep_until(when)


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """The current time."""
        return datetime.now(UTC)

    async def sleep_until(self, when: datetime) -> None:
        """Wait until the wall clock reaches ``when``."""
        # The event loop's timer may run a little ahead of the wall clock:
        # look again rather than return early.
        while (wait := (when - self.now()).total_seconds()) > 0:
            await asyncio.sleep(wait)


class SecretsRandom:
    """Randomness from the operating system's CSPRNG."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        return secrets.randbelow(n)


# Two Crockford digits per 10 bits: an id is 13 look-ups and a join, about three
# times quicker than the base32 codec (pure Python in 3.11, 11 us an id here; the
# engine makes an event id per settled notification, bulk fan-outs 100,000 ids).
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_SHIFTS = tuple(range(120, -1, -10))


def encode_ulid(value: int) -> str:
    """A 128-bit integer as 26 Crockford base32 characters."""
    # 26 digits of 5 bits = 130 bits, the top two zero: 13 pairs of 10 bits.
    pairs = _PAIRS
    return "".join([pairs[(value >> shift) & 1023] for shift in _SHIFTS])


# Ids whose random bits one os.urandom call draws (see UlidGenerator._random80).
_POOLED = 256


class UlidGenerator:
    """ULIDs (48-bit millisecond time, 80 random bits), monotonic within this process.

    Written here rather than taken from a package because the clock must be
    injectable and ids must stay ordered when many are made in one millisecond
    (a bulk fan-out): when a fresh draw would not sort after the last id, the
    last id plus one is used instead.
    """

    def __init__(self, clock: SystemClock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._last = 0
        self._pool = b""
        self._pool_pid = 0

    def _random80(self) -> int:
        """80 random bits from os.urandom, drawn for _POOLED ids at a time (the lock held)."""
        # Each os.urandom call lets go of the GIL, and the thread that makes most
        # ids (the group writer, inside its transaction) then waits for the event
        # loop to hand it back: one draw per id cost a create about 5% of its CPU
        # time. A forked child must not repeat its parent's pool.
        if len(self._pool) < 10 or self._pool_pid != os.getpid():
            self._pool, self._pool_pid = os.urandom(10 * _POOLED), os.getpid()
        bits, self._pool = self._pool[:10], self._pool[10:]
        return int.from_bytes(bits, "big")

    def new_id(self, prefix: str) -> str:
        """A fresh ``<prefix>_<ULID>``."""
        ms = int(self._clock.now().timestamp() * 1000)
        with self._lock:
            if self._pool_pid != os.getpid():
                # A forked child: "the last id plus one" would be its parent's next id
                # too (both at the same millisecond), so the child starts its own order.
                self._last = 0
            candidate = (ms << 80) | self._random80()
            if candidate <= self._last:
                candidate = self._last + 1
            self._last = candidate
        return f"{prefix}_{encode_ulid(candidate)}"
