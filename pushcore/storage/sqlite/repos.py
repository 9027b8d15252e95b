"""SQLite repositories of accounts, API keys and devices."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.model import Account, ApiKey, Device, Plan
from pushcore.storage.records import DEVICE_COLUMNS, KEY_COLUMNS
from pushcore.storage.sqlite.rows import (
    ROWS,
    duplicate_as_key_error,
    to_ms,
    to_ms_ceil,
)


class Repository:
    """Rows of one table, read through the transaction's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _rows(self, columns: str, table: str, where: str, *params: object) -> list[sqlite3.Row]:
        # Only literal names and clauses of this module reach the f-string;
        # every value is a bound parameter.
        sql = f"SELECT {columns} FROM {table} WHERE {where}"  # noqa: S608
        return self._conn.execute(sql, params).fetchall()

    def rows_in(
        self, columns: str, table: str, key: str, values: Sequence[str]
    ) -> list[sqlite3.Row]:
        """Rows whose ``key`` is one of ``values`` (chunked under SQLite's variable limit)."""
        rows: list[sqlite3.Row] = []
        for start in range(0, len(values), 500):
            chunk = values[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows += self._rows(columns, table, f"{key} IN ({marks})", *chunk)
        return rows


class Accounts(Repository):
    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        rows = self._rows("id, plan, created_at", "accounts", "id = ?", account_id)
        return ROWS.account_from_row(rows[0]) if rows else None

    def ensure(self, account: Account) -> Account:
        """Insert the account unless its id exists; return the stored one."""
        self._conn.execute(
            "INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            (account.id, account.plan.value, to_ms(account.created_at)),
        )
        stored = self.get(account.id)
        assert stored is not None  # inserted or already there, in this very transaction
        return stored

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account at ``now`` if it does not exist."""
        self._conn.execute(
            "INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET plan = excluded.plan",
            (account_id, plan.value, to_ms(now)),
        )
        stored = self.get(account_id)
        assert stored is not None  # upserted just above, in this very transaction
        return stored


class ApiKeys(Repository):
    def add(self, key: ApiKey) -> None:
        """Insert a new key; KeyError if its id (or hash) is taken."""
        with duplicate_as_key_error(key.id):
            self._conn.execute(
                "INSERT INTO api_keys (id, account_id, name, key_hash, key_prefix, scopes,"
                " expires_at, is_active, last_used_at, revoked_at, created_at)"
                " VALUES (:id, :account_id, :name, :key_hash, :key_prefix, :scopes,"
                " :expires_at, :is_active, :last_used_at, :revoked_at, :created_at)",
                ROWS.key_to_row(key),
            )

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        """The key with this id in this account, or None."""
        rows = self._rows(KEY_COLUMNS, "api_keys", "id = ? AND account_id = ?", key_id, account_id)
        return ROWS.key_from_row(rows[0]) if rows else None

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this SHA-256 hash, or None."""
        rows = self._rows(KEY_COLUMNS, "api_keys", "key_hash = ?", key_hash)
        return ROWS.key_from_row(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        rows = self._rows(KEY_COLUMNS, "api_keys", "account_id = ? ORDER BY id DESC", account_id)
        return [ROWS.key_from_row(row) for row in rows]

    def update(self, key: ApiKey) -> None:
        """Store the key's changed state; a key that no longer exists stays deleted."""
        self._conn.execute(
            "UPDATE api_keys SET name = :name, scopes = :scopes, expires_at = :expires_at,"
            " is_active = :is_active, last_used_at = :last_used_at, revoked_at = :revoked_at"
            " WHERE id = :id",
            ROWS.key_to_row(key),
        )

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        """Set last_used_at to ``at`` if unset or before ``older_than``; whether it wrote."""
        # One conditional statement, so no other process's touch can come
        # between the check and the write.
        cursor = self._conn.execute(
            "UPDATE api_keys SET last_used_at = ?"
            " WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
            (to_ms(at), key_id, to_ms_ceil(older_than)),
        )
        return cursor.rowcount > 0


class Devices(Repository):
    def add(self, device: Device) -> None:
        """Insert a new device; KeyError if the account already has its token."""
        with duplicate_as_key_error(device.token):
            self._conn.execute(
                "INSERT INTO devices (id, account_id, platform, token, name, keys_p256dh,"
                " keys_auth, is_active, created_at, last_delivered_at)"
                " VALUES (:id, :account_id, :platform, :token, :name, :keys_p256dh,"
                " :keys_auth, :is_active, :created_at, :last_delivered_at)",
                ROWS.device_to_row(device),
            )

    def update(self, device: Device) -> None:
        """Store a changed device; a device that no longer exists stays deleted."""
        # Not an upsert: a delivery finishing after the user removed the device
        # must not bring the device back.
        with duplicate_as_key_error(device.token):
            self._conn.execute(
                "UPDATE devices SET platform = :platform, token = :token, name = :name,"
                " keys_p256dh = :keys_p256dh, keys_auth = :keys_auth, is_active = :is_active,"
                " last_delivered_at = :last_delivered_at WHERE id = :id",
                ROWS.device_to_row(device),
            )

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        where = "id = ? AND account_id = ?"
        rows = self._rows(DEVICE_COLUMNS, "devices", where, device_id, account_id)
        return ROWS.device_from_row(rows[0]) if rows else None

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None."""
        where = "account_id = ? AND token = ?"
        rows = self._rows(DEVICE_COLUMNS, "devices", where, account_id, token)
        return ROWS.device_from_row(rows[0]) if rows else None

    def active_targets(self, account_id: str, token: str | None) -> Sequence[Device]:
        """The account's active devices, or its active device with ``token``."""
        if token is None:
            where, params = "account_id = ? AND is_active = 1", [account_id]
        else:
            where, params = "account_id = ? AND token = ? AND is_active = 1", [account_id, token]
        rows = self._rows(DEVICE_COLUMNS, "devices", where, *params)
        return [ROWS.device_from_row(r) for r in rows]

    def by_ids(self, device_ids: Sequence[str]) -> Sequence[Device]:
        """The devices with these ids (any account)."""
        return [
            ROWS.device_from_row(r)
            for r in self.rows_in(DEVICE_COLUMNS, "devices", "id", device_ids)
        ]

    def mark_delivered(self, device_ids: Sequence[str], at: datetime) -> None:
        """Set last_delivered_at of these devices."""
        self._conn.executemany(
            "UPDATE devices SET last_delivered_at = ? WHERE id = ?",
            [(to_ms(at), device_id) for device_id in device_ids],
        )

    def deactivate(self, device_id: str) -> bool:
        """Mark the device inactive; False when it is gone."""
        cursor = self._conn.execute("UPDATE devices SET is_active = 0 WHERE id = ?", (device_id,))
        return cursor.rowcount > 0

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        where = "account_id = ? ORDER BY id DESC"
        return [
            ROWS.device_from_row(r)
            for r in self._rows(DEVICE_COLUMNS, "devices", where, account_id)
        ]

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        cursor = self._conn.execute(
            "DELETE FROM devices WHERE id = ? AND account_id = ?", (device_id, account_id)
        )
        return cursor.rowcount > 0
