"""SQLite's spelling: ``?`` placeholders, lists as JSON text, times as UTC milliseconds.

Its one writer at a time (``BEGIN IMMEDIATE``) leaves nothing to lock: the
row-lock clauses are dropped. It keeps the ``INDEXED BY`` pins its planner needs.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from pushcore.domain.errors import Unavailable
from pushcore.storage.migrate import EXPRESSIONS, split_statements
from pushcore.storage.sql.dialect import ColumnType, Dialect

# PostgreSQL's ADD COLUMN IF NOT EXISTS, which SQLite lacks: two migrations may
# each add a column another change needs too, and both must apply.
_ADD_IF_MISSING = re.compile(
    r"(ALTER TABLE (\w+) ADD COLUMN) IF NOT EXISTS (\w+)(.*)", re.IGNORECASE | re.DOTALL
)


def _column_if_missing(conn: Any, statement: str) -> str | None:
    """The statement SQLite can run: without IF NOT EXISTS, or None if the column is there."""
    code = "\n".join(line for line in statement.splitlines() if not line.lstrip().startswith("--"))
    match = _ADD_IF_MISSING.fullmatch(code.strip())
    if match is None:
        return statement
    head, table, column, rest = match.groups()
    names = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    return None if column in names else f"{head} {column}{rest}"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_ROW_LOCK = re.compile(r" FOR (?:NO KEY UPDATE|UPDATE|KEY SHARE|SHARE)(?: SKIP LOCKED)?")

# Both mean "this row is already there"; any other constraint failure is a bug
# and must surface as itself, not as a KeyError.
_DUPLICATE = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})
# Primary result codes (the low byte of the extended ones) that say the database
# cannot serve now, and how each reads in the Unavailable's message. The rest
# (a malformed statement, a constraint, a write in a read-only block) are bugs.
_OUTAGES = {
    sqlite3.SQLITE_BUSY: "is locked by another writer",
    sqlite3.SQLITE_LOCKED: "is locked",
    sqlite3.SQLITE_FULL: "cannot write: the disk is full",
    sqlite3.SQLITE_IOERR: "cannot be read or written (I/O error)",
    sqlite3.SQLITE_CANTOPEN: "cannot be opened",
    sqlite3.SQLITE_PROTOCOL: "is locked (WAL lock protocol)",
}


def to_ms(at: datetime) -> int:
    """``at`` as integer milliseconds since the epoch; ValueError for a naive time."""
    # A naive datetime would be read as local time and silently shifted.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return (at - _EPOCH) // _MS


def from_ms(ms: int) -> datetime:
    """Integer milliseconds since the epoch as an aware UTC datetime."""
    return _EPOCH + ms * _MS


_COMPACT = json.JSONEncoder(separators=(",", ":"))


class SqliteDialect(Dialect):
    """SQLite 3.35 or later (RETURNING). Times as integer milliseconds, scopes
    space-separated (no value has a space), JSON objects as compact text."""

    # Applied-at times as text, as the stores have always written them.
    migrations_table = (
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    # One writer at a time (BEGIN IMMEDIATE): nothing to lock.
    row_locks, advisory_lock = False, None
    # Readers poll (PRAGMA data_version): SQLite has no way to tell another process.
    inbox_notify = None
    id_tail = EXPRESSIONS["sqlite"]["random_hex"].format(10)
    # In process: one prepared statement per row, no round trips.
    executemany_is_bulk = True
    # The sqlite3 module lets go of the interpreter around each sqlite3_step().
    steps_per_row = True
    inlines_nulls = True

    def time(self, at: datetime) -> int:
        return to_ms(at)

    def time_ceil(self, at: datetime) -> int:
        # For a whole number n, n < t exactly when n < ceil(t): comparing stored
        # milliseconds with the ceiling keeps a sub-millisecond bound exact.
        floor = to_ms(at)
        return floor if (at - _EPOCH) % _MS == timedelta(0) else floor + 1

    def read_time(self, value: Any) -> datetime:
        return from_ms(value)

    def scopes(self, values: list[str]) -> str:
        return " ".join(values)

    def read_scopes(self, value: Any) -> list[str]:
        return str(value).split()

    def json(self, value: Mapping[str, str]) -> str:
        # Most notifications carry none; the encoder is made once, not per call.
        if not value:
            return "{}"
        return _COMPACT.encode(value if isinstance(value, dict) else dict(value))

    def read_json(self, value: Any) -> Mapping[str, str]:
        loaded: dict[str, str] = json.loads(value)
        return loaded

    def translate(self, text: str) -> str:
        text = text.replace("= ANY(?)", "IN (SELECT value FROM json_each(?))")
        return _ROW_LOCK.sub("", text)

    def array(self, values: Sequence[str]) -> str:
        return json.dumps(list(values))

    def int_array(self, values: Sequence[int]) -> str:
        return json.dumps(list(values))

    def list_table(self, alias: str) -> str:
        return f"json_each(?) AS {alias}"

    def table(self, columns: Sequence[tuple[str, ColumnType]]) -> str:
        # One JSON array of rows, each an array of values in column order.
        picks = ", ".join(
            f"json_extract(value, '$[{i}]') AS {name}" for i, (name, _) in enumerate(columns)
        )
        return f"(SELECT {picks} FROM json_each(?)) AS v"  # noqa: S608 (column names of ours)

    def table_params(self, rows: Sequence[Sequence[object]]) -> list[Any]:
        return [json.dumps(rows)]

    def run_script(self, conn: Any, script: str) -> None:
        # executescript() would commit the caller's transaction first.
        for statement in split_statements(script):
            runnable = _column_if_missing(conn, statement)
            if runnable:
                conn.execute(runnable)

    @contextmanager
    def duplicate_as_key_error(self, conn: Any, key: str) -> Iterator[None]:
        # A failed statement undoes only itself in SQLite: no savepoint needed.
        try:
            yield
        except sqlite3.IntegrityError as exc:
            if exc.sqlite_errorname in _DUPLICATE:
                raise KeyError(key) from exc
            raise

    def unavailable(self, error: Exception) -> Unavailable | None:
        code = getattr(error, "sqlite_errorcode", None)
        if not isinstance(error, sqlite3.Error) or code is None:
            return None
        reason = _OUTAGES.get(code & 0xFF)
        return None if reason is None else Unavailable(f"The database {reason}; try again shortly")


SQLITE = SqliteDialect()
