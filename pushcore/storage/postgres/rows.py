"""Rows <-> domain objects for PostgreSQL: timestamptz, jsonb, text[] and boolean columns.

psycopg returns timestamptz as aware datetimes in the session's time zone,
which the store sets to UTC; jsonb comes back as a dict and text[] as a list,
so reading is mostly a matter of rebuilding the enums and value objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

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

Row = tuple[Any, ...]
Connection = psycopg.Connection[Row]


def ts(at: datetime) -> datetime:
    """``at`` as a parameter; a naive time is refused, as the SQLite store refuses it."""
    # psycopg would send a naive datetime as `timestamp` and PostgreSQL would
    # read it in the session's time zone: a silent shift for a caller's bug.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return at


def opt_ts(at: datetime | None) -> datetime | None:
    return None if at is None else ts(at)


@contextmanager
def duplicate_as_key_error(conn: Connection, key: str) -> Iterator[None]:
    """Raise KeyError for a uniqueness violation, as the memory store does.

    The statement runs in a savepoint: in PostgreSQL a failed statement
    spoils the whole transaction, and a caller that catches the KeyError
    (a stream code collision: draw again) must be able to go on.
    """
    try:
        with conn.transaction():
            yield
    except psycopg.errors.UniqueViolation as exc:
        raise KeyError(key) from exc


def account_from_row(row: Row) -> Account:
    id_, plan, created_at = row
    return Account(id=id_, plan=Plan(plan), created_at=created_at)


def key_to_row(key: ApiKey) -> dict[str, object]:
    return {
        "id": key.id,
        "account_id": key.account_id,
        "name": key.name,
        "key_hash": key.key_hash,
        "key_prefix": key.key_prefix,
        "scopes": [s.value for s in key.scopes],
        "expires_at": opt_ts(key.expires_at),
        "is_active": key.is_active,
        "last_used_at": opt_ts(key.last_used_at),
        "revoked_at": opt_ts(key.revoked_at),
        "created_at": ts(key.created_at),
    }


def key_from_row(row: Row) -> ApiKey:
    (id_, account_id, name, key_hash, key_prefix, scopes, expires_at,
     is_active, last_used_at, revoked_at, created_at) = row  # fmt: skip
    return ApiKey(
        id=id_,
        account_id=account_id,
        name=name,
        key_hash=key_hash,
        key_prefix=key_prefix,
        scopes=tuple(Scope(s) for s in scopes),
        expires_at=expires_at,
        created_at=created_at,
        is_active=is_active,
        last_used_at=last_used_at,
        revoked_at=revoked_at,
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
        "is_active": device.is_active,
        "created_at": ts(device.created_at),
        "last_delivered_at": opt_ts(device.last_delivered_at),
    }


def device_from_row(row: Row) -> Device:
    (id_, account_id, platform, token, name, p256dh, auth, is_active, created_at,
     last_delivered_at) = row  # fmt: skip
    return Device(
        id=id_,
        account_id=account_id,
        platform=Platform(platform),
        token=token,
        name=name,
        created_at=created_at,
        keys=None if p256dh is None else WebPushKeys(p256dh=p256dh, auth=auth),
        is_active=is_active,
        last_delivered_at=last_delivered_at,
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
        "metadata": Jsonb(dict(n.metadata)),
        "scheduled_at": ts(n.scheduled_at),
        "sender_name": n.sender_name,
        "sender_icon": n.sender_icon,
        "status": n.status.value,
        "created_at": ts(n.created_at),
        "devices_targeted": n.devices_targeted,
        "failure_reason": n.failure_reason,
        "stream_id": None if stream is None else stream.id,
        "stream_name": None if stream is None else stream.name,
        "stream_code": None if stream is None else stream.code,
        "wake_at": opt_ts(n.wake_at),
        "settled_at": opt_ts(n.settled_at),
    }


def notification_from_row(row: Row) -> Notification:
    (id_, account_id, title, body, icon_style, sound, priority, delay, custom_delay,
     target, metadata, scheduled_at, sender_name, sender_icon, status, created_at,
     devices_targeted, failure_reason, stream_id, stream_name, stream_code,
     wake_at, settled_at) = row  # fmt: skip
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
        metadata=metadata,
        scheduled_at=scheduled_at,
        sender_name=sender_name,
        sender_icon=sender_icon,
        status=NotificationStatus(status),
        created_at=created_at,
        devices_targeted=devices_targeted,
        failure_reason=failure_reason,
        stream=None if stream_id is None else StreamRef(stream_id, stream_name, stream_code),
        wake_at=wake_at,
        settled_at=settled_at,
    )


def delivery_from_row(row: Row) -> Delivery:
    (id_, notification_id, account_id, device_id, status, due_at, attempts,
     lease_owner, lease_until, failure_reason, settled_at) = row  # fmt: skip
    return Delivery(
        id=id_,
        notification_id=notification_id,
        account_id=account_id,
        device_id=device_id,
        status=DeliveryStatus(status),
        due_at=due_at,
        attempts=attempts,
        lease_owner=lease_owner,
        lease_expires_at=lease_until,
        failure_reason=failure_reason,
        settled_at=settled_at,
    )
