"""The OpenAPI 3.1 document of the HTTP API, served at /openapi.json.

Its schemas are made from the declarations the converter reads requests into and writes
answers from (``pushcore.converter.json_schema``); written here, by resource, is what is said
of each operation. Tests hold it to the app (tests/http/test_openapi*.py).
"""

from __future__ import annotations

from pushcore import __version__
from pushcore.converter import components
from pushcore_http.openapi import (
    devices,
    idempotency,
    inbox,
    keys,
    notifications,
    operations,
    people,
    streams,
)
from pushcore_http.openapi._common import (
    ERROR_RESPONSES,
    SECURITY_SCHEMES,
    Json,
    add_path_parameters,
    error_schema,
)

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

# Each resource under its tag; it gives its operations as {"method /path: Summary": operation}.
_RESOURCES = {
    ("API keys", "Create, list and revoke API keys (JWT only)."): keys,
    ("Devices", "Devices that receive notifications."): devices,
    ("Notifications", "Schedule, inspect and cancel."): notifications,
    ("Streams", "Channels shared by a code."): streams,
    ("People", "Sign-in, sessions and the signed-in account."): people,
    ("Inbox", "What reached the account, and its live channel."): inbox,
    ("Operations", "Health, metrics and this document."): operations,
}


def _codes(paths: Json) -> set[str]:
    """The codes of the error bodies the answers of ``paths`` show, shared ones included."""
    ops = [op for item in paths.values() for op in item.values()]
    answers = [*ERROR_RESPONSES.values(), *(a for op in ops for a in op["responses"].values())]
    media = [m for a in answers for m in a.get("content", {}).values()]
    return {x["value"]["code"] for m in media for x in m.get("examples", {}).values()}


def openapi_document() -> Json:
    """A fresh copy of the whole document."""
    paths: Json = {}
    for (tag, _), resource in _RESOURCES.items():
        for heading, op in resource.operations().items():
            method, _, rest = heading.partition(" ")
            path, _, summary = rest.partition(": ")
            paths.setdefault(path, {})[method] = {"tags": [tag], "summary": summary} | op
    add_path_parameters(paths)
    idempotency.add_to_posts(paths)
    document: Json = {
        "openapi": "3.1.0",
        "info": {
            "title": "pushcore",
            "version": __version__,
            "description": _DESCRIPTION,
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "tags": [{"name": tag, "description": about} for tag, about in _RESOURCES],
        "paths": paths,
        "components": {
            "responses": ERROR_RESPONSES,
            "parameters": {idempotency.PARAMETER["name"]: idempotency.PARAMETER},
            "securitySchemes": SECURITY_SCHEMES,
        },
    }
    # The codes the answers show, and two any path may: a method it does not take, a bug.
    errors = error_schema([*sorted(_codes(paths)), "method_not_allowed", "internal_error"])
    written = {"Error": errors} | devices.schemas() | notifications.schemas() | operations.schemas()
    # Named and copied: the shared parts are module constants a caller must not change.
    document, schemas = components(document, written)
    document["components"]["schemas"] = dict(sorted(schemas.items()))
    return document
