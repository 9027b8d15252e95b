"""Each gateway's quiet form, for a push inside the recipient's quiet hours in `silent`
mode (API.md, "The recipient's time"): it arrives, and makes no sound."""

from __future__ import annotations

from typing import Any

# APNs: delivered at once, shown without lighting the screen or a sound.
APNS_PRIORITY = b"5"
APNS_LEVEL = "passive"
# FCM: not woken from Doze at once; the app reads `quiet` and posts without a sound.
FCM_PRIORITY = "NORMAL"
FCM_FLAG = "quiet"
# Web Push (RFC 8030 5.3): the push service may wait until the device is awake anyway.
WEB_PUSH_URGENCY = "low"


def quiet_apns_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` (apns_payload's) in its quiet form: passive, without a sound."""
    aps = {k: v for k, v in payload["aps"].items() if k != "sound"}
    aps["interruption-level"] = APNS_LEVEL
    return {**payload, "aps": aps}


def quiet_fcm_message(message: dict[str, Any]) -> dict[str, Any]:
    """An FCM ``messages:send`` body (fcm_message's) in its quiet form."""
    inner = message["message"]
    quiet = {
        **inner,
        "data": {**inner["data"], FCM_FLAG: "true"},
        "android": {**inner["android"], "priority": FCM_PRIORITY},
    }
    return {"message": quiet}
