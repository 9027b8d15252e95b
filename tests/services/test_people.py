"""Accounts with passwords and sessions, on the services: sign-in, refresh, reuse, passwd."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from argon2 import PasswordHasher

from pushcore import Services
from pushcore.domain.errors import (
    AccountExists,
    NotFound,
    SignupDisabled,
    Unauthorized,
    ValidationError,
)
from pushcore.domain.model import Plan
from pushcore.services import Session
from tests.fakes.clock import FakeClock

PASSWORD = "correct horse battery"


def sign_in(services: Services, account: str, password: str = PASSWORD) -> Session:
    return asyncio.run(services.people.sign_in(account, password))


def refused(services: Services, account: str, password: str = PASSWORD) -> str:
    with pytest.raises(Unauthorized) as caught:
        sign_in(services, account, password)
    return caught.value.message


def test_an_account_made_here_is_lowercase_and_signs_in_as_typed(services: Services) -> None:
    made = services.people.create("Alice", Plan.PRO, PASSWORD)
    assert (made.id, made.plan) == ("alice", Plan.PRO)
    for typed in ("alice", "Alice", "ALICE"):
        session = sign_in(services, typed)
        assert session.account.id == "alice"
        assert services.auth.authenticate_token(session.access_token).account_id == "alice"
    (summary,) = services.people.list()
    assert summary.has_password
    assert summary.account.last_sign_in_at is not None


def test_creating_a_taken_or_malformed_id_or_a_short_password_is_refused(
    services: Services,
) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    with pytest.raises(AccountExists):
        services.people.create("ALICE", Plan.FREE, PASSWORD)
    with pytest.raises(ValidationError) as bad_id:
        services.people.create("al ice", Plan.FREE, PASSWORD)
    assert bad_id.value.details[0].field == "account"
    with pytest.raises(ValidationError) as short:
        services.people.create("bob", Plan.FREE, "short")
    assert short.value.details[0].field == "password"


def test_unknown_wrong_and_passwordless_are_refused_alike(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    services.accounts.ensure("tokenonly")  # made by its first JWT: no password
    messages = {
        refused(services, "alice", "wrong password"),
        refused(services, "nobody"),
        refused(services, "tokenonly"),
    }
    assert messages == {"Invalid account or password"}


# Not serial: it reads the stored hash's parameters and times nothing.
@pytest.mark.real_password_cost
def test_passwords_are_hashed_at_owasps_argon2id_cost(services: Services) -> None:
    # The other tests hash cheaply (tests/conftest.py); the product does not.
    services.people.create("alice", Plan.FREE, PASSWORD)
    with services.store.read() as tx:
        stored = tx.passwords.get("alice")
    assert stored is not None
    assert stored.hash.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert not services.passwords.needs_rehash(stored.hash)


@pytest.mark.real_password_cost
@pytest.mark.serial  # a ratio of two timings: another worker's load would be what it measures
def test_unknown_and_wrong_take_the_same_time(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    refused(services, "nobody")  # the dummy hash is made once, before measuring

    def timed(account: str) -> float:
        start = time.perf_counter()
        refused(services, account, "wrong password")
        return time.perf_counter() - start

    # Alternated, and the quickest of each: what the work costs, without the noise
    # of a shared machine (which only ever adds time).
    pairs = [(timed("nobody"), timed("alice")) for _ in range(15)]
    unknown, wrong = min(u for u, _ in pairs), min(w for _, w in pairs)
    # Both are one hash (~20 ms); a skipped hash would be 10 times quicker.
    assert 0.6 < unknown / wrong < 1.6, (unknown, wrong)


def test_an_account_made_by_a_token_gets_a_password_with_passwd(services: Services) -> None:
    services.accounts.ensure("Idp|User")  # an identity provider's id keeps its case
    services.people.set_password("Idp|User", PASSWORD)
    assert sign_in(services, "Idp|User").account.id == "Idp|User"
    with pytest.raises(NotFound):
        services.people.set_password("nobody", PASSWORD)


def test_refresh_rotates_and_a_reused_token_ends_the_whole_sign_in(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    first = sign_in(services, "alice")
    other = sign_in(services, "alice")  # another device: another sign-in
    second = services.sessions.refresh(first.refresh_token)
    third = services.sessions.refresh(second.refresh_token)
    assert len({first.refresh_token, second.refresh_token, third.refresh_token}) == 3

    with pytest.raises(Unauthorized, match="Invalid refresh token"):
        services.sessions.refresh(first.refresh_token)  # spent: theft, or a replay
    with pytest.raises(Unauthorized, match="Invalid refresh token"):
        services.sessions.refresh(third.refresh_token)  # its descendants are revoked too
    assert services.sessions.refresh(other.refresh_token).account.id == "alice"


def test_refresh_tokens_expire(services: Services, clock: FakeClock) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    session = sign_in(services, "alice")
    clock.advance(services.settings.refresh_token_ttl + timedelta(seconds=1))
    with pytest.raises(Unauthorized, match="Refresh token expired"):
        services.sessions.refresh(session.refresh_token)


@pytest.mark.parametrize("token", ["", "psr_short", "psk_" + "A" * 43, "psr_" + "A" * 43])
def test_malformed_and_unknown_refresh_tokens_are_refused(services: Services, token: str) -> None:
    with pytest.raises(Unauthorized, match="Invalid refresh token"):
        services.sessions.refresh(token)
    services.sessions.end(token)  # signing out is never refused


def test_logout_ends_that_sign_in_only(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    one, two = sign_in(services, "alice"), sign_in(services, "alice")
    services.sessions.end(one.refresh_token)
    with pytest.raises(Unauthorized):
        services.sessions.refresh(one.refresh_token)
    services.sessions.refresh(two.refresh_token)


def test_passwd_revokes_every_session_and_the_old_password(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    sessions = [sign_in(services, "alice") for _ in range(3)]
    services.people.set_password("alice", "a new password")
    for session in sessions:
        with pytest.raises(Unauthorized):
            services.sessions.refresh(session.refresh_token)
    assert refused(services, "alice") == "Invalid account or password"
    sign_in(services, "alice", "a new password")


def test_changing_the_password_needs_the_current_one_and_revokes_sessions(
    services: Services,
) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    session = sign_in(services, "alice")
    with pytest.raises(ValidationError) as wrong:
        asyncio.run(services.people.change_password("alice", "not it", "a new password"))
    assert wrong.value.details[0].field == "currentPassword"
    asyncio.run(services.people.change_password("alice", PASSWORD, "a new password"))
    with pytest.raises(Unauthorized):
        services.sessions.refresh(session.refresh_token)
    sign_in(services, "alice", "a new password")


def test_a_hash_with_old_parameters_is_replaced_at_sign_in(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    old = PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1).hash(PASSWORD)
    with services.store.transaction() as tx:
        stored = tx.passwords.get("alice")
        assert stored is not None
        tx.passwords.set(type(stored)("alice", old, stored.set_at))
    sign_in(services, "alice")
    with services.store.read() as tx:
        rehashed = tx.passwords.get("alice")
    assert rehashed is not None
    assert rehashed.hash != old
    assert not services.passwords.needs_rehash(rehashed.hash)
    sign_in(services, "alice")


def test_sign_up_is_off_by_default(services: Services) -> None:
    with pytest.raises(SignupDisabled):
        asyncio.run(services.people.sign_up("carol", PASSWORD))


def test_a_session_can_be_started_for_an_account_never_seen(services: Services) -> None:
    # As single sign-on will: the provider vouched for the id, the account follows.
    session = services.sessions.start("Idp-Person")
    assert (session.account.id, session.account.plan) == ("Idp-Person", Plan.FREE)
    assert services.auth.authenticate_token(session.access_token).account_id == "Idp-Person"
    assert services.sessions.refresh(session.refresh_token).account.id == "Idp-Person"
