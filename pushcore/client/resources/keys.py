"""client.keys: API keys (a user token, not a key, manages keys)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pushcore.client._call import Auth, Call, json_body, many, one, path
from pushcore.client._resource import Resource, S_co, endpoint
from pushcore.converter import ApiKeyCreatedView, ApiKeyView, DeletedView
from pushcore.domain.scopes import Scope


def create(
    name: str, scopes: Sequence[Scope | str], *, expires_at: datetime | str | None = None
) -> Call[ApiKeyCreatedView]:
    """Create an API key; the result's ``.key`` is the only time the secret is shown."""
    data = json_body(name=name, scopes=[str(s) for s in scopes], expires_at=expires_at)
    return Call("POST", "/api/keys", Auth.USER, one(ApiKeyCreatedView), data)


def list_() -> Call[list[ApiKeyView]]:
    """Every key of the account, revoked ones included, masked to their prefix."""
    return Call("GET", "/api/keys", Auth.USER, many(ApiKeyView))


def revoke(key_id: str) -> Call[DeletedView]:
    """Revoke a key (revoking twice succeeds too)."""
    return Call("DELETE", path("/api/keys/{}", key_id), Auth.USER, one(DeletedView))


class Keys(Resource[S_co]):
    """``client.keys`` (its methods awaitable on AsyncClient)"""

    create = endpoint(create)
    list = endpoint(list_)
    revoke = endpoint(revoke)
