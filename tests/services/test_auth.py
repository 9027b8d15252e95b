"""AuthService and TokenIssuer as a library: who a key or a token is, and why not.

The messages are API.md's: they are what a 401 says, whatever the front door.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from pushcore import NewApiKey, Plan, Principal, Scope, Services, Unauthorized
from pushcore.domain.codes import api_key_from_random
from pushcore.services import CredentialKind, TokenIssuer
from tests.fakes.clock import FakeClock
from tests.services.conftest import ALICE, BOB, T0

ALL = tuple(Scope)


def key_of(services: Services, scopes: tuple[Scope, ...] = ALL, **fields: object) -> str:
    """A new key of alice's with ``scopes``; its secret."""
    request = NewApiKey(name="k", scopes=scopes, **fields)  # type: ignore[arg-type]
    return services.keys.create(ALICE, request).secret


def refused(services: Services, key: str) -> str:
    """Authenticate ``key``, expecting Unauthorized; its message."""
    with pytest.raises(Unauthorized) as info:
        services.auth.authenticate_key(key)
    assert info.value.code == "unauthorized"
    return info.value.message


# -- API keys --------------------------------------------------------------


def test_a_key_is_its_accounts_principal_with_its_scopes(services: Services) -> None:
    created = services.keys.create(
        ALICE, NewApiKey(name="k", scopes=(Scope.NOTIFICATIONS_WRITE, Scope.DEVICES_READ))
    )

    principal = services.auth.authenticate_key(created.secret)

    assert principal == Principal(
        ALICE,
        CredentialKind.API_KEY,
        frozenset({Scope.NOTIFICATIONS_WRITE, Scope.DEVICES_READ}),
        created.key.id,
    )


@pytest.mark.parametrize(
    "key",
    [
        "",
        "psk_",
        "not a key",
        "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZX",  # the test vector, checksum off by one
        "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZ",  # one character short
        api_key_from_random("Z" * 32),  # well formed, never issued
    ],
)
def test_an_unknown_or_malformed_key_is_invalid(services: Services, key: str) -> None:
    key_of(services)  # the store is not empty
    assert refused(services, key) == "Invalid API key"


def test_a_revoked_key_is_refused_at_once(services: Services) -> None:
    created = services.keys.create(ALICE, NewApiKey(name="k", scopes=ALL))
    services.auth.authenticate_key(created.secret)  # used (and cached) just before

    services.keys.revoke(ALICE, created.key.id)

    assert refused(services, created.secret) == "API key revoked"


def test_a_key_is_refused_from_its_expiry_on(services: Services, clock: FakeClock) -> None:
    key = key_of(services, expires_at=T0 + timedelta(hours=1))

    clock.set(T0 + timedelta(hours=1) - timedelta(milliseconds=1))
    assert services.auth.authenticate_key(key).account_id == ALICE
    clock.set(T0 + timedelta(hours=1))

    assert refused(services, key) == "API key expired"


def test_a_revoked_key_says_revoked_even_once_expired(services: Services, clock: FakeClock) -> None:
    created = services.keys.create(
        ALICE, NewApiKey(name="k", scopes=ALL, expires_at=T0 + timedelta(minutes=1))
    )
    services.keys.revoke(ALICE, created.key.id)
    clock.advance(timedelta(hours=1))
    assert refused(services, created.secret) == "API key revoked"


def test_last_used_is_recorded_at_most_once_a_minute(services: Services, clock: FakeClock) -> None:
    key = key_of(services)

    def last_used() -> object:
        return services.keys.list(ALICE)[0].last_used_at

    assert last_used() is None
    services.auth.authenticate_key(key)
    assert last_used() == T0

    clock.advance(timedelta(seconds=59))
    services.auth.authenticate_key(key)
    assert last_used() == T0

    clock.advance(timedelta(seconds=2))
    services.auth.authenticate_key(key)
    assert last_used() == T0 + timedelta(seconds=61)


def test_a_refused_key_is_not_marked_used(services: Services) -> None:
    created = services.keys.create(ALICE, NewApiKey(name="k", scopes=ALL))
    services.keys.revoke(ALICE, created.key.id)

    refused(services, created.secret)

    assert services.keys.list(ALICE)[0].last_used_at is None


# -- scopes ----------------------------------------------------------------


def test_a_missing_scope_names_the_scope(services: Services) -> None:
    principal = services.auth.authenticate_key(key_of(services, (Scope.NOTIFICATIONS_READ,)))

    principal.require(Scope.NOTIFICATIONS_READ)
    with pytest.raises(Unauthorized) as info:
        principal.require(Scope.DEVICES_WRITE)

    assert info.value.message == "API key missing required scope: devices:write"


@pytest.mark.parametrize("scope", list(Scope))
def test_each_scope_is_granted_only_by_itself(services: Services, scope: Scope) -> None:
    principal = services.auth.authenticate_key(key_of(services, (scope,)))
    for other in Scope:
        if other is scope:
            principal.require(other)
        else:
            with pytest.raises(Unauthorized, match=f"missing required scope: {other.value}$"):
                principal.require(other)


# -- tokens ----------------------------------------------------------------


def test_an_issued_token_is_its_accounts_user_with_every_right(services: Services) -> None:
    token = services.tokens.issue(BOB, timedelta(hours=1))

    principal = services.auth.authenticate_token(token)

    assert principal == Principal(BOB, CredentialKind.USER)
    for scope in Scope:
        principal.require(scope)


def test_the_first_token_creates_the_account_on_the_free_plan(
    services: Services, clock: FakeClock
) -> None:
    token = services.tokens.issue("newcomer", timedelta(hours=1))
    clock.advance(timedelta(minutes=10))

    services.auth.authenticate_token(token)
    clock.advance(timedelta(minutes=10))

    account = services.accounts.ensure("newcomer")  # already there: not created now
    assert (account.id, account.plan) == ("newcomer", Plan.FREE)
    assert account.created_at == T0 + timedelta(minutes=10)


def test_a_token_keeps_an_accounts_plan(services: Services) -> None:
    services.accounts.set_plan(BOB, Plan.PRO)
    services.auth.authenticate_token(services.tokens.issue(BOB, timedelta(hours=1)))
    assert services.accounts.ensure(BOB).plan is Plan.PRO


@pytest.mark.parametrize("token", ["", "garbage", "a.b.c", "x" * 9000])
def test_a_malformed_token_is_invalid(services: Services, token: str) -> None:
    with pytest.raises(Unauthorized) as info:
        services.auth.authenticate_token(token)
    assert info.value.message == "Invalid token"


def test_a_token_signed_with_another_secret_is_invalid(
    services: Services, clock: FakeClock
) -> None:
    forged = TokenIssuer(clock, "another-secret-of-enough-length-00").issue(
        ALICE, timedelta(hours=1)
    )

    with pytest.raises(Unauthorized) as info:
        services.auth.authenticate_token(forged)
    assert info.value.message == "Invalid token"


def test_an_expired_token_is_refused(services: Services, clock: FakeClock) -> None:
    token = services.tokens.issue(ALICE, timedelta(hours=1))
    clock.advance(timedelta(hours=1, seconds=31))  # past exp and the 30 s leeway

    with pytest.raises(Unauthorized):
        services.auth.authenticate_token(token)


def test_an_expired_token_says_token_expired(services: Services, clock: FakeClock) -> None:
    token = services.tokens.issue(ALICE, timedelta(hours=1))
    clock.advance(timedelta(hours=1, seconds=31))

    with pytest.raises(Unauthorized) as info:
        services.auth.authenticate_token(token)
    assert info.value.message == "Token expired"
