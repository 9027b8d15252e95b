"""Building blocks of the OpenAPI document: references, credentials, errors, operations."""

from __future__ import annotations

from typing import Any

from pushcore.domain.scopes import Scope

Json = dict[str, Any]

EXAMPLE_TIME = "2026-11-21T10:15:30.123Z"
# For fields that must be in the future (a key's expiresAt): an example copied
# from the docs must be accepted.
EXAMPLE_FUTURE_TIME = "2036-01-01T00:00:00.000Z"

# The error codes of API.md "Conventions": the whole vocabulary a client may see.
ERROR_CODES = (
    "validation_error",
    "invalid_json",
    "unauthorized",
    "plan_limit",
    "own_stream",
    "not_found",
    "device_not_found",
    "method_not_allowed",
    "already_subscribed",
    "not_cancellable",
    "payload_too_large",
    "unsupported_media_type",
    "idempotency_key_reused",
    "idempotency_key_in_use",
    "rate_limited",
    "unavailable",
    "internal_error",
)


def ref(name: str) -> Json:
    """A reference to ``#/components/schemas/<name>``."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Json) -> Json:
    """``schema`` or JSON null (OpenAPI 3.1 is JSON Schema 2020-12: no ``nullable``)."""
    return {"anyOf": [schema, {"type": "null"}]}


def timestamp(description: str, example: str = EXAMPLE_TIME) -> Json:
    """An ISO 8601 UTC timestamp as the API writes it."""
    return {
        "type": "string",
        "format": "date-time",
        "description": description,
        "examples": [example],
    }


def text(low: int, high: int, description: str, *, not_blank: bool = False) -> Json:
    """A string of ``low`` to ``high`` characters."""
    schema: Json = {"type": "string", "minLength": low, "maxLength": high}
    if not_blank:
        schema["pattern"] = r"\S"
        description += " Not only white space."
    schema["description"] = description
    return schema


def http_url(description: str) -> Json:
    """An absolute http(s) URL (the services check more: reachability, content)."""
    return {
        "type": "string",
        "format": "uri",
        "maxLength": 2048,
        "pattern": "^https?://",
        "description": description,
    }


def obj(properties: Json, required: list[str] | None = None, description: str = "") -> Json:
    """A closed object: every property listed, unknown ones refused (as the API does)."""
    schema: Json = {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def id_of(prefix: str, what: str) -> Json:
    """An opaque, creation-sortable id with a type prefix."""
    return {
        "type": "string",
        "description": f"The {what}'s id: opaque, prefixed `{prefix}_`, sorts by creation.",
        "examples": [f"{prefix}_01JD3V6Q5X8ZK2M4N7P9R0S1T2"],
    }


def path_param(name: str, description: str) -> Json:
    """A path parameter (a segment of the path)."""
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": description,
    }


# -- credentials ---------------------------------------------------------------

SECURITY_SCHEMES: Json = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": (
            "A user token: `Authorization: Bearer <jwt>`. `sub` is the account id, `exp` is "
            "required; `iss` and `aud` are checked when configured. An account is created on "
            "first use of a valid token. `pushctl token issue ACCOUNT` prints one. A JWT has "
            "every right of its own account (scopes do not apply)."
        ),
    },
    "apiKeyAuth": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": (
            "An API key `psk_…` created with `POST /api/keys`. Keys carry scopes; the scope "
            "an operation needs is listed in its security requirement (OpenAPI 3.1 lets "
            "non-OAuth schemes name roles there)."
        ),
    },
}

PUBLIC: list[Json] = []
USER: list[Json] = [{"bearerAuth": []}]


def key(scope: Scope) -> list[Json]:
    """An API key with ``scope`` only."""
    return [{"apiKeyAuth": [scope.value]}]


def either(scope: Scope) -> list[Json]:
    """A JWT, or an API key with ``scope``."""
    return [{"bearerAuth": []}, {"apiKeyAuth": [scope.value]}]


# -- errors --------------------------------------------------------------------


def error_example(message: str, code: str, **extra: Any) -> Json:
    """An error body as the API writes it."""
    return {"error": message, "code": code, **extra}


ERROR_SCHEMAS: Json = {
    "Error": obj(
        {
            "error": {"type": "string", "description": "A message for people."},
            "code": {
                "type": "string",
                "enum": list(ERROR_CODES),
                "description": "A stable snake_case code for programs.",
            },
            "details": {
                "type": "array",
                "items": ref("FieldError"),
                "description": "On `validation_error`: every invalid field, not just the first.",
            },
        },
        required=["error", "code"],
        description="The one error shape of every failure.",
    ),
    "FieldError": obj(
        {
            "field": {"type": "string", "description": "The JSON name (or query parameter)."},
            "message": {"type": "string", "description": "What is wrong with it."},
        }
    ),
}


def _error(description: str, *examples: Json, headers: Json | None = None) -> Json:
    response: Json = {
        "description": description,
        "content": {
            "application/json": {
                "schema": ref("Error"),
                "examples": {e["code"]: {"value": e} for e in examples},
            }
        },
    }
    if headers:
        response["headers"] = headers
    return response


ERROR_RESPONSES: Json = {
    "BadRequest": _error(
        "Invalid request: a field has the wrong type, is out of range, unknown or missing; "
        "or the body is not a JSON object.",
        error_example(
            "Invalid request: title",
            "validation_error",
            details=[{"field": "title", "message": "must be 1 to 200 characters"}],
        ),
        error_example("Malformed JSON: Expecting value", "invalid_json"),
    ),
    "Unauthorized": _error(
        "Missing, invalid, revoked or expired credentials, the wrong kind of credential, "
        "or an API key without the required scope.",
        error_example("API key missing required scope: notifications:write", "unauthorized"),
        headers={"WWW-Authenticate": {"schema": {"type": "string"}, "example": "Bearer"}},
    ),
    "NotFound": _error(
        "No such resource in the caller's account (another account's is not found either).",
        error_example("Notification not found", "not_found"),
    ),
    "UnsupportedMediaType": _error(
        "The body is not JSON: a Content-Type other than `application/json` (or"
        " `application/*+json`, or none), or a charset other than UTF-8.",
        error_example(
            "Content-Type must be application/json, not 'text/plain'", "unsupported_media_type"
        ),
    ),
    "RateLimited": _error(
        "Too many requests: the account is over its rate limit (`PUSHCORE_RATE_LIMIT`, per"
        " second, bursts of `PUSHCORE_RATE_LIMIT_BURST`), or this address has failed to"
        " authenticate too often. Wait `Retry-After` seconds.",
        error_example("Rate limit exceeded: at most 100 requests per second", "rate_limited"),
        headers={
            "Retry-After": {
                "schema": {"type": "integer", "minimum": 1},
                "description": "Whole seconds to wait before trying again.",
            }
        },
    ),
    "Unavailable": _error(
        "The database cannot serve now: unreachable, not answering, locked past a short"
        " wait, or unable to write (disk full). Retry after `Retry-After` seconds. Nothing"
        " was stored, unless the database went away while the write's COMMIT was under way.",
        error_example("The database cannot be reached; try again shortly", "unavailable"),
        headers={
            "Retry-After": {
                "schema": {"type": "integer", "minimum": 1},
                "description": "Whole seconds to wait before trying again.",
            }
        },
    ),
    "PayloadTooLarge": _error(
        "The body is over 64 KiB.",
        error_example("Request body must be at most 65536 bytes", "payload_too_large"),
    ),
}


def response(name: str) -> Json:
    """A reference to ``#/components/responses/<name>``."""
    return {"$ref": f"#/components/responses/{name}"}


def error_answer(description: str, message: str, code: str) -> Json:
    """An error answer with one example (a 403, 404 or 409 of one operation)."""
    return _error(description, error_example(message, code))


# -- operations ----------------------------------------------------------------


def json_content(schema: Json, example: Any = None) -> Json:
    """``application/json`` content with ``schema`` (and an example)."""
    media: Json = {"schema": schema}
    if example is not None:
        media["example"] = example
    return {"application/json": media}


def operation(
    summary: str,
    *,
    tag: str,
    security: list[Json],
    ok: tuple[int, str, Json],
    description: str = "",
    body: tuple[Json, Json] | None = None,
    parameters: list[Json] | None = None,
    responses: dict[int, Json] | None = None,
    example: Any = None,
) -> Json:
    """One operation; 400/413 come with a body, 401 with credentials, in one place.

    ``ok`` is (status, description, schema) and ``example`` its body; ``body`` is
    (schema, example): the tests post that example to the app, so it must be
    accepted. ``responses`` adds (or replaces) answers by status.
    """
    status, ok_description, schema = ok
    answers: Json = {
        str(status): {"description": ok_description, "content": json_content(schema, example)}
    }
    if body is not None:
        answers["400"] = response("BadRequest")
        answers["413"] = response("PayloadTooLarge")
        answers["415"] = response("UnsupportedMediaType")
    if security:
        answers["401"] = response("Unauthorized")
        answers["429"] = response("RateLimited")
        answers["503"] = response("Unavailable")
    for code, answer in (responses or {}).items():
        answers[str(code)] = answer
    op: Json = {"tags": [tag], "summary": summary, "security": security}
    if description:
        op["description"] = description
    if parameters:
        op["parameters"] = parameters
    if body is not None:
        body_schema, body_example = body
        op["requestBody"] = {"required": True, "content": json_content(body_schema, body_example)}
    op["responses"] = dict(sorted(answers.items()))
    return op


def listing(what: str, schema: str) -> tuple[int, str, Json]:
    """The answer of a GET that lists the caller's ``what``: an array of ``schema``."""
    return 200, f"The caller's {what}.", {"type": "array", "items": ref(schema)}


def success(what: str) -> tuple[int, str, Json]:
    """The ``{success: true, id}`` answer of a DELETE."""
    return 200, f"The {what} is gone (or revoked): `{{success: true, id}}`.", ref("Success")


SUCCESS_SCHEMA: Json = obj(
    {
        "success": {"const": True},
        "id": {"type": "string", "description": "The id from the path."},
    }
)
