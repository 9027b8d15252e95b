"""The SQLite store (the embedded default)."""

from pushcore.storage.migrate import Migration, load_migrations, split_statements
from pushcore.storage.sqlite.store import SqliteStore, temporary_store

__all__ = ["Migration", "SqliteStore", "load_migrations", "split_statements", "temporary_store"]
