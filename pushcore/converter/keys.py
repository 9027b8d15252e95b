"""API keys as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import View, copy_fields, to_json
from pushcore.domain.model import ApiKey
from pushcore.domain.scopes import Scope


@attrs.frozen
class ApiKeyCreatedView(View):
    """The creation response: the only place the full key ever appears (``key``)."""

    id: str
    name: str
    key: str
    key_prefix: str
    scopes: tuple[Scope, ...]
    expires_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, key: ApiKey, secret: str) -> ApiKeyCreatedView:
        """The view of a key just created, with its secret."""
        return copy_fields(cls, key, key=secret, scopes=tuple(key.scopes))


@attrs.frozen
class ApiKeyView(View):
    """A key in a list: masked to its prefix."""

    id: str
    name: str
    key_prefix: str
    scopes: tuple[Scope, ...]
    expires_at: datetime | None
    is_active: bool
    last_used_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyView:
        """The view of a stored key."""
        return copy_fields(cls, key, scopes=tuple(key.scopes))


def api_key_created_json(key: ApiKey, secret: str) -> dict[str, Any]:
    """The JSON of :class:`ApiKeyCreatedView` (kept for the CLI's ``--json``)."""
    return to_json(ApiKeyCreatedView.of(key, secret))


def api_key_json(key: ApiKey) -> dict[str, Any]:
    """The JSON of :class:`ApiKeyView` (kept for the CLI's ``--json``)."""
    return to_json(ApiKeyView.of(key))
