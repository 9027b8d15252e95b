"""Store ports of accounts, API keys and devices.

What every store method raises besides what its docstring says: the
database's own errors (``sqlite3.Error``, ``psycopg.Error``) when the database
fails, and ValueError for a naive datetime (stores need aware times).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import Account, ApiKey, Device, Plan


class AccountRepository(Protocol):
    """Accounts by id."""

    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        ...

    def ensure(self, account: Account) -> Account:
        """Insert ``account`` unless one with its id exists; return the stored one."""
        ...

    def add(self, account: Account) -> None:
        """Insert a new account; KeyError when its id is taken."""
        ...

    def list(self) -> Sequence[Account]:
        """Every account, by id (for the operator: not paged)."""
        ...

    def signed_in(self, account_id: str, at: datetime) -> None:
        """Record that the account signed in at ``at``."""
        ...

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account (at ``now``) if it does not exist."""
        ...


class ApiKeyRepository(Protocol):
    """API keys; only hashes are ever stored."""

    def add(self, key: ApiKey) -> None:
        """Insert a new key; KeyError when its id or hash is taken."""
        ...

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        """The key with this id in this account, or None (another account's key is None)."""
        ...

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key whose SHA-256 hash is ``key_hash``, or None."""
        ...

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        ...

    def update(self, key: ApiKey) -> None:
        """Store the key's changed state (is_active, revoked_at, last_used_at)."""
        ...

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        """Set last_used_at to ``at`` if it is unset or before ``older_than``.

        Returns whether a write happened. The condition is evaluated by the
        database, so several processes write at most once per interval.
        """
        ...


class DeviceRepository(Protocol):
    """Devices of accounts.

    Registering a token reads, then inserts or updates: lock the (account,
    token) pair first with ``tx.locks.device_token``.
    """

    def add(self, device: Device) -> None:
        """Insert a new device; KeyError when the account already has its token."""
        ...

    def update(self, device: Device) -> None:
        """Store a changed device (name, keys, is_active, last_delivered_at); KeyError when
        a changed token is the account's other device's. A deleted device stays deleted."""
        ...

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        ...

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None."""
        ...

    def active_targets(self, account_id: str, token: str | None) -> Sequence[Device]:
        """The account's active devices, or its active device with ``token``."""
        ...

    def by_ids(self, device_ids: Sequence[str]) -> Sequence[Device]:
        """The devices with these ids (any account; for the engine)."""
        ...

    def mark_delivered(self, device_ids: Sequence[str], at: datetime) -> None:
        """Set last_delivered_at of these devices (those that still exist)."""
        ...

    def deactivate(self, device_id: str) -> bool:
        """Mark the device inactive (its token is dead); False when it is gone."""
        ...

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        ...

    def count(self, account_id: str) -> int:
        """How many devices the account holds, deactivated ones included."""
        ...

    def stale_live(self, before: datetime, limit: int) -> Sequence[tuple[str, str]]:
        """Up to ``limit`` (account id, device id) of live devices neither registered
        nor delivered to since ``before``."""
        ...

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        ...
