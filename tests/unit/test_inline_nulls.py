"""NULLs written into a bulk INSERT's text (storage/sql/nulls.py): the rows stored are the
rows given, whatever is NULL where."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from pushcore.storage.sql.nulls import MIN_ROWS, inline_nulls

INSERT = "INSERT INTO t (id, a, b, c, d) VALUES (?, ?, ?, ?, ?)"
# A column whose default is not NULL: an explicit NULL must still be stored as NULL.
SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b INTEGER, c TEXT DEFAULT 'x', d REAL)"

value = st.one_of(st.none(), st.text(max_size=5), st.integers(-5, 5), st.floats(0, 1))
rows = st.lists(st.tuples(value, value, value, value), min_size=1, max_size=3 * MIN_ROWS)


def stored(text: str, given: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(":memory:")
    conn.execute(SCHEMA)
    conn.executemany(text, given)
    return conn.execute("SELECT id, a, b, c, d FROM t ORDER BY id").fetchall()


@given(rows)
def test_the_rows_stored_are_those_bound_as_they_are(values: list[tuple[object, ...]]) -> None:
    given_rows = [(i, *row) for i, row in enumerate(values)]
    text, bound = inline_nulls(INSERT, given_rows)
    assert stored(text, list(bound)) == stored(INSERT, given_rows)  # type: ignore[arg-type]


def test_columns_null_in_every_row_are_written_into_the_statement() -> None:
    given = [(i, "a" if i % 2 else None, None, None, i / 2) for i in range(MIN_ROWS)]
    text, bound = inline_nulls(INSERT, given)
    assert text == "INSERT INTO t (id, a, b, c, d) VALUES (?, ?, NULL, NULL, ?)"
    assert bound == [(i, a, d) for i, a, _, _, d in given]
    # NULL, not the column's default.
    assert stored(text, list(bound)) == given


def test_fewer_rows_than_pay_for_it_are_bound_as_they_are() -> None:
    given = [(i, None, None, None, None) for i in range(MIN_ROWS - 1)]
    assert inline_nulls(INSERT, given) == (INSERT, given)


def test_other_statements_and_rows_are_left_as_they_are() -> None:
    upsert = INSERT + " ON CONFLICT (id) DO UPDATE SET a = excluded.a"
    rows_with_nulls = [(i, None, None, None, None) for i in range(MIN_ROWS)]
    assert inline_nulls(upsert, rows_with_nulls) == (upsert, rows_with_nulls)
    update = "UPDATE t SET a = ? WHERE id = ?"
    updates = [(None, i) for i in range(MIN_ROWS)]
    assert inline_nulls(update, updates) == (update, updates)
    named = [{"id": i} for i in range(MIN_ROWS)]
    assert inline_nulls(INSERT, named) == (INSERT, named)
    assert inline_nulls(INSERT, []) == (INSERT, [])
    full = [(i, "a", 2, "c", 0.5) for i in range(MIN_ROWS)]
    assert inline_nulls(INSERT, full) == (INSERT, full)
