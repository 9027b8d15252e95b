"""An in-memory store for tests and experiments; satisfies the same contract as SQLite."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

import attrs

from pushcore.domain.model import (
    Account,
    ApiKey,
    Delivery,
    Device,
    Notification,
    Plan,
    Stream,
    Subscription,
)
from pushcore.storage.memory_queue import Deliveries, Notifications
from pushcore.storage.memory_streams import Streams, Subscriptions


@attrs.define
class _Tables:
    accounts: dict[str, Account] = attrs.Factory(dict)
    api_keys: dict[str, ApiKey] = attrs.Factory(dict)
    devices: dict[str, Device] = attrs.Factory(dict)
    notifications: dict[str, Notification] = attrs.Factory(dict)
    deliveries: dict[str, Delivery] = attrs.Factory(dict)
    streams: dict[str, Stream] = attrs.Factory(dict)
    deleted_streams: dict[str, datetime] = attrs.Factory(dict)
    subscriptions: dict[str, Subscription] = attrs.Factory(dict)


class _Accounts:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def get(self, account_id: str) -> Account | None:
        return self._t.accounts.get(account_id)

    def ensure(self, account: Account) -> Account:
        return self._t.accounts.setdefault(account.id, account)

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        current = self._t.accounts.get(account_id) or Account(account_id, plan, now)
        updated = attrs.evolve(current, plan=plan)
        self._t.accounts[account_id] = updated
        return updated


class _ApiKeys:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def add(self, key: ApiKey) -> None:
        if key.id in self._t.api_keys or self.find_by_hash(key.key_hash) is not None:
            raise KeyError(key.id)
        self._t.api_keys[key.id] = key

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        key = self._t.api_keys.get(key_id)
        return key if key is not None and key.account_id == account_id else None

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        return next((k for k in self._t.api_keys.values() if k.key_hash == key_hash), None)

    def list(self, account_id: str) -> Sequence[ApiKey]:
        keys = [k for k in self._t.api_keys.values() if k.account_id == account_id]
        return sorted(keys, key=lambda k: k.id, reverse=True)

    def update(self, key: ApiKey) -> None:
        # Like SQL's UPDATE: a deleted row stays deleted.
        if key.id in self._t.api_keys:
            self._t.api_keys[key.id] = key

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        key = self._t.api_keys.get(key_id)
        if key is None or (key.last_used_at is not None and key.last_used_at >= older_than):
            return False
        self._t.api_keys[key_id] = attrs.evolve(key, last_used_at=at)
        return True


class _Devices:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def add(self, device: Device) -> None:
        if device.id in self._t.devices or self.find_by_token(device.account_id, device.token):
            raise KeyError(device.token)
        self._t.devices[device.id] = device

    def update(self, device: Device) -> None:
        if device.id in self._t.devices:
            self._t.devices[device.id] = device

    def get(self, account_id: str, device_id: str) -> Device | None:
        device = self._t.devices.get(device_id)
        return device if device is not None and device.account_id == account_id else None

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        return next(
            (
                d
                for d in self._t.devices.values()
                if d.account_id == account_id and d.token == token
            ),
            None,
        )

    def active_targets(self, account_id: str, token: str | None) -> Sequence[Device]:
        return [
            d for d in self.list(account_id) if d.is_active and (token is None or d.token == token)
        ]

    def by_ids(self, device_ids: Sequence[str]) -> Sequence[Device]:
        return [self._t.devices[i] for i in device_ids if i in self._t.devices]

    def mark_delivered(self, device_ids: Sequence[str], at: datetime) -> None:
        for device_id in device_ids:
            if device_id in self._t.devices:
                device = self._t.devices[device_id]
                self._t.devices[device_id] = attrs.evolve(device, last_delivered_at=at)

    def deactivate(self, device_id: str) -> bool:
        device = self._t.devices.get(device_id)
        if device is None:
            return False
        self._t.devices[device_id] = attrs.evolve(device, is_active=False)
        return True

    def list(self, account_id: str) -> Sequence[Device]:
        devices = [d for d in self._t.devices.values() if d.account_id == account_id]
        return sorted(devices, key=lambda d: d.id, reverse=True)

    def delete(self, account_id: str, device_id: str) -> bool:
        if self.get(account_id, device_id) is None:
            return False
        del self._t.devices[device_id]
        return True


class _Transaction:
    def __init__(self, tables: _Tables) -> None:
        self.accounts = _Accounts(tables)
        self.api_keys = _ApiKeys(tables)
        self.devices = _Devices(tables)
        self.notifications = Notifications(tables)
        self.deliveries = Deliveries(tables)
        self.streams = Streams(tables)
        self.subscriptions = Subscriptions(tables)


class MemoryStore:
    """All tables in dicts behind one lock; a failed transaction restores a snapshot."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._tables = _Tables()

    @contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        """A write transaction."""
        with self._lock:
            # Entities are frozen, so copying the dicts (not the entities) is a full snapshot.
            snapshot = copy.copy(self._tables)
            for field in attrs.fields(_Tables):
                setattr(snapshot, field.name, dict(getattr(self._tables, field.name)))
            try:
                yield _Transaction(self._tables)
            except BaseException:
                self._tables = snapshot
                raise

    @contextmanager
    def read(self) -> Iterator[_Transaction]:
        """A read; the memory store does not enforce read-only access."""
        with self._lock:
            yield _Transaction(self._tables)

    def ping(self) -> None:
        """Always reachable."""

    def close(self) -> None:
        """Nothing to release."""
