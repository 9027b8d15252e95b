"""Rows <-> domain objects for PostgreSQL: timestamptz, jsonb and text[] columns.

psycopg returns timestamptz as aware datetimes in the session's time zone,
which the store sets to UTC; jsonb comes back as a dict and text[] as a list,
so the values pass through as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pushcore.storage.records import Rows

Row = tuple[Any, ...]
Connection = psycopg.Connection[Row]


def ts(at: datetime) -> datetime:
    """``at`` as a parameter; a naive time is refused, as the SQLite store refuses it."""
    # psycopg would send a naive datetime as `timestamp` and PostgreSQL would
    # read it in the session's time zone: a silent shift for a caller's bug.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return at


@contextmanager
def duplicate_as_key_error(conn: Connection, key: str) -> Iterator[None]:
    """Raise KeyError for a uniqueness violation, as the memory store does.

    The statement runs in a savepoint: in PostgreSQL a failed statement
    spoils the whole transaction, and a caller that catches the KeyError
    (a stream code collision: draw again) must be able to go on.
    """
    try:
        with conn.transaction():
            yield
    except psycopg.errors.UniqueViolation as exc:
        raise KeyError(key) from exc


class PostgresRows(Rows):
    """Times, scope lists and metadata objects as psycopg adapts them."""

    def time(self, at: datetime) -> datetime:
        return ts(at)

    def read_time(self, value: Any) -> datetime:
        read: datetime = value
        return read

    def scopes(self, values: list[str]) -> list[str]:
        return values

    def read_scopes(self, value: Any) -> list[str]:
        return list(value)

    def metadata(self, value: dict[str, str]) -> Jsonb:
        return Jsonb(value)

    def read_metadata(self, value: Any) -> Mapping[str, str]:
        read: dict[str, str] = value
        return read


ROWS = PostgresRows()
