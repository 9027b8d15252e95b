"""Event webhooks and events as API JSON: endpoints, attempts, events and their pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import CREATED, OMIT_IF_NONE, View, copy_fields, ident
from pushcore.converter.paging import NEXT_PAGE, PageView
from pushcore.domain.events import (
    Attempt,
    AttemptStatus,
    Event,
    NewWebhook,
    WebhookEndpoint,
)
from pushcore.domain.validation import about

_SECRET = about(
    "The Standard Webhooks secret (`whsec_` and base64) events are signed with; shown only "
    "when the endpoint is created (and by rotate-secret).",
    example="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
)
_NEW = attrs.fields(NewWebhook)


@attrs.frozen
class WebhookView(View):
    """An event webhook endpoint (its secret is never shown again)."""

    id: str = attrs.field(metadata=ident("whe", "endpoint"))
    url: str = attrs.field(metadata=_NEW.url.metadata)
    events: tuple[str, ...] = attrs.field(metadata=_NEW.events.metadata)
    description: str | None = attrs.field(metadata=_NEW.description.metadata)
    enabled: bool = attrs.field(metadata=about("Whether events are sent to it."))
    created_at: datetime = attrs.field(metadata=CREATED)
    disabled_reason: str | None = attrs.field(
        metadata=about("Why the service disabled it (a 410, or 3 days without success).")
    )

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> WebhookView:
        """The view of a stored endpoint."""
        return copy_fields(cls, endpoint)


@attrs.frozen
class WebhookCreatedView(WebhookView):
    """An endpoint just created: the only answer its secret appears in."""

    secret: str = attrs.field(kw_only=True, metadata=_SECRET)

    @classmethod
    def created(cls, endpoint: WebhookEndpoint, secret: str) -> WebhookCreatedView:
        """The view of an endpoint just created, with its secret."""
        return copy_fields(cls, endpoint, secret=secret)


@attrs.frozen
class SecretView(View):
    """A rotated secret (the previous one also signs for 24 hours)."""

    secret: str = attrs.field(metadata=_SECRET)


@attrs.frozen
class EventIdView(View):
    """The event a test queued."""

    event_id: str = attrs.field(metadata=ident("evt", "event"))


@attrs.frozen
class AttemptView(View):
    """One event's posting to one endpoint: where it stands and its latest try."""

    event_id: str = attrs.field(metadata=ident("evt", "event"))
    type: str = attrs.field(metadata=about("The event's type.", example="delivery.failed"))
    status: AttemptStatus = attrs.field(metadata=about("pending until it succeeds or fails."))
    response_status: int | None = attrs.field(
        metadata=about("The latest try's HTTP status; null: none yet, or no answer.")
    )
    duration_ms: int | None = attrs.field(metadata=about("The latest try's duration."))
    attempted_at: datetime | None = attrs.field(metadata=about("When it was last tried."))
    next_attempt_at: datetime | None = attrs.field(
        metadata=about("When it is tried next (pending only).")
    )

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptView:
        """The view of an attempt."""
        return copy_fields(cls, attempt)


@attrs.frozen
class AttemptPageView(PageView):
    """An endpoint's attempts, newest event first."""

    item = AttemptView.of

    items: tuple[AttemptView, ...]
    next_cursor: str | None = attrs.field(metadata=about(NEXT_PAGE))


def _opt(description: str) -> Any:
    return attrs.field(default=None, metadata={OMIT_IF_NONE: True, **about(description)})


@attrs.frozen
class EventDataView(View):
    """What an event is about."""

    notification_id: str | None = attrs.field(
        default=None, metadata=about("The notification it concerns (null for some types).")
    )
    # Always present: a delivery event about another account's device (a stream send's
    # subscriber) says null rather than leaving the key out (API.md: data holds deviceId).
    device_id: str | None = attrs.field(
        default=None, metadata=about("The device (device and delivery events); else null.")
    )
    delivery_id: str | None = _opt("The delivery (delivery events).")
    schedule_id: str | None = _opt("The recurring schedule (schedule events).")
    endpoint_id: str | None = _opt("The endpoint tested (webhook.test).")
    status: str | None = _opt("The status it reached.")
    reason: str | None = _opt("Why, when it failed or was deactivated.")


@attrs.frozen
class EventView(View):
    """An event, as posted to endpoints and listed by GET /api/events."""

    id: str = attrs.field(metadata=ident("evt", "event"))
    type: str = attrs.field(metadata=about("What happened.", example="notification.delivered"))
    timestamp: datetime = attrs.field(metadata=about("When it happened."))
    data: EventDataView

    @classmethod
    def of(cls, event: Event) -> EventView:
        """The view of a stored event."""
        known = {a.name for a in attrs.fields(EventDataView)}
        given = {_snake(k): v for k, v in event.data.items()}
        data = EventDataView(**{k: v for k, v in given.items() if k in known})
        return cls(event.id, event.type, event.created_at, data)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


@attrs.frozen
class EventPageView(PageView):
    """Events oldest first."""

    item = EventView.of

    items: tuple[EventView, ...]
    next_cursor: str | None = attrs.field(
        metadata=about("The last event's id: pass as `after` for the next page; null: no more.")
    )
