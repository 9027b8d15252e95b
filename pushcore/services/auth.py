"""Who is calling: JWT users and API keys, resolved to a Principal with rights."""

from __future__ import annotations

import enum
import hmac
import logging
import threading
from datetime import datetime, timedelta

import attrs

from pushcore.domain.codes import hash_api_key, is_well_formed_api_key
from pushcore.domain.errors import Unauthorized, Unavailable
from pushcore.domain.model import ApiKey
from pushcore.domain.scopes import Failure, Scope, check_scope
from pushcore.ports import Clock, Store, Transaction, Writes
from pushcore.services.accounts import AccountService
from pushcore.services.revocations import SignedOut
from pushcore.services.tokens import TokenVerifier

log = logging.getLogger("pushcore.auth")

# lastUsedAt is informative; writing it on every request would make every
# authenticated read a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# How long authentication waits for its lastUsedAt write (a group commit: a few
# milliseconds) before it goes on without: the write is best-effort, so a
# database that cannot write (locked, full) neither fails nor slows a request
# by more than this.
TOUCH_WAIT_SECONDS = 0.5

KEY_CACHE_TIME = timedelta(seconds=1)
"""How long a key read from the store answers for it. Revocation in this process
clears its entry at once; another process's revocation is seen within this time."""

KEY_CACHE_MAX_ENTRIES = 10_000

SIGNED_OUT = "this session was signed out; sign in again"


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
    session_id: str | None = None  # a token pushcore signed for a session: that session

    def require(self, scope: Scope) -> None:
        """Raise Unauthorized when an API key lacks ``scope``; users pass."""
        if self.kind is CredentialKind.USER:
            return
        outcome = check_scope(self.scopes, scope)
        if isinstance(outcome, Failure):
            raise Unauthorized(outcome.reason)


class KeyCache:
    """API keys lately read from the store, by hash, each for at most KEY_CACHE_TIME.

    Only keys that exist are kept (any number of well-formed keys can be made up,
    so unknown ones would fill it), and at most KEY_CACHE_MAX_ENTRIES of them.
    """

    def __init__(
        self,
        ttl: timedelta = KEY_CACHE_TIME,
        max_entries: int = KEY_CACHE_MAX_ENTRIES,
    ) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        self._entries: dict[str, tuple[datetime, ApiKey]] = {}
        self._lock = threading.Lock()
        # Bumped by every forget(): a read of the store that began before it may
        # have seen the key still active, and must not be cached.
        self.generation = 0

    def get(self, key_hash: str, now: datetime) -> ApiKey | None:
        """The cached key with this hash, if it was read less than ``ttl`` before ``now``."""
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        # A clock set back makes the age negative: that entry is not trusted either.
        if not timedelta(0) <= now - entry[0] < self._ttl:
            self._entries.pop(key_hash, None)
            return None
        return entry[1]

    def put(self, key: ApiKey, generation: int, now: datetime) -> None:
        """Keep ``key``, read from the store at ``now``, when :attr:`generation` was
        ``generation``."""
        with self._lock:
            if generation != self.generation:
                return
            if len(self._entries) >= self._max_entries:
                self._entries.clear()  # rare, and each entry is only 1 s of reads saved
            self._entries[key.key_hash] = (now, key)

    def forget(self, key_hash: str) -> None:
        """Drop a key whose row changed (revoked), so this process sees it at once."""
        with self._lock:
            self.generation += 1
            self._entries.pop(key_hash, None)


@attrs.define(slots=False, eq=False, repr=False)
class AuthService:
    """Turns credentials into principals."""

    _store: Store
    _writes: Writes
    _clock: Clock
    _verifier: TokenVerifier
    _accounts: AccountService
    _signed_out: SignedOut
    _keys: KeyCache = attrs.field(factory=KeyCache, alias="key_cache")

    def authenticate_token(self, token: str) -> Principal:
        """A user principal for a valid JWT; its account is created on first use. A token
        of a session signed out is refused (Unauthorized("Invalid token"))."""
        account_id, session_id = self._verifier.identify(token)
        if session_id is not None and session_id in self._signed_out:
            raise Unauthorized("Invalid token", hint=SIGNED_OUT)
        self._accounts.ensure(account_id)
        return Principal(account_id, CredentialKind.USER, session_id=session_id)

    def cached_key(self, key: str) -> Principal | None:
        """The principal of ``key`` from the cache, with no I/O (cheap enough for an event
        loop); None when only :meth:`authenticate_key` can tell. Unauthorized as there."""
        # Hashed first: a key the cache holds is a real one, so its checksum (dearer than
        # the hash) is checked only when the cache does not know it.
        key_hash = hash_api_key(key)
        now = self._clock.now()
        stored = self._keys.get(key_hash, now)
        if stored is None:
            self._hash(key)  # Unauthorized for a malformed key, as authenticate_key says
            return None
        return self._principal(stored, key_hash, now)

    def authenticate_key(self, key: str) -> Principal:
        """A key principal for an active, unexpired key; Unauthorized otherwise."""
        key_hash = self._hash(key)
        now = self._clock.now()
        stored = self._keys.get(key_hash, now)
        if stored is not None:
            return self._principal(stored, key_hash, now)
        generation = self._keys.generation
        with self._store.read() as tx:
            stored = tx.api_keys.find_by_hash(key_hash)
        if stored is None or not hmac.compare_digest(stored.key_hash, key_hash):
            raise Unauthorized("Invalid API key")
        threshold = now - LAST_USED_RESOLUTION
        usable = not isinstance(stored.check_usable(now), Failure)
        if usable and (stored.last_used_at is None or stored.last_used_at < threshold):
            self._touch(stored.id, now, threshold)
            stored = attrs.evolve(stored, last_used_at=now)
        # Revoked and expired keys too: a refused key is asked for again and again.
        self._keys.put(stored, generation, now)
        return self._principal(stored, key_hash, now)

    def _touch(self, key_id: str, now: datetime, threshold: datetime) -> None:
        """Write the key's lastUsedAt, best-effort: authentication is a read and must
        work on a database that cannot write. A failed write is tried again on a
        later use (the key's row still says it is due)."""

        def touch(tx: Transaction) -> bool:
            return tx.api_keys.touch_last_used(key_id, now, threshold)

        try:
            self._writes.submit(touch).result(timeout=TOUCH_WAIT_SECONDS)
        except (Unavailable, TimeoutError) as exc:
            log.debug("lastUsedAt of %s not written: %s", key_id, exc or "no commit in time")

    @staticmethod
    def _hash(key: str) -> str:
        # The checksum refuses typos and random guesses without touching the database.
        if not is_well_formed_api_key(key):
            raise Unauthorized("Invalid API key")
        return hash_api_key(key)

    @staticmethod
    def _principal(stored: ApiKey, key_hash: str, now: datetime) -> Principal:
        # Expiry against the clock on every use, so a cached key expires on time.
        if not hmac.compare_digest(stored.key_hash, key_hash):
            raise Unauthorized("Invalid API key")
        outcome = stored.check_usable(now)
        if isinstance(outcome, Failure):
            raise Unauthorized(outcome.reason)
        return Principal(
            stored.account_id, CredentialKind.API_KEY, frozenset(stored.scopes), stored.id
        )
