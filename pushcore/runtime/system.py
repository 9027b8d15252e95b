"""The real clock, randomness and id generator (the ports' production adapters)."""

from __future__ import annotations

import asyncio
import base64
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


# RFC 4648 base32 and Crockford's put their 32 digits in the same order, so
# encoding with the C base32 codec and translating the alphabet keeps ids
# sortable and is far quicker than a loop of divmods (bulk fan-outs make
# 100,000 ids at once).
_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode())


def encode_ulid(value: int) -> str:
    """A 128-bit integer as 26 Crockford base32 characters."""
    # 130 bits (two leading zero bits) = 26 groups of 5; 17 bytes = 136 bits
    # encode to 27.2 characters, of which the first 26 are ours.
    raw = (value << 6).to_bytes(17, "big")
    return base64.b32encode(raw).translate(_TO_CROCKFORD)[:26].decode("ascii")


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
