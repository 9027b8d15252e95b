"""What an endpoint declares its answers with (:mod:`pushcore_http.endpoints`): its views,
and its refusals built from the error tree (each at the status the HTTP error map gives it,
its message the example). The OpenAPI document (:mod:`pushcore_http.openapi`) lists them."""

from __future__ import annotations

import inspect
from typing import Any

from pushcore.converter import DeletedView
from pushcore.domain import errors as e
from pushcore_http.errors import status_for

Json = dict[str, Any]
JSON = "application/json"


def ref(target: str | type[Any]) -> Json:
    """A reference to a component schema: by name, or by the class it is made from."""
    return {"$ref": f"#/components/schemas/{target}" if isinstance(target, str) else target}


def refusal(error: e.PushcoreError, about: str = "", headers: Json | None = None) -> Json:
    """``{status: answer}``: how the API answers ``error`` (its status from the HTTP error
    map, said as the class's docstring or ``about``), with its body as the example."""
    body: Json = {"error": error.message, "code": error.code}
    if isinstance(error, e.ValidationError):
        body["details"] = [{"field": d.field, "message": d.message} for d in error.details]
    answer: Json = {
        "description": about or inspect.getdoc(type(error)) or "",
        "content": {JSON: {"schema": ref("Error"), "examples": {error.code: {"value": body}}}},
    }
    return {str(status_for(error)): answer | ({"headers": headers} if headers else {})}


def merge(*answers: Json) -> Json:
    """Answers by status, later ones added: an answer of its own wins over a shared one (a
    reference); two of their own become one, with both descriptions and examples."""
    merged: Json = {}
    for status, answer in (item for more in answers for item in more.items()):
        known = merged.get(status)
        if known is None or "$ref" in known:
            merged[status] = answer
        elif "$ref" not in answer:
            media, extra = known["content"][JSON], answer["content"][JSON]
            examples = media.get("examples", {}) | extra.get("examples", {})
            merged[status] = {
                "description": f"{known['description']} Or: {answer['description']}",
                "content": {JSON: media | {"examples": examples}},
            }
    return dict(sorted(merged.items()))


# The answers any operation may give, by the name they are shared under: with a body,
# with credentials, with an id in the path.
SHARED = {
    "400": "BadRequest",
    "401": "Unauthorized",
    "404": "NotFound",
    "413": "PayloadTooLarge",
    "415": "UnsupportedMediaType",
    "429": "RateLimited",
    "503": "Unavailable",
}
RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer", "minimum": 1}, "description": "Wait."}}


def shared(*statuses: str) -> Json:
    """References to the shared answers of ``statuses``."""
    return {s: {"$ref": f"#/components/responses/{SHARED[s]}"} for s in statuses}


def answer(status: int, description: str, schema: Json | type[Any], *media: str) -> Json:
    """``{status: answer}``: an answer of ``schema`` (or of the class it is made from), in
    JSON unless ``media`` says otherwise."""
    content = {"schema": schema if isinstance(schema, dict) else ref(schema)}
    by_type = dict.fromkeys(media or (JSON,), content)
    return {str(status): {"description": description, "content": by_type}}


def query(name: str, description: str, schema: Json) -> Json:
    """A query parameter."""
    return {"name": name, "in": "query", "schema": schema, "description": description}


def listing(what: str, schema: type[Any]) -> Json:
    """The answer of a GET that lists the caller's ``what``: an array of ``schema``."""
    return answer(200, f"The caller's {what}.", {"type": "array", "items": ref(schema)})


def removal(what: str) -> Json:
    """The ``{success: true, id}`` answer of a DELETE."""
    return answer(200, f"The {what} is gone (or revoked): `{{success: true, id}}`.", DeletedView)
