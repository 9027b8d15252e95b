"""OpenAPI of POST /api/notifications/batch (an API key with notifications:write)."""

from __future__ import annotations

from pushcore.domain.scheduling import MAX_BATCH
from pushcore.domain.scopes import Scope
from pushcore_http.body import MAX_BATCH_BODY_BYTES
from pushcore_http.openapi._common import (
    EXAMPLE_TIME,
    Json,
    error_answer,
    key,
    obj,
    operation,
    ref,
)
from pushcore_http.openapi.notifications import TAG


def schemas() -> Json:
    """The batch request and answer."""
    return {
        "NewNotificationBatch": obj(
            {
                "notifications": {
                    "type": "array",
                    "items": ref("NewNotification"),
                    "minItems": 1,
                    "maxItems": MAX_BATCH,
                    "description": "Each item as the body of `POST /api/notifications`.",
                }
            },
            required=["notifications"],
        ),
        "NotificationBatchCreated": obj(
            {
                "items": {
                    "type": "array",
                    "items": ref("NotificationCreated"),
                    "description": "The creation response of each item, in the request's order.",
                }
            }
        ),
    }


def paths() -> Json:
    """The batch operation."""
    return {
        "/api/notifications/batch": {
            "post": operation(
                "Schedule many notifications",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_WRITE),
                description=(
                    f"1 to {MAX_BATCH} notifications in one transaction, all or nothing: one "
                    "invalid item is a 400 whose `details` name every invalid field of every "
                    "item (`notifications[3].title`), and nothing is stored. An unknown "
                    "`targetDeviceToken` is such a 400 detail too (not the 404 of a single "
                    "create), so that one answer lists everything to fix. The body may be "
                    "up to 1 MiB."
                ),
                body=(
                    ref("NewNotificationBatch"),
                    {
                        "notifications": [
                            {"title": "Deploy finished", "delay": "1m"},
                            {"title": "Nightly report", "body": "3 builds", "priority": "high"},
                        ]
                    },
                ),
                ok=(201, "Every item scheduled.", ref("NotificationBatchCreated")),
                example={
                    "items": [
                        {
                            "id": "ntf_01JD3V6Q5X8ZK2M4N7P9R0S1T2",
                            "title": "Deploy finished",
                            "body": "",
                            "status": "QUEUED",
                            "scheduledAt": "2026-11-21T10:16:30.123Z",
                            "createdAt": EXAMPLE_TIME,
                            "devicesTargeted": 2,
                        }
                    ]
                },
                responses={
                    413: error_answer(
                        "The body is over 1 MiB.",
                        f"Request body must be at most {MAX_BATCH_BODY_BYTES} bytes",
                        "payload_too_large",
                    )
                },
            ),
        },
    }
