"""API keys: create (the secret is shown once), list masked, revoke."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from pushcore.domain.codes import api_key_prefix, hash_api_key, new_api_key
from pushcore.domain.errors import FieldError, NotFound, ValidationError
from pushcore.domain.inputs import NewApiKey
from pushcore.domain.model import ApiKey
from pushcore.domain.scopes import normalise_scopes
from pushcore.ports import Clock, IdGenerator, Random, Store
from pushcore.services.auth import KeyCache


@attrs.frozen
class CreatedKey:
    """A new key and its secret: the only moment the secret exists outside the caller."""

    key: ApiKey
    secret: str


@attrs.define(slots=False, eq=False, repr=False)
class KeyService:
    """Use cases on API keys."""

    # Shared with AuthService: a revoked key is refused at once in this process.
    _store: Store
    _clock: Clock
    _ids: IdGenerator
    _random: Random
    _key_cache: KeyCache | None = None

    def create(self, account_id: str, request: NewApiKey) -> CreatedKey:
        """Create a key; only its hash is stored."""
        now = self._clock.now()
        if request.expires_at is not None and request.expires_at <= now:
            raise ValidationError([FieldError("expiresAt", "must be in the future")])
        secret = new_api_key(self._random.randbelow)
        key = ApiKey(
            id=self._ids.new_id("key"),
            account_id=account_id,
            name=request.name,
            key_hash=hash_api_key(secret),
            key_prefix=api_key_prefix(secret),
            scopes=normalise_scopes(request.scopes),
            expires_at=request.expires_at,
            created_at=now,
        )
        with self._store.transaction() as tx:
            tx.api_keys.add(key)
        return CreatedKey(key, secret)

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        with self._store.read() as tx:
            return tx.api_keys.list(account_id)

    def revoke(self, account_id: str, key_id: str) -> ApiKey:
        """Revoke a key of this account (idempotent); NotFound for any other id."""
        with self._store.transaction() as tx:
            key = tx.api_keys.get(account_id, key_id)
            if key is None:
                raise NotFound("API key not found")
            revoked = key.revoked(self._clock.now())
            if revoked is not key:
                tx.api_keys.update(revoked)
        # After the commit: a read that began before it could still see the key active.
        if self._key_cache is not None:
            self._key_cache.forget(revoked.key_hash)
        return revoked
