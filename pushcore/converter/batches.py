"""Batches of notifications (POST /api/notifications/batch): the request and the answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from pushcore.converter._base import structure_request
from pushcore.converter._views import View
from pushcore.converter.notifications import NotificationCreatedView, notification_created_json
from pushcore.domain import validation as v
from pushcore.domain.errors import FieldError, InvalidJson, ValidationError
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.scheduling import MAX_BATCH

_HOW_MANY = v.items(1, MAX_BATCH, "notifications")


@attrs.frozen
class NewNotificationBatch:
    """Many notifications scheduled at once, all or nothing."""

    notifications: tuple[NewNotification, ...] = attrs.field(
        validator=_HOW_MANY,
        metadata=v.about(
            "Each item as the body of `POST /api/notifications`.",
            example=[
                {"title": "Deploy finished", "delay": "1m"},
                {"title": "Nightly report", "body": "3 builds", "priority": "high"},
            ],
        ),
    )


def structure_batch(data: Any) -> list[NewNotification]:
    """The items of ``{"notifications": [...]}``, or one ValidationError naming every
    invalid field of every item (``notifications[3].title``)."""
    if not isinstance(data, dict):
        raise InvalidJson("Request body must be a JSON object")
    errors = [
        FieldError(str(key), "is not a known field") for key in data if key != "notifications"
    ]
    items = data.get("notifications")
    try:
        if not isinstance(items, list):
            raise ValueError("is required" if "notifications" not in data else "must be an array")
        _HOW_MANY.check(items)
    except ValueError as exc:
        raise ValidationError([*errors, FieldError("notifications", str(exc))]) from None
    structured: list[NewNotification] = []
    for i, item in enumerate(items):
        name = f"notifications[{i}]"
        if not isinstance(item, dict):
            errors.append(FieldError(name, "must be an object"))
            continue
        try:
            structured.append(structure_request(NewNotification, item))
        except ValidationError as exc:
            errors += [FieldError(f"{name}.{d.field}", d.message) for d in exc.details]
    if errors:
        raise ValidationError(errors)
    return structured


@attrs.frozen
class BatchCreatedView(View):
    """The answer to a batch: the creation response of each item, in order."""

    schema_name: ClassVar[str] = "NotificationBatchCreated"

    items: tuple[NotificationCreatedView, ...] = attrs.field(
        metadata=v.about("The creation response of each item, in the request's order.")
    )

    @classmethod
    def of(cls, created: Sequence[Notification]) -> BatchCreatedView:
        """The view of notifications just created together."""
        return cls(items=tuple(NotificationCreatedView.of(n) for n in created))

    @staticmethod
    def json_of(created: Sequence[Notification]) -> dict[str, Any]:
        """``to_json(BatchCreatedView.of(created))``, without the 500 views (json_of)."""
        return {"items": [notification_created_json(n) for n in created]}
