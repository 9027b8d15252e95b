"""What an FCM message holds, and what FCM's answers mean (gateways/fcm.py sends).

API.md's FCM mapping: ``data`` holds only strings and there is no ``notification``
block, so the app draws every notification itself; a data map over FCM's 4 KB is
shortened (the body, then the title), not refused. Answers map to outcomes by FCM's
``errorCode``: a dead registration token is TokenInvalid, overload and server errors
are retried (honouring Retry-After), anything else is a permanent failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from pushcore.domain.model import Notification, Priority
from pushcore.domain.outcomes import Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.payload import shorten_to_fit
from pushcore.gateways._http import status_reason

FCM_ERROR_TYPE = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
DEAD_TOKEN_CODES = frozenset({"UNREGISTERED", "SENDER_ID_MISMATCH"})
RETRIED_CODES = frozenset({"QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL"})
# FCM refuses a message whose data (keys and values) is over 4 KB; shortened
# rather than refused, as APNs payloads are.
MAX_DATA = 4096


def message_data(notification: Notification) -> dict[str, str]:
    """The FCM ``data`` map of API.md: every value a string."""
    data = {
        "notificationId": notification.id,
        "title": notification.title,
        "body": notification.body,
        "iconStyle": notification.icon_style.value,
        "sound": notification.sound.value,
        "priority": notification.priority.value,
        "metadata": json.dumps(
            dict(notification.metadata), separators=(",", ":"), ensure_ascii=False
        ),
    }
    if notification.sender_name is not None:
        data["senderName"] = notification.sender_name
    if notification.sender_icon is not None:
        data["senderIcon"] = notification.sender_icon
    if notification.stream is not None:
        data["streamName"] = notification.stream.name
        data["streamCode"] = notification.stream.code
    if notification.collapse_key is not None:
        data["collapseKey"] = notification.collapse_key
    if not notification.renotify:
        # A quiet replacement: the app plays no sound for it.
        del data["sound"]
        data["renotify"] = "false"
    return data


def android_priority(priority: Priority) -> str:
    """``HIGH`` (wakes the device at once) for normal and above, ``NORMAL`` for low."""
    return "NORMAL" if priority is Priority.LOW else "HIGH"


def data_size(data: Mapping[str, str]) -> int:
    """What FCM counts against its 4 KB limit: the UTF-8 bytes of the keys and values."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in data.items())


def fitted_data(notification: Notification, receipt: str | None = None) -> dict[str, str] | Failed:
    """:func:`message_data` (with ``receipt``) within MAX_DATA bytes, the body (then
    title) cut with an ellipsis; Failed when metadata, sender and stream alone leave no
    room."""
    data = message_data(notification)
    if receipt is not None:
        data["receipt"] = receipt
    if shorten_to_fit(data, ("body", "title"), lambda: data_size(data), MAX_DATA):
        return data
    return Failed(
        f"FCM payload too large: metadata, sender and stream alone take {data_size(data)}"
        f" bytes of the {MAX_DATA} allowed"
    )


def fcm_message(
    token: str, data: Mapping[str, str], priority: Priority, ttl: str | None = None
) -> dict[str, Any]:
    """The body POSTed to ``messages:send`` for one device (``ttl``: what is left)."""
    android: dict[str, Any] = {"priority": android_priority(priority)}
    if "collapseKey" in data:
        # FCM keeps only the latest message with this key for an offline device.
        android["collapse_key"] = data["collapseKey"]
    if ttl is not None:
        android["ttl"] = ttl
    return {"message": {"token": token, "data": dict(data), "android": android}}


@attrs.frozen
class FcmAnswer:
    """What an FCM error body says: the FcmError code, the RPC status, the message."""

    error_code: str | None
    status: str | None
    message: str
    about_token: bool  # the complaint concerns the registration token

    @classmethod
    def parse(cls, raw: bytes) -> FcmAnswer:
        """Read ``{"error": {...}}``; anything unreadable gives an empty answer."""
        try:
            error = json.loads(raw)["error"]
            details = [d for d in error.get("details", []) if isinstance(d, dict)]
            codes = [d.get("errorCode") for d in details if d.get("@type") == FCM_ERROR_TYPE]
            fields = [
                violation.get("field")
                for d in details
                if d.get("@type") == BAD_REQUEST_TYPE
                for violation in d.get("fieldViolations", [])
            ]
            message = str(error.get("message", ""))
            status = error.get("status")
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls(None, None, "", about_token=False)
        about_token = "message.token" in fields or "registration token" in message.lower()
        code = codes[0] if codes and isinstance(codes[0], str) else None
        return cls(code, status if isinstance(status, str) else None, message, about_token)


def outcome_of(status: int, answer: FcmAnswer, retry_after: float | None) -> Outcome | None:
    """The outcome of an FCM error answer; None when our access token itself was refused."""
    code = answer.error_code or answer.status or status_reason(status)
    if status == 401 and code != "THIRD_PARTY_AUTH_ERROR":
        return None
    if code in DEAD_TOKEN_CODES or (code == "INVALID_ARGUMENT" and answer.about_token):
        return TokenInvalid(code)
    if code in RETRIED_CODES or status == 429 or status >= 500:
        return Retry(code, retry_after)
    return Failed(code)
