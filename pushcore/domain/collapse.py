"""Collapse keys: one key names one thing that changes (API.md, "After sending").

Each platform has its own way to say "this replaces that"; the key is ours,
and these are the rules for carrying it where a platform is stricter.
"""

from __future__ import annotations

import base64
import hashlib
import re

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
