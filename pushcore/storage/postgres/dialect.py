"""PostgreSQL's spelling: ``%s`` placeholders, arrays, row and advisory locks.

psycopg returns timestamptz as aware datetimes in the session's time zone,
which the store sets to UTC; jsonb comes back as a dict and text[] as a list,
so the values pass through as they are.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import orjson
import psycopg
import psycopg_pool
from psycopg import errors
from psycopg.types.json import Jsonb

from pushcore.domain.errors import Unavailable
from pushcore.storage.migrate import EXPRESSIONS
from pushcore.storage.sql.dialect import ColumnType, Dialect

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_INDEX_PIN = re.compile(r" INDEXED BY \w+")
# The LISTEN/NOTIFY channel on which inbox writers tell live channels (inbox_signal).
INBOX_CHANNEL = "pushcore_inbox"
_CASTS = {"text": "text", "int": "integer", "bool": "boolean", "time": "timestamptz"}


# OperationalError (a lost or refused connection, a pool that waited in vain,
# the server's own timeouts, a full disk...) is PostgreSQL saying it cannot
# serve now; how each kind reads in the Unavailable's message, the first
# class that matches. A closed pool is not an outage but a store in use after
# close(), and stays itself.
_OUTAGES: tuple[tuple[type[Exception], str], ...] = (
    (psycopg_pool.PoolTimeout, "cannot be reached (no connection came in time)"),
    (errors.DiskFull, "cannot write: the disk is full"),
    (errors.InsufficientResources, "is out of resources (memory, disk or connections)"),
    (errors.LockNotAvailable, "is locked past the lock timeout"),
    (errors.QueryCanceled, "did not answer within the statement timeout"),
    (errors.TransactionRollback, "met a conflicting transaction"),
    (psycopg.OperationalError, "cannot be reached"),
)


@functools.cache
def _picks(columns: tuple[tuple[str, ColumnType], ...]) -> str:
    """Each column out of a row ``r`` (a jsonb array), cast to its type; a JSON null
    is SQL's NULL whatever the type."""
    return ", ".join(
        f"NULLIF(r->{i}, 'null') AS {name}"
        if kind == "json"
        else f"(r->>{i})::{_CASTS[kind]} AS {name}"
        for i, (name, kind) in enumerate(columns)
    )


def _json_default(value: object) -> object:
    if isinstance(value, Jsonb):
        return value.obj
    raise TypeError(f"{type(value).__name__} is not a column's value")


def ts(at: datetime) -> datetime:
    """``at`` as a parameter; a naive time is refused, as the SQLite store refuses it."""
    # psycopg would send a naive datetime as `timestamp` and PostgreSQL would
    # read it in the session's time zone: a silent shift for a caller's bug.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return at


class PostgresDialect(Dialect):
    """PostgreSQL 13 or later, through psycopg 3: times, scope lists and JSON objects
    as psycopg adapts them."""

    row_locks = True
    executemany_is_bulk = False
    advisory_lock = "SELECT pg_advisory_xact_lock(?, hashtext(?))"
    inbox_notify = f"SELECT pg_notify('{INBOX_CHANNEL}', ?)"
    id_tail = EXPRESSIONS["postgres"]["random_hex"].format(10)
    migrations_table = (
        "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
        " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    now = "now()"

    def time(self, at: datetime) -> datetime:
        return ts(at)

    def read_time(self, value: Any) -> datetime:
        read: datetime = value
        return read

    def scopes(self, values: list[str]) -> list[str]:
        return values

    def read_scopes(self, value: Any) -> list[str]:
        return list(value)

    def json(self, value: Mapping[str, str]) -> Jsonb:
        return Jsonb(value if isinstance(value, dict) else dict(value))

    def read_json(self, value: Any) -> Mapping[str, str]:
        read: dict[str, str] = value
        return read

    def translate(self, text: str) -> str:
        text = _INDEX_PIN.sub("", text.replace("%", "%%"))
        return _NAMED.sub(r"%(\1)s", text).replace("?", "%s")

    def array(self, values: Sequence[str]) -> list[str]:
        return list(values)

    def int_array(self, values: Sequence[int]) -> list[int]:
        return list(values)

    def list_table(self, alias: str) -> str:
        return f"unnest(?::text[]) AS {alias}(value)"

    def table(self, columns: Sequence[tuple[str, ColumnType]]) -> str:
        # One jsonb parameter, an array of rows, each an array of the columns' values.
        picks = _picks(tuple(columns))  # our columns' names only
        return f"(SELECT {picks} FROM jsonb_array_elements(?::jsonb) AS r) AS v"  # noqa: S608

    def table_params(self, rows: Sequence[Sequence[object]]) -> list[Any]:
        # Written by orjson, in C: psycopg dumped one array a column in Python, element
        # by element, which was 40% of a group writer's own time on a create.
        return [orjson.dumps(rows, default=_json_default).decode()]

    def run_script(self, conn: Any, script: str) -> None:
        # Without parameters psycopg sends the script as one simple query,
        # which may hold several statements (and dollar quotes, which a split
        # on ";" would break). DDL is transactional here: a failure leaves no trace.
        conn.execute(script)

    @contextmanager
    def duplicate_as_key_error(self, conn: Any, key: str) -> Iterator[None]:
        # In a savepoint: in PostgreSQL a failed statement spoils the whole
        # transaction, and a caller that catches the KeyError must be able to go on.
        try:
            with conn.transaction():
                yield
        except psycopg.errors.UniqueViolation as exc:
            raise KeyError(key) from exc

    def unavailable(self, error: Exception) -> Unavailable | None:
        if isinstance(error, psycopg_pool.PoolClosed):
            return None
        for kind, reason in _OUTAGES:
            if isinstance(error, kind):
                return Unavailable(f"The database {reason}; try again shortly")
        return None


POSTGRES = PostgresDialect()
