"""request_json: the create request a stored notification says (a PATCH's merge base)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from pushcore.converter import request_json, structure_request
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import IconStyle, Notification, Priority, Sound
from pushcore.domain.states import NotificationStatus

T0 = datetime(2026, 11, 27, 21, 0, tzinfo=UTC)
PLAIN = Notification(
    id="ntf_01",
    account_id="acc_a",
    title="Deploy finished",
    body="build 1234 is live",
    icon_style=IconStyle.BELL,
    sound=Sound.DEFAULT,
    priority=Priority.NORMAL,
    delay="1h",
    custom_delay=None,
    target_device_token=None,
    metadata={},
    scheduled_at=T0 + timedelta(hours=1),
    sender_name=None,
    sender_icon=None,
    status=NotificationStatus.QUEUED,
    created_at=T0,
    devices_targeted=1,
)


def test_unset_fields_and_the_timing_are_left_out_and_enums_are_their_values() -> None:
    assert request_json(PLAIN) == {
        "title": "Deploy finished",
        "body": "build 1234 is live",
        "iconStyle": "bell",
        "sound": "default",
        "priority": "normal",
        "metadata": {},
        "renotify": True,
    }
    # In the order of the request's fields: a merged request reads as a create's.
    assert list(request_json(PLAIN)) == [
        "title",
        "body",
        "iconStyle",
        "sound",
        "priority",
        "metadata",
        "renotify",
    ]


def test_a_ttl_is_given_back_without_the_expiry_it_made_and_metadata_is_a_copy() -> None:
    stored = attrs.evolve(
        PLAIN,
        metadata={"build": "1234"},
        sender_name="CI bot",
        ttl=600,
        expires_at=T0 + timedelta(hours=1, minutes=10),
    )
    found = request_json(stored)
    assert found["ttl"] == 600
    assert "expiresAt" not in found
    assert found["senderName"] == "CI bot"
    assert found["metadata"] == {"build": "1234"}
    assert found["metadata"] is not stored.metadata
    # Without a ttl, a given expiry is kept as a timestamp.
    given = request_json(attrs.evolve(PLAIN, expires_at=T0 + timedelta(hours=2)))
    assert given["expiresAt"] == "2026-11-27T23:00:00.000Z"
    # Each is a valid create request again.
    structure_request(NewNotification, found)
    structure_request(NewNotification, given)
