"""What a notification says, rendered once for every surface that shows it.

The inbox entry (its page and the live channel's `entry` event) and the
platform-neutral delivery payload (webhook bodies, Web Push cleartext) are
both a :class:`ContentView` with what their surface adds, so a field added
to what a notification says is added here, once, and reaches all of them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

import attrs

from pushcore.converter._views import View, copy_fields, ident, to_json
from pushcore.converter.streams import StreamLabelView
from pushcore.domain.inputs import EXAMPLE_FUTURE_TIME
from pushcore.domain.model import IconStyle, Notification, Priority, Sound
from pushcore.domain.validation import about


@attrs.frozen
class SenderView(View):
    """Who the notification says it is from; a missing half is null."""

    name: str | None
    icon: str | None


@attrs.frozen
class ContentView(View):
    """The text and presentation of a notification, as every surface shows it."""

    title: str
    body: str
    icon_style: IconStyle
    sound: Sound
    priority: Priority
    metadata: dict[str, str]
    sender: SenderView | None = attrs.field(metadata=about("Null unless a sender is set."))


def content_of(n: Notification) -> dict[str, Any]:
    """The fields of :class:`ContentView` that are not copied as they are."""
    sender = None
    if n.sender_name is not None or n.sender_icon is not None:
        sender = SenderView(n.sender_name, n.sender_icon)
    return {"metadata": dict(n.metadata), "sender": sender}


@attrs.frozen
class DeliveryPayloadView(ContentView):
    """The platform-neutral payload: a webhook's body and a Web Push message's cleartext."""

    schema_name: ClassVar[str] = "DeliveryPayload"

    notification_id: str = attrs.field(metadata=ident("ntf", "notification"))
    stream: StreamLabelView | None = attrs.field(metadata=about("The stream of a stream send."))
    scheduled_at: datetime = attrs.field(metadata=about("The due time."))
    event: str = attrs.field(metadata=about("`notification` (a withdrawal says `withdrawn`)."))
    collapse_key: str | None = attrs.field(
        metadata=about("Replaces what was shown with the same key; null: none.")
    )
    revision: int = attrs.field(metadata=about("The notification's revision (PATCH)."))
    renotify: bool = attrs.field(metadata=about("False: replace quietly (no sound, no alert)."))
    receipt: str | None = attrs.field(metadata=about("A token for this delivery; null: none."))
    expires_at: datetime | None = attrs.field(
        metadata=about(
            "When it expires (a receiver may drop it after); null: never.",
            example=EXAMPLE_FUTURE_TIME,
        )
    )

    @classmethod
    def of(cls, n: Notification) -> DeliveryPayloadView:
        """The payload of ``n``."""
        stream = None if n.stream is None else StreamLabelView(n.stream.name, n.stream.code)
        return copy_fields(
            cls,
            n,
            notification_id=n.id,
            stream=stream,
            event="notification",
            receipt=None,
            **content_of(n),
        )


def delivery_payload(n: Notification) -> dict[str, Any]:
    """The neutral payload of ``n`` as JSON (ready for json.dumps)."""
    return to_json(DeliveryPayloadView.of(n))
