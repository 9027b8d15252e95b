"""Versioned schema migrations: numbered SQL files, written once for both databases.

A migration names its column types by meaning (``{time}``, ``{id}``...);
each database gets its own type for each (:data:`TYPES`), so the two schemas
keep their tables, columns and indexes in step. The few expressions a
backfill needs are named the same way (``{minute:created_at}``, :data:`EXPRESSIONS`).
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from pushcore.storage.sql.dialect import Sql

_MIGRATION_FILE = re.compile(r"(\d+)_(\w+)\.sql")
_TYPE = re.compile(r"\{(\w+)\}")
# An expression by meaning, on one column or number: {minute:created_at}.
_EXPRESSION = re.compile(r"\{(\w+):(\w+)\}")
TYPES = {
    # Integer milliseconds (UTC) compare and index fastest in SQLite.
    "sqlite": {
        "id": "TEXT", "time": "INTEGER", "bool": "INTEGER", "json": "TEXT", "scopes": "TEXT",
    },
    # timestamptz keeps microseconds; ids sort in byte order (COLLATE "C")
    # whatever the database's locale, as Python compares strings.
    "postgres": {
        "id": 'text COLLATE "C"', "time": "timestamptz", "bool": "boolean", "json": "jsonb",
        "scopes": "text[]",
    },
}  # fmt: skip
# The few expressions a migration's backfill needs, per database: a time
# rounded down to its minute, and the time some hours before now.
EXPRESSIONS = {
    "sqlite": {
        "minute": "({0} / 60000 * 60000)",
        "hours_ago": "(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - {0} * 3600000)",
    },
    "postgres": {
        "minute": "date_trunc('minute', {0})",
        "hours_ago": "(now() - interval '1 hour' * {0})",
    },
}


@attrs.frozen
class Migration:
    """One numbered schema change, from ``migrations/<version>_<name>.sql``."""

    version: int
    name: str
    sql: str


def load_migrations(dialect: str) -> list[Migration]:
    """The packaged migrations in ``dialect``'s types (``sqlite``, ``postgres``), in order."""
    types, expressions = TYPES[dialect], EXPRESSIONS[dialect]
    found: list[Migration] = []
    for entry in (resources.files("pushcore.storage") / "migrations").iterdir():
        match = _MIGRATION_FILE.fullmatch(entry.name)
        if match is not None:
            sql = entry.read_text(encoding="utf-8")
            sql = _EXPRESSION.sub(lambda m: expressions[m[1]].format(m[2]), sql)
            sql = _TYPE.sub(lambda m: types[m[1]], sql)
            found.append(Migration(int(match[1]), match[2], sql))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate {dialect} migration versions: {versions}")
    return found


def apply_if_missing(sql: Sql, migration: Migration) -> None:
    """Apply ``migration`` and record it, unless it is recorded already.

    The caller holds the migration lock (SQLite: the writer's; PostgreSQL:
    an advisory lock) in this transaction, so when two processes start at
    once the second sees the first's work here and skips it.
    """
    dialect = sql.dialect
    sql.run(dialect.migrations_table)
    if sql.one("SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)):
        return
    dialect.run_script(sql.conn, migration.sql)
    sql.run(
        "INSERT INTO schema_migrations (version, name, applied_at)"  # noqa: S608
        f" VALUES (?, ?, {dialect.now})",
        (migration.version, migration.name),
    )


def split_statements(script: str) -> list[str]:
    """The statements of an SQL script, each complete and on its own."""
    # executescript() would commit the migration's transaction before running,
    # so statements go one by one through execute(); sqlite3.complete_statement
    # knows about quotes, comments and trigger bodies, a plain split on ";" does not.
    statements: list[str] = []
    pending = ""
    *pieces, last = script.split(";")
    for piece in pieces:
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    # What follows the last complete statement is usually blank or a comment;
    # anything else is kept so that SQLite, not this splitter, judges it.
    rest = (pending + last).strip()
    if rest:
        statements.append(rest)
    return statements
