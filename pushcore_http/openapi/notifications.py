"""OpenAPI of /api/notifications (API keys with notifications:* scopes), batches included."""

from __future__ import annotations

from pushcore import converter as views
from pushcore.domain import errors as e
from pushcore.domain.inputs import NewNotification
from pushcore.domain.scheduling import MAX_BATCH
from pushcore.domain.scopes import Scope
from pushcore.domain.states import NotificationStatus
from pushcore_http.body import MAX_BATCH_BODY_BYTES
from pushcore_http.openapi import _common as api

_READ, _WRITE = api.key(Scope.NOTIFICATIONS_READ), api.key(Scope.NOTIFICATIONS_WRITE)


def schemas() -> api.Json:
    """A notification with its delivery counts: the view, with `deliveries` always there."""
    detail = views.json_schema(views.NotificationView)
    detail |= {"description": "A notification with its delivery counts."}
    return {"NotificationDetail": detail | {"required": [*detail["required"], "deliveries"]}}


def operations() -> api.Json:
    """The notification operations, by method and path."""
    unknown = e.DeviceNotFound("No device with this targetDeviceToken on this account")
    bad_query = e.ValidationError([e.FieldError("cursor", "is not a valid cursor")])
    too_large = e.PayloadTooLarge(f"Request body must be at most {MAX_BATCH_BODY_BYTES} bytes")
    busy = "Notification is already being delivered and can no longer be cancelled"
    statuses = {"type": "string", "enum": [s.value for s in NotificationStatus]}
    size = {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
    cursor = {"type": "string", "pattern": views.CURSOR_PATTERN, "examples": [views.CURSOR_EXAMPLE]}
    page = [
        api.query("status", "Only notifications in this status.", statuses),
        api.query("limit", "Page size.", size),
        api.query("cursor", "The `nextCursor` of the previous page, unchanged.", cursor),
    ]
    return {
        "post /api/notifications: Schedule a notification": api.operation(
            _WRITE,
            api.answer(201, "Scheduled.", views.NotificationCreatedView) | api.refusal(unknown),
            "Answered once the notification and one delivery per active target device are "
            "committed. The response always reports QUEUED.",
            body=NewNotification,
            text_body=True,
        ),
        "get /api/notifications: List notifications": api.operation(
            _READ,
            api.answer(200, "One page.", views.NotificationPageView)
            | api.refusal(bad_query, "An unknown status, a bad limit or a malformed cursor."),
            "Newest first, a page at a time.",
            parameters=page,
        ),
        "post /api/notifications/batch: Schedule many notifications": api.operation(
            _WRITE,
            api.answer(201, "Every item scheduled.", views.BatchCreatedView)
            | api.refusal(too_large, "The body is over 1 MiB."),
            f"1 to {MAX_BATCH} notifications in one transaction, all or nothing: one invalid "
            "item is a 400 whose `details` name every invalid field of every item "
            "(`notifications[3].title`), and nothing is stored. An unknown `targetDeviceToken` "
            "is such a 400 detail too (not the 404 of a single create), so that one answer "
            "lists everything to fix. The body may be up to 1 MiB.",
            body=views.NewNotificationBatch,
        ),
        "get /api/notifications/stats: Notification statistics": api.operation(
            _READ, api.answer(200, "Counts of the account.", views.StatsView)
        ),
        "get /api/notifications/{notification_id}: Get a notification": api.operation(
            _READ,
            api.answer(200, "The full record with delivery counts.", api.ref("NotificationDetail")),
        ),
        "delete /api/notifications/{notification_id}: Cancel a notification": api.operation(
            _WRITE,
            api.answer(200, "The notification, now CANCELLED.", api.ref("NotificationDetail"))
            | api.refusal(e.NotCancellable(busy)),
            "Allowed from QUEUED and SCHEDULED while no delivery has been handed to a gateway.",
        ),
    }
