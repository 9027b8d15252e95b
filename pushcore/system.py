"""The real clock, randomness and id generator (the ports' production adapters)."""

from __future__ import annotations

import secrets
import threading
from datetime import UTC, datetime

# Crockford's base32: no I, L, O, U, so ids are easy to read aloud and URL-safe.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """The current time."""
        return datetime.now(UTC)


class SecretsRandom:
    """Randomness from the operating system's CSPRNG."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        return secrets.randbelow(n)


def encode_ulid(value: int) -> str:
    """A 128-bit integer as 26 Crockford base32 characters."""
    chars = []
    for _ in range(26):
        value, rest = divmod(value, 32)
        chars.append(_CROCKFORD[rest])
    return "".join(reversed(chars))


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

    def new_id(self, prefix: str) -> str:
        """A fresh ``<prefix>_<ULID>``."""
        ms = int(self._clock.now().timestamp() * 1000)
        with self._lock:
            candidate = (ms << 80) | secrets.randbits(80)
            if candidate <= self._last:
                candidate = self._last + 1
            self._last = candidate
        return f"{prefix}_{encode_ulid(candidate)}"
