"""Accounts, API keys and devices."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.model import Account, ApiKey, Device, Plan
from pushcore.storage.records import ACCOUNTS, API_KEYS, DEVICES
from pushcore.storage.sql.dialect import Sql


class Repository:
    """Rows of one or a few tables, through the transaction's connection."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql
        self._dialect = sql.dialect


class Accounts(Repository):
    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        rows = self._sql.select(ACCOUNTS.columns, "accounts", "id = ?", account_id)
        return ACCOUNTS.codec(self._dialect).decode(rows[0]) if rows else None

    def ensure(self, account: Account) -> Account:
        """Insert the account unless its id exists; return the stored one."""
        self._sql.run(
            f"{ACCOUNTS.insert} ON CONFLICT (id) DO NOTHING",
            ACCOUNTS.codec(self._dialect).encode(account),
        )
        # A statement of its own: it sees the row whichever transaction inserted it.
        stored = self.get(account.id)
        assert stored is not None  # inserted or already there, committed or ours
        return stored

    def add(self, account: Account) -> None:
        """Insert a new account; KeyError if its id is taken."""
        self._sql.insert_new(
            ACCOUNTS.insert, ACCOUNTS.codec(self._dialect).encode(account), account.id
        )

    def list(self) -> Sequence[Account]:
        """Every account, by id."""
        decode = ACCOUNTS.codec(self._dialect).decode
        return [
            decode(r) for r in self._sql.select(ACCOUNTS.columns, "accounts", "TRUE ORDER BY id")
        ]

    def signed_in(self, account_id: str, at: datetime) -> None:
        """Record a sign-in of the account at ``at``."""
        self._sql.run(
            "UPDATE accounts SET last_sign_in_at = ? WHERE id = ?",
            (self._dialect.time(at), account_id),
        )

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account at ``now`` if it does not exist."""
        codec = ACCOUNTS.codec(self._dialect)
        row = self._sql.one(
            f"{ACCOUNTS.insert} ON CONFLICT (id) DO UPDATE SET plan = excluded.plan"
            f" RETURNING {ACCOUNTS.columns}",
            codec.encode(Account(account_id, plan, now)),
        )
        return codec.decode(row)


class ApiKeys(Repository):
    def add(self, key: ApiKey) -> None:
        """Insert a new key; KeyError if its id (or hash) is taken."""
        self._sql.insert_new(API_KEYS.insert, API_KEYS.codec(self._dialect).encode(key), key.id)

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        """The key with this id in this account, or None."""
        where = "id = ? AND account_id = ?"
        rows = self._sql.select(API_KEYS.columns, "api_keys", where, key_id, account_id)
        return API_KEYS.codec(self._dialect).decode(rows[0]) if rows else None

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this SHA-256 hash, or None."""
        rows = self._sql.select(API_KEYS.columns, "api_keys", "key_hash = ?", key_hash)
        return API_KEYS.codec(self._dialect).decode(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        where = "account_id = ? ORDER BY id DESC"
        decode = API_KEYS.codec(self._dialect).decode
        return [
            decode(r) for r in self._sql.select(API_KEYS.columns, "api_keys", where, account_id)
        ]

    def update(self, key: ApiKey) -> None:
        """Store the key's changed state; a key that no longer exists stays deleted."""
        self._sql.run(
            "UPDATE api_keys SET name = :name, scopes = :scopes, expires_at = :expires_at,"
            " is_active = :is_active, last_used_at = :last_used_at, revoked_at = :revoked_at"
            " WHERE id = :id",
            API_KEYS.codec(self._dialect).params(key),
        )

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        """Set last_used_at to ``at`` if unset or before ``older_than``; whether it wrote."""
        # One conditional UPDATE, so no other process's touch can come between
        # the check and the write (PostgreSQL evaluates the condition again on
        # the row a concurrent touch committed).
        cursor = self._sql.run(
            "UPDATE api_keys SET last_used_at = ?"
            " WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
            (self._dialect.time(at), key_id, self._dialect.time_ceil(older_than)),
        )
        return bool(cursor.rowcount > 0)


class Devices(Repository):
    def add(self, device: Device) -> None:
        """Insert a new device; KeyError if the account already has its token."""
        self._sql.insert_new(
            DEVICES.insert, DEVICES.codec(self._dialect).encode(device), device.token
        )

    def update(self, device: Device) -> None:
        """Store a changed device; a device that no longer exists stays deleted."""
        # Not an upsert: a delivery finishing after the user removed the device
        # must not bring the device back. A token change can collide.
        with self._sql.duplicate_as_key_error(device.token):
            self._sql.run(
                "UPDATE devices SET platform = :platform, token = :token, name = :name,"
                " keys_p256dh = :keys_p256dh, keys_auth = :keys_auth, is_active = :is_active,"
                " last_delivered_at = :last_delivered_at, webhook_secret = :webhook_secret,"
                " refreshed_at = :refreshed_at"
                " WHERE id = :id",
                DEVICES.codec(self._dialect).params(device),
            )

    def _devices(self, where: str, *params: object) -> list[Device]:
        rows = self._sql.select(DEVICES.columns, "devices", where, *params)
        decode = DEVICES.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        found = self._devices("id = ? AND account_id = ?", device_id, account_id)
        return found[0] if found else None

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None."""
        found = self._sql.remember(
            ("token", account_id, token),
            lambda: self._devices("account_id = ? AND token = ?", account_id, token),
        )
        return found[0] if found else None

    def active_targets(self, account_id: str, token: str | None) -> Sequence[Device]:
        """The account's active devices, or its active device with ``token``."""
        return self._sql.remember(
            ("targets", account_id, token), lambda: self._targets(account_id, token)
        )

    def _targets(self, account_id: str, token: str | None) -> list[Device]:
        if token is None:
            return self._devices("account_id = ? AND is_active = TRUE", account_id)
        return self._devices("account_id = ? AND token = ? AND is_active = TRUE", account_id, token)

    def by_ids(self, device_ids: Sequence[str]) -> Sequence[Device]:
        """The devices with these ids (any account), in id order."""
        return self._devices("id = ANY(?) ORDER BY id", self._sql.dialect.array(device_ids))

    def mark_delivered(self, device_ids: Sequence[str], at: datetime) -> None:
        """Set last_delivered_at of these devices."""
        self._sql.run(
            "UPDATE devices SET last_delivered_at = ? WHERE id = ANY(?)",
            (self._dialect.time(at), self._dialect.array(device_ids)),
        )

    def deactivate(self, device_id: str) -> bool:
        """Mark the device inactive; False when it is gone."""
        cursor = self._sql.run("UPDATE devices SET is_active = FALSE WHERE id = ?", (device_id,))
        return bool(cursor.rowcount > 0)

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        return self._devices("account_id = ? ORDER BY id DESC", account_id)

    def count(self, account_id: str) -> int:
        """How many devices the account holds, deactivated ones included."""
        (count,) = self._sql.one("SELECT COUNT(*) FROM devices WHERE account_id = ?", (account_id,))
        return int(count)

    def stale_live(self, before: datetime, limit: int) -> Sequence[tuple[str, str]]:
        """Up to ``limit`` (account id, device id) of live devices neither registered
        nor delivered to since ``before``."""
        at = self._dialect.time(before)
        rows = self._sql.all(
            "SELECT account_id, id FROM devices WHERE platform = 'live'"
            " AND COALESCE(refreshed_at, created_at) < ?"
            " AND (last_delivered_at IS NULL OR last_delivered_at < ?) LIMIT ?",
            (at, at, limit),
        )
        return [(str(account_id), str(device_id)) for account_id, device_id in rows]

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        cursor = self._sql.run(
            "DELETE FROM devices WHERE id = ? AND account_id = ?", (device_id, account_id)
        )
        return bool(cursor.rowcount > 0)
