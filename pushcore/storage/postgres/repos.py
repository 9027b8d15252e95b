"""PostgreSQL repositories of accounts, API keys and devices."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import LiteralString

from pushcore.domain.model import Account, ApiKey, Device, Plan
from pushcore.storage.postgres.rows import (
    ROWS,
    Connection,
    Row,
    duplicate_as_key_error,
    ts,
)
from pushcore.storage.records import DEVICE_COLUMNS, KEY_COLUMNS

# Namespaces (the first key of pg_advisory_xact_lock) of the decisions that
# must be serialised across processes but have no row to lock yet. "push" in
# ASCII, plus one, so the numbers are unlikely to meet another application's.
MIGRATION_LOCK = 0x70757368
STREAM_PLAN_LOCK = MIGRATION_LOCK + 1
DEVICE_TOKEN_LOCK = MIGRATION_LOCK + 2


class Repository:
    """Rows of one table, read through the transaction's connection.

    ``writing`` is False inside :meth:`PostgresStore.read`: the locks a write
    transaction takes to make a read-then-write safe are pointless there.
    """

    def __init__(self, conn: Connection, writing: bool) -> None:
        self._conn = conn
        self._writing = writing

    def _rows(self, columns: str, table: str, where: str, *params: object) -> list[Row]:
        # Only literal names and clauses of this package reach the query text;
        # every value is a bound parameter.
        sql = f"SELECT {columns} FROM {table} WHERE {where}"  # noqa: S608
        return self._conn.execute(sql, params).fetchall()

    def _lock(self, namespace: int, key: str) -> None:
        """Hold an advisory lock on ``key`` until the transaction ends (writers only).

        Taken in a statement of its own: under READ COMMITTED, every later
        statement then sees what the previous holder committed.
        """
        if self._writing:
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (namespace, key))

    def _insert_new(self, sql: LiteralString, params: dict[str, object], key: str) -> None:
        """Run an INSERT; KeyError if a row with one of its unique values exists."""
        # ON CONFLICT DO NOTHING reports a duplicate without failing the
        # statement, so the transaction stays usable without a savepoint; other
        # constraint violations still raise as themselves.
        if self._conn.execute(sql + " ON CONFLICT DO NOTHING", params).rowcount == 0:
            raise KeyError(key)


class Accounts(Repository):
    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        rows = self._rows("id, plan, created_at", "accounts", "id = %s", account_id)
        return ROWS.account_from_row(rows[0]) if rows else None

    def ensure(self, account: Account) -> Account:
        """Insert the account unless its id exists; return the stored one."""
        self._conn.execute(
            "INSERT INTO accounts (id, plan, created_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO NOTHING",
            (account.id, account.plan.value, ts(account.created_at)),
        )
        # A statement of its own: it sees the row whichever transaction inserted it.
        stored = self.get(account.id)
        assert stored is not None  # inserted or already there, committed or ours
        return stored

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account at ``now`` if it does not exist."""
        row = self._conn.execute(
            "INSERT INTO accounts (id, plan, created_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET plan = excluded.plan"
            " RETURNING id, plan, created_at",
            (account_id, plan.value, ts(now)),
        ).fetchone()
        assert row is not None  # an upsert always returns its row
        return ROWS.account_from_row(row)


class ApiKeys(Repository):
    def add(self, key: ApiKey) -> None:
        """Insert a new key; KeyError if its id (or hash) is taken."""
        self._insert_new(
            "INSERT INTO api_keys (id, account_id, name, key_hash, key_prefix, scopes,"
            " expires_at, is_active, last_used_at, revoked_at, created_at)"
            " VALUES (%(id)s, %(account_id)s, %(name)s, %(key_hash)s, %(key_prefix)s,"
            " %(scopes)s, %(expires_at)s, %(is_active)s, %(last_used_at)s, %(revoked_at)s,"
            " %(created_at)s)",
            ROWS.key_to_row(key),
            key.id,
        )

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        """The key with this id in this account, or None."""
        where = "id = %s AND account_id = %s"
        rows = self._rows(KEY_COLUMNS, "api_keys", where, key_id, account_id)
        return ROWS.key_from_row(rows[0]) if rows else None

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this SHA-256 hash, or None."""
        rows = self._rows(KEY_COLUMNS, "api_keys", "key_hash = %s", key_hash)
        return ROWS.key_from_row(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        where = "account_id = %s ORDER BY id DESC"
        rows = self._rows(KEY_COLUMNS, "api_keys", where, account_id)
        return [ROWS.key_from_row(r) for r in rows]

    def update(self, key: ApiKey) -> None:
        """Store the key's changed state; a key that no longer exists stays deleted."""
        self._conn.execute(
            "UPDATE api_keys SET name = %(name)s, scopes = %(scopes)s,"
            " expires_at = %(expires_at)s, is_active = %(is_active)s,"
            " last_used_at = %(last_used_at)s, revoked_at = %(revoked_at)s WHERE id = %(id)s",
            ROWS.key_to_row(key),
        )

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        """Set last_used_at to ``at`` if unset or before ``older_than``; whether it wrote."""
        # One conditional UPDATE: a concurrent touch holds the row until it
        # commits, then PostgreSQL evaluates the condition again on its result,
        # so several processes write at most once per interval.
        cursor = self._conn.execute(
            "UPDATE api_keys SET last_used_at = %s"
            " WHERE id = %s AND (last_used_at IS NULL OR last_used_at < %s)",
            (ts(at), key_id, ts(older_than)),
        )
        return cursor.rowcount > 0


class Devices(Repository):
    def add(self, device: Device) -> None:
        """Insert a new device; KeyError if the account already has its token."""
        self._insert_new(
            "INSERT INTO devices (id, account_id, platform, token, name, keys_p256dh,"
            " keys_auth, is_active, created_at, last_delivered_at)"
            " VALUES (%(id)s, %(account_id)s, %(platform)s, %(token)s, %(name)s,"
            " %(keys_p256dh)s, %(keys_auth)s, %(is_active)s, %(created_at)s,"
            " %(last_delivered_at)s)",
            ROWS.device_to_row(device),
            device.token,
        )

    def update(self, device: Device) -> None:
        """Store a changed device; a device that no longer exists stays deleted."""
        # Not an upsert: a delivery finishing after the user removed the device
        # must not bring the device back. A token change can collide, hence
        # the savepoint (an UPDATE has no ON CONFLICT).
        with duplicate_as_key_error(self._conn, device.token):
            self._conn.execute(
                "UPDATE devices SET platform = %(platform)s, token = %(token)s,"
                " name = %(name)s, keys_p256dh = %(keys_p256dh)s, keys_auth = %(keys_auth)s,"
                " is_active = %(is_active)s, last_delivered_at = %(last_delivered_at)s"
                " WHERE id = %(id)s",
                ROWS.device_to_row(device),
            )

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        where = "id = %s AND account_id = %s"
        rows = self._rows(DEVICE_COLUMNS, "devices", where, device_id, account_id)
        return ROWS.device_from_row(rows[0]) if rows else None

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None.

        In a write transaction this first waits for any other transaction
        deciding about the same token (registering it: look up, then insert
        or update), so a registration racing another sees the other's device
        instead of failing on the unique constraint.
        """
        self._lock(DEVICE_TOKEN_LOCK, f"{account_id} {token}")
        where = "account_id = %s AND token = %s"
        rows = self._rows(DEVICE_COLUMNS, "devices", where, account_id, token)
        return ROWS.device_from_row(rows[0]) if rows else None

    def active_targets(self, account_id: str, token: str | None) -> Sequence[Device]:
        """The account's active devices, or its active device with ``token``."""
        if token is None:
            where, params = "account_id = %s AND is_active", [account_id]
        else:
            where, params = "account_id = %s AND token = %s AND is_active", [account_id, token]
        rows = self._rows(DEVICE_COLUMNS, "devices", where, *params)
        return [ROWS.device_from_row(r) for r in rows]

    def by_ids(self, device_ids: Sequence[str]) -> Sequence[Device]:
        """The devices with these ids (any account), in id order as on SQLite."""
        rows = self._rows(DEVICE_COLUMNS, "devices", "id = ANY(%s) ORDER BY id", list(device_ids))
        return [ROWS.device_from_row(r) for r in rows]

    def mark_delivered(self, device_ids: Sequence[str], at: datetime) -> None:
        """Set last_delivered_at of these devices."""
        self._conn.execute(
            "UPDATE devices SET last_delivered_at = %s WHERE id = ANY(%s)",
            (ts(at), list(device_ids)),
        )

    def deactivate(self, device_id: str) -> bool:
        """Mark the device inactive; False when it is gone."""
        cursor = self._conn.execute(
            "UPDATE devices SET is_active = false WHERE id = %s", (device_id,)
        )
        return cursor.rowcount > 0

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        where = "account_id = %s ORDER BY id DESC"
        return [
            ROWS.device_from_row(r)
            for r in self._rows(DEVICE_COLUMNS, "devices", where, account_id)
        ]

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        cursor = self._conn.execute(
            "DELETE FROM devices WHERE id = %s AND account_id = %s", (device_id, account_id)
        )
        return cursor.rowcount > 0
