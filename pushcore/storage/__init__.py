"""Storage adapters behind the store ports: SQLite and PostgreSQL, one set of repositories.

``sql/`` holds the repositories, written once; ``sqlite/`` and ``postgres/``
hold each database's connections, transactions and dialect.
"""

from __future__ import annotations

from pathlib import Path

from pushcore.domain.errors import ConfigError
from pushcore.ports import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(url: str, pool_size: int = 10) -> Store:
    """The store for a database URL: ``sqlite:///path``, ``postgresql://...``, ``memory://``.

    ``pool_size`` is the most connections a PostgreSQL store opens.
    """
    if url.startswith("memory:"):
        from pushcore.storage.sqlite import temporary_store

        return temporary_store()
    if url.startswith("sqlite:///"):
        from pushcore.storage.sqlite import SqliteStore

        return SqliteStore(Path(url.removeprefix("sqlite:///")))
    if url.startswith(POSTGRES_SCHEMES):
        return _open_postgres(url, pool_size)
    raise ConfigError(
        f"PUSHCORE_DATABASE_URL: unsupported database URL {url.split(':', 1)[0]!r}"
        " (use sqlite:///path, postgresql://... or memory://)"
    )


def _open_postgres(url: str, pool_size: int) -> Store:
    try:
        import psycopg

        from pushcore.storage.postgres import PostgresStore
    except ImportError:
        raise ConfigError(
            "PUSHCORE_DATABASE_URL: PostgreSQL needs the psycopg and psycopg-pool packages;"
            " install them with: pip install 'pushcore[postgres]'"
        ) from None
    try:
        return PostgresStore(url, pool_size)
    except psycopg.ProgrammingError as exc:
        # A malformed URL: libpq's message says which part, never the password.
        raise ConfigError(f"PUSHCORE_DATABASE_URL: invalid PostgreSQL URL: {exc}") from None
    except psycopg.OperationalError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(
            f"PUSHCORE_DATABASE_URL: cannot connect to PostgreSQL: {detail}"
        ) from None
