"""What payloads share: a custom sender as APNs carries it, and cutting text to fit.

The platform-neutral payload itself is a view (pushcore/converter/content.py),
rendered with the inbox entry from one declaration.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from pushcore.domain.model import Notification


def sender_of(notification: Notification) -> dict[str, str | None] | None:
    """``{"name", "icon"}`` when a custom sender is set (a missing half is None), else None."""
    if notification.sender_name is None and notification.sender_icon is None:
        return None
    return {"name": notification.sender_name, "icon": notification.sender_icon}


ELLIPSIS = "…"


def shorten_to_fit(
    texts: MutableMapping[str, Any],
    fields: Sequence[str],
    size: Callable[[], int],
    limit: int,
) -> bool:
    """Cut ``texts[field]`` (each of ``fields`` in turn, ending in an ellipsis) until
    ``size()`` is at most ``limit``; False when even empty ones leave it too large.

    ``size`` measures the whole payload that holds ``texts``, as the platform
    counts it: escapes and multi-byte characters make a character's cost
    vary, so the longest prefix that fits is found by measuring (a binary
    search), not computed.
    """
    if size() <= limit:
        return True
    for field in fields:
        text = texts[field]
        best: str | None = None
        low, high = 0, len(text) - 1
        while low <= high:
            keep = (low + high) // 2
            texts[field] = text[:keep].rstrip() + ELLIPSIS
            if size() <= limit:
                best, low = texts[field], keep + 1
            else:
                high = keep - 1
        if best is not None:
            texts[field] = best
            return True
        texts[field] = ""
        if size() <= limit:
            return True
    return False
