"""Storage adapters behind the store ports: memory, SQLite (and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from pushcore.domain.errors import ConfigError
from pushcore.ports import Store


def open_store(url: str) -> Store:
    """The store for a database URL: ``sqlite:///path``, ``memory://``."""
    if url.startswith("memory:"):
        from pushcore.storage.memory import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite:///"):
        from pushcore.storage.sqlite import SqliteStore

        return SqliteStore(Path(url.removeprefix("sqlite:///")))
    raise ConfigError(
        f"PUSHCORE_DATABASE_URL: unsupported database URL {url.split(':', 1)[0]!r}"
        " (use sqlite:///path or memory://)"
    )
