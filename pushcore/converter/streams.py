"""Streams and subscriptions as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs

from pushcore.converter._views import (
    CREATED,
    OMIT_IF_NONE,
    View,
    copy_fields,
    count,
    ident,
    to_json,
)
from pushcore.domain.model import Stream, StreamView, Subscription
from pushcore.domain.validation import about

if TYPE_CHECKING:
    # Types only: the client imports the converter and must not load the services.
    from pushcore.services.streams import Lookup, SendResult


@attrs.frozen
class StreamSummaryView(View):
    """A stream nested in other answers (subscriptions, lookups): no creation time."""

    id: str = attrs.field(metadata=ident("str", "stream"))
    name: str
    code: str = attrs.field(
        metadata=about(
            "The code to share: a word, a hyphen, 4 characters without look-alikes.",
            example="falcon-7k2q",
        )
    )
    description: str
    icon_url: str | None
    subscribers: int = attrs.field(metadata=count("The live count."))

    @classmethod
    def of(cls, view: StreamView) -> Self:
        """The summary of a stream and its subscriber count."""
        return copy_fields(cls, view.stream, subscribers=view.subscribers)


@attrs.frozen
class StreamDetailView(StreamSummaryView):
    """A stream as its creator sees it (create, list)."""

    schema_name: ClassVar[str] = "Stream"

    created_at: datetime = attrs.field(metadata=CREATED)


@attrs.frozen
class LookupView(StreamSummaryView):
    """A stream found by its code, and whether the caller subscribes to it."""

    schema_name: ClassVar[str] = "StreamLookup"

    is_subscribed: bool = attrs.field(metadata=about("Whether the caller is."))

    # Built from a Lookup rather than a StreamView: the one factory that differs.
    @classmethod
    def of(cls, found: Lookup) -> LookupView:  # type: ignore[override]
        """The view of a lookup."""
        view = found.stream
        return copy_fields(
            cls, view.stream, subscribers=view.subscribers, is_subscribed=found.is_subscribed
        )


@attrs.frozen
class SharedStreamView(View):
    """What a share link says of its stream to anyone, signed in or not."""

    schema_name: ClassVar[str] = "SharedStream"

    name: str
    code: str
    description: str
    icon_url: str | None

    @classmethod
    def of(cls, stream: Stream) -> SharedStreamView:
        """What ``stream``'s share link shows."""
        return copy_fields(cls, stream)


@attrs.frozen
class SubscriptionView(View):
    """A subscription with its stream."""

    id: str = attrs.field(metadata=ident("sub", "subscription"))
    stream: StreamSummaryView
    created_at: datetime = attrs.field(metadata=about("When the caller subscribed."))
    # Left out while the subscription has its defaults (not muted, critical allowed):
    # the listing keeps its shape (a mute's PATCH answers SubscriptionWithMute).
    muted_until: datetime | None = attrs.field(
        default=None,
        metadata={
            **about("No device gets the stream's sends until then (left out: not muted)."),
            OMIT_IF_NONE: True,
        },
    )
    allow_critical: bool | None = attrs.field(
        default=None,
        metadata={
            **about("Whether critical sends go through the mute and quiet hours (left out: true)."),
            OMIT_IF_NONE: True,
        },
    )

    @classmethod
    def of(cls, subscription: Subscription, view: StreamView) -> SubscriptionView:
        """The view of a subscription to the stream ``view``."""
        plain = subscription.muted_until is None and subscription.allow_critical
        return copy_fields(
            cls,
            subscription,
            stream=StreamSummaryView.of(view),
            allow_critical=None if plain else subscription.allow_critical,
        )


@attrs.frozen
class StreamLabelView(View):
    """The stream a send went to."""

    name: str
    code: str


@attrs.frozen
class SendResultView(View):
    """What sending to a stream answers: the notification and how many deliveries it made."""

    schema_name: ClassVar[str] = "StreamSendResult"

    notification_id: str = attrs.field(metadata=ident("ntf", "notification"))
    sent: int = attrs.field(metadata=count("Device deliveries enqueued (0: the send is FAILED)."))
    subscribers: int = attrs.field(metadata=count(""))
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
