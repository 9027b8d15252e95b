"""OpenAPI of the Idempotency-Key header that every POST of an account takes."""

from __future__ import annotations

from pushcore.domain.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from pushcore.domain.idempotency import HEADER, KEY_MAX
from pushcore_http.answers import Json, merge, refusal
from pushcore_http.idempotency import REPLAYED_HEADER

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
REFERENCE: Json = {"$ref": f"#/components/parameters/{HEADER}"}
"""The header, on every POST whose credential is declared idempotent (an account's)."""
_IN_USE = IdempotencyKeyInUse(
    "A request with this Idempotency-Key is still being handled; retry later"
)
_REUSED = IdempotencyKeyReused("This Idempotency-Key was already used with a different request")
_REUSED_ABOUT = "The Idempotency-Key was used in the last 24 hours for another request."
ANSWERS: Json = merge(refusal(_IN_USE), refusal(_REUSED, _REUSED_ABOUT))
"""What the header adds to such a POST's answers: its 409 and 422."""
