"""OpenAPI of /api/inbox and its live channel (a JWT, or a key with notifications:*)."""

from __future__ import annotations

from pushcore import converter as views
from pushcore.domain import errors as e
from pushcore.domain.inputs import ENTRY_ID_PATTERN, InboxRead
from pushcore.domain.scopes import Scope
from pushcore_http.openapi import _common as api

_READ, _WRITE = api.either(Scope.NOTIFICATIONS_READ), api.either(Scope.NOTIFICATIONS_WRITE)
_ID = {"type": "string", "pattern": ENTRY_ID_PATTERN}
_STREAM = {
    "type": "string",
    "description": "`retry: 2000` first; then per entry `id:`, `event: notification` and "
    "`data:` (an InboxEntry); `event: read` (ReadEvent) and `event: dismissed` "
    "(DismissedEvent) without an id; a `: keepalive` comment at least every 15 s.",
    "x-event-data": {
        "notification": api.ref(views.InboxEntryView),
        "read": api.ref(views.ReadEventView),
        "dismissed": api.ref(views.DismissedEventView),
    },
}


def operations() -> api.Json:
    """The inbox operations, by method and path."""
    size = {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
    page = [
        api.query("limit", "Page size.", size),
        api.query("cursor", "The `nextCursor` of the previous page.", _ID),
        api.query("unread", "Only unread entries.", {"type": "boolean", "default": False}),
    ]
    since = api.query("since", "Replay the entries after this one (as `Last-Event-ID`).", _ID)
    resume = {"name": "Last-Event-ID", "in": "header", "schema": _ID}
    resume |= {"description": "Replay the entries after this one first, oldest first."}
    bad = e.ValidationError([e.FieldError("cursor", "must be an inbox entry id (inb_...)")])
    refused = api.refusal(bad, "A malformed limit, cursor or entry id.")
    return {
        "get /api/inbox: List the inbox": api.operation(
            _READ,
            api.answer(200, "One page, and the unread count.", views.InboxPageView) | refused,
            "Newest first. An entry per notification that reached the account (its own when "
            "due, a stream send's when sent to a stream it subscribes to).",
            parameters=page,
        ),
        "post /api/inbox/read: Mark entries read": api.operation(
            _WRITE,
            api.answer(200, "The unread count after.", views.UnreadView),
            "By `ids`, or `upTo` (that entry and every older one). Ids of no entry of "
            "the account are passed over.",
            body=InboxRead,
        ),
        "delete /api/inbox/{entry_id}: Dismiss an entry": api.operation(
            _WRITE, api.removal("entry")
        ),
        "get /api/inbox/events: Follow the inbox live": api.operation(
            _READ,
            api.answer(200, "Server-sent events.", _STREAM, "text/event-stream") | refused,
            "New entries, reads and dismissals as they happen. The stream ends when the "
            "credential expires or is revoked; resume with `Last-Event-ID`. At most 20 open "
            "per account (429 beyond).",
            parameters=[since, resume],
        ),
    }
