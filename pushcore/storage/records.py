"""The tables, each declared once as the entity it holds; the delivery tally.

A table's columns, the order they are bound and read in, and each value's
codec are derived from the entity's attrs declaration (``sql/rows.py``): a
field added to an entity is a column of its table once a migration adds it.
A declaration names only where the row differs from the entity. The tables of
sign-in (passwords, sessions, single sign-on) and of schedules are declared beside
their repositories (``sql/people.py``, ``sql/oidc.py``, ``sql/schedules.py``), so a
command that never touches them does not load their entities.
"""

from __future__ import annotations

from collections.abc import Sequence

from pushcore.domain.idempotency import IdempotencyRecord
from pushcore.domain.inbox import InboxEntry
from pushcore.domain.localtime import deliver_at_of_text, deliver_at_text
from pushcore.domain.model import (
    Account,
    ApiKey,
    Delivery,
    DeliveryCounts,
    Device,
    Notification,
    Stream,
    Subscription,
)
from pushcore.storage.sql.rows import Codec, Table

# Every table of the schema but schema_migrations.
TABLES = (
    "accounts", "api_keys", "devices", "notifications", "deliveries", "streams",
    "subscriptions", "engines", "notification_counts", "notification_activity",
    "idempotency_keys", "health", "passwords", "refresh_tokens", "oidc_flows",
    "oidc_codes", "inbox", "oidc_identities", "oidc_legacy_accounts", "server_keys",
    "session_revocations", "rollups", "schedule_occurrences", "schedules",
    "webhook_endpoints", "events", "webhook_attempts",
)  # fmt: skip

ACCOUNTS = Table("accounts", Account)
API_KEYS = Table("api_keys", ApiKey)
# keys (WebPushKeys | None) is spread over keys_p256dh and keys_auth.
DEVICES = Table("devices", Device)
# stream (StreamRef | None) is spread over stream_id, stream_name and stream_code;
# deliver_at is held as JSON text, ["09:00", "2026-12-24"] (the date null when none).
NOTIFICATIONS = Table(
    "notifications",
    Notification,
    codecs={
        "deliver_at": Codec(
            "text",
            "_deliver_at_text({})",
            "_deliver_at({})",
            {"_deliver_at_text": deliver_at_text, "_deliver_at": deliver_at_of_text},
        )
    },
)
DELIVERIES = Table("deliveries", Delivery, columns={"lease_expires_at": "lease_until"})
# deleted_at is the table's own: a deleted stream is no entity.
STREAMS = Table("streams", Stream)
SUBSCRIPTIONS = Table("subscriptions", Subscription)
INBOX = Table("inbox", InboxEntry, columns={"id": "public_id"})
IDEMPOTENCY_KEYS = Table(
    "idempotency_keys",
    IdempotencyRecord,
    columns={"key": "idempotency_key"},
    # The answer's body, JSON, is held as text.
    codecs={"body": Codec("text", "{}.decode()", "{}.encode()")},
)


def delivery_counts(rows: Sequence[tuple[str, int, int, int]]) -> DeliveryCounts:
    """Counts from ``(status, count, handed, opened)`` rows grouped by delivery status."""
    by = {status: count for status, count, _, _ in rows}
    return DeliveryCounts(
        pending=by.get("PENDING", 0) + by.get("IN_FLIGHT", 0) + by.get("HELD", 0),
        delivered=by.get("DELIVERED", 0) + by.get("WITHDRAWN", 0),
        failed=by.get("FAILED", 0) + by.get("EXPIRED", 0),
        cancelled=by.get("CANCELLED", 0),
        handed=sum(handed for _, _, handed, _ in rows),
        held=by.get("HELD", 0),
        expired=by.get("EXPIRED", 0),
        opened=sum(opened for _, _, _, opened in rows),
    )
