"""The system ports: time, ids and secret randomness."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """The time, and waiting for it. Tests pass a clock they can move."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    async def sleep_until(self, when: datetime) -> None:
        """Wait until this clock says ``when`` has come (at once if it has); cancellable.

        Everything that waits for time (the engine's due times, backstop tick,
        grace period) waits here, so a test's clock decides when it ends. An
        absolute time, not a duration: a wait decided at one instant and begun
        a little later still ends when it was meant to.
        """
        ...


class IdGenerator(Protocol):
    """Makes the opaque, creation-sortable ids of API.md (``key_01J…``)."""

    def new_id(self, prefix: str) -> str:
        """A fresh id ``<prefix>_<26 chars>``, greater than every earlier one of this process."""
        ...

    def new_ids(self, prefix: str, count: int) -> list[str]:
        """``count`` fresh ids as :meth:`new_id` makes them, in increasing order."""
        ...


class Random(Protocol):
    """Secret randomness for keys and codes."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        ...
