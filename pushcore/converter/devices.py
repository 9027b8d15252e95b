"""Devices as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import View, copy_fields, to_json
from pushcore.domain.model import Device, Platform


@attrs.frozen
class DeviceView(View):
    """A device as the API shows it: the token only by its prefix."""

    id: str
    name: str | None
    platform: Platform
    token_prefix: str
    is_active: bool
    created_at: datetime
    last_delivered_at: datetime | None

    @classmethod
    def of(cls, device: Device) -> DeviceView:
        """The view of a stored device."""
        return copy_fields(cls, device)


def device_json(device: Device) -> dict[str, Any]:
    """The JSON of :class:`DeviceView` (kept for the CLI's ``--json``)."""
    return to_json(DeviceView.of(device))
