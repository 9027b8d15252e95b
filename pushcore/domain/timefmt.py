"""The one timestamp format of the API and the payloads."""

from __future__ import annotations

from datetime import UTC, datetime


def format_timestamp(value: datetime) -> str:
    """UTC, millisecond precision, with a ``Z``: ``2026-11-21T10:15:30.123Z``."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
