"""A notification's content is rendered once: the inbox entry (page and live `entry`
event) and the neutral delivery payload (webhook body, Web Push cleartext) say the same."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pushcore.converter import ContentView, DeliveryPayloadView, InboxEntryView, to_json
from pushcore.converter._base import camel
from pushcore.domain.inbox import InboxEntry, InboxItem
from pushcore.domain.model import IconStyle, Priority, Sound, StreamRef
from tests.gateways.support import notification

text = st.text(max_size=40)
maybe = st.none() | text
streams = st.none() | st.builds(StreamRef, id=st.just("str_1"), name=text, code=text)


@given(
    title=text,
    body=text,
    metadata=st.dictionaries(text, text, max_size=3),
    sender_name=maybe,
    sender_icon=maybe,
    stream=streams,
    icon_style=st.sampled_from(IconStyle),
    sound=st.sampled_from(Sound),
    priority=st.sampled_from(Priority),
)
def test_the_inbox_entry_and_the_payload_say_the_same(**fields: object) -> None:
    n = notification("ntf_1", **fields)  # type: ignore[arg-type]
    at = datetime(2026, 11, 26, tzinfo=UTC)
    entry = to_json(InboxEntryView.of(InboxItem(InboxEntry(1, "inb_1", "acc_1", n.id, at), n)))
    payload = to_json(DeliveryPayloadView.of(n))
    shared = [camel(f.name) for f in attrs.fields(ContentView)]
    assert {k: entry[k] for k in shared} == {k: payload[k] for k in shared}
    assert payload["notificationId"] == entry["notificationId"] == n.id
    if n.stream is None:
        assert payload["stream"] is entry["stream"] is None
    else:
        assert payload["stream"] == {"name": n.stream.name, "code": n.stream.code}
        assert entry["stream"] == payload["stream"] | {"id": n.stream.id}
    # A custom sender only when one is set, a missing half null (API.md, Delivery payloads).
    if n.sender_name is None and n.sender_icon is None:
        assert payload["sender"] is None
    else:
        assert payload["sender"] == {"name": n.sender_name, "icon": n.sender_icon}


def test_the_payload_has_exactly_api_mds_fields() -> None:
    payload = to_json(DeliveryPayloadView.of(notification()))
    assert set(payload) == {
        "notificationId",
        "title",
        "body",
        "iconStyle",
        "sound",
        "priority",
        "metadata",
        "sender",
        "stream",
        "scheduledAt",
        # API.md, "After sending": what a replacement needs (expiresAt: the expiry's).
        "event",
        "collapseKey",
        "revision",
        "renotify",
        "receipt",
        "expiresAt",
    }
    assert payload["event"] == "notification"
    assert payload["receipt"] is None
