"""Webhook signatures as Standard Webhooks spells them, checked by its reference library."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from pushcore.domain.webhooks import (
    PREFIX,
    SECRET_BYTES,
    TOLERANCE_SECONDS,
    new_secret,
    signature,
    signature_headers,
    verify,
)

NOW = int(datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp())
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_a_secret_is_whsec_and_the_base64_of_24_random_bytes() -> None:
    draws = iter(range(SECRET_BYTES))
    secret = new_secret(lambda n: next(draws) % n)
    assert secret.startswith(PREFIX)
    assert base64.b64decode(secret.removeprefix(PREFIX)) == bytes(range(SECRET_BYTES))


@given(
    text=st.text(max_size=1024),  # a JSON body: UTF-8 text
    message_id=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=40),
    key=st.binary(min_size=SECRET_BYTES, max_size=SECRET_BYTES),
)
def test_the_reference_library_verifies_what_we_sign(
    text: str, message_id: str, key: bytes
) -> None:
    body = text.encode()
    secret = PREFIX + base64.b64encode(key).decode()
    now = int(datetime.now(UTC).timestamp())
    headers = signature_headers(secret, message_id, now, body)
    # verify() raises when the signature, the id or the timestamp does not hold.
    Webhook(secret).verify(body, headers, json_parse=False)
    assert verify(secret, headers, body, now)


def test_our_signature_is_the_references() -> None:
    at = datetime.fromtimestamp(NOW, UTC)
    body = '{"title":"Build passed"}'
    assert signature(SECRET, "dlv_1", NOW, body.encode()) == Webhook(SECRET).sign("dlv_1", at, body)


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"body": b'{"title":"tampered"}'}, "another body"),
        ({"secret": "whsec_" + base64.b64encode(b"x" * 24).decode()}, "another secret"),
        ({"now": NOW + TOLERANCE_SECONDS + 1}, "too old"),
        ({"now": NOW - TOLERANCE_SECONDS - 1}, "from the future"),
    ],
)
def test_a_change_fails_verification_here_and_in_the_reference(
    change: dict[str, object], what: str
) -> None:
    body = b'{"title":"Build passed"}'
    headers = signature_headers(SECRET, "dlv_1", NOW, body)
    secret = str(change.get("secret", SECRET))
    checked = change.get("body", body)
    assert isinstance(checked, bytes)
    now = change.get("now", NOW)
    assert isinstance(now, int)
    assert not verify(secret, headers, checked, now), what
    if "now" not in change:  # the reference checks against the real clock
        fresh = signature_headers(SECRET, "dlv_1", int(datetime.now(UTC).timestamp()), body)
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(checked, fresh, json_parse=False)


def test_missing_headers_do_not_verify() -> None:
    body = b"{}"
    headers = signature_headers(SECRET, "dlv_1", NOW, body)
    for name in headers:
        assert not verify(SECRET, {k: v for k, v in headers.items() if k != name}, body, NOW)
