"""Each table declared in ``storage/records.py`` matches the migrated schema, on every database.

A declaration is derived from its entity (``storage/sql/rows.py``), so these
tests hold for any entity: every column it derives exists with the type its
codec expects, and an entity whose every field holds a value of its own is
stored field by field in the columns of those names and read back equal.
A field added to an entity without its migration fails here, naming it.
"""

from __future__ import annotations

import enum
import itertools
import typing
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

import attrs
import pytest

from pushcore.domain.scopes import Scope
from pushcore.domain.states import NotificationStatus
from pushcore.ports import Store
from pushcore.storage import records
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.rows import Table
from tests.contract.test_store_contract import T0

T = TypeVar("T")

DECLARED = [t for t in vars(records).values() if isinstance(t, Table)]

# The column types each codec kind reads and writes, as each database names them.
SQLITE_TYPES = {
    "text": {"TEXT"}, "int": {"INTEGER"}, "bool": {"INTEGER"}, "time": {"INTEGER"},
    "json": {"TEXT"}, "scopes": {"TEXT"},
}  # fmt: skip
POSTGRES_TYPES = {
    "text": {"text"}, "int": {"integer", "bigint"}, "bool": {"boolean"},
    "time": {"timestamp with time zone"}, "json": {"jsonb"}, "scopes": {"ARRAY"},
}  # fmt: skip


def distinct(cls: type[T]) -> T:
    """An entity whose every field holds a value no other field holds, none of them a default:
    a string field its own name, every time and number another."""
    numbers = itertools.count(1)
    hints = typing.get_type_hints(cls)

    def value(name: str, tp: Any) -> Any:
        args = typing.get_args(tp)
        if type(None) in args:
            (tp,) = [a for a in args if a is not type(None)]
        if attrs.has(tp):
            return distinct_parts(tp, name)
        if tp is str:
            return name
        if tp is bool:
            return False  # every default is True
        if tp is int:
            return next(numbers)
        if tp is bytes:
            return f'{{"{name}": "é"}}'.encode()
        if tp is datetime:
            return T0 + timedelta(seconds=next(numbers))
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return list(tp)[-1]
        if typing.get_origin(tp) in (Mapping, dict):
            return {name: f'{name} ✅ "quoted"'}
        if tp == tuple[datetime, ...]:
            return (T0 + timedelta(seconds=next(numbers)),)
        if tp == tuple[Scope, ...]:
            return tuple(reversed(Scope))  # the order given, not a canonical one
        raise AssertionError(f"no distinct value for {cls.__name__}.{name}: {tp!r}")

    fields = attrs.fields(typing.cast("type[Any]", cls))
    return cls(**{a.alias: value(a.name, hints[a.name]) for a in fields})


def distinct_parts(cls: type[T], prefix: str) -> T:
    """A nested value whose text parts are named after their columns (a time: a day on)."""
    fields = attrs.fields(typing.cast("type[Any]", cls))
    hints = typing.get_type_hints(cls)
    return cls(
        **{
            a.alias: T0 + timedelta(days=1) if hints[a.name] is datetime else f"{prefix}_{a.name}"
            for a in fields
        }
    )


def schema_types(sql: Sql, store_kind: str, table: str) -> dict[str, str]:
    """The table's columns and their declared types."""
    if store_kind == "sqlite":
        return {row[1]: row[2].upper() for row in sql.all(f"PRAGMA table_info({table})")}
    rows = sql.all(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = ?",
        (table,),
    )
    return dict(rows)


@pytest.mark.parametrize("table", DECLARED, ids=lambda t: t.name)
def test_every_declared_column_exists_with_its_codecs_type(
    store: Store, store_kind: str, table: Table[Any]
) -> None:
    expected = SQLITE_TYPES if store_kind == "sqlite" else POSTGRES_TYPES
    with store.read() as tx:
        found = schema_types(tx._sql, store_kind, table.name)  # type: ignore[attr-defined]
    missing = [c for c in table.names if c not in found]
    assert not missing, f"{table.name} has no column {', '.join(missing)}: a migration is missing"
    wrong = {c: found[c] for c, kind in table.kinds if found[c] not in expected[kind]}
    assert not wrong, f"{table.name}: columns of another type than their codec's: {wrong}"


@pytest.mark.parametrize("table", DECLARED, ids=lambda t: t.name)
def test_each_field_is_stored_in_the_column_of_its_name_and_read_back(
    store: Store, table: Table[Any]
) -> None:
    entity = distinct(table.cls)
    with store.transaction() as tx:
        sql: Sql = tx._sql  # type: ignore[attr-defined]
        codec = table.codec(sql.dialect)
        sql.run(table.insert, codec.encode(entity))
        (row,) = sql.select(table.columns, table.name, "TRUE")
        assert codec.decode(row) == entity
        # Column by column, by name: no two fields of one type can trade places.
        for f in table.fields:
            value = getattr(entity, f.name)
            parts = [getattr(value, p) for p in f.parts] if f.nested else [value]
            for column, part in zip(f.columns, parts, strict=True):
                if isinstance(part, str):
                    [(stored,)] = sql.select(column, table.name, "TRUE")
                    assert stored == part, f"{table.name}.{column} holds {stored!r}"


def test_a_part_updates_and_reads_back_only_its_fields(store: Store) -> None:
    notifications = records.NOTIFICATIONS
    entity = distinct(notifications.cls)
    state = notifications.part("status", "failure_reason", "settled_at", "id")
    changed = attrs.evolve(
        entity, status=NotificationStatus.QUEUED, failure_reason="gone", settled_at=None
    )
    with store.transaction() as tx:
        sql: Sql = tx._sql  # type: ignore[attr-defined]
        sql.run(notifications.insert, notifications.codec(sql.dialect).encode(entity))
        sql.run(
            "UPDATE notifications SET status = ?, failure_reason = ?, settled_at = ? WHERE id = ?",
            state.codec(sql.dialect).encode(changed),
        )
        (row,) = sql.select(state.columns, "notifications", "TRUE")
        assert state.codec(sql.dialect).merge(entity, row) == changed
