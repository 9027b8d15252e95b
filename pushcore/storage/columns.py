"""What the SQL stores share: the column lists of their tables and the delivery tally.

The SQLite and PostgreSQL schemas have the same tables and columns (only the
types differ), so the lists that name them and the way grouped delivery
counts become :class:`DeliveryCounts` live here once.
"""

from __future__ import annotations

from collections.abc import Sequence

from pushcore.domain.model import DeliveryCounts

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


def prefixed(columns: str, alias: str) -> str:
    """``columns`` qualified by a table alias: ``d.id, d.account_id, ...``."""
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


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
