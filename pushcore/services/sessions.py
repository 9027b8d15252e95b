"""Sessions: an access token pushcore signs, and a refresh token used once and rotated.

However the person proved who they are (a password today, single sign-on
later), :meth:`SessionService.start` is what signs them in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import timedelta

import attrs

from pushcore.domain.errors import Unauthorized
from pushcore.domain.model import Account, Plan
from pushcore.domain.people import (
    REFRESH_TOKEN_BYTES,
    RefreshToken,
    SessionRevocation,
    hash_refresh_token,
    is_well_formed_refresh_token,
    refresh_token_from,
)
from pushcore.ports import Clock, IdGenerator, Store, Transaction
from pushcore.services.revocations import SignedOut
from pushcore.services.tokens import CLOCK_LEEWAY_SECONDS, TokenIssuer

log = logging.getLogger("pushcore.sessions")

INVALID = "Invalid refresh token"


@attrs.frozen
class Session:
    """What a sign-in or a refresh answers: the two tokens and whose they are."""

    access_token: str = attrs.field(repr=False)
    expires_in: int
    refresh_token: str = attrs.field(repr=False)
    account: Account


@attrs.define(slots=False, eq=False, repr=False)
class SessionService:
    """Starts, refreshes and ends sessions; revokes an account's refresh tokens."""

    _store: Store
    _clock: Clock
    _ids: IdGenerator
    _random_bytes: Callable[[int], bytes]
    _issuer: TokenIssuer
    _access_ttl: timedelta
    _refresh_ttl: timedelta
    _signed_out: SignedOut

    def start(self, account_id: str, tx: Transaction | None = None) -> Session:
        """A new session (a new family of refresh tokens) for whoever proved to be
        ``account_id``, created on the free plan if never seen (as by a first JWT);
        its last sign-in is now. In ``tx`` when given, else in a transaction of its own."""
        if tx is None:
            with self._store.transaction() as own:
                return self.start(account_id, own)
        now = self._clock.now()
        account = tx.accounts.ensure(Account(account_id, Plan.FREE, now))
        tx.accounts.signed_in(account_id, now)
        account = attrs.evolve(account, last_sign_in_at=now)
        first = self._ids.new_id("rtk")
        return self._issue(tx, account, family_id=first, token_id=first)

    def refresh(self, token: str) -> Session:
        """A new pair for a refresh token, which is spent. A token spent already revokes
        its whole family (someone else may hold a copy). Unauthorized when refused."""
        if not is_well_formed_refresh_token(token):
            raise Unauthorized(INVALID)
        now = self._clock.now()
        reused = False
        with self._store.transaction() as tx:
            stored = tx.refresh_tokens.find_by_hash(hash_refresh_token(token))
            if stored is None or stored.revoked_at is not None:
                raise Unauthorized(INVALID)
            if stored.expires_at <= now:
                raise Unauthorized("Refresh token expired")
            if tx.refresh_tokens.spend(stored.id, now):
                account = tx.accounts.get(stored.account_id)
                assert account is not None
                return self._issue(tx, account, stored.family_id, self._ids.new_id("rtk"))
            # Spent before (or by a refresh that just won): theft, or a client that
            # lost the answer; either way the sign-in ends, committed before refusing.
            tx.refresh_tokens.revoke_family(stored.family_id, now)
            self._record(tx, stored.account_id, {stored.family_id})
            reused = True
        if reused:
            self._signed_out.add({stored.family_id})
            log.warning(
                "a spent refresh token of %s was presented again: its sign-in is revoked",
                stored.account_id,
            )
        raise Unauthorized(INVALID)

    def end(self, token: str) -> None:
        """Sign out: revoke every refresh token of the token's sign-in (an unknown or
        spent one too: signing out is never refused), and its access tokens with them."""
        if not is_well_formed_refresh_token(token):
            return
        with self._store.transaction() as tx:
            stored = tx.refresh_tokens.find_by_hash(hash_refresh_token(token))
            if stored is None:
                return
            if tx.refresh_tokens.revoke_family(stored.family_id, self._clock.now()):
                self._record(tx, stored.account_id, {stored.family_id})
        self._signed_out.add({stored.family_id})

    def revoke_all(self, account_id: str, tx: Transaction | None = None) -> Collection[str]:
        """Sign every session of the account out (its password changed): their refresh
        and access tokens; the sessions' ids. In ``tx`` when given: the caller then
        hands the ids to :meth:`signed_out` once it has committed."""
        if tx is None:
            with self._store.transaction() as own:
                ended = self.revoke_all(account_id, own)
            self.signed_out(ended)
            return ended
        ended = tx.refresh_tokens.revoke_account(account_id, self._clock.now())
        self._record(tx, account_id, ended)
        return ended

    def signed_out(self, session_ids: Collection[str]) -> None:
        """Sessions signed out in a transaction that has committed: refused in this
        process at once (in the others within a second)."""
        self._signed_out.add(session_ids)

    def _record(self, tx: Transaction, account_id: str, session_ids: Collection[str]) -> None:
        if not session_ids:
            return
        now = self._clock.now()
        # Past this, every access token of these sessions has expired anyway.
        until = now + self._access_ttl + timedelta(seconds=CLOCK_LEEWAY_SECONDS)
        tx.session_revocations.add(
            [SessionRevocation(sid, account_id, now, until) for sid in sorted(session_ids)]
        )

    def _issue(self, tx: Transaction, account: Account, family_id: str, token_id: str) -> Session:
        now = self._clock.now()
        secret = refresh_token_from(self._random_bytes(REFRESH_TOKEN_BYTES))
        tx.refresh_tokens.add(
            RefreshToken(
                id=token_id,
                account_id=account.id,
                family_id=family_id,
                token_hash=hash_refresh_token(secret),
                created_at=now,
                expires_at=now + self._refresh_ttl,
            )
        )
        access = self._issuer.issue(account.id, self._access_ttl, session_id=family_id)
        return Session(access, int(self._access_ttl.total_seconds()), secret, account)
