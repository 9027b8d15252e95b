"""OpenAPI of /api/notifications (API keys with notifications:* scopes)."""

from __future__ import annotations

from pushcore.domain.model import IconStyle, Priority, Sound
from pushcore.domain.scheduling import (
    BODY_MAX,
    CUSTOM_DELAY_MAX,
    CUSTOM_DELAY_MIN,
    DEVICE_TOKEN_MAX,
    METADATA_MAX_KEYS,
    SENDER_NAME_MAX,
    TITLE_MAX,
    Delay,
)
from pushcore.domain.scopes import Scope
from pushcore.domain.states import NotificationStatus
from pushcore_http.openapi._common import (
    EXAMPLE_TIME,
    Json,
    error_answer,
    error_example,
    http_url,
    id_of,
    key,
    nullable,
    obj,
    operation,
    path_param,
    ref,
    response,
    text,
    timestamp,
)

TAG = "Notifications"

# What converter.encode_cursor makes (base64url of a notification id, unpadded)
# and decode_cursor accepts; anything else is a 400.
CURSOR: Json = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_-]{40}$",
    "examples": ["bnRmXzAxSkQzVjZRNVg4WksyTTRON1A5UjBTMVQy"],
}


def _enum(values: type[IconStyle | Sound | Priority | Delay], default: str, about: str) -> Json:
    return {
        "type": "string",
        "enum": [v.value for v in values],
        "default": default,
        "description": about,
    }


def content_fields() -> Json:
    """Title, body, sound, priority and sender: shared with stream sends."""
    return {
        "title": text(1, TITLE_MAX, "The notification's title."),
        "body": {**text(0, BODY_MAX, "The body text."), "default": ""},
        "sound": _enum(Sound, "default", "`critical` breaks through Do Not Disturb on iOS."),
        "priority": _enum(Priority, "normal", "Maps to each platform's urgency."),
        "senderName": nullable(
            text(1, SENDER_NAME_MAX, "A sender name shown instead of the app's own.")
        ),
        "senderIcon": nullable(
            http_url(
                "A PNG or JPEG of at most 5 MB, shown as a round avatar; checked when the "
                "request comes in (a 400 when it does not serve one)."
            )
        ),
    }


STATUS: Json = {
    "type": "string",
    "enum": [s.value for s in NotificationStatus],
    "description": (
        "SCHEDULED (waiting for a device), QUEUED, DELIVERED (all settled, one or more "
        "succeeded), FAILED (all failed), CANCELLED."
    ),
}


def _created_fields() -> Json:
    return {
        "id": id_of("ntf", "notification"),
        "title": {"type": "string"},
        "body": {"type": "string"},
        "status": STATUS,
        "scheduledAt": timestamp("The effective due time."),
        "createdAt": timestamp("Creation time."),
        "devicesTargeted": {
            "type": "integer",
            "minimum": 0,
            "description": "Active target devices at creation (targets are resolved when due).",
        },
    }


def _record_fields() -> Json:
    return {
        **_created_fields(),
        "iconStyle": {"type": "string", "enum": [v.value for v in IconStyle]},
        "sound": {"type": "string", "enum": [v.value for v in Sound]},
        "priority": {"type": "string", "enum": [v.value for v in Priority]},
        "delay": {"type": "string", "description": "The delay preset that applied."},
        "customDelay": nullable({"type": "integer"}),
        "targetDeviceToken": nullable({"type": "string"}),
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "senderName": nullable({"type": "string"}),
        "senderIcon": nullable({"type": "string"}),
        "stream": nullable(ref("StreamRef")),
        "failureReason": nullable(
            {"type": "string", "description": "Why it failed: `no_devices`, a gateway's reason."}
        ),
        "settledAt": nullable(timestamp("When it became DELIVERED, FAILED or CANCELLED.")),
    }


def _count(description: str) -> Json:
    return {"type": "integer", "minimum": 0, "description": description}


def schemas() -> Json:
    """The notification schemas."""
    deliveries = obj(
        {
            "pending": _count("Not settled yet (waiting or being sent)."),
            "delivered": _count("Accepted by the gateway."),
            "failed": _count("Failed for good."),
        },
        description="The notification's deliveries (one per target device) by state.",
    )
    return {
        "NewNotification": obj(
            {
                **content_fields(),
                "iconStyle": _enum(IconStyle, "bolt", "The icon the apps show."),
                "delay": nullable(
                    _enum(Delay, "5s", "When to send; `custom` takes `customDelay`.")
                ),
                "customDelay": nullable(
                    {
                        "type": "integer",
                        "minimum": CUSTOM_DELAY_MIN,
                        "maximum": CUSTOM_DELAY_MAX,
                        "description": "Seconds; required with `delay: custom`, refused without.",
                    }
                ),
                "scheduledAt": nullable(
                    timestamp(
                        "An exact time with an offset; wins over `delay`. In the past means "
                        "now; at most 30 days ahead."
                    )
                ),
                "targetDeviceToken": nullable(
                    text(
                        1,
                        DEVICE_TOKEN_MAX,
                        "One device of the account by its token (else all of them); an "
                        "unknown token is a 404 `device_not_found`.",
                    )
                ),
                "metadata": nullable(
                    {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "maxProperties": METADATA_MAX_KEYS,
                        "description": "String values, 4 KiB of keys and values in all.",
                    }
                ),
            },
            required=["title"],
        ),
        "NotificationCreated": obj(_created_fields()),
        "Notification": obj(
            _record_fields(), description="A notification as listed (no delivery counts)."
        ),
        "NotificationDetail": obj(
            {**_record_fields(), "deliveries": deliveries},
            description="A notification with its delivery counts.",
        ),
        "StreamRef": obj(
            {"id": id_of("str", "stream"), "name": {"type": "string"}, "code": {"type": "string"}},
            description="The stream a stream send came from.",
        ),
        "NotificationPage": obj(
            {
                "items": {"type": "array", "items": ref("Notification")},
                "nextCursor": nullable(
                    CURSOR | {"description": "Pass as `cursor` for the next page; null: last page."}
                ),
            }
        ),
        "NotificationStats": obj(
            {
                "total": _count("Every notification of the account."),
                "byStatus": obj({s.value: _count(s.value) for s in NotificationStatus}),
                "deliveries": obj(
                    {
                        "delivered": _count("Delivered."),
                        "failed": _count("Failed."),
                        "pending": _count("Not settled yet."),
                    }
                ),
                "last24h": obj(
                    {
                        "created": _count("Created in the last 24 hours."),
                        "delivered": _count("Became DELIVERED in the last 24 hours."),
                        "failed": _count("Became FAILED in the last 24 hours."),
                    }
                ),
            }
        ),
    }


def paths() -> Json:
    """The notification operations."""
    notification_id = path_param("notification_id", "The notification's id.")
    return {
        "/api/notifications": {
            "post": operation(
                "Schedule a notification",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_WRITE),
                description=(
                    "Answered once the notification and one delivery per active target "
                    "device are committed. The response always reports QUEUED."
                ),
                body=(
                    ref("NewNotification"),
                    {
                        "title": "Deploy finished",
                        "body": "All green",
                        "iconStyle": "terminal",
                        "priority": "high",
                        "delay": "custom",
                        "customDelay": 90,
                        "metadata": {"build": "1234"},
                        "senderName": "CI Bot",
                    },
                ),
                ok=(201, "Scheduled.", ref("NotificationCreated")),
                example={
                    "id": "ntf_01JD3V6Q5X8ZK2M4N7P9R0S1T2",
                    "title": "Deploy finished",
                    "body": "All green",
                    "status": "QUEUED",
                    "scheduledAt": "2026-11-21T10:17:00.123Z",
                    "createdAt": EXAMPLE_TIME,
                    "devicesTargeted": 2,
                },
                responses={
                    404: error_answer(
                        "`targetDeviceToken` is not a device of this account.",
                        "No device with this targetDeviceToken on this account",
                        "device_not_found",
                    )
                },
            ),
            "get": operation(
                "List notifications",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_READ),
                description="Newest first, a page at a time.",
                parameters=[
                    {
                        "name": "status",
                        "in": "query",
                        "schema": STATUS,
                        "description": "Only notifications in this status.",
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                        "description": "Page size.",
                    },
                    {
                        "name": "cursor",
                        "in": "query",
                        "schema": CURSOR,
                        "description": "The `nextCursor` of the previous page, unchanged.",
                    },
                ],
                ok=(200, "One page.", ref("NotificationPage")),
                responses={
                    400: {
                        "description": "An unknown status, a bad limit or a malformed cursor.",
                        "content": {
                            "application/json": {
                                "schema": ref("Error"),
                                "example": error_example(
                                    "Invalid request: cursor",
                                    "validation_error",
                                    details=[
                                        {"field": "cursor", "message": "is not a valid cursor"}
                                    ],
                                ),
                            }
                        },
                    }
                },
            ),
        },
        "/api/notifications/stats": {
            "get": operation(
                "Notification statistics",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_READ),
                ok=(200, "Counts of the account.", ref("NotificationStats")),
            ),
        },
        "/api/notifications/{notification_id}": {
            "get": operation(
                "Get a notification",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_READ),
                parameters=[notification_id],
                ok=(200, "The full record with delivery counts.", ref("NotificationDetail")),
                responses={404: response("NotFound")},
            ),
            "delete": operation(
                "Cancel a notification",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_WRITE),
                description=(
                    "Allowed from QUEUED and SCHEDULED while no delivery has been handed to a "
                    "gateway."
                ),
                parameters=[notification_id],
                ok=(200, "The notification, now CANCELLED.", ref("NotificationDetail")),
                responses={
                    404: response("NotFound"),
                    409: error_answer(
                        "Already being delivered, settled or cancelled.",
                        "Notification is already being delivered and can no longer be cancelled",
                        "not_cancellable",
                    ),
                },
            ),
        },
    }
