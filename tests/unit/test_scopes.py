"""Scopes, the scope check, and whether an API key may be used (scopes.py, model.ApiKey)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.model import ApiKey
from pushcore.domain.scopes import (
    ALL_SCOPES,
    Failure,
    Scope,
    Success,
    check_scope,
    normalise_scopes,
)

NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
CANONICAL = (
    "notifications:read",
    "notifications:write",
    "devices:read",
    "devices:write",
    "webhooks:read",
    "webhooks:write",
)

scope_lists = st.lists(st.sampled_from(Scope), max_size=12)
nows = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


def make_key(**changes: Any) -> ApiKey:
    key = ApiKey(
        id="key_01",
        account_id="alice",
        name="ci",
        key_hash="0" * 64,
        key_prefix="psk_abcdefgh",
        scopes=(Scope.NOTIFICATIONS_READ,),
        expires_at=None,
        created_at=NOW - timedelta(days=1),
    )
    return attrs.evolve(key, **changes)


# -- scopes ------------------------------------------------------------------


def test_the_known_scopes_in_canonical_order() -> None:
    assert tuple(s.value for s in ALL_SCOPES) == CANONICAL


@pytest.mark.parametrize("required", list(Scope))
def test_check_scope_success(required: Scope) -> None:
    assert check_scope([required], required) == Success()
    assert check_scope(ALL_SCOPES, required) == Success()


@pytest.mark.parametrize("required", list(Scope))
def test_check_scope_failure_message(required: Scope) -> None:
    others = [s for s in Scope if s is not required]
    outcome = check_scope(others, required)
    assert outcome == Failure(f"API key missing required scope: {required.value}")
    assert check_scope([], required) == outcome


def test_check_scope_exact_message() -> None:
    outcome = check_scope([Scope.DEVICES_READ], Scope.NOTIFICATIONS_WRITE)
    assert isinstance(outcome, Failure)
    assert outcome.reason == "API key missing required scope: notifications:write"


@given(scope_lists, st.sampled_from(Scope))
def test_check_scope_is_membership(granted: list[Scope], required: Scope) -> None:
    outcome = check_scope(iter(granted), required)  # any iterable, even a one-shot one
    if required in granted:
        assert isinstance(outcome, Success)
    else:
        assert outcome == Failure(f"API key missing required scope: {required}")


@given(scope_lists)
def test_normalise_scopes_dedupes_in_canonical_order(scopes: list[Scope]) -> None:
    normalised = normalise_scopes(scopes)
    assert set(normalised) == set(scopes)
    assert len(normalised) == len(set(normalised))
    assert list(normalised) == sorted(set(scopes), key=lambda s: CANONICAL.index(s.value))
    assert normalise_scopes(normalised) == normalised
    assert normalise_scopes(reversed(scopes)) == normalised


def test_normalise_scopes_example() -> None:
    given_scopes = [Scope.DEVICES_WRITE, Scope.NOTIFICATIONS_READ, Scope.DEVICES_WRITE]
    assert normalise_scopes(given_scopes) == (Scope.NOTIFICATIONS_READ, Scope.DEVICES_WRITE)
    assert normalise_scopes([]) == ()


# -- ApiKey.check_usable / revoked --------------------------------------------


def test_an_active_key_without_expiry_is_usable() -> None:
    assert make_key().check_usable(NOW) == Success()


def test_a_revoked_key_is_refused() -> None:
    assert make_key(is_active=False).check_usable(NOW) == Failure("API key revoked")


def test_revoked_wins_over_expired() -> None:
    key = make_key(is_active=False, expires_at=NOW - timedelta(days=1))
    assert key.check_usable(NOW) == Failure("API key revoked")


@given(nows, st.timedeltas(min_value=timedelta(days=-3650), max_value=timedelta(days=3650)))
def test_expiry_is_inclusive_of_now(now: datetime, offset: timedelta) -> None:
    key = make_key(expires_at=now + offset)
    if offset <= timedelta(0):
        assert key.check_usable(now) == Failure("API key expired")
    else:
        assert key.check_usable(now) == Success()


def test_a_key_expiring_exactly_now_is_expired() -> None:
    assert make_key(expires_at=NOW).check_usable(NOW) == Failure("API key expired")
    assert make_key(expires_at=NOW + timedelta(microseconds=1)).check_usable(NOW) == Success()


def test_revoked_returns_a_new_inactive_key() -> None:
    key = make_key()
    revoked = key.revoked(NOW)
    assert revoked.is_active is False
    assert revoked.revoked_at == NOW
    assert key.is_active is True  # frozen: the original is unchanged
    assert key.revoked_at is None
    assert revoked.check_usable(NOW) == Failure("API key revoked")


@given(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=365)))
def test_revoking_twice_keeps_the_first_time(later: timedelta) -> None:
    first = make_key().revoked(NOW)
    second = first.revoked(NOW + later)
    assert second.revoked_at == NOW
    assert second == first


def test_api_key_is_frozen() -> None:
    key = make_key()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        key.is_active = False  # type: ignore[misc]
