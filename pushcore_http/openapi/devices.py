"""OpenAPI of /api/devices (JWT or a devices:* key) and the Web Push public key."""

from __future__ import annotations

from pushcore.converter import DeviceView, RegisteredDeviceView, json_schema
from pushcore.domain.inputs import APNS_TOKEN, NewDevice
from pushcore.domain.scopes import Scope
from pushcore_http.openapi import _common as api


def schemas() -> api.Json:
    """A device registration, with what an iOS token must be; the VAPID key's answer."""
    ios = "For `ios`: hex digits, an even number, at least 32 (the APNs token)."
    token = {"pattern": f"^{APNS_TOKEN.pattern}$", "description": ios}
    rule = {"if": {"properties": {"platform": {"const": "ios"}}}}
    about = "The VAPID public key: an uncompressed P-256 point, base64url."
    vapid = {"publicKey": {"type": "string", "description": about}}
    return {
        "NewDevice": json_schema(NewDevice)
        | {"allOf": [rule | {"then": {"properties": {"token": token}}}]},
        "VapidPublicKey": {"type": "object", "properties": vapid, "required": ["publicKey"]}
        | {"additionalProperties": False},
    }


def operations() -> api.Json:
    """The device operations, and the VAPID key a web client subscribes with."""
    new = api.answer(201, "A new device.", RegisteredDeviceView)
    again = api.answer(200, "Already registered: the same device.", RegisteredDeviceView)
    return {
        "post /api/devices: Register a device": api.operation(
            api.either(Scope.DEVICES_WRITE),
            new | again,
            "An idempotent upsert by token: 201 for a new device, 200 when the account already "
            "has the token (its name and keys are refreshed and it is reactivated). "
            "Notifications waiting for a device are queued for it. A webhook device gets a new "
            "signing `secret` each time (shown only in this answer).",
            body=NewDevice,
        ),
        "get /api/devices: List devices": api.operation(
            api.either(Scope.DEVICES_READ),
            api.listing("devices", DeviceView),
            "Newest first, deactivated ones included.",
        ),
        "delete /api/devices/{device_id}: Remove a device": api.operation(
            api.either(Scope.DEVICES_WRITE),
            api.removal("device"),
            "The device is gone; registering its token again is a 201.",
        ),
        "get /api/webpush/vapid-public-key: The VAPID public key": api.operation(
            api.PUBLIC,
            api.answer(200, "The key.", api.ref("VapidPublicKey")),
            "The `applicationServerKey` for `PushManager.subscribe()` in a browser. "
            "No authentication.",
        ),
    }
