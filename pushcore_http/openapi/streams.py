"""OpenAPI of /api/streams: the creator's side (keys or JWT) and the subscriber's (JWT)."""

from __future__ import annotations

from pushcore.domain.scheduling import STREAM_DESCRIPTION_MAX, STREAM_NAME_MAX
from pushcore.domain.scopes import Scope
from pushcore_http.openapi._common import (
    EXAMPLE_TIME,
    USER,
    Json,
    either,
    error_answer,
    http_url,
    id_of,
    key,
    listing,
    nullable,
    obj,
    operation,
    path_param,
    ref,
    response,
    success,
    text,
    timestamp,
)
from pushcore_http.openapi.notifications import content_fields

TAG = "Streams"

_STREAM_EXAMPLE: Json = {
    "id": "str_01JD3V6Q5X8ZK2M4N7P9R0S1T2",
    "name": "Releases",
    "code": "falcon-7k2q",
    "description": "",
    "iconUrl": None,
    "subscribers": 0,
    "createdAt": EXAMPLE_TIME,
}


def _summary_fields() -> Json:
    return {
        "id": id_of("str", "stream"),
        "name": {"type": "string"},
        "code": {
            "type": "string",
            "description": (
                "The code to share: a word, a hyphen, 4 characters without look-alikes."
            ),
            "examples": ["falcon-7k2q"],
        },
        "description": {"type": "string"},
        "iconUrl": nullable({"type": "string"}),
        "subscribers": {"type": "integer", "minimum": 0, "description": "The live count."},
    }


def schemas() -> Json:
    """The stream schemas."""
    content = content_fields()
    return {
        "NewStream": obj(
            {
                "name": text(1, STREAM_NAME_MAX, "The stream's name.", not_blank=True),
                "description": {
                    **text(0, STREAM_DESCRIPTION_MAX, "What it is about."),
                    "default": "",
                },
                "iconUrl": nullable(http_url("A PNG or JPEG of at most 5 MB; checked.")),
            },
            required=["name"],
        ),
        "Stream": obj({**_summary_fields(), "createdAt": timestamp("Creation time.")}),
        "StreamSummary": obj(_summary_fields(), description="A stream nested in other answers."),
        "StreamLookup": obj(
            {
                **_summary_fields(),
                "isSubscribed": {"type": "boolean", "description": "Whether the caller is."},
            }
        ),
        "StreamSend": obj(
            {
                **content,
                "senderName": {
                    **content["senderName"],
                    "description": "Default: the stream's name.",
                },
                "senderIcon": {
                    **content["senderIcon"],
                    "description": "Default: the stream's icon.",
                },
            },
            required=["title"],
        ),
        "StreamSendResult": obj(
            {
                "notificationId": id_of("ntf", "notification"),
                "sent": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Device deliveries enqueued (0: the send is FAILED).",
                },
                "subscribers": {"type": "integer", "minimum": 0},
                "stream": obj({"name": {"type": "string"}, "code": {"type": "string"}}),
            }
        ),
        "Subscribe": obj({"code": {"type": "string", "minLength": 1, "maxLength": 100}}),
        "Subscription": obj(
            {
                "id": id_of("sub", "subscription"),
                "stream": ref("StreamSummary"),
                "createdAt": timestamp("When the caller subscribed."),
            }
        ),
    }


def paths() -> Json:
    """The stream operations."""
    stream_id = path_param("stream_id", "The stream's id.")
    not_found = {404: response("NotFound")}
    return {
        "/api/streams": {
            "post": operation(
                "Create a stream",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_WRITE),
                body=(ref("NewStream"), {"name": "Releases", "description": "New versions"}),
                ok=(201, "The stream, with its code to share.", ref("Stream")),
                example=_STREAM_EXAMPLE,
                responses={
                    403: error_answer(
                        "The free plan's 3 streams are taken.",
                        "The free plan allows 3 streams; delete one or move to the pro plan",
                        "plan_limit",
                    )
                },
            ),
            "get": operation(
                "List your streams",
                tag=TAG,
                security=either(Scope.NOTIFICATIONS_READ),
                description="Newest first.",
                ok=listing("streams", "Stream"),
            ),
        },
        "/api/streams/{stream_id}": {
            "delete": operation(
                "Delete a stream",
                tag=TAG,
                security=either(Scope.NOTIFICATIONS_WRITE),
                description="Its subscriptions go too; its code is never given out again.",
                parameters=[stream_id],
                ok=success("stream"),
                responses=not_found,
            ),
        },
        "/api/streams/{stream_id}/send": {
            "post": operation(
                "Send to every subscriber",
                tag=TAG,
                security=key(Scope.NOTIFICATIONS_WRITE),
                description=(
                    "Immediate. The send is a notification of the stream's creator, listed "
                    "with a `stream` field; with no subscriber device it is FAILED "
                    "(`no_devices`) at once."
                ),
                parameters=[stream_id],
                body=(ref("StreamSend"), {"title": "v2.1 is out", "priority": "high"}),
                ok=(201, "Enqueued.", ref("StreamSendResult")),
                responses=not_found,
            ),
        },
        "/api/streams/subscribe": {
            "post": operation(
                "Subscribe by code",
                tag=TAG,
                security=USER,
                body=(ref("Subscribe"), {"code": "falcon-7k2q"}),
                ok=(201, "Subscribed.", ref("Subscription")),
                responses={
                    403: error_answer(
                        "A creator cannot subscribe to their own stream.",
                        "You cannot subscribe to your own stream",
                        "own_stream",
                    ),
                    404: error_answer(
                        "No stream has this code.", "No stream has this code", "not_found"
                    ),
                    409: error_answer(
                        "Already subscribed.",
                        "You already subscribe to this stream",
                        "already_subscribed",
                    ),
                },
            ),
        },
        "/api/streams/subscriptions": {
            "get": operation(
                "List your subscriptions",
                tag=TAG,
                security=USER,
                description="Newest first.",
                ok=listing("subscriptions", "Subscription"),
            ),
        },
        "/api/streams/subscriptions/{subscription_id}": {
            "delete": operation(
                "Unsubscribe",
                tag=TAG,
                security=USER,
                parameters=[path_param("subscription_id", "The subscription's id.")],
                ok=success("subscription"),
                responses=not_found,
            ),
        },
        "/api/streams/lookup/{code}": {
            "get": operation(
                "Look up a stream by code",
                tag=TAG,
                security=USER,
                parameters=[path_param("code", "The stream's code.")],
                ok=(200, "The stream, and whether the caller subscribes.", ref("StreamLookup")),
                responses=not_found,
            ),
        },
    }
