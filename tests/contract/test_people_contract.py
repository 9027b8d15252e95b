"""The storage contract of passwords and refresh tokens, on every database (see
``conftest.py``), including the race that single use decides."""

from __future__ import annotations

from datetime import datetime

import attrs
import pytest

from pushcore.domain.model import Account, Plan
from pushcore.domain.people import Password, RefreshToken, SessionRevocation
from pushcore.ports import Store
from tests.contract.test_store_contract import MINUTE, T0
from tests.contract.threads import race

DAY = 24 * 60 * MINUTE


def token(n: int, family: str = "rtk_1", account: str = "alice") -> RefreshToken:
    return RefreshToken(
        id=f"rtk_{n}",
        account_id=account,
        family_id=family,
        token_hash=f"hash{n}",
        created_at=T0,
        expires_at=T0 + 30 * DAY,
    )


def find(store: Store, n: int) -> RefreshToken | None:
    with store.read() as tx:
        return tx.refresh_tokens.find_by_hash(f"hash{n}")


def test_a_password_is_kept_replaced_and_listed(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.passwords.get("alice") is None
        tx.passwords.set(Password("alice", "$argon2id$one", T0))
        tx.passwords.set(Password("bob", "$argon2id$bob", T0))
    with store.transaction() as tx:
        tx.passwords.set(Password("alice", "$argon2id$two", T0 + MINUTE))
    with store.read() as tx:
        assert tx.passwords.get("alice") == Password("alice", "$argon2id$two", T0 + MINUTE)
        assert set(tx.passwords.holders()) == {"alice", "bob"}


def test_accounts_are_added_once_listed_and_signed_in(store: Store) -> None:
    with store.transaction() as tx:
        tx.accounts.add(Account("bob", Plan.PRO, T0))
        tx.accounts.add(Account("alice", Plan.FREE, T0))
        with pytest.raises(KeyError):
            tx.accounts.add(Account("alice", Plan.PRO, T0 + MINUTE))
        tx.accounts.signed_in("alice", T0 + MINUTE)
    with store.read() as tx:
        listed = tx.accounts.list()
    assert [a.id for a in listed] == ["alice", "bob"]
    assert listed[0] == Account("alice", Plan.FREE, T0, last_sign_in_at=T0 + MINUTE)
    assert listed[1].last_sign_in_at is None


def test_a_token_is_found_by_its_hash_and_spent_once(store: Store) -> None:
    with store.transaction() as tx:
        tx.refresh_tokens.add(token(1))
        with pytest.raises(KeyError):
            tx.refresh_tokens.add(token(1))
    assert find(store, 1) == token(1)
    assert find(store, 2) is None
    with store.transaction() as tx:
        assert tx.refresh_tokens.spend("rtk_1", T0 + MINUTE)
        assert not tx.refresh_tokens.spend("rtk_1", T0 + 2 * MINUTE)
    found = find(store, 1)
    assert found is not None
    assert found.used_at == T0 + MINUTE


def test_revoking_a_family_or_an_account_leaves_the_others(store: Store) -> None:
    with store.transaction() as tx:
        for n, family, account in [
            (1, "rtk_1", "alice"),
            (2, "rtk_1", "alice"),
            (3, "rtk_3", "alice"),
            (4, "rtk_4", "bob"),
        ]:
            tx.refresh_tokens.add(token(n, family, account))
    with store.transaction() as tx:
        assert tx.refresh_tokens.revoke_family("rtk_1", T0 + MINUTE) == 2
        assert tx.refresh_tokens.revoke_family("rtk_1", T0 + 2 * MINUTE) == 0
        # A revoked token cannot be spent.
        assert not tx.refresh_tokens.spend("rtk_2", T0 + 2 * MINUTE)
    assert [find(store, n).revoked_at for n in (1, 2, 3, 4)] == [  # type: ignore[union-attr]
        T0 + MINUTE,
        T0 + MINUTE,
        None,
        None,
    ]
    with store.transaction() as tx:
        # The families (sessions) of the tokens it revoked: rtk_1's were revoked already.
        assert set(tx.refresh_tokens.revoke_account("alice", T0 + 3 * MINUTE)) == {"rtk_3"}
    assert find(store, 3).revoked_at == T0 + 3 * MINUTE  # type: ignore[union-attr]
    assert find(store, 4).revoked_at is None  # type: ignore[union-attr]


def test_of_concurrent_spends_of_one_token_exactly_one_wins(store: Store) -> None:
    with store.transaction() as tx:
        tx.refresh_tokens.add(token(1))
    won: list[int] = []

    def spend(i: int) -> None:
        with store.transaction() as tx:
            if tx.refresh_tokens.spend("rtk_1", T0 + MINUTE):
                won.append(i)

    race(8, spend)
    assert len(won) == 1


def test_expired_tokens_are_deleted_oldest_first_in_batches(store: Store) -> None:
    with store.transaction() as tx:
        for n in range(5):
            tx.refresh_tokens.add(attrs.evolve(token(n), expires_at=T0 + n * MINUTE))
    with store.transaction() as tx:
        assert tx.refresh_tokens.delete_expired(T0 + 3 * MINUTE, 2) == 2
        assert tx.refresh_tokens.delete_expired(T0 + 3 * MINUTE, 2) == 1
        assert tx.refresh_tokens.delete_expired(T0 + 3 * MINUTE, 2) == 0
    assert [find(store, n) is None for n in range(5)] == [True, True, True, False, False]


def revocation(session: str, until: datetime, account: str = "alice") -> SessionRevocation:
    return SessionRevocation(session, account, T0, until)


def test_revoked_sessions_are_in_force_until_their_time_then_swept(store: Store) -> None:
    with store.transaction() as tx:
        tx.session_revocations.add(
            [revocation("rtk_1", T0 + MINUTE), revocation("rtk_2", T0 + 3 * MINUTE, "bob")]
        )
        # Recorded again (a second sign-out): the first record stands.
        tx.session_revocations.add([revocation("rtk_1", T0 + 10 * MINUTE)])
    with store.read() as tx:
        assert set(tx.session_revocations.in_force(T0)) == {"rtk_1", "rtk_2"}
        assert set(tx.session_revocations.in_force(T0 + MINUTE)) == {"rtk_2"}
        assert set(tx.session_revocations.in_force(T0 + 3 * MINUTE)) == set()
    with store.transaction() as tx:
        assert tx.session_revocations.delete_expired(T0 + 2 * MINUTE, 10) == 1
    with store.read() as tx:
        assert set(tx.session_revocations.in_force(T0)) == {"rtk_2"}
