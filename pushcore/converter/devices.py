"""Devices as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import OMIT_IF_NONE, View, copy_fields, ident, to_json
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


@attrs.frozen
class RegisteredDeviceView(DeviceView):
    """A device as POST /api/devices answers it: a webhook device with its signing secret,
    shown in this answer only."""

    secret: str | None = attrs.field(
        default=None,
        metadata={
            OMIT_IF_NONE: True,
            **about(
                "Webhook devices only: the Standard Webhooks secret (`whsec_` and base64) each"
                " delivery is signed with, shown only here; each registration issues a new one.",
                example="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            ),
        },
    )

    @classmethod
    def registered(cls, device: Device, secret: str | None) -> RegisteredDeviceView:
        """The view of a device just registered, with the secret it was given."""
        return copy_fields(cls, device, secret=secret)


def device_json(device: Device) -> dict[str, Any]:
    """The JSON of :class:`DeviceView` (kept for the CLI's ``--json``)."""
    return to_json(DeviceView.of(device))
