"""What expiry and withdrawal change in each gateway's request (API.md, "After sending").

Each gateway is told what is left of a notification's expiry at each attempt,
and a withdrawal delivery carries the withdrawal instead of the notification:
APNs a background push, FCM a data message of `type: withdrawn`, Web Push and
webhook devices the neutral withdrawal body.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pushcore.converter.content import delivery_payload
from pushcore.domain.expiry import WEB_PUSH_DEFAULT_TTL, seconds_left
from pushcore.domain.model import Notification
from pushcore.domain.outcomes import Dispatch
from pushcore.domain.withdraw import collapse_key_of, is_withdrawal, withdrawal_body

# APNs keeps a push with no expiry of its own this long for an offline device.
APNS_DEFAULT_EXPIRATION = 24 * 3600


def apns_expiration(n: Notification, now: datetime) -> bytes:
    """`apns-expiration`: the epoch second after which APNs stops trying."""
    left = seconds_left(n.expires_at, now)
    return str(int(now.timestamp()) + (APNS_DEFAULT_EXPIRATION if left is None else left)).encode()


def apns_withdrawal(n: Notification) -> bytes:
    """The background push that tells an app to take ``n`` back."""
    payload = {
        "aps": {"content-available": 1},
        "withdrawn": {"notificationId": n.id, "collapseKey": collapse_key_of(n)},
    }
    return json.dumps(payload, separators=(",", ":")).encode()


def fcm_ttl(n: Notification, now: datetime) -> str | None:
    """`android.ttl` ("Ns"), or None where it does not expire (FCM's own default)."""
    left = seconds_left(n.expires_at, now)
    return None if left is None else f"{left}s"


def fcm_withdrawal(n: Notification) -> dict[str, str]:
    """The FCM data of a withdrawal: every value a string."""
    data = {"type": "withdrawn", "notificationId": n.id}
    key = collapse_key_of(n)
    if key is not None:
        data["collapseKey"] = key
    return data


def web_push_ttl(n: Notification, now: datetime) -> int:
    """Web Push `TTL`: what is left of the expiry, else a day as before."""
    left = seconds_left(n.expires_at, now)
    return WEB_PUSH_DEFAULT_TTL if left is None else left


def neutral_body(dispatch: Dispatch) -> dict[str, Any]:
    """What a webhook device or a Web Push subscription gets: the payload, or the withdrawal."""
    if is_withdrawal(dispatch.delivery):
        return withdrawal_body(dispatch.notification)
    return delivery_payload(dispatch.notification)


def body_key(dispatch: Dispatch) -> tuple[str, str]:
    """What a batch's encoded bodies are cached by: one per notification and kind."""
    return dispatch.notification.id, dispatch.delivery.kind
