"""Single sign-on (OpenID Connect): leave for the provider, come back, sign in.

Three calls, each of which any API process on the database can answer (every
piece of a sign-in's state is a row, taken once, see :mod:`pushcore.domain.oidc`):

- :meth:`OidcService.start` makes the round trip's secrets, stores their
  hashes and gives the provider's authorization URL, and the PKCE verifier
  and the browser's own secret for the browser to keep (as does
  :meth:`OidcService.link`, for a signed-in account);
- :meth:`OidcService.finish` takes the round trip back (its state), redeems
  the code at the provider, checks the ID token's nonce, decides the account
  by the provider's identity (``iss``, ``sub``; :func:`landing`), creating
  and binding it on its first sign-in, and leaves a one-time code for the app;
- :meth:`OidcService.exchange` turns that code into a session, in the browser
  that started only.

The provider's legs are coroutines (the HTTP API awaits them, holding no
thread); the database calls run on worker threads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

import attrs
from anyio import to_thread

from pushcore.domain.errors import Unauthorized
from pushcore.domain.model import Account, Plan
from pushcore.domain.oidc import (
    CODE_TTL,
    FLOW_TTL,
    Identity,
    Landing,
    SignInCode,
    SignInError,
    SignInFailed,
    SignInFlow,
    Standing,
    account_from_claims,
    check_email_verified,
    hash_secret,
    identity_from_claims,
    is_well_formed_secret,
    landing,
    matches,
    new_secret,
    safe_next,
)
from pushcore.ports import Clock, IdentityProvider, Random, Store, Transaction
from pushcore.services.sessions import Session, SessionService

log = logging.getLogger("pushcore.oidc")

T = TypeVar("T")

INVALID_CODE = "Invalid or expired sign-in code"
OTHER_BROWSER = "This sign-in code was made for another browser; sign in again here"
# A state longer than any we make is refused without a look in the database.
STATE_MAX = 200
# What a provider's error parameter may add to a log line (it is the provider's text).
ERROR_WORD_MAX = 64


@attrs.frozen
class Departure:
    """Where to send the browser, and the verifier it keeps until it comes back
    (with the round trip's state, by which it finds it again)."""

    url: str
    state: str = attrs.field(repr=False)
    verifier: str = attrs.field(repr=False)
    # The browser's own secret (its cookie): only it may exchange the code.
    browser: str = attrs.field(repr=False)


@attrs.frozen
class Arrival:
    """A finished sign-in: the path to return to, and the one-time code for the app."""

    next_path: str
    code: str = attrs.field(repr=False)
    account_id: str


@attrs.define(slots=False, eq=False, repr=False)
class OidcService:
    """Sign-in with the configured OpenID provider."""

    _store: Store
    _clock: Clock
    _random: Random
    _provider: IdentityProvider
    _sessions: SessionService
    _account_claim: str

    async def start(self, next_path: str | None, browser: str | None) -> Departure:
        """A new round trip returning to ``next_path`` (a path of this site, else the
        app), from the browser holding ``browser`` (its secret; a new one when it has
        none). SignInFailed(provider) when the provider's metadata cannot be had."""
        return await self._depart(next_path, browser, None)

    async def link(self, account_id: str, next_path: str | None, browser: str | None) -> Departure:
        """A round trip that binds the identity the person signs in as at the provider
        to ``account_id`` (the signed-in caller's), then signs into it."""
        return await self._depart(next_path, browser, account_id)

    async def _depart(
        self, next_path: str | None, browser: str | None, link_account: str | None
    ) -> Departure:
        state, nonce, verifier = (new_secret(self._random.randbelow) for _ in range(3))
        # One secret per browser, kept across its sign-ins: two tabs signing in at once
        # must not undo each other's.
        if browser is None or not is_well_formed_secret(browser):
            browser = new_secret(self._random.randbelow)
        # The provider first: when it cannot be reached, nothing is stored.
        url = await self._provider.authorization_url(state, nonce, verifier)
        now = self._clock.now()
        flow = SignInFlow(
            state_hash=hash_secret(state),
            nonce_hash=hash_secret(nonce),
            verifier_hash=hash_secret(verifier),
            next_path=safe_next(next_path),
            created_at=now,
            expires_at=now + FLOW_TTL,
            browser_hash=hash_secret(browser),
            link_account=link_account,
        )
        await self._write(lambda tx: tx.sign_ins.add_flow(flow))
        return Departure(url, state, verifier, browser)

    async def finish(
        self, state: str | None, code: str | None, error: str | None, verifier: str | None
    ) -> Arrival:
        """The end of a round trip: the callback's ``state``, ``code`` and ``error``
        parameters, and the ``verifier`` the browser kept. SignInFailed with the
        reason when it signs nobody in; the round trip is spent either way."""
        if not state or len(state) > STATE_MAX:
            raise SignInFailed(SignInError.STATE, "no state")
        flow = await self._write(lambda tx: tx.sign_ins.take_flow(hash_secret(state)))
        if flow is None:
            raise SignInFailed(SignInError.STATE, "unknown or spent state")
        if error is not None:
            word = "".join(c for c in error[:ERROR_WORD_MAX] if c.isalnum() or c == "_")
            reason = SignInError.DENIED if word == "access_denied" else SignInError.PROVIDER
            raise SignInFailed(reason, f"the provider answered {word!r}")
        flow.check_fresh(self._clock.now())
        # The browser that started holds the verifier: another's callback (a
        # forged or leaked URL) has none, or the wrong one.
        if verifier is None or not matches(verifier, flow.verifier_hash):
            raise SignInFailed(SignInError.STATE, "the round trip began in another browser")
        if not code:
            raise SignInFailed(SignInError.PROVIDER, "the provider sent no code")
        claims = await self._provider.redeem(code, verifier)
        flow.check_nonce(claims)
        check_email_verified(claims, self._account_claim)
        issuer, subject = identity_from_claims(claims)
        claimed = account_from_claims(claims, self._account_claim)
        one_time = new_secret(self._random.randbelow)
        account_id = await self._write(self._land(flow, issuer, subject, claimed, one_time))
        log.info("single sign-on: %s signed in", account_id)
        return Arrival(flow.next_path, one_time, account_id)

    def exchange(self, code: str, browser: str | None) -> Session:
        """A session for the one-time code of a finished sign-in, which is spent;
        Unauthorized when it is unknown, spent or past its minute, or when ``browser``
        (the secret of the browser asking) is not that of the browser that started
        the sign-in (the code is then left for that one)."""
        if not is_well_formed_secret(code):
            raise Unauthorized(INVALID_CODE)
        with self._store.transaction() as tx:
            found = tx.sign_ins.take_code(hash_secret(code))
            if found is None or self._clock.now() >= found.expires_at:
                raise Unauthorized(INVALID_CODE)
            if (
                browser is None
                or not found.browser_hash
                or not matches(browser, found.browser_hash)
            ):
                # Login CSRF: someone's code in a link opened by another person.
                raise Unauthorized(OTHER_BROWSER)
            return self._sessions.start(found.account_id, tx)

    def _land(
        self, flow: SignInFlow, issuer: str, subject: str, claimed: str, code: str
    ) -> Callable[[Transaction], str]:
        now = self._clock.now()

        def land(tx: Transaction) -> str:
            where = landing(
                self._standing(tx, issuer, subject, claimed, flow), claimed, flow.link_account
            )
            try:
                self._settle(tx, where, issuer, subject, now)
            except KeyError:
                # Another sign-in made or bound it in the meantime: this one is the clash.
                raise SignInFailed(SignInError.ACCOUNT_EXISTS, "bound meanwhile") from None
            tx.sign_ins.add_code(
                SignInCode(
                    hash_secret(code), where.account_id, now, now + CODE_TTL, flow.browser_hash
                )
            )
            return where.account_id

        return land

    @staticmethod
    def _standing(
        tx: Transaction, issuer: str, subject: str, claimed: str, flow: SignInFlow
    ) -> Standing:
        bound = tx.sign_ins.bound_account(issuer, subject)
        exists = tx.accounts.get(claimed) is not None
        # Only where the legacy grant decides (no binding, no link, the account there),
        # and only while the account has no password: taken, so that of two
        # identities claiming it at once, one does.
        legacy = (
            bound is None
            and flow.link_account is None
            and exists
            and tx.passwords.get(claimed) is None
            and not tx.sign_ins.is_bound(claimed)
            and tx.sign_ins.take_legacy(claimed)
        )
        return Standing(bound, exists, legacy)

    @staticmethod
    def _settle(tx: Transaction, where: Landing, issuer: str, subject: str, now: datetime) -> None:
        account = Account(where.account_id, Plan.FREE, now)
        if where.create:
            # Created on its first sign-in, on the free plan, as a JWKS token's account is.
            tx.accounts.add(account)
        else:
            tx.accounts.ensure(account)
        if where.bind:
            tx.sign_ins.bind(Identity(issuer, subject, where.account_id, now))

    async def _write(self, work: Callable[[Transaction], T]) -> T:
        def run() -> T:
            with self._store.transaction() as tx:
                return work(tx)

        return await to_thread.run_sync(run)
