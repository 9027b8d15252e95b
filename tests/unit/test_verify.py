"""pushcore.webhooks.verify: what a receiver calls; it agrees with the reference
implementation (standardwebhooks) on what is signed and refuses what is not."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook

import pushcore
import pushcore.webhooks
from pushcore.domain.webhooks import signature_headers

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
BODY = b'{"id":"evt_1","type":"webhook.test","timestamp":"2026-11-27T02:00:00.000Z","data":{}}'


def reference_headers(secret: str, at: datetime) -> dict[str, str]:
    """Headers the reference implementation signs."""
    signed = Webhook(secret).sign("evt_1", at, BODY.decode())
    return {
        "Webhook-Id": "evt_1",
        "Webhook-Timestamp": str(int(at.timestamp())),
        "Webhook-Signature": signed,
    }


def test_it_accepts_what_the_reference_signs_and_returns_the_body() -> None:
    headers = reference_headers(SECRET, datetime.now(UTC))
    assert pushcore.webhooks.verify(SECRET, headers, BODY)["type"] == "webhook.test"
    assert pushcore.webhooks.verify(SECRET, headers, BODY.decode())["id"] == "evt_1"


def test_either_of_two_signatures_verifies() -> None:
    now = int(time.time())
    ours = signature_headers(SECRET, "evt_1", now, BODY)
    theirs = signature_headers(OTHER, "evt_1", now, BODY)
    both = {
        **ours,
        "webhook-signature": f"{ours['webhook-signature']} {theirs['webhook-signature']}",
    }
    pushcore.webhooks.verify(SECRET, both, BODY)
    pushcore.webhooks.verify(OTHER, both, BODY)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda h, b: (h, b + b" "), "No webhook-signature matches"),
        (lambda h, b: ({**h, "webhook-id": "evt_2"}, b), "No webhook-signature matches"),
        (
            lambda h, b: ({**h, "webhook-timestamp": str(int(time.time()) - 301)}, b),
            "more than 5 minutes",
        ),
        (lambda h, b: ({k: v for k, v in h.items() if k != "webhook-signature"}, b), "Missing"),
    ],
)
def test_it_refuses_a_changed_body_id_an_old_timestamp_or_no_signature(
    change: object, words: str
) -> None:
    headers = signature_headers(SECRET, "evt_1", int(time.time()), BODY)
    changed_headers, changed_body = change(headers, BODY)  # type: ignore[operator]
    with pytest.raises(pushcore.InvalidSignature, match=words):
        pushcore.webhooks.verify(SECRET, changed_headers, changed_body)


def test_another_secret_is_refused() -> None:
    headers = reference_headers(SECRET, datetime.now(UTC))
    with pytest.raises(pushcore.webhooks.InvalidSignature):
        pushcore.webhooks.verify(OTHER, headers, BODY)
