"""API keys as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import CREATED, View, copy_fields, ident, to_json
from pushcore.domain.inputs import EXAMPLE_FUTURE_TIME, NewApiKey
from pushcore.domain.model import ApiKey
from pushcore.domain.scopes import Scope
from pushcore.domain.validation import about

# The fields both views of a key have.
_ID = ident("key", "key")
_NAME = attrs.fields(NewApiKey).name.metadata
_PREFIX = about("The first 12 characters of the key, to recognise it.", example="psk_AbCdEfGh")
_SCOPES = about("What the key may do.", example=["notifications:write"])
_EXPIRES = about("When the key stops working; null: never.", example=EXAMPLE_FUTURE_TIME)


@attrs.frozen
class ApiKeyCreatedView(View):
    """A key just created: the only answer the full key (`key`) ever appears in."""

    id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_NAME)
    key: str = attrs.field(
        metadata=about(
            "The full key: `psk_`, 32 random base62 characters, a 6-character checksum. "
            "Shown in this response only, never again.",
            pattern="^psk_[0-9A-Za-z]{38}$",
            example="psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZW",
        )
    )
    key_prefix: str = attrs.field(metadata=_PREFIX)
    scopes: tuple[Scope, ...] = attrs.field(metadata=_SCOPES)
    expires_at: datetime | None = attrs.field(metadata=_EXPIRES)
    created_at: datetime = attrs.field(metadata=CREATED)

    @classmethod
    def of(cls, key: ApiKey, secret: str) -> ApiKeyCreatedView:
        """The view of a key just created, with its secret."""
        return copy_fields(cls, key, key=secret, scopes=tuple(key.scopes))


@attrs.frozen
class ApiKeyView(View):
    """A key as listed: masked to its prefix."""

    id: str = attrs.field(metadata=_ID)
    name: str = attrs.field(metadata=_NAME)
    key_prefix: str = attrs.field(metadata=_PREFIX)
    scopes: tuple[Scope, ...] = attrs.field(metadata=_SCOPES)
    expires_at: datetime | None = attrs.field(metadata=_EXPIRES)
    is_active: bool = attrs.field(metadata=about("False once revoked."))
    last_used_at: datetime | None = attrs.field(metadata=about("Updated at most once a minute."))
    created_at: datetime = attrs.field(metadata=CREATED)

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
