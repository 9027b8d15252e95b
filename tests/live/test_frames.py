"""The live channel's events as text: an entry's event is its view's JSON exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pushcore.converter import InboxEntryView, to_json
from pushcore.domain.inbox import InboxEntry, InboxItem
from pushcore_http.routes.live import frame
from tests.contract.test_queue_contract import make_notification


def test_entries_of_one_notification_share_its_rendering_and_keep_their_own_fields() -> None:
    shared = make_notification("ntf_1", "a", metadata={"k": 'v\u00e9\n"'}, sender_name="S")
    now = datetime(2026, 11, 26, 1, 2, 3, 456000, tzinfo=UTC)
    for entry in (
        InboxEntry(5, "inb_" + "5" * 32, "a", "ntf_1", now),
        InboxEntry(6, "inb_" + "6" * 32, "b", "ntf_1", now, read_at=now),
    ):
        item = InboxItem(entry, shared)
        lines = frame(item).decode().split("\n")
        assert lines[:2] == [f"id: {entry.id}", "event: notification"]
        assert lines[3:] == ["", ""]
        data = json.loads(lines[2].removeprefix("data: "))
        expected = to_json(InboxEntryView.of(item))
        assert data == expected


def test_a_replacement_withdraws_the_old_entry_first_then_shows_the_new() -> None:
    shared = make_notification("ntf_2", "a", collapse_key="score")
    now = datetime(2026, 11, 26, 1, 2, 3, 456000, tzinfo=UTC)
    old = "inb_" + "7" * 32
    entry = InboxEntry(8, "inb_" + "8" * 32, "a", "ntf_2", now, read_at=now, replaces=old)
    item = InboxItem(entry, shared)
    lines = frame(item, quiet=True).decode().split("\n")
    assert lines[:2] == ["event: withdrawn", 'data: {"ids":["' + old + '"]}']
    assert lines[3:5] == [f"id: {entry.id}", "event: notification"]
    data = json.loads(lines[5].removeprefix("data: "))
    assert data == to_json(InboxEntryView.of(item)) | {"quiet": True}
    assert data["replaces"] == old
    assert lines[6:] == ["", ""]
