"""Rows <-> domain objects for SQLite: timestamps as UTC milliseconds."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from pushcore.domain.model import (
    Account,
    ApiKey,
    Delivery,
    Device,
    IconStyle,
    Notification,
    Plan,
    Platform,
    Priority,
    Sound,
    StreamRef,
    WebPushKeys,
)
from pushcore.domain.scopes import Scope
from pushcore.domain.states import DeliveryStatus, NotificationStatus

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

# Both mean "this row is already there"; any other constraint failure is a bug
# and must surface as itself, not as a KeyError.
_DUPLICATE = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})


def to_ms(at: datetime) -> int:
    # A naive datetime would be read as local time and silently shifted.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return (at - _EPOCH) // _MS


def to_ms_ceil(at: datetime) -> int:
    # For a whole number n, n < t exactly when n < ceil(t): comparing stored
    # milliseconds with the ceiling keeps a sub-millisecond bound exact.
    floor = to_ms(at)
    return floor if (at - _EPOCH) % _MS == timedelta(0) else floor + 1


def from_ms(ms: int) -> datetime:
    return _EPOCH + ms * _MS


def opt_to_ms(at: datetime | None) -> int | None:
    return None if at is None else to_ms(at)


def opt_from_ms(ms: int | None) -> datetime | None:
    return None if ms is None else from_ms(ms)


@contextmanager
def duplicate_as_key_error(key: str) -> Iterator[None]:
    """Raise KeyError for a uniqueness violation, as the memory store does."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if exc.sqlite_errorname in _DUPLICATE:
            raise KeyError(key) from exc
        raise


def account_from_row(row: sqlite3.Row) -> Account:
    return Account(id=row["id"], plan=Plan(row["plan"]), created_at=from_ms(row["created_at"]))


def key_to_row(key: ApiKey) -> dict[str, object]:
    return {
        "id": key.id,
        "account_id": key.account_id,
        "name": key.name,
        "key_hash": key.key_hash,
        "key_prefix": key.key_prefix,
        "scopes": " ".join(s.value for s in key.scopes),
        "expires_at": opt_to_ms(key.expires_at),
        "is_active": int(key.is_active),
        "last_used_at": opt_to_ms(key.last_used_at),
        "revoked_at": opt_to_ms(key.revoked_at),
        "created_at": to_ms(key.created_at),
    }


def key_from_row(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        id=row["id"],
        account_id=row["account_id"],
        name=row["name"],
        key_hash=row["key_hash"],
        key_prefix=row["key_prefix"],
        scopes=tuple(Scope(s) for s in row["scopes"].split()),
        expires_at=opt_from_ms(row["expires_at"]),
        created_at=from_ms(row["created_at"]),
        is_active=bool(row["is_active"]),
        last_used_at=opt_from_ms(row["last_used_at"]),
        revoked_at=opt_from_ms(row["revoked_at"]),
    )


def device_to_row(device: Device) -> dict[str, object]:
    keys = device.keys
    return {
        "id": device.id,
        "account_id": device.account_id,
        "platform": device.platform.value,
        "token": device.token,
        "name": device.name,
        "keys_p256dh": None if keys is None else keys.p256dh,
        "keys_auth": None if keys is None else keys.auth,
        "is_active": int(device.is_active),
        "created_at": to_ms(device.created_at),
        "last_delivered_at": opt_to_ms(device.last_delivered_at),
    }


def device_from_row(row: sqlite3.Row) -> Device:
    p256dh, auth = row["keys_p256dh"], row["keys_auth"]
    return Device(
        id=row["id"],
        account_id=row["account_id"],
        platform=Platform(row["platform"]),
        token=row["token"],
        name=row["name"],
        created_at=from_ms(row["created_at"]),
        keys=None if p256dh is None else WebPushKeys(p256dh=p256dh, auth=auth),
        is_active=bool(row["is_active"]),
        last_delivered_at=opt_from_ms(row["last_delivered_at"]),
    )


def notification_to_row(n: Notification) -> dict[str, object]:
    stream = n.stream
    return {
        "id": n.id,
        "account_id": n.account_id,
        "title": n.title,
        "body": n.body,
        "icon_style": n.icon_style.value,
        "sound": n.sound.value,
        "priority": n.priority.value,
        "delay": n.delay,
        "custom_delay": n.custom_delay,
        "target_device_token": n.target_device_token,
        "metadata": json.dumps(dict(n.metadata), separators=(",", ":")),
        "scheduled_at": to_ms(n.scheduled_at),
        "sender_name": n.sender_name,
        "sender_icon": n.sender_icon,
        "status": n.status.value,
        "created_at": to_ms(n.created_at),
        "devices_targeted": n.devices_targeted,
        "failure_reason": n.failure_reason,
        "stream_id": None if stream is None else stream.id,
        "stream_name": None if stream is None else stream.name,
        "stream_code": None if stream is None else stream.code,
        "wake_at": opt_to_ms(n.wake_at),
        "settled_at": opt_to_ms(n.settled_at),
    }


def notification_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Notification:
    (id_, account_id, title, body, icon_style, sound, priority, delay, custom_delay,
     target, metadata, scheduled_at, sender_name, sender_icon, status, created_at,
     devices_targeted, failure_reason, stream_id, stream_name, stream_code,
     wake_at, settled_at) = tuple(row)  # fmt: skip
    return Notification(
        id=id_,
        account_id=account_id,
        title=title,
        body=body,
        icon_style=IconStyle(icon_style),
        sound=Sound(sound),
        priority=Priority(priority),
        delay=delay,
        custom_delay=custom_delay,
        target_device_token=target,
        metadata=json.loads(metadata),
        scheduled_at=from_ms(scheduled_at),
        sender_name=sender_name,
        sender_icon=sender_icon,
        status=NotificationStatus(status),
        created_at=from_ms(created_at),
        devices_targeted=devices_targeted,
        failure_reason=failure_reason,
        stream=None if stream_id is None else StreamRef(stream_id, stream_name, stream_code),
        wake_at=opt_from_ms(wake_at),
        settled_at=opt_from_ms(settled_at),
    )


def delivery_to_row(d: Delivery) -> dict[str, object]:
    return {
        "id": d.id,
        "notification_id": d.notification_id,
        "account_id": d.account_id,
        "device_id": d.device_id,
        "status": d.status.value,
        "due_at": to_ms(d.due_at),
        "attempts": d.attempts,
        "lease_owner": d.lease_owner,
        "lease_until": opt_to_ms(d.lease_expires_at),
        "failure_reason": d.failure_reason,
        "settled_at": opt_to_ms(d.settled_at),
    }


def delivery_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Delivery:
    (id_, notification_id, account_id, device_id, status, due_at, attempts,
     lease_owner, lease_until, failure_reason, settled_at) = tuple(row)  # fmt: skip
    return Delivery(
        id=id_,
        notification_id=notification_id,
        account_id=account_id,
        device_id=device_id,
        status=DeliveryStatus(status),
        due_at=from_ms(due_at),
        attempts=attempts,
        lease_owner=lease_owner,
        lease_expires_at=opt_from_ms(lease_until),
        failure_reason=failure_reason,
        settled_at=opt_from_ms(settled_at),
    )
