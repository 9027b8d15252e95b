"""OpenAPI of the Idempotency-Key header that every POST under /api/ takes."""

from __future__ import annotations

from pushcore.domain.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from pushcore.domain.idempotency import HEADER, KEY_MAX
from pushcore_http.idempotency import REPLAYED_HEADER
from pushcore_http.openapi._common import Json, merge, refusal

PARAMETER: Json = {
    "name": HEADER,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": f"^[\\x21-\\x7e]{{1,{KEY_MAX}}}$"},
    "description": (
        "Makes a retry safe: the first answer (status and body) is kept for 24 hours per "
        "account and key, and the same key with the same method, path and body gets it "
        f"again with `{REPLAYED_HEADER}: true`, creating nothing. A 5xx, a 429 or a "
        "request cut short is not kept (the key is free again). 1 to 255 visible ASCII "
        "characters (a 400 otherwise); a UUID per logical request is typical."
    ),
}
UNKEYED = "/api/auth/"
"""The POSTs declared ``idempotent=False`` or public: sign-in and sessions
(pushcore_http/routes/people.py; tests/http/test_layers.py holds the two to each other)."""
_IN_USE = IdempotencyKeyInUse(
    "A request with this Idempotency-Key is still being handled; retry later"
)
_REUSED = IdempotencyKeyReused("This Idempotency-Key was already used with a different request")


def add_to_posts(paths: Json) -> None:
    """Give every POST under /api/ (but /api/auth/) the header and its 409 and 422 answers."""
    for path, item in paths.items():
        op = item.get("post")
        if op is None or not path.startswith("/api/") or path.startswith(UNKEYED):
            continue
        op.setdefault("parameters", []).append({"$ref": f"#/components/parameters/{HEADER}"})
        reused = "The Idempotency-Key was used in the last 24 hours for another request."
        op["responses"] = merge(op["responses"], refusal(_IN_USE), refusal(_REUSED, reused))
