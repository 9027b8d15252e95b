"""SQLite's stand-in for ADD COLUMN IF NOT EXISTS: two migrations adding one column both apply."""

from __future__ import annotations

import sqlite3

from pushcore.storage.sqlite.dialect import SqliteDialect


def test_a_column_another_migration_added_is_left_as_it_is() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE notifications (id TEXT PRIMARY KEY)")
    dialect = SqliteDialect()
    dialect.run_script(conn, "ALTER TABLE notifications ADD COLUMN schedule_id TEXT;")
    script = (
        "-- as 0023 writes it\n"
        "ALTER TABLE notifications ADD COLUMN IF NOT EXISTS schedule_id TEXT;\n"
        "ALTER TABLE notifications ADD COLUMN IF NOT EXISTS schedule_occurrence_at INTEGER;\n"
    )
    dialect.run_script(conn, script)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(notifications)")]
    assert columns == ["id", "schedule_id", "schedule_occurrence_at"]
