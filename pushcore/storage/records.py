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

import attrs

from pushcore.domain.idempotency import IdempotencyRecord
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
    Stream,
    StreamRef,
    Subscription,
    WebPushKeys,
)
from pushcore.domain.scopes import Scope
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.storage.sql.rows import Codec, Table

# Every table of the schema but schema_migrations.
TABLES = (
    "accounts", "api_keys", "devices", "notifications", "deliveries", "streams",
    "subscriptions", "engines", "notification_counts", "notification_activity",
    "idempotency_keys", "health",
)  # fmt: skip

# Each table declared once, as the entity it holds: its columns, their order
# and each value's codec are derived from the attrs declaration (sql/rows.py).
ACCOUNTS = Table("accounts", Account)
API_KEYS = Table("api_keys", ApiKey)
# keys (WebPushKeys | None) is spread over keys_p256dh and keys_auth.
DEVICES = Table("devices", Device)
# stream (StreamRef | None) is spread over stream_id, stream_name and stream_code.
NOTIFICATIONS = Table("notifications", Notification)
DELIVERIES = Table("deliveries", Delivery, columns={"lease_expires_at": "lease_until"})
# deleted_at is the table's own: a deleted stream is no entity.
STREAMS = Table("streams", Stream)
SUBSCRIPTIONS = Table("subscriptions", Subscription)
IDEMPOTENCY_KEYS = Table(
    "idempotency_keys",
    IdempotencyRecord,
    columns={"key": "idempotency_key"},
    # The answer's body, JSON, is held as text.
    codecs={"body": Codec("text", "{}.decode()", "{}.encode()")},
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


_KEY, _DEVICE = names(KEY_COLUMNS), names(DEVICE_COLUMNS)
_NOTIFICATION, _DELIVERY = names(NOTIFICATION_COLUMNS), names(DELIVERY_COLUMNS)


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

    def json(self, value: Mapping[str, str]) -> Any:
        """A JSON object of strings (a notification's metadata) as the database holds it."""
        raise NotImplementedError

    def read_json(self, value: Any) -> Mapping[str, str]:
        """A JSON object as the database gave it."""
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

    # Row dicts are zipped from values in column order; reading unpacks a row
    # the same way. Packed, one entity to a few lines: keep them in step with
    # the column lists above.

    def key_to_row(self, k: ApiKey) -> dict[str, object]:
        t, opt = self.time, self.opt_time
        return dict(zip(_KEY, (k.id, k.account_id, k.name, k.key_hash, k.key_prefix,
            self.scopes([s.value for s in k.scopes]), opt(k.expires_at), k.is_active,
            opt(k.last_used_at), opt(k.revoked_at), t(k.created_at)), strict=True))  # fmt: skip

    def key_from_row(self, row: Sequence[Any]) -> ApiKey:
        (id_, account_id, name, key_hash, key_prefix, scopes, expires_at,
         is_active, last_used_at, revoked_at, created_at) = tuple(row)  # fmt: skip
        opt = self.opt_read_time
        return ApiKey(id_, account_id, name, key_hash, key_prefix,
            tuple(Scope(s) for s in self.read_scopes(scopes)), opt(expires_at),
            self.read_time(created_at), bool(is_active), opt(last_used_at),
            opt(revoked_at))  # fmt: skip

    def device_to_row(self, d: Device) -> dict[str, object]:
        keys = d.keys
        return dict(zip(_DEVICE, (d.id, d.account_id, d.platform.value, d.token, d.name,
            None if keys is None else keys.p256dh, None if keys is None else keys.auth,
            d.is_active, self.time(d.created_at), self.opt_time(d.last_delivered_at)),
            strict=True))  # fmt: skip

    def device_from_row(self, row: Sequence[Any]) -> Device:
        (id_, account_id, platform, token, name, p256dh, auth, is_active, created_at,
         last_delivered_at) = tuple(row)  # fmt: skip
        keys = None if p256dh is None else WebPushKeys(p256dh=p256dh, auth=auth)
        return Device(id_, account_id, Platform(platform), token, name,
            self.read_time(created_at), keys, bool(is_active),
            self.opt_read_time(last_delivered_at))  # fmt: skip

    def notification_to_row(self, n: Notification) -> dict[str, object]:
        t, opt, stream = self.time, self.opt_time, n.stream
        return dict(zip(_NOTIFICATION, (n.id, n.account_id, n.title, n.body,
            n.icon_style.value, n.sound.value, n.priority.value, n.delay, n.custom_delay,
            n.target_device_token, self.json(n.metadata), t(n.scheduled_at),
            n.sender_name, n.sender_icon, n.status.value, t(n.created_at), n.devices_targeted,
            n.failure_reason, *((None,) * 3 if stream is None else attrs.astuple(stream)),
            opt(n.wake_at), opt(n.settled_at)), strict=True))  # fmt: skip

    def notification_from_row(self, row: Sequence[Any]) -> Notification:
        (id_, account_id, title, body, icon_style, sound, priority, delay, custom_delay,
         target, metadata, scheduled_at, sender_name, sender_icon, status, created_at,
         devices_targeted, failure_reason, stream_id, stream_name, stream_code,
         wake_at, settled_at) = tuple(row)  # fmt: skip
        stream = None if stream_id is None else StreamRef(stream_id, stream_name, stream_code)
        t, opt = self.read_time, self.opt_read_time
        return Notification(id_, account_id, title, body, IconStyle(icon_style), Sound(sound),
            Priority(priority), delay, custom_delay, target, self.read_json(metadata),
            t(scheduled_at), sender_name, sender_icon, NotificationStatus(status),
            t(created_at), devices_targeted, failure_reason, stream, opt(wake_at),
            opt(settled_at))  # fmt: skip

    def delivery_to_row(self, d: Delivery) -> dict[str, object]:
        opt = self.opt_time
        return dict(zip(_DELIVERY, (d.id, d.notification_id, d.account_id, d.device_id,
            d.status.value, self.time(d.due_at), d.attempts, d.lease_owner,
            opt(d.lease_expires_at), d.failure_reason, opt(d.settled_at)),
            strict=True))  # fmt: skip

    def delivery_from_row(self, row: Sequence[Any]) -> Delivery:
        (id_, notification_id, account_id, device_id, status, due_at, attempts,
         lease_owner, lease_until, failure_reason, settled_at) = tuple(row)  # fmt: skip
        opt = self.opt_read_time
        return Delivery(id_, notification_id, account_id, device_id, DeliveryStatus(status),
            self.read_time(due_at), attempts, lease_owner, opt(lease_until), failure_reason,
            opt(settled_at))  # fmt: skip
