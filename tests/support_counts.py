"""The `deliveries` counts of one notification as the API shows them."""

from __future__ import annotations


def delivery_counts(pending: int, delivered: int, failed: int, opened: int = 0) -> dict[str, int]:
    """``GET /api/notifications/:id``'s ``deliveries``, nothing held or expired."""
    return {
        "pending": pending,
        "delivered": delivered,
        "failed": failed,
        "held": 0,
        "expired": 0,
        "opened": opened,
    }
