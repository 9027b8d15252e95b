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


# Every pair of Crockford digits (10 bits), in order: an id is 13 table lookups
# joined, about six times quicker than base64.b32encode (Python code before
# 3.13) and a loop of divmods; bulk fan-outs and batches make ids by the thousand.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)


def encode_ulid(value: int) -> str:
    """A 128-bit integer as 26 Crockford base32 characters."""
    # 130 bits (two leading zero bits) = 13 pairs of 5-bit digits, most significant first.
    p = _PAIRS
    return (
        p[value >> 120]
        + p[(value >> 110) & 1023]
        + p[(value >> 100) & 1023]
        + p[(value >> 90) & 1023]
        + p[(value >> 80) & 1023]
        + p[(value >> 70) & 1023]
        + p[(value >> 60) & 1023]
        + p[(value >> 50) & 1023]
        + p[(value >> 40) & 1023]
        + p[(value >> 30) & 1023]
        + p[(value >> 20) & 1023]
        + p[(value >> 10) & 1023]
        + p[value & 1023]
    )


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

    def new_ids(self, prefix: str, count: int) -> list[str]:
        """``count`` fresh ``<prefix>_<ULID>``, in increasing order: one clock read, one
        lock and one draw of random bits for all (a batch of 500 makes 1,000 ids)."""
        ms = int(self._clock.now().timestamp() * 1000)
        return [f"{prefix}_{encode_ulid(value)}" for value in self.values_at(ms, count)]

    def values_at(self, ms: int, count: int) -> list[int]:
        """``count`` ULIDs of the millisecond ``ms`` as integers, increasing and after
        every value made before: one lock and one draw of random bits for all."""
        base = ms << 80
        values: list[int] = []
        with self._lock:
            if self._pool_pid != os.getpid():
                self._last = 0  # a forked child, as in new_id
                self._pool, self._pool_pid = b"", os.getpid()
            bits, last = os.urandom(10 * count), self._last
            for start in range(0, 10 * count, 10):
                candidate = base | int.from_bytes(bits[start : start + 10], "big")
                last = candidate if candidate > last else last + 1
                values.append(last)
            self._last = last
        return values
