"""The sender's body and signature, written without the view and with a signing key
made once per secret: the same bytes as the API's view of the event, and signatures the
reference library verifies, whatever was signed with the secret before; and the outbox
row's data, encoded by a C encoder made once, is what ``json.dumps`` makes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook

from pushcore.converter import to_json
from pushcore.converter.events import EventView
from pushcore.delivery.event_body import event_body, signed_headers
from pushcore.domain.events import Event
from pushcore.storage.sql.events import _encode

KEYS = [
    "notificationId", "deviceId", "deliveryId", "scheduleId", "endpointId", "status",
    "reason", "missed", "other",
]  # fmt: skip
SECRETS = ["whsec_" + base64.b64encode(bytes([n]) * 24).decode() for n in range(3)]


@given(
    data=st.dictionaries(st.sampled_from(KEYS), st.none() | st.text(max_size=12)),
    at=st.datetimes(timezones=st.just(UTC)),
    notification=st.none() | st.text(min_size=1, max_size=8),
)
def test_the_body_is_the_views_json(
    data: dict[str, str | None], at: datetime, notification: str | None
) -> None:
    event = Event("evt_1", "acct", "delivery.failed", at, data, notification)
    view = json.dumps(to_json(EventView.of(event)), separators=(",", ":")).encode()
    assert event_body(event) == view


@given(st.lists(st.tuples(st.sampled_from(SECRETS), st.binary(max_size=64)), max_size=6))
def test_each_signature_is_the_one_made_from_scratch(signed: list[tuple[str, bytes]]) -> None:
    for secret, body in signed:
        lines = signed_headers("evt_1", 1700, body, (secret,)).split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines if line)
        key = base64.b64decode(secret.removeprefix("whsec_"))
        digest = hmac.new(key, b"evt_1.1700." + body, hashlib.sha256).digest()
        assert headers["webhook-signature"] == "v1," + base64.b64encode(digest).decode()


def test_during_a_rotation_the_reference_verifies_with_either_secret() -> None:
    event = Event("evt_2", "acct", "webhook.test", datetime.now(UTC), {"status": "TEST"})
    body = event_body(event)
    stamp = int(datetime.now(UTC).timestamp())
    lines = signed_headers(event.id, stamp, body, (SECRETS[0], SECRETS[1])).split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if line)
    assert len(headers["webhook-signature"].split()) == 2
    for secret in SECRETS[:2]:
        assert Webhook(secret).verify(body, headers) is not None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), JSON, max_size=6))
def test_the_stored_data_is_json_dumps_compact(data: dict[str, object]) -> None:
    # The outbox row's data, by the encoder made once (storage/sql/events.py).
    assert _encode(data) == json.dumps(data, separators=(",", ":"))
