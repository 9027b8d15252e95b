"""Streams and subscriptions as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

import attrs

from pushcore.converter._views import View, copy_fields, to_json
from pushcore.domain.model import StreamView, Subscription
from pushcore.services.streams import Lookup, SendResult


@attrs.frozen
class StreamSummaryView(View):
    """The stream nested in subscriptions and lookups: no creation time."""

    id: str
    name: str
    code: str
    description: str
    icon_url: str | None
    subscribers: int

    @classmethod
    def of(cls, view: StreamView) -> Self:
        """The summary of a stream and its subscriber count."""
        return copy_fields(cls, view.stream, subscribers=view.subscribers)


@attrs.frozen
class StreamDetailView(StreamSummaryView):
    """A stream as its creator sees it (create, list)."""

    created_at: datetime


@attrs.frozen
class LookupView(StreamSummaryView):
    """GET /api/streams/lookup/:code: the stream and whether the caller subscribes."""

    is_subscribed: bool

    # Built from a Lookup rather than a StreamView: the one factory that differs.
    @classmethod
    def of(cls, found: Lookup) -> LookupView:  # type: ignore[override]
        """The view of a lookup."""
        view = found.stream
        return copy_fields(
            cls, view.stream, subscribers=view.subscribers, is_subscribed=found.is_subscribed
        )


@attrs.frozen
class SubscriptionView(View):
    """A subscription with its stream."""

    id: str
    stream: StreamSummaryView
    created_at: datetime

    @classmethod
    def of(cls, subscription: Subscription, view: StreamView) -> SubscriptionView:
        """The view of a subscription to the stream ``view``."""
        return copy_fields(cls, subscription, stream=StreamSummaryView.of(view))


@attrs.frozen
class StreamLabelView(View):
    """The stream a send went to: ``{name, code}``."""

    name: str
    code: str


@attrs.frozen
class SendResultView(View):
    """POST /api/streams/:id/send: the notification and how many deliveries it made."""

    notification_id: str
    sent: int
    subscribers: int
    stream: StreamLabelView

    @classmethod
    def of(cls, result: SendResult) -> SendResultView:
        """The view of a stream send."""
        return cls(
            notification_id=result.notification.id,
            sent=result.sent,
            subscribers=result.subscribers,
            stream=copy_fields(StreamLabelView, result.stream),
        )


def stream_json(view: StreamView) -> dict[str, Any]:
    """The JSON of :class:`StreamDetailView` (kept for the CLI's ``--json``)."""
    return to_json(StreamDetailView.of(view))


def lookup_json(found: Lookup) -> dict[str, Any]:
    """The JSON of :class:`LookupView` (kept for the CLI's ``--json``)."""
    return to_json(LookupView.of(found))


def subscription_json(subscription: Subscription, view: StreamView) -> dict[str, Any]:
    """The JSON of :class:`SubscriptionView` (kept for the CLI's ``--json``)."""
    return to_json(SubscriptionView.of(subscription, view))


def send_result_json(result: SendResult) -> dict[str, Any]:
    """The JSON of :class:`SendResultView` (kept for the CLI's ``--json``)."""
    return to_json(SendResultView.of(result))
