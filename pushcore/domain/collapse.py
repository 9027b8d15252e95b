"""Collapse keys: one key names one thing that changes (API.md, "After sending").

Each platform has its own way to say "this replaces that"; the key is ours,
and these are the rules for carrying it where a platform is stricter.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.revisions import TIMING_FIELDS, merge_patch

COLLAPSE_KEY_MAX = 64
COLLAPSE_KEY = re.compile(rf"[A-Za-z0-9._~-]{{1,{COLLAPSE_KEY_MAX}}}")
# RFC 8030 5.4: a Topic is at most 32 characters of the URL-safe base64 alphabet.
TOPIC_MAX = 32
_TOPIC = re.compile(rf"[A-Za-z0-9_-]{{1,{TOPIC_MAX}}}")


def is_collapse_key(value: str) -> bool:
    """1 to 64 characters of ``A-Z a-z 0-9 . _ ~ -``."""
    return COLLAPSE_KEY.fullmatch(value) is not None


def web_push_topic(key: str) -> str:
    """The Web Push `Topic` of a collapse key: the key itself when it is a valid topic,
    else the first 32 characters of base64url(SHA-256(key))."""
    if _TOPIC.fullmatch(key):
        return key
    digest = base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()).decode()
    return digest[:TOPIC_MAX]


def replacement_request(
    original: Mapping[str, Any], given: object, key: str, now: str
) -> dict[str, Any]:
    """The create request of a replacement: ``original`` (a create request without timing)
    with ``given``'s fields merged in as a PATCH merges them, the collapse ``key``, and
    ``now`` as its time when ``given`` names none. ValidationError for a body that is not
    an object, a field no create takes, two timings, or another collapse key."""
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ValidationError([FieldError("body", "must be a JSON object")])
    if given.get("collapseKey", key) != key:
        raise ValidationError(
            [FieldError("collapseKey", f"a replacement keeps the original's key ({key})")]
        )
    fields = {name: value for name, value in given.items() if name != "collapseKey"}
    merged = merge_patch(original, fields) if fields else dict(original)
    if not any(name in merged for name in TIMING_FIELDS):
        merged["scheduledAt"] = now
    return merged | {"collapseKey": key}
