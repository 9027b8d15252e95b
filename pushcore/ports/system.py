"""The system ports: time, ids and secret randomness."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """The time. Tests pass a clock they can move."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class IdGenerator(Protocol):
    """Makes the opaque, creation-sortable ids of API.md (``key_01J…``)."""

    def new_id(self, prefix: str) -> str:
        """A fresh id ``<prefix>_<26 chars>``, greater than every earlier one of this process."""
        ...


class Random(Protocol):
    """Secret randomness for keys and codes."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        ...
