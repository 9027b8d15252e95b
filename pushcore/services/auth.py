"""Who is calling: JWT users and API keys, resolved to a Principal with rights."""

from __future__ import annotations

import enum
import hmac
from datetime import timedelta

import attrs

from pushcore.domain.codes import hash_api_key, is_well_formed_api_key
from pushcore.domain.errors import Unauthorized
from pushcore.domain.scopes import Failure, Scope, check_scope
from pushcore.ports import Clock, Store
from pushcore.services.accounts import AccountService
from pushcore.services.tokens import TokenVerifier

# lastUsedAt is informative; writing it on every request would make every
# authenticated read a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class CredentialKind(enum.StrEnum):
    """Which kind of credential a request carried."""

    USER = "user"
    API_KEY = "api_key"


@attrs.frozen
class Principal:
    """An authenticated caller. A user (JWT) has every right of its own account."""

    account_id: str
    kind: CredentialKind
    scopes: frozenset[Scope] = frozenset()
    key_id: str | None = None

    def require(self, scope: Scope) -> None:
        """Raise Unauthorized when an API key lacks ``scope``; users pass."""
        if self.kind is CredentialKind.USER:
            return
        outcome = check_scope(self.scopes, scope)
        if isinstance(outcome, Failure):
            raise Unauthorized(outcome.reason)


class AuthService:
    """Turns credentials into principals."""

    def __init__(
        self, store: Store, clock: Clock, verifier: TokenVerifier, accounts: AccountService
    ) -> None:
        self._store = store
        self._clock = clock
        self._verifier = verifier
        self._accounts = accounts

    def authenticate_token(self, token: str) -> Principal:
        """A user principal for a valid JWT; its account is created on first use."""
        account_id = self._verifier.verify(token)
        self._accounts.ensure(account_id)
        return Principal(account_id, CredentialKind.USER)

    def authenticate_key(self, key: str) -> Principal:
        """A key principal for an active, unexpired key; Unauthorized otherwise."""
        # The checksum refuses typos and random guesses without touching the database.
        if not is_well_formed_api_key(key):
            raise Unauthorized("Invalid API key")
        key_hash = hash_api_key(key)
        with self._store.read() as tx:
            stored = tx.api_keys.find_by_hash(key_hash)
        if stored is None or not hmac.compare_digest(stored.key_hash, key_hash):
            raise Unauthorized("Invalid API key")
        now = self._clock.now()
        outcome = stored.check_usable(now)
        if isinstance(outcome, Failure):
            raise Unauthorized(outcome.reason)
        threshold = now - LAST_USED_RESOLUTION
        if stored.last_used_at is None or stored.last_used_at < threshold:
            with self._store.transaction() as tx:
                tx.api_keys.touch_last_used(stored.id, now, threshold)
        return Principal(
            stored.account_id, CredentialKind.API_KEY, frozenset(stored.scopes), stored.id
        )
