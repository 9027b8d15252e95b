"""Small HTTP helpers shared by the gateways."""

from __future__ import annotations

import http
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def status_reason(status: int) -> str:
    """``Gone``, ``Too Many Requests``...; ``HTTP 599`` for unknown codes."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"
