"""client.streams: publish to a stream (creator) and subscribe by code (user)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pushcore.client._call import Auth, Call, json_body, many, one, path
from pushcore.client._keywords import keywords
from pushcore.client._resource import Resource, S_co, endpoint
from pushcore.converter import (
    DeletedView,
    LookupView,
    SendResultView,
    StreamDetailView,
    SubscriptionView,
    converter,
)
from pushcore.converter.recipient import MutedSubscriptionView
from pushcore.domain.inputs import NewStream, StreamSend


@keywords(NewStream)
def create(name: str, **fields: Any) -> Call[StreamDetailView]:
    """Create a stream; share its ``code`` with subscribers (an API key)."""
    data = json_body(name=name, **fields)
    return Call("POST", "/api/streams", Auth.KEY, one(StreamDetailView), data)


def list_() -> Call[list[StreamDetailView]]:
    """The account's streams with their subscriber counts."""
    return Call("GET", "/api/streams", Auth.EITHER, many(StreamDetailView))


def delete(stream_id: str) -> Call[DeletedView]:
    """Delete a stream and its subscriptions."""
    return Call("DELETE", path("/api/streams/{}", stream_id), Auth.EITHER, one(DeletedView))


@keywords(StreamSend)
def send(stream_id: str, title: str, **fields: Any) -> Call[SendResultView]:
    """Send a notification to every subscriber of the stream, now (an API key)."""
    data = json_body(title=title, **fields)
    url = path("/api/streams/{}/send", stream_id)
    return Call("POST", url, Auth.KEY, one(SendResultView), data)


def subscribe(code: str) -> Call[SubscriptionView]:
    """Subscribe to the stream with this code (a user token)."""
    data = json_body(code=code)
    return Call("POST", "/api/streams/subscribe", Auth.USER, one(SubscriptionView), data)


def subscriptions() -> Call[list[SubscriptionView]]:
    """The caller's subscriptions with their streams (a user token)."""
    return Call("GET", "/api/streams/subscriptions", Auth.USER, many(SubscriptionView))


def unsubscribe(subscription_id: str) -> Call[DeletedView]:
    """End a subscription (a user token)."""
    url = path("/api/streams/subscriptions/{}", subscription_id)
    return Call("DELETE", url, Auth.USER, one(DeletedView))


def mute(
    subscription_id: str, muted_until: datetime | str | None, *, allow_critical: bool = True
) -> Call[MutedSubscriptionView]:
    """Mute a subscription until ``muted_until`` (None unmutes); critical sends go through
    unless ``allow_critical`` is False (a user token)."""
    url = path("/api/streams/subscriptions/{}", subscription_id)
    data = {"mutedUntil": converter.unstructure(muted_until), "allowCritical": allow_critical}
    return Call("PATCH", url, Auth.USER, one(MutedSubscriptionView), data)


def lookup(code: str) -> Call[LookupView]:
    """The stream with this code, and whether the caller subscribes (a user token)."""
    return Call("GET", path("/api/streams/lookup/{}", code), Auth.USER, one(LookupView))


class Streams(Resource[S_co]):
    """``client.streams`` (its methods awaitable on AsyncClient)"""

    create = endpoint(create)
    list = endpoint(list_)
    delete = endpoint(delete)
    send = endpoint(send)
    subscribe = endpoint(subscribe)
    subscriptions = endpoint(subscriptions)
    unsubscribe = endpoint(unsubscribe)
    mute = endpoint(mute)
    lookup = endpoint(lookup)
