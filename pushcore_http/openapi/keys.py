"""OpenAPI of /api/keys (JWT only)."""

from __future__ import annotations

from pushcore.domain.scheduling import KEY_NAME_MAX
from pushcore.domain.scopes import Scope
from pushcore_http.openapi._common import (
    EXAMPLE_FUTURE_TIME,
    EXAMPLE_TIME,
    USER,
    Json,
    id_of,
    listing,
    nullable,
    obj,
    operation,
    path_param,
    ref,
    response,
    success,
    text,
    timestamp,
)

TAG = "API keys"

_SCOPES: Json = {
    "type": "array",
    "items": {"type": "string", "enum": [s.value for s in Scope]},
    "description": "What the key may do.",
}


def schemas() -> Json:
    """The key schemas."""
    name = text(1, KEY_NAME_MAX, "A label for people.", not_blank=True)
    expires = nullable(timestamp("When the key stops working; null: never.", EXAMPLE_FUTURE_TIME))
    common: Json = {
        "id": id_of("key", "key"),
        "name": name,
        "keyPrefix": {
            "type": "string",
            "description": "The first 12 characters of the key, to recognise it.",
            "examples": ["psk_AbCdEfGh"],
        },
        "scopes": _SCOPES,
        "expiresAt": expires,
    }
    return {
        "NewApiKey": obj(
            {
                "name": name,
                "scopes": {
                    **_SCOPES,
                    "minItems": 1,
                    "description": "At least one known scope; duplicates are removed.",
                },
                "expiresAt": nullable(
                    timestamp(
                        "Optional; must be in the future. Absent or null: never expires.",
                        EXAMPLE_FUTURE_TIME,
                    )
                ),
            },
            required=["name", "scopes"],
        ),
        "ApiKeyCreated": obj(
            {
                **common,
                "key": {
                    "type": "string",
                    "description": (
                        "The full key: `psk_`, 32 random base62 characters, a 6-character "
                        "checksum. Shown in this response only, never again."
                    ),
                    "pattern": "^psk_[0-9A-Za-z]{38}$",
                },
                "createdAt": timestamp("Creation time."),
            }
        ),
        "ApiKey": obj(
            {
                **common,
                "isActive": {"type": "boolean", "description": "False once revoked."},
                "lastUsedAt": nullable(timestamp("Updated at most once a minute.")),
                "createdAt": timestamp("Creation time."),
            },
            description="A key as listed: masked to its prefix.",
        ),
    }


def paths() -> Json:
    """The key operations."""
    key_id = path_param("key_id", "The key's id.")
    return {
        "/api/keys": {
            "post": operation(
                "Create an API key",
                tag=TAG,
                security=USER,
                body=(
                    ref("NewApiKey"),
                    {
                        "name": "deploy-bot",
                        "scopes": ["notifications:write"],
                        "expiresAt": EXAMPLE_FUTURE_TIME,
                    },
                ),
                ok=(201, "The key, with its secret (shown this once).", ref("ApiKeyCreated")),
                example={
                    "id": "key_01JD3V6Q5X8ZK2M4N7P9R0S1T2",
                    "name": "deploy-bot",
                    "key": "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZW",
                    "keyPrefix": "psk_abcdefgh",
                    "scopes": ["notifications:write"],
                    "expiresAt": EXAMPLE_FUTURE_TIME,
                    "createdAt": EXAMPLE_TIME,
                },
            ),
            "get": operation(
                "List API keys",
                tag=TAG,
                security=USER,
                description="Newest first, revoked keys included.",
                ok=listing("keys", "ApiKey"),
            ),
        },
        "/api/keys/{key_id}": {
            "delete": operation(
                "Revoke an API key",
                tag=TAG,
                security=USER,
                description=(
                    "Sets `isActive` to false; the key stays listed and is refused from then "
                    "on. Revoking twice answers the same."
                ),
                parameters=[key_id],
                ok=success("key"),
                responses={404: response("NotFound")},
            ),
        },
    }
