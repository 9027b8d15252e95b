"""An event's POST body and signed headers, as the sender writes them.

The body is the JSON of :class:`~pushcore.converter.events.EventView` (what ``GET
/api/events`` lists), built here as one dict and one ``json.dumps`` rather than
through the view and the converter: those were about a seventh of the sender's CPU
per event. The keys, their order and which are left out when null are read from
the view's fields once, at import, so the two stay one shape
(tests/events/test_body.py compares them).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from pushcore.converter import camel
from pushcore.converter._views import JSON_NAME, OMIT_IF_NONE
from pushcore.converter.events import EventDataView
from pushcore.domain.events import Event
from pushcore.domain.timefmt import format_timestamp
from pushcore.domain.webhooks import signature

USER_AGENT = "pushcore-events/1"

# (the event data's key, whether it is left out when null), in the view's order.
_DATA = tuple(
    (f.metadata.get(JSON_NAME, camel(f.name)), bool(f.metadata.get(OMIT_IF_NONE)))
    for f in attrs.fields(EventDataView)
)
_encode = json.JSONEncoder(separators=(",", ":")).encode


def event_body(event: Event) -> bytes:
    """The JSON body of ``event``: ``{id, type, timestamp, data}``."""
    given = event.data
    data: dict[str, Any] = {}
    for key, omitted in _DATA:
        value = given.get(key)
        if value is not None or not omitted:
            data[key] = value
    whole = {
        "id": event.id,
        "type": event.type,
        "timestamp": format_timestamp(event.created_at),
        "data": data,
    }
    return _encode(whole).encode()


def signed_headers(event_id: str, stamp: int, body: bytes, secrets: tuple[str, ...]) -> str:
    """The request's own header lines (each CRLF-ended): Standard Webhooks' three, with
    one signature per secret (two during a rotation), and the content's type."""
    signatures = " ".join([signature(secret, event_id, stamp, body) for secret in secrets])
    return (
        f"Content-Type: application/json\r\nUser-Agent: {USER_AGENT}\r\n"
        f"webhook-id: {event_id}\r\nwebhook-timestamp: {stamp}\r\n"
        f"webhook-signature: {signatures}\r\n"
    )
