"""API keys as API JSON."""

from __future__ import annotations

from typing import Any

from pushcore.converter._base import maybe_timestamp
from pushcore.domain.model import ApiKey
from pushcore.domain.timefmt import format_timestamp


def api_key_created_json(key: ApiKey, secret: str) -> dict[str, Any]:
    """The creation response: the only place the full key ever appears."""
    return {
        "id": key.id,
        "name": key.name,
        "key": secret,
        "keyPrefix": key.key_prefix,
        "scopes": [s.value for s in key.scopes],
        "expiresAt": maybe_timestamp(key.expires_at),
        "createdAt": format_timestamp(key.created_at),
    }


def api_key_json(key: ApiKey) -> dict[str, Any]:
    """A key in a list: masked to its prefix."""
    return {
        "id": key.id,
        "name": key.name,
        "keyPrefix": key.key_prefix,
        "scopes": [s.value for s in key.scopes],
        "expiresAt": maybe_timestamp(key.expires_at),
        "isActive": key.is_active,
        "lastUsedAt": maybe_timestamp(key.last_used_at),
        "createdAt": format_timestamp(key.created_at),
    }
