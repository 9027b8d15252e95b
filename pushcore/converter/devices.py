"""Devices as API JSON."""

from __future__ import annotations

from typing import Any

from pushcore.converter._base import maybe_timestamp
from pushcore.domain.model import Device
from pushcore.domain.timefmt import format_timestamp


def device_json(device: Device) -> dict[str, Any]:
    """A device as the API shows it: the token only by its prefix."""
    return {
        "id": device.id,
        "name": device.name,
        "platform": device.platform.value,
        "tokenPrefix": device.token_prefix,
        "isActive": device.is_active,
        "createdAt": format_timestamp(device.created_at),
        "lastDeliveredAt": maybe_timestamp(device.last_delivered_at),
    }
