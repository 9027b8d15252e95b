"""OpenAPI of /api/devices (JWT or a devices:* key) and the Web Push public key."""

from __future__ import annotations

from pushcore.domain.model import Platform
from pushcore.domain.scheduling import DEVICE_NAME_MAX, DEVICE_TOKEN_MAX
from pushcore.domain.scopes import Scope
from pushcore_http.openapi._common import (
    EXAMPLE_TIME,
    PUBLIC,
    Json,
    either,
    id_of,
    json_content,
    listing,
    nullable,
    obj,
    operation,
    path_param,
    ref,
    response,
    success,
    text,
    timestamp,
)

TAG = "Devices"
APNS_HEX_PATTERN = "^(?:[0-9A-Fa-f]{2}){16,}$"

_DEVICE_EXAMPLE: Json = {
    "id": "dev_01JD3V6Q5X8ZK2M4N7P9R0S1T2",
    "name": "Pixel 9",
    "platform": "android",
    "tokenPrefix": "fcm-exam",
    "isActive": True,
    "createdAt": EXAMPLE_TIME,
    "lastDeliveredAt": None,
}


def schemas() -> Json:
    """The device schemas."""
    name = text(1, DEVICE_NAME_MAX, "A label for people.")
    platform: Json = {
        "type": "string",
        "enum": [p.value for p in Platform],
        "description": (
            "`ios` (APNs), `android` (FCM), `web` (Web Push) or `webhook` (an http(s) URL "
            "pushcore POSTs the JSON payload to; UnifiedPush-compatible)."
        ),
    }
    return {
        "NewDevice": obj(
            {
                "token": text(
                    1,
                    DEVICE_TOKEN_MAX,
                    "`ios`: the APNs device token in hex (an even number of hex digits, at "
                    "least 32). `android`: the FCM registration "
                    "token. `web`: the push subscription's endpoint URL. `webhook`: the URL to "
                    "POST to; a private, loopback or link-local host is refused unless "
                    "PUSHCORE_ALLOW_PRIVATE_NETWORKS is true.",
                    not_blank=True,
                ),
                "platform": platform,
                "name": nullable(name),
                "keys": nullable(ref("WebPushKeys")),
            },
            required=["token", "platform"],
        )
        | {
            # What the server checks of an iOS token (domain.inputs.device_errors).
            "allOf": [
                {
                    "if": {"properties": {"platform": {"const": "ios"}}},
                    "then": {
                        "properties": {
                            "token": {
                                "pattern": APNS_HEX_PATTERN,
                                "description": "For `ios`: hex digits, an even number, "
                                "at least 32 (the APNs device token).",
                            }
                        }
                    },
                }
            ]
        },
        "WebPushKeys": obj(
            {
                "p256dh": {
                    "type": "string",
                    "description": "The subscription's P-256 public key (65 bytes), base64url.",
                },
                "auth": {
                    "type": "string",
                    "description": "The subscription's 16-byte auth secret, base64url.",
                },
            },
            description="Required for `web` devices, refused for the others.",
        ),
        "Device": obj(
            {
                "id": id_of("dev", "device"),
                "name": nullable(name),
                "platform": platform,
                "tokenPrefix": {
                    "type": "string",
                    "description": "The first 8 characters of the token (never the whole).",
                },
                "isActive": {
                    "type": "boolean",
                    "description": "False once a gateway said the token is dead; "
                    "registering the token again reactivates it.",
                },
                "createdAt": timestamp("Registration time."),
                "lastDeliveredAt": nullable(timestamp("The last successful delivery.")),
            }
        ),
        "VapidPublicKey": obj(
            {
                "publicKey": {
                    "type": "string",
                    "description": "The VAPID public key: an uncompressed P-256 point, base64url.",
                }
            }
        ),
    }


def paths() -> Json:
    """The device operations, and the VAPID key a web client subscribes with."""
    return {
        "/api/devices": {
            "post": operation(
                "Register a device",
                tag=TAG,
                security=either(Scope.DEVICES_WRITE),
                description=(
                    "An idempotent upsert by token: 201 for a new device, 200 when the account "
                    "already has the token (its name and keys are refreshed and it is "
                    "reactivated). Notifications waiting for a device are queued for it."
                ),
                body=(
                    ref("NewDevice"),
                    {"platform": "android", "token": "fcm-example-token", "name": "Pixel 9"},
                ),
                ok=(201, "A new device.", ref("Device")),
                example=_DEVICE_EXAMPLE,
                responses={
                    200: {
                        "description": "The token was already registered: the same device.",
                        "content": json_content(ref("Device")),
                    }
                },
            ),
            "get": operation(
                "List devices",
                tag=TAG,
                security=either(Scope.DEVICES_READ),
                description="Newest first, deactivated ones included.",
                ok=listing("devices", "Device"),
                example=[_DEVICE_EXAMPLE],
            ),
        },
        "/api/devices/{device_id}": {
            "delete": operation(
                "Remove a device",
                tag=TAG,
                security=either(Scope.DEVICES_WRITE),
                description="The device is gone; registering its token again is a 201.",
                parameters=[path_param("device_id", "The device's id.")],
                ok=success("device"),
                responses={404: response("NotFound")},
            ),
        },
        "/api/webpush/vapid-public-key": {
            "get": operation(
                "The VAPID public key",
                tag=TAG,
                security=PUBLIC,
                description=(
                    "The `applicationServerKey` for `PushManager.subscribe()` in a browser. "
                    "No authentication."
                ),
                ok=(200, "The key.", ref("VapidPublicKey")),
            ),
        },
    }
