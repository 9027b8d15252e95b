"""Versioned schema migrations: numbered SQL files per database, applied in order."""

from __future__ import annotations

import re
import sqlite3
from importlib import resources

import attrs

_MIGRATION_FILE = re.compile(r"(\d+)_(\w+)\.sql")


@attrs.frozen
class Migration:
    """One numbered schema change, from ``migrations/<dialect>/<version>_<name>.sql``."""

    version: int
    name: str
    sql: str


def load_migrations(dialect: str) -> list[Migration]:
    """The packaged migrations of ``dialect`` (``sqlite``, ``postgres``), in version order."""
    folder = resources.files("pushcore.storage") / "migrations" / dialect
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.fullmatch(entry.name)
        if match is not None:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate {dialect} migration versions: {versions}")
    return found


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
