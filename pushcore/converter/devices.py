"""Devices as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import View, copy_fields, ident, to_json
from pushcore.domain.inputs import NewDevice
from pushcore.domain.model import Device, Platform
from pushcore.domain.validation import about


@attrs.frozen
class DeviceView(View):
    """A device as the API shows it: the token only by its prefix."""

    id: str = attrs.field(metadata=ident("dev", "device"))
    name: str | None = attrs.field(metadata=attrs.fields(NewDevice).name.metadata)
    platform: Platform = attrs.field(metadata=attrs.fields(NewDevice).platform.metadata)
    token_prefix: str = attrs.field(
        metadata=about("The first 8 characters of the token (never the whole).")
    )
    is_active: bool = attrs.field(
        metadata=about(
            "False once a gateway said the token is dead; registering the token again "
            "reactivates it."
        )
    )
    created_at: datetime = attrs.field(metadata=about("Registration time."))
    last_delivered_at: datetime | None = attrs.field(
        metadata=about("The last successful delivery.")
    )

    @classmethod
    def of(cls, device: Device) -> DeviceView:
        """The view of a stored device."""
        return copy_fields(cls, device)


def device_json(device: Device) -> dict[str, Any]:
    """The JSON of :class:`DeviceView` (kept for the CLI's ``--json``)."""
    return to_json(DeviceView.of(device))
