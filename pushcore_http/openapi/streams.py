"""OpenAPI of /api/streams: the creator's side (keys or JWT) and the subscriber's (JWT)."""

from __future__ import annotations

from pushcore import converter as views
from pushcore.domain import errors as e
from pushcore.domain.inputs import NewStream, StreamSend, Subscribe
from pushcore.domain.scopes import Scope
from pushcore_http.openapi import _common as api

_WRITE = api.key(Scope.NOTIFICATIONS_WRITE)


def operations() -> api.Json:
    """The stream operations, by method and path."""
    full = e.PlanLimit("The free plan allows 3 streams; delete one or move to the pro plan")
    created = api.answer(201, "The stream, with its code to share.", views.StreamDetailView)
    subscribed = (
        api.answer(201, "Subscribed.", views.SubscriptionView)
        | api.refusal(e.OwnStream("You cannot subscribe to your own stream"))
        | api.refusal(e.NotFound("No stream has this code"), "No stream has this code.")
        | api.refusal(e.AlreadySubscribed("You already subscribe to this stream"))
    )
    return {
        "post /api/streams: Create a stream": api.operation(
            _WRITE,
            created | api.refusal(full, "The free plan's 3 streams are taken."),
            body=NewStream,
        ),
        "get /api/streams: List your streams": api.operation(
            api.either(Scope.NOTIFICATIONS_READ),
            api.listing("streams", views.StreamDetailView),
            "Newest first.",
        ),
        "delete /api/streams/{stream_id}: Delete a stream": api.operation(
            api.either(Scope.NOTIFICATIONS_WRITE),
            api.removal("stream"),
            "Its subscriptions go too; its code is never given out again.",
        ),
        "post /api/streams/{stream_id}/send: Send to every subscriber": api.operation(
            _WRITE,
            api.answer(201, "Enqueued.", views.SendResultView),
            "Immediate. The send is a notification of the stream's creator, listed with a "
            "`stream` field; with no subscriber device it is FAILED (`no_devices`) at once.",
            body=StreamSend,
            text_body=True,
        ),
        "post /api/streams/subscribe: Subscribe by code": api.operation(
            api.USER, subscribed, body=Subscribe
        ),
        "get /api/streams/subscriptions: List your subscriptions": api.operation(
            api.USER,
            api.listing("subscriptions", views.SubscriptionView),
            "Newest first.",
        ),
        "delete /api/streams/subscriptions/{subscription_id}: Unsubscribe": api.operation(
            api.USER, api.removal("subscription")
        ),
        "get /api/streams/lookup/{code}: Look up a stream by code": api.operation(
            api.USER,
            api.answer(200, "The stream, and whether the caller subscribes.", views.LookupView),
        ),
    }
