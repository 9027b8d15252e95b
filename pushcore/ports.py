"""The ports: what the services need from the outside world, as Protocols.

Adapters (storage, clocks, gateways, URL guards) satisfy these structurally;
in-memory fakes in ``pushcore.storage.memory`` and ``tests/fakes`` do too, and
``mypy --strict`` checks both.

Store ports are written so that several processes can share one database:
every decision that must be global (uniqueness, "at most once a minute",
plan limits) is made by the database inside a transaction, never by state
held in one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import Account, ApiKey, Device, Plan


class Clock(Protocol):
    """The time. Tests pass a clock they can move."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class IdGenerator(Protocol):
    """Makes the opaque, creation-sortable ids of API.md (``key_01J…``)."""

    def new_id(self, prefix: str) -> str:
        """A fresh id ``<prefix>_<26 chars>``, greater than every earlier one of this process."""
        ...


class Random(Protocol):
    """Secret randomness for keys and codes."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        ...


class AccountRepository(Protocol):
    """Accounts by id."""

    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        ...

    def ensure(self, account: Account) -> Account:
        """Insert ``account`` unless one with its id exists; return the stored one."""
        ...

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account (at ``now``) if it does not exist."""
        ...


class ApiKeyRepository(Protocol):
    """API keys; only hashes are ever stored."""

    def add(self, key: ApiKey) -> None:
        """Insert a new key."""
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
    """Devices of accounts."""

    def add(self, device: Device) -> None:
        """Insert a new device. The (account, token) pair must be new."""
        ...

    def update(self, device: Device) -> None:
        """Store a changed device (name, keys, is_active, last_delivered_at)."""
        ...

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        ...

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None."""
        ...

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        ...

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        ...


class Transaction(Protocol):
    """One unit of work: the repositories, seeing and changing one consistent state."""

    @property
    def accounts(self) -> AccountRepository:
        """Accounts."""
        ...

    @property
    def api_keys(self) -> ApiKeyRepository:
        """API keys."""
        ...

    @property
    def devices(self) -> DeviceRepository:
        """Devices."""
        ...


class Store(Protocol):
    """A database. Writes happen in :meth:`transaction`, reads may use :meth:`read`."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        Writers are serialised (SQLite ``BEGIN IMMEDIATE``; row locks in PostgreSQL),
        so a read-then-write inside one transaction is safe.
        """
        ...

    def read(self) -> AbstractContextManager[Transaction]:
        """A read-only snapshot; writing through it is an error."""
        ...

    def ping(self) -> None:
        """Raise if the database cannot be reached."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class UrlGuard(Protocol):
    """Decides whether the service may connect to a URL given by a user (SSRF guard)."""

    def check(self, url: str) -> None:
        """Raise ValidationError-worthy ValueError when the URL's host is not allowed."""
        ...
