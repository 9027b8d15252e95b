"""The OpenAPI 3.1 document of the HTTP API, served at /openapi.json.

Written by hand, by resource, from the same constants the validators use
(limits, enums, scopes), so the numbers cannot disagree. Tests hold it to the
app: every route and method is documented, every documented operation exists,
its credentials are the ones the app checks, its examples are accepted and the
answers match its schemas (tests/http/test_openapi.py).
"""

from __future__ import annotations

import copy

from pushcore import __version__
from pushcore_http.openapi import (
    batches,
    devices,
    idempotency,
    keys,
    notifications,
    operations,
    streams,
)
from pushcore_http.openapi._common import (
    ERROR_RESPONSES,
    ERROR_SCHEMAS,
    SECURITY_SCHEMES,
    SUCCESS_SCHEMA,
    Json,
)

_RESOURCES = (keys, devices, notifications, batches, streams, operations)

_DESCRIPTION = """\
Scheduled push notifications for self-hosters: APNs, FCM, Web Push and webhooks, \
with streams (channels people subscribe to by a short code).

Bodies are JSON with camelCase names; timestamps are ISO 8601 in UTC with \
milliseconds and a `Z` (input timestamps may carry any offset). Ids are opaque, \
prefixed and sort by creation. Unknown fields are refused so that typos are caught.

Every error is `{"error": "<message>", "code": "<code>"}`; validation errors add \
`details` listing every invalid field. Besides the answers listed per operation, \
any path answers 404 `not_found` when unknown and 405 `method_not_allowed` (with \
`Allow`) for a method it does not take; a 500 `internal_error` is always a bug.

Credentials: a user JWT (`Authorization: Bearer`) or an API key (`X-API-Key`) \
with scopes; each operation lists which it takes and, for a key, the scope."""


def openapi_document() -> Json:
    """A fresh copy of the whole document."""
    paths: Json = {}
    schemas: Json = {**ERROR_SCHEMAS, "Success": SUCCESS_SCHEMA}
    for resource in _RESOURCES:
        paths.update(resource.paths())
        schemas.update(resource.schemas())
    idempotency.add_to_posts(paths)
    document: Json = {
        "openapi": "3.1.0",
        "info": {
            "title": "pushcore",
            "version": __version__,
            "description": _DESCRIPTION,
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "tags": [
            {"name": keys.TAG, "description": "Create, list and revoke API keys (JWT only)."},
            {"name": devices.TAG, "description": "Devices that receive notifications."},
            {"name": notifications.TAG, "description": "Schedule, inspect and cancel."},
            {"name": streams.TAG, "description": "Channels shared by a code."},
            {"name": operations.TAG, "description": "Health, metrics and this document."},
        ],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "responses": ERROR_RESPONSES,
            "parameters": {idempotency.PARAMETER["name"]: idempotency.PARAMETER},
            "securitySchemes": SECURITY_SCHEMES,
        },
    }
    # The shared parts are module constants: a caller must not change them through this.
    return copy.deepcopy(document)


__all__ = ["openapi_document"]
