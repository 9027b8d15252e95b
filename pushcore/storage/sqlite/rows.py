"""Rows <-> domain objects for SQLite: times as UTC milliseconds, JSON text, scopes as words."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from pushcore.storage.records import Rows

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

# Both mean "this row is already there"; any other constraint failure is a bug
# and must surface as itself, not as a KeyError.
_DUPLICATE = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})


def to_ms(at: datetime) -> int:
    # A naive datetime would be read as local time and silently shifted.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return (at - _EPOCH) // _MS


def to_ms_ceil(at: datetime) -> int:
    # For a whole number n, n < t exactly when n < ceil(t): comparing stored
    # milliseconds with the ceiling keeps a sub-millisecond bound exact.
    floor = to_ms(at)
    return floor if (at - _EPOCH) % _MS == timedelta(0) else floor + 1


def from_ms(ms: int) -> datetime:
    return _EPOCH + ms * _MS


@contextmanager
def duplicate_as_key_error(key: str) -> Iterator[None]:
    """Raise KeyError for a uniqueness violation, as the memory store does."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if exc.sqlite_errorname in _DUPLICATE:
            raise KeyError(key) from exc
        raise


class SqliteRows(Rows):
    """Times as integer milliseconds, scopes space-separated (no value has a space),
    metadata as compact JSON text."""

    def time(self, at: datetime) -> int:
        return to_ms(at)

    def read_time(self, value: Any) -> datetime:
        return from_ms(value)

    def scopes(self, values: list[str]) -> str:
        return " ".join(values)

    def read_scopes(self, value: Any) -> list[str]:
        return str(value).split()

    def metadata(self, value: dict[str, str]) -> str:
        return json.dumps(value, separators=(",", ":"))

    def read_metadata(self, value: Any) -> Mapping[str, str]:
        loaded: dict[str, str] = json.loads(value)
        return loaded


ROWS = SqliteRows()
