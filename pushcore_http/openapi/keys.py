"""OpenAPI of /api/keys (JWT only)."""

from __future__ import annotations

from pushcore.converter import ApiKeyCreatedView, ApiKeyView
from pushcore.domain.inputs import NewApiKey
from pushcore_http.openapi import _common as api


def operations() -> api.Json:
    """The key operations, by method and path."""
    created = api.answer(201, "The key, with its secret (shown this once).", ApiKeyCreatedView)
    return {
        "post /api/keys: Create an API key": api.operation(api.USER, created, body=NewApiKey),
        "get /api/keys: List API keys": api.operation(
            api.USER,
            api.listing("keys", ApiKeyView),
            "Newest first, revoked keys included.",
        ),
        "delete /api/keys/{key_id}: Revoke an API key": api.operation(
            api.USER,
            api.removal("key"),
            "Sets `isActive` to false; the key stays listed and is refused from then on. "
            "Revoking twice answers the same.",
        ),
    }
