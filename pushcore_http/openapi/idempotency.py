"""OpenAPI of the Idempotency-Key header that every POST under /api/ takes."""

from __future__ import annotations

from pushcore.domain.idempotency import HEADER, KEY_MAX
from pushcore_http.idempotency import REPLAYED_HEADER
from pushcore_http.openapi._common import Json, error_example, ref

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
IN_USE = error_example(
    "A request with this Idempotency-Key is still being handled; retry later",
    "idempotency_key_in_use",
)
REUSED: Json = {
    "description": "The Idempotency-Key was used in the last 24 hours for another request.",
    "content": {
        "application/json": {
            "schema": ref("Error"),
            "example": error_example(
                "This Idempotency-Key was already used with a different request",
                "idempotency_key_reused",
            ),
        }
    },
}


def add_to_posts(paths: Json) -> None:
    """Give every POST under /api/ the header and its 409 and 422 answers."""
    for path, item in paths.items():
        op = item.get("post")
        if op is None or not path.startswith("/api/"):
            continue
        op.setdefault("parameters", []).append({"$ref": f"#/components/parameters/{HEADER}"})
        answers = op["responses"]
        conflict = answers.get("409")
        if conflict is None:
            answers["409"] = {
                "description": "The request with this Idempotency-Key is still being handled.",
                "content": {"application/json": {"schema": ref("Error"), "example": IN_USE}},
            }
        else:
            conflict["description"] += " Or: the Idempotency-Key is in use."
            conflict["content"]["application/json"]["examples"][IN_USE["code"]] = {"value": IN_USE}
        answers["422"] = REUSED
        op["responses"] = dict(sorted(answers.items()))
