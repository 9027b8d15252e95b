"""Tables and columns, entities <-> rows, the delivery tally.

The SQLite and PostgreSQL schemas have the same tables and columns; only the
way each database holds a time, a list of scopes and the metadata object
differs. :class:`Rows` turns entities into rows and back once, in terms of
those few primitives, which each store's subclass defines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pushcore.domain.model import (
    Account,
    ApiKey,
    Delivery,
    DeliveryCounts,
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

# Every table of the schema but schema_migrations.
TABLES = (
    "accounts",
    "api_keys",
    "devices",
    "notifications",
    "deliveries",
    "streams",
    "subscriptions",
    "engines",
)
KEY_COLUMNS = (
    "id, account_id, name, key_hash, key_prefix, scopes, expires_at,"
    " is_active, last_used_at, revoked_at, created_at"
)
DEVICE_COLUMNS = (
    "id, account_id, platform, token, name, keys_p256dh, keys_auth,"
    " is_active, created_at, last_delivered_at"
)
NOTIFICATION_COLUMNS = (
    "id, account_id, title, body, icon_style, sound, priority, delay, custom_delay,"
    " target_device_token, metadata, scheduled_at, sender_name, sender_icon, status,"
    " created_at, devices_targeted, failure_reason, stream_id, stream_name, stream_code,"
    " wake_at, settled_at"
)
DELIVERY_COLUMNS = (
    "id, notification_id, account_id, device_id, status, due_at, attempts,"
    " lease_owner, lease_until, failure_reason, settled_at"
)


def names(columns: str) -> list[str]:
    """The column names of a column list."""
    return [c.strip() for c in columns.split(",")]


def placeholders(columns: str) -> str:
    """The named parameters of a column list: ``:id, :account_id, ...``."""
    return ", ".join(f":{c}" for c in names(columns))


def prefixed(columns: str, alias: str) -> str:
    """``columns`` qualified by a table alias: ``d.id, d.account_id, ...``."""
    return ", ".join(f"{alias}.{c}" for c in names(columns))


def delivery_counts(rows: Sequence[tuple[str, int, int]]) -> DeliveryCounts:
    """Counts from ``(status, count, handed)`` rows grouped by delivery status."""
    by = {status: count for status, count, _ in rows}
    return DeliveryCounts(
        pending=by.get("PENDING", 0) + by.get("IN_FLIGHT", 0),
        delivered=by.get("DELIVERED", 0),
        failed=by.get("FAILED", 0),
        cancelled=by.get("CANCELLED", 0),
        handed=sum(handed for _, _, handed in rows),
    )


class Rows:
    """Entities <-> rows. A row read is a sequence of values in the column list's order;
    a row written is a dict by column name. Booleans go as Python bools both ways
    (SQLite stores them as 0 and 1, and ``bool()`` reads either back).
    """

    def time(self, at: datetime) -> Any:
        """A time as the database holds it."""
        raise NotImplementedError

    def read_time(self, value: Any) -> datetime:
        """A time as the database gave it, back as an aware datetime."""
        raise NotImplementedError

    def scopes(self, values: list[str]) -> Any:
        """A key's scope values, in their order, as the database holds them."""
        raise NotImplementedError

    def read_scopes(self, value: Any) -> list[str]:
        """A key's scope values as the database gave them."""
        raise NotImplementedError

    def metadata(self, value: dict[str, str]) -> Any:
        """A notification's metadata object as the database holds it."""
        raise NotImplementedError

    def read_metadata(self, value: Any) -> Mapping[str, str]:
        """A notification's metadata as the database gave it."""
        raise NotImplementedError

    def time_ceil(self, at: datetime) -> Any:
        """A time as the database holds it, rounded up where it holds less precision:
        ``stored < time_ceil(t)`` exactly when the stored time is before ``t``."""
        return self.time(at)

    def opt_time(self, at: datetime | None) -> Any:
        return None if at is None else self.time(at)

    def opt_read_time(self, value: Any) -> datetime | None:
        return None if value is None else self.read_time(value)

    def account_from_row(self, row: Sequence[Any]) -> Account:
        id_, plan, created_at = tuple(row)
        return Account(id=id_, plan=Plan(plan), created_at=self.read_time(created_at))

    def key_to_row(self, key: ApiKey) -> dict[str, object]:
        return {
            "id": key.id,
            "account_id": key.account_id,
            "name": key.name,
            "key_hash": key.key_hash,
            "key_prefix": key.key_prefix,
            "scopes": self.scopes([s.value for s in key.scopes]),
            "expires_at": self.opt_time(key.expires_at),
            "is_active": key.is_active,
            "last_used_at": self.opt_time(key.last_used_at),
            "revoked_at": self.opt_time(key.revoked_at),
            "created_at": self.time(key.created_at),
        }

    def key_from_row(self, row: Sequence[Any]) -> ApiKey:
        (id_, account_id, name, key_hash, key_prefix, scopes, expires_at,
         is_active, last_used_at, revoked_at, created_at) = tuple(row)  # fmt: skip
        return ApiKey(
            id=id_,
            account_id=account_id,
            name=name,
            key_hash=key_hash,
            key_prefix=key_prefix,
            scopes=tuple(Scope(s) for s in self.read_scopes(scopes)),
            expires_at=self.opt_read_time(expires_at),
            created_at=self.read_time(created_at),
            is_active=bool(is_active),
            last_used_at=self.opt_read_time(last_used_at),
            revoked_at=self.opt_read_time(revoked_at),
        )

    def device_to_row(self, device: Device) -> dict[str, object]:
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
            "created_at": self.time(device.created_at),
            "last_delivered_at": self.opt_time(device.last_delivered_at),
        }

    def device_from_row(self, row: Sequence[Any]) -> Device:
        (id_, account_id, platform, token, name, p256dh, auth, is_active, created_at,
         last_delivered_at) = tuple(row)  # fmt: skip
        return Device(
            id=id_,
            account_id=account_id,
            platform=Platform(platform),
            token=token,
            name=name,
            created_at=self.read_time(created_at),
            keys=None if p256dh is None else WebPushKeys(p256dh=p256dh, auth=auth),
            is_active=bool(is_active),
            last_delivered_at=self.opt_read_time(last_delivered_at),
        )

    def notification_to_row(self, n: Notification) -> dict[str, object]:
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
            "metadata": self.metadata(dict(n.metadata)),
            "scheduled_at": self.time(n.scheduled_at),
            "sender_name": n.sender_name,
            "sender_icon": n.sender_icon,
            "status": n.status.value,
            "created_at": self.time(n.created_at),
            "devices_targeted": n.devices_targeted,
            "failure_reason": n.failure_reason,
            "stream_id": None if stream is None else stream.id,
            "stream_name": None if stream is None else stream.name,
            "stream_code": None if stream is None else stream.code,
            "wake_at": self.opt_time(n.wake_at),
            "settled_at": self.opt_time(n.settled_at),
        }

    def notification_from_row(self, row: Sequence[Any]) -> Notification:
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
            metadata=self.read_metadata(metadata),
            scheduled_at=self.read_time(scheduled_at),
            sender_name=sender_name,
            sender_icon=sender_icon,
            status=NotificationStatus(status),
            created_at=self.read_time(created_at),
            devices_targeted=devices_targeted,
            failure_reason=failure_reason,
            stream=None if stream_id is None else StreamRef(stream_id, stream_name, stream_code),
            wake_at=self.opt_read_time(wake_at),
            settled_at=self.opt_read_time(settled_at),
        )

    def delivery_to_row(self, d: Delivery) -> dict[str, object]:
        return {
            "id": d.id,
            "notification_id": d.notification_id,
            "account_id": d.account_id,
            "device_id": d.device_id,
            "status": d.status.value,
            "due_at": self.time(d.due_at),
            "attempts": d.attempts,
            "lease_owner": d.lease_owner,
            "lease_until": self.opt_time(d.lease_expires_at),
            "failure_reason": d.failure_reason,
            "settled_at": self.opt_time(d.settled_at),
        }

    def delivery_from_row(self, row: Sequence[Any]) -> Delivery:
        (id_, notification_id, account_id, device_id, status, due_at, attempts,
         lease_owner, lease_until, failure_reason, settled_at) = tuple(row)  # fmt: skip
        return Delivery(
            id=id_,
            notification_id=notification_id,
            account_id=account_id,
            device_id=device_id,
            status=DeliveryStatus(status),
            due_at=self.read_time(due_at),
            attempts=attempts,
            lease_owner=lease_owner,
            lease_expires_at=self.opt_read_time(lease_until),
            failure_reason=failure_reason,
            settled_at=self.opt_read_time(settled_at),
        )
