"""NULLs written into a bulk INSERT's text instead of bound, where binding them is slow.

Python 3.11's ``sqlite3`` binds ``str``, ``int`` and ``float`` as they are and looks
every other value up among its adapters, ``None`` too. Even with the store's own adapter
for it (sqlite/store.py), a bound NULL costs about 0.15 µs, and a notification row has
about 18 of them, a delivery row about 10. For a batch of 500, or a group commit's
creates, the same columns are NULL in every row: those columns are written as ``NULL``
in the statement, and the rows are bound without them. The stored values are the same:
an explicit NULL, not the column's default. What it saves: about 4 µs an item
(docs/benchmarks.md, "NULLs bound in C").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

Params = Sequence[object] | Mapping[str, object]

# The statement Table.insert spells (sql/rows.py): nothing after the VALUES list.
_PLAIN_INSERT = re.compile(r"(INSERT INTO \w+ \([^()]*\)) VALUES \(\?(?:, \?)*\)")
# Statements by (the insert, which of its columns are NULL): a few kinds of rows each.
_TEXTS: dict[tuple[str, tuple[bool, ...]], str] = {}
# Below this many rows the work of finding the NULL columns (a few µs a statement) costs
# more than binding their NULLs (about 0.15 µs each, 10-18 a row).
MIN_ROWS = 8
# More than this many kinds of NULLs would be rows no two of which are alike: bound as
# they are, rather than a statement (and a prepared statement) for each.
MAX_TEXTS = 256


def inline_nulls(text: str, rows: Sequence[Params]) -> tuple[str, Sequence[Params]]:
    """``text`` with the columns NULL in every one of ``rows`` written as NULL, and the
    rows without them; ``text`` and ``rows`` as they are when it is not a plain INSERT
    of positional rows (or no column is NULL throughout)."""
    count = len(rows)
    if count < MIN_ROWS or isinstance(rows[0], Mapping):
        return text, rows
    head = _PLAIN_INSERT.fullmatch(text)
    if head is None:
        return text, rows
    # A column's values (transposed in C), and whether it holds None alone.
    columns = list(zip(*rows, strict=True))
    nulls = tuple(column.count(None) == count for column in columns)
    if not any(nulls):
        return text, rows
    key = (text, nulls)
    inlined = _TEXTS.get(key)
    if inlined is None:
        if len(_TEXTS) >= MAX_TEXTS:
            return text, rows
        values = ", ".join("NULL" if null else "?" for null in nulls)
        inlined = _TEXTS[key] = f"{head[1]} VALUES ({values})"
    kept = [column for column, null in zip(columns, nulls, strict=True) if not null]
    return inlined, list(zip(*kept, strict=True)) if kept else [()] * count
