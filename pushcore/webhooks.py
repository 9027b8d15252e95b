"""For receivers of pushcore's webhooks: check a request came from pushcore.

    import pushcore.webhooks

    def handle(headers, body):
        event = pushcore.webhooks.verify(secret, headers, body)  # raises InvalidSignature
        ...

Event webhooks and webhook devices are signed alike, as Standard Webhooks says
(``webhook-id``, ``webhook-timestamp``, ``webhook-signature``); while a secret is
rotated the signature header holds two signatures, and either verifies.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from pushcore.domain.errors import InvalidSignature
from pushcore.domain.webhooks import PREFIX, TOLERANCE_SECONDS
from pushcore.domain.webhooks import verify as _verified

__all__ = ["InvalidSignature", "verify"]


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    now: float | None = None,
) -> Any:
    """The JSON body, once its signature checks with ``secret``; :class:`InvalidSignature`
    when it does not, or when its timestamp is more than 5 minutes from ``now`` (the
    receiver's clock by default). Header names may be in any case."""
    if not secret.startswith(PREFIX):
        raise InvalidSignature(f"The secret must start with {PREFIX}")
    lowered = {k.lower(): v for k, v in headers.items()}
    missing = [
        h for h in ("webhook-id", "webhook-timestamp", "webhook-signature") if not lowered.get(h)
    ]
    if missing:
        raise InvalidSignature(f"Missing header: {missing[0]}")
    raw = body.encode() if isinstance(body, str) else bytes(body)
    clock = int(time.time() if now is None else now)
    stamp = lowered["webhook-timestamp"]
    if not stamp.isdigit() or abs(clock - int(stamp)) > TOLERANCE_SECONDS:
        raise InvalidSignature("The webhook-timestamp is more than 5 minutes from now")
    if not _verified(secret, lowered, raw, clock):
        raise InvalidSignature("No webhook-signature matches the body and the secret")
    return json.loads(raw)
