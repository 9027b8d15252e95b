"""/api/inbox/events: the live channel, server-sent events (text/event-stream).

A plain Starlette StreamingResponse: the format is a few lines per event,
and what a helper such as sse-starlette adds (a ping task and a disconnect
listener of its own per connection) costs memory on every open channel,
while the keep-alive and the end at the credential's expiry are this
generator's own waits anyway.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from datetime import datetime

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from pushcore.converter import (
    DismissedEventView,
    InboxEntryView,
    ReadEventView,
    WithdrawnEventView,
    to_json,
)
from pushcore.domain.inbox import InboxItem, Read, Withdrawn
from pushcore.domain.timefmt import format_timestamp
from pushcore.live import Channel, LiveHub
from pushcore.live.stream import KEEPALIVE, follow
from pushcore.ports import Clock
from pushcore.services.recipient import RecipientService
from pushcore.services.tokens import verified_expiry
from pushcore_http.answers import answer, query, ref
from pushcore_http.auth import served
from pushcore_http.endpoints import Endpoints
from pushcore_http.live_settings import batch_of
from pushcore_http.ratelimit import client_key
from pushcore_http.routes.inbox import ENTRY_ID, MALFORMED, READ

RETRY = b"retry: 2000\n\n"
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


# What an entry shows of its notification, as JSON text, by notification id: a stream
# send reaches thousands of channels with one notification, rendered once. A sent
# notification's fields never change; the cache is cleared when it grows.
_SHARED: dict[str, str] = {}
_SHARED_MAX = 256
# The entry's own fields, written per entry.
_OWN = frozenset({"id", "deliveredAt", "readAt", "replaces"})


def frame(item: InboxItem, quiet: bool = False) -> bytes:
    """The `notification` event of an entry; its id is what a client resumes from."""
    entry = item.entry
    shared = _SHARED.get(entry.notification_id)
    if shared is None:
        data = to_json(InboxEntryView.of(item))
        shared = _COMPACT.encode({k: v for k, v in data.items() if k not in _OWN})[1:-1]
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        _SHARED[entry.notification_id] = shared
    read = "null" if entry.read_at is None else f'"{_stamp(entry.read_at)}"'
    own = f'"deliveredAt":"{_stamp(entry.delivered_at)}","readAt":{read}'
    if quiet:
        # Inside the person's quiet hours: an open app shows it without a sound.
        own += ',"quiet":true'
    replaces = entry.replaces
    if replaces is None:
        own += ',"replaces":null'
        data_line = f'{{"id":"{entry.id}",{shared},{own}}}'
        return f"id: {entry.id}\nevent: notification\ndata: {data_line}\n\n".encode()
    old = _COMPACT.encode(replaces)
    data_line = f'{{"id":"{entry.id}",{shared},{own},"replaces":{old}}}'
    # A replacement: the old entry leaves every open channel, then the new one comes.
    return (
        f'event: withdrawn\ndata: {{"ids":[{old}]}}\n\n'
        f"id: {entry.id}\nevent: notification\ndata: {data_line}\n\n"
    ).encode()


@functools.lru_cache(maxsize=64)
def _stamp(at: datetime) -> str:
    # A stream send's entries share their time: formatted once, not per channel.
    return format_timestamp(at)


def change_frame(change: object) -> bytes:
    """A `read` or `dismissed` event: no id, so the client's resume point stays."""
    if isinstance(change, Read):
        name, view = "read", to_json(ReadEventView(change.ids, change.unread))
    elif isinstance(change, Withdrawn):
        name, view = "withdrawn", to_json(WithdrawnEventView(change.ids))
    else:
        name, view = "dismissed", to_json(DismissedEventView(getattr(change, "id", "")))
    return f"event: {name}\ndata: {_COMPACT.encode(view)}\n\n".encode()


class EventStream(StreamingResponse):
    """A channel's response: the channel is forgotten however the response ends,
    also when the client left before its first byte."""

    def __init__(self, hub: LiveHub, channel: Channel, content: AsyncIterator[bytes]) -> None:
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self._hub, self._channel = hub, channel

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._hub.forget(self._channel)


async def _events(
    hub: LiveHub,
    channel: Channel,
    clock: Clock,
    until: datetime | None,
    resumed: bool,
    recipients: RecipientService,
) -> AsyncIterator[bytes]:
    yield RETRY
    async for event in follow(hub, channel, clock, until, resumed):
        if event is KEEPALIVE:
            yield b": keepalive\n\n"
        elif isinstance(event, InboxItem):
            account = event.entry.account_id
            settings = await batch_of(recipients).of(account)
            priority = event.notification.priority
            yield frame(event, settings.is_quiet(event.entry.delivered_at, priority))
        else:
            yield change_frame(event)


routes = Endpoints("Inbox")
_STREAM = {
    "type": "string",
    "description": "`retry: 2000` first; then per entry `id:`, `event: notification` and "
    '`data:` (an InboxEntry, with `"quiet": true` when it falls inside the person\'s '
    "quiet hours or snooze); `event: read` (ReadEvent) and `event: dismissed` "
    "(DismissedEvent) and `event: withdrawn` (WithdrawnEvent) without an id; a "
    "`: keepalive` comment at least every 15 s.",
    "x-event-data": {
        "notification": ref(InboxEntryView),
        "read": ref(ReadEventView),
        "dismissed": ref(DismissedEventView),
        "withdrawn": ref(WithdrawnEventView),
    },
}
_RESUME = {"name": "Last-Event-ID", "in": "header", "schema": ENTRY_ID}
_RESUME |= {"description": "Replay the entries after this one first, oldest first."}


@routes.get(
    "/api/inbox/events",
    "Follow the inbox live",
    READ,
    answer(200, "Server-sent events.", _STREAM, "text/event-stream") | MALFORMED,
    "New entries, reads and dismissals as they happen. The stream ends when the "
    "credential expires or is revoked; resume with `Last-Event-ID`. At most 20 open "
    "per account (429 beyond).",
    parameters=[
        query("since", "Replay the entries after this one (as `Last-Event-ID`).", ENTRY_ID),
        _RESUME,
    ],
)
async def events(request: Request) -> Response:
    """New entries, reads and dismissals as they happen; ``Last-Event-ID`` (or
    ``?since=``) replays the entries after that one first."""
    services, caller = served(request)
    header = request.headers.get("last-event-id")
    since = request.query_params.get("since") or None
    after = None
    if header or since is not None:
        field, value = ("Last-Event-ID", header) if header else ("since", since or "")
        after = await run_in_threadpool(
            services.inbox.resume_point, caller.account_id, value, field
        )
    until = None
    if caller.key_id is None:
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        until = verified_expiry(token)
    hub = services.live
    address = client_key(request.scope)
    channel = await hub.open(
        caller.account_id, caller.key_id, after, address, session_id=caller.session_id
    )
    stream = _events(hub, channel, services.clock, until, after is not None, services.recipients)
    return EventStream(hub, channel, stream)
