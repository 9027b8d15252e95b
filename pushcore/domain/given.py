"""The fields of a create request that a notification keeps as given."""

from __future__ import annotations

from typing import Any

import attrs

from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification

# By name (title, body, sound, sender name, ...): a new optional field reaches the
# stored notification by its two declarations alone, with no line elsewhere. A create
# and an edit both take them from the request this way.
KEPT_AS_GIVEN = tuple(
    name for name in attrs.fields_dict(NewNotification) if name in attrs.fields_dict(Notification)
)


def kept_as_given(request: NewNotification) -> dict[str, Any]:
    """``request``'s fields that a notification keeps as they are, by name."""
    return {name: getattr(request, name) for name in KEPT_AS_GIVEN}
