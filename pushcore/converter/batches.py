"""Batches of notifications (POST /api/notifications/batch): the request and the answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from pushcore.converter._base import structure_request
from pushcore.converter._views import View
from pushcore.converter.notifications import NotificationCreatedView
from pushcore.domain.errors import FieldError, InvalidJson, ValidationError
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.scheduling import MAX_BATCH


def structure_batch(data: Any) -> list[NewNotification]:
    """The items of ``{"notifications": [...]}``, or one ValidationError naming every
    invalid field of every item (``notifications[3].title``)."""
    if not isinstance(data, dict):
        raise InvalidJson("Request body must be a JSON object")
    errors = [
        FieldError(str(key), "is not a known field") for key in data if key != "notifications"
    ]
    items = data.get("notifications")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
        problem = "is required" if "notifications" not in data else "must be an array"
        if isinstance(items, list):
            problem = f"must hold 1 to {MAX_BATCH} notifications, not {len(items)}"
        raise ValidationError([*errors, FieldError("notifications", problem)])
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

    items: tuple[NotificationCreatedView, ...]

    @classmethod
    def of(cls, created: Sequence[Notification]) -> BatchCreatedView:
        """The view of notifications just created together."""
        return cls(items=tuple(NotificationCreatedView.of(n) for n in created))
