"""KeyService as a library: the key shown once, only its hash kept, list, revoke."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path

import attrs
import pytest

from pushcore import (
    ApiKey,
    FieldError,
    NewApiKey,
    NotFound,
    Scope,
    Services,
    ValidationError,
)
from pushcore.domain.codes import BASE62
from pushcore.services import CreatedKey  # what keys.create returns (not in pushcore.__all__)
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe
from tests.services.conftest import ALICE, BOB, T0, ScriptedRandom, make_services

# API.md's test vector: this random part gives this key.
VECTOR_RANDOM = "abcdefghijklmnopqrstuvwxyzABCDEF"
VECTOR_KEY = "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZW"
READ = (Scope.NOTIFICATIONS_READ,)


def new_key(
    services: Services,
    account: str = ALICE,
    name: str = "deploy-bot",
    scopes: tuple[Scope, ...] = READ,
    expires_at: datetime | None = None,
) -> CreatedKey:
    """Create a key; the key and its secret."""
    request = NewApiKey(name=name, scopes=scopes, expires_at=expires_at)
    return services.keys.create(account, request)


def test_the_key_is_drawn_from_the_injected_randomness_in_the_documented_format(
    tmp_path: Path, clock: FakeClock, icons: FakeIconProbe
) -> None:
    draws = [BASE62.index(c) for c in VECTOR_RANDOM]
    services = make_services(tmp_path, clock, icons, random=ScriptedRandom(draws))
    try:
        created = services.keys.create(ALICE, NewApiKey(name="ci", scopes=READ))
    finally:
        services.close()

    assert created.secret == VECTOR_KEY
    assert created.key.key_prefix == "psk_abcdefgh"  # the first 12 characters
    assert created.key.key_hash == hashlib.sha256(VECTOR_KEY.encode()).hexdigest()


def test_create_returns_the_secret_once_and_stores_only_its_hash(services: Services) -> None:
    created = new_key(services)
    secret = created.secret

    assert secret.startswith("psk_")
    assert len(secret) == 4 + 32 + 6
    key = created.key
    assert key.id.startswith("key_")
    assert (key.account_id, key.name, key.scopes) == (ALICE, "deploy-bot", READ)
    assert (key.is_active, key.expires_at, key.last_used_at, key.revoked_at) == (
        True,
        None,
        None,
        None,
    )
    assert key.created_at == T0
    assert key.key_prefix == secret[:12]
    assert key.key_hash == hashlib.sha256(secret.encode()).hexdigest()

    (listed,) = services.keys.list(ALICE)
    assert listed == key
    # Nothing read back holds the secret or its random part.
    assert not [v for v in attrs.astuple(listed) if isinstance(v, str) and secret[4:36] in v]
    assert "secret" not in {f.name for f in attrs.fields(ApiKey)}


def test_each_key_is_different(services: Services) -> None:
    secrets = {new_key(services, name=f"k{i}").secret for i in range(5)}
    assert len(secrets) == 5


def test_scopes_are_deduplicated_in_their_canonical_order(services: Services) -> None:
    created = new_key(
        services,
        scopes=(Scope.DEVICES_WRITE, Scope.NOTIFICATIONS_READ, Scope.DEVICES_WRITE),
    )
    assert created.key.scopes == (Scope.NOTIFICATIONS_READ, Scope.DEVICES_WRITE)
    assert services.keys.list(ALICE)[0].scopes == (Scope.NOTIFICATIONS_READ, Scope.DEVICES_WRITE)


def test_an_expiry_in_the_future_is_kept(services: Services) -> None:
    expires = T0 + timedelta(days=90)
    created = new_key(services, expires_at=expires)
    assert created.key.expires_at == expires
    assert services.keys.list(ALICE)[0].expires_at == expires


@pytest.mark.parametrize("ago", [timedelta(0), timedelta(seconds=1), timedelta(days=3)])
def test_an_expiry_now_or_in_the_past_is_refused(services: Services, ago: timedelta) -> None:
    with pytest.raises(ValidationError) as info:
        new_key(services, expires_at=T0 - ago)
    assert info.value.details == (FieldError("expiresAt", "must be in the future"),)
    assert services.keys.list(ALICE) == []


@pytest.mark.parametrize(
    ("name", "scopes"),
    [("", READ), ("   ", READ), ("x" * 101, READ), ("ok", ())],
)
def test_an_invalid_key_request_is_a_value_error_when_built(
    name: str, scopes: tuple[Scope, ...]
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (each case has its own message)
        NewApiKey(name=name, scopes=scopes)


def test_a_name_of_100_characters_is_accepted(services: Services) -> None:
    assert new_key(services, name="n" * 100).key.name == "n" * 100


def test_list_is_the_accounts_keys_newest_first(services: Services) -> None:
    older = new_key(services, name="older").key
    newer = new_key(services, name="newer").key
    new_key(services, BOB, name="bob's")

    assert [k.id for k in services.keys.list(ALICE)] == [newer.id, older.id]
    assert [k.name for k in services.keys.list(BOB)] == ["bob's"]


def test_revoke_keeps_the_key_listed_and_inactive(services: Services, clock: FakeClock) -> None:
    key = new_key(services).key
    clock.advance(timedelta(minutes=5))

    revoked = services.keys.revoke(ALICE, key.id)

    assert revoked.id == key.id
    assert revoked.is_active is False
    assert revoked.revoked_at == T0 + timedelta(minutes=5)
    assert services.keys.list(ALICE) == [revoked]


def test_revoking_twice_is_the_same_success(services: Services, clock: FakeClock) -> None:
    key = new_key(services).key
    first = services.keys.revoke(ALICE, key.id)
    clock.advance(timedelta(hours=1))

    again = services.keys.revoke(ALICE, key.id)

    assert again == first  # the first revocation time is kept
    assert services.keys.list(ALICE) == [first]


def test_revoking_another_accounts_key_is_not_found(services: Services) -> None:
    key = new_key(services, ALICE).key

    with pytest.raises(NotFound):
        services.keys.revoke(BOB, key.id)
    with pytest.raises(NotFound):
        services.keys.revoke(ALICE, "key_01JD0000000000000000000000")

    assert services.keys.list(ALICE)[0].is_active is True
