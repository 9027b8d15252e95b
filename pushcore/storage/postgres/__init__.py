"""The PostgreSQL store (scale-out: several API and worker processes on one database).

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool).
"""

from pushcore.storage.postgres.store import PostgresStore, migrate

__all__ = ["PostgresStore", "migrate"]
