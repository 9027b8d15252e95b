"""The OpenAPI 3.1 document of the HTTP API, served at /openapi.json.

Made from the endpoints' declarations (:mod:`pushcore_http.endpoints`): each one's path,
method, security (from its credential, the value the route layer enforces), body,
parameters, answers and words. Its schemas are made from the declarations the converter
reads requests into and writes answers from (``pushcore.converter.json_schema``). Written
here is only what the whole document says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pushcore import __version__
from pushcore.converter import components
from pushcore.converter import example as example_of
from pushcore.domain import errors as e
from pushcore_http.answers import JSON, RETRY_AFTER, SHARED, Json, merge, ref, refusal, shared
from pushcore_http.auth import Accepts, Declared
from pushcore_http.body import MAX_BODY_BYTES, TEXT_MEDIA_TYPES
from pushcore_http.endpoints import Endpoint
from pushcore_http.openapi import idempotency

_DESCRIPTION = """\
Scheduled push notifications for self-hosters: APNs, FCM, Web Push and webhooks, with streams \
(channels people subscribe to by a short code).

Bodies are JSON with camelCase names; timestamps are ISO 8601 in UTC with milliseconds and a \
`Z` (input timestamps may carry any offset, and fall within the years 1 to 9999 in UTC). Ids \
are opaque, prefixed and sort by creation. Integers are written without a fraction (`3`, not \
`3.0`). Unknown fields are refused so that typos are caught.

Every error is `{"error": "<message>", "code": "<code>"}`; validation errors add `details` \
listing every invalid field. Besides the answers listed per operation, any path answers 404 \
`not_found` when unknown and 405 `method_not_allowed` (with `Allow`) for a method it does not \
take; a 500 `internal_error` is always a bug.

Credentials: a user JWT (`Authorization: Bearer`) or an API key (`X-API-Key`) with scopes; \
each operation lists which it takes and, for a key, the scope."""

TAGS = {
    "API keys": "Create, list and revoke API keys (JWT only).",
    "Devices": "Devices that receive notifications.",
    "Notifications": "Schedule, inspect and cancel.",
    "Streams": "Channels shared by a code.",
    "People": "Sign-in, sessions and the signed-in account.",
    "Single sign-on": "Sign-in with the OpenID provider, when configured.",
    "Inbox": "What reached the account, and its live channel.",
    "Event webhooks": "Signed events POSTed to the sender's endpoints (Standard Webhooks).",
    "Events": "The account's event log.",
    "Operations": "Health, metrics and this document.",
}
"""Each endpoint is listed under one of these (its :class:`Endpoints`' tag), in this order."""

SECURITY_SCHEMES: Json = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": (
            "A user token: `Authorization: Bearer <jwt>`. `sub` is the account id, `exp` is "
            "required; `iss` and `aud` are checked when configured. An account is created on "
            "first use of a valid token. `pushctl token issue ACCOUNT` prints one, and a sign-in "
            "(`POST /api/auth/login`) answers one. A JWT has "
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


# The answers shared by name (components/responses): see answers.SHARED.
_SHARED_ANSWERS = merge(
    refusal(e.ValidationError([e.FieldError("title", "must be 1 to 200 characters")])),
    refusal(e.InvalidJson("Malformed JSON: Expecting value")),
    refusal(
        e.Unauthorized("API key missing required scope: notifications:write"),
        headers={"WWW-Authenticate": {"schema": {"type": "string"}, "example": "Bearer"}},
    ),
    refusal(e.NotFound("Notification not found")),
    refusal(
        e.UnsupportedMediaType("Content-Type must be application/json, not 'text/plain'"),
        "The body is not JSON: a Content-Type other than `application/json` (or "
        "`application/*+json`, or none), or a charset other than UTF-8.",
    ),
    refusal(
        e.RateLimited("Rate limit exceeded: at most 100 requests per second", 1),
        "Too many requests: the account is over its rate limit (`PUSHCORE_RATE_LIMIT`, per "
        "second, bursts of `PUSHCORE_RATE_LIMIT_BURST`), or this address has failed to "
        "authenticate too often. Wait `Retry-After` seconds.",
        headers=RETRY_AFTER,
    ),
    refusal(
        e.Unavailable("The database cannot be reached; try again shortly", 2),
        "The database cannot serve now (down, locked, disk full): nothing was stored. Retry"
        " after `Retry-After` seconds.",
        headers=RETRY_AFTER,
    ),
    refusal(
        e.PayloadTooLarge(f"Request body must be at most {MAX_BODY_BYTES} bytes"),
        f"The body is over {MAX_BODY_BYTES // 1024} KiB.",
    ),
)
ERROR_RESPONSES = {SHARED[status]: answer for status, answer in _SHARED_ANSWERS.items()}


def security_of(credential: Declared) -> list[Json]:
    """The security requirement of an endpoint that takes ``credential``."""
    jwt: Json = {"bearerAuth": []}
    key: Json = {"apiKeyAuth": [credential.scope.value] if credential.scope else []}
    required = {
        None: [],
        Accepts.USER: [jwt],
        Accepts.KEY: [key],
        Accepts.EITHER: [jwt, key],
    }[credential.accepts]
    # The empty requirement: OpenAPI's way to say the credential may be left out.
    return [*required, {}] if credential.optional else required


def error_schema(codes: list[str]) -> Json:
    """The one error shape, whose code is one of ``codes``."""
    return {
        "type": "object",
        "properties": {
            "error": {"type": "string", "description": "A message for people."},
            "code": {"type": "string", "enum": codes, "description": "A code for programs."},
            "details": {
                "type": "array",
                "items": ref(e.FieldError),
                "description": "On `validation_error`: every invalid field, not just the first.",
            },
        },
        "required": ["error", "code"],
        "additionalProperties": False,
        "description": "The one error shape of every failure.",
    }


_NOT_ID = {"code": "The stream's code."}
# One-line publishing (`curl -d "Backup done" URL`): the first line is the title.
_TEXT = {
    "schema": {"type": "string", "minLength": 1},
    "example": "Backup done\nAll 3 volumes copied.",
}


def operation(endpoint: Endpoint) -> Json:
    """The operation of one endpoint, with the answers its path, body and credential bring."""
    security = security_of(endpoint.credential)
    op: Json = {"tags": [endpoint.tag], "summary": endpoint.summary, "security": security}
    op |= {"description": endpoint.description} if endpoint.description else {}
    names = re.findall(r"\{(\w+)\}", endpoint.path)
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        | {"description": _NOT_ID.get(name, f"The {name.removesuffix('_id')}'s id.")}
        for name in names
    ] + list(endpoint.parameters)
    body = endpoint.body
    if body is not None:
        request = {"schema": ref(body), "example": example_of(body)}
        content = {JSON: request} | (
            dict.fromkeys(TEXT_MEDIA_TYPES, _TEXT) if endpoint.text_body else {}
        )
        op["requestBody"] = {"required": True, "content": content}
    answers = [
        shared("404") if names else {},
        shared("400", "413", "415") if body else {},
        shared("401", "429", "503") if security else {},
        endpoint.answers,
    ]
    if endpoint.method == "POST" and endpoint.credential.accepts and endpoint.credential.idempotent:
        parameters.append(idempotency.REFERENCE)
        answers.append(idempotency.ANSWERS)
    op |= {"parameters": parameters} if parameters else {}
    return op | {"responses": merge(*answers)}


def _codes(paths: Json) -> set[str]:
    """The codes of the error bodies the answers of ``paths`` show, shared ones included."""
    ops = [op for item in paths.values() for op in item.values()]
    answers = [*ERROR_RESPONSES.values(), *(a for op in ops for a in op["responses"].values())]
    media = [m for a in answers for m in a.get("content", {}).values()]
    return {x["value"]["code"] for m in media for x in m.get("examples", {}).values()}


def document_of(endpoints: Iterable[Endpoint]) -> Json:
    """A fresh copy of the whole document of ``endpoints`` (those with a tag), by tag."""
    order = {tag: place for place, tag in enumerate(TAGS)}
    listed = sorted((e for e in endpoints if e.tag is not None), key=lambda e: order[str(e.tag)])
    paths: Json = {}
    written: Json = {}
    for endpoint in listed:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation(endpoint)
        for name, schema in endpoint.schemas.items():
            assert written.setdefault(name, schema) == schema, f"two schemas named {name}"
    document: Json = {
        "openapi": "3.1.0",
        "info": {
            "title": "pushcore",
            "version": __version__,
            "description": _DESCRIPTION,
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "tags": [{"name": tag, "description": about} for tag, about in TAGS.items()],
        "paths": paths,
        "components": {
            "responses": ERROR_RESPONSES,
            "parameters": {idempotency.PARAMETER["name"]: idempotency.PARAMETER},
            "securitySchemes": SECURITY_SCHEMES,
        },
    }
    # The codes the answers show, and two any path may: a method it does not take, a bug.
    errors = error_schema([*sorted(_codes(paths)), "method_not_allowed", "internal_error"])
    # Named and copied: the shared parts are module constants a caller must not change.
    document, schemas = components(document, {"Error": errors} | written)
    document["components"]["schemas"] = dict(sorted(schemas.items()))
    return document
