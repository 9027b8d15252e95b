"""The storage contract of Idempotency-Key records (``IdempotencyRepository``), on every
database (see ``conftest.py``), including the race the primary key decides."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pushcore.domain.idempotency import IdempotencyRecord
from pushcore.ports import Store
from tests.contract.test_store_contract import MINUTE, T0
from tests.contract.threads import race

DAY = timedelta(hours=24)


def record(
    key: str = "k1", account: str = "acc_a", digest: str = "h1", at: datetime = T0
) -> IdempotencyRecord:
    return IdempotencyRecord(account, key, digest, at)


def claim(store: Store, new: IdempotencyRecord) -> IdempotencyRecord | None:
    with store.transaction() as tx:
        return tx.idempotency_keys.claim(new, new.created_at - DAY, new.created_at - 10 * MINUTE)


def get(store: Store, key: str = "k1", account: str = "acc_a") -> IdempotencyRecord | None:
    with store.read() as tx:
        return tx.idempotency_keys.get(account, key)


def complete(store: Store, claimed: IdempotencyRecord, status: int, body: bytes) -> bool:
    with store.transaction() as tx:
        return tx.idempotency_keys.complete(
            claimed.account_id, claimed.key, claimed.created_at, status, body, T0 + MINUTE
        )


def test_the_first_claim_holds_the_key_and_the_next_sees_it(store: Store) -> None:
    first = record()
    assert claim(store, first) is None
    held = claim(store, record(digest="h2", at=T0 + MINUTE))
    assert held == first
    assert not held.answered


def test_a_completed_claim_keeps_its_answer(store: Store) -> None:
    first = record()
    claim(store, first)
    body = '{"id": "ntf_1", "title": "é"}'.encode()
    assert complete(store, first, 201, body)
    held = claim(store, record(at=T0 + 2 * MINUTE))
    assert held is not None
    assert (held.status, held.body, held.completed_at) == (201, body, T0 + MINUTE)
    # Completing again (or a claim that is gone) changes nothing.
    assert not complete(store, first, 500, b"{}")
    assert get(store) == held


def test_a_released_claim_frees_the_key(store: Store) -> None:
    first = record()
    claim(store, first)
    with store.transaction() as tx:
        assert tx.idempotency_keys.release("acc_a", "k1", T0)
        assert not tx.idempotency_keys.release("acc_a", "k1", T0)
    assert get(store) is None
    assert claim(store, record(digest="h2", at=T0 + MINUTE)) is None


def test_an_answered_claim_is_not_released(store: Store) -> None:
    first = record()
    claim(store, first)
    complete(store, first, 201, b"{}")
    with store.transaction() as tx:
        assert not tx.idempotency_keys.release("acc_a", "k1", T0)
    assert get(store) is not None


def test_keys_are_per_account(store: Store) -> None:
    assert claim(store, record(account="acc_a")) is None
    assert claim(store, record(account="acc_b", digest="other")) is None
    found = get(store, account="acc_b")
    assert found is not None
    assert found.request_hash == "other"


def test_a_record_older_than_the_window_is_replaced(store: Store) -> None:
    first = record()
    claim(store, first)
    complete(store, first, 201, b"{}")
    assert claim(store, record(digest="h2", at=T0 + DAY - MINUTE)) is not None
    assert claim(store, record(digest="h2", at=T0 + DAY + MINUTE)) is None
    found = get(store)
    assert found is not None
    assert (found.request_hash, found.status, found.body) == ("h2", None, None)


def test_an_abandoned_claim_is_replaced_and_its_holder_cannot_complete_it(store: Store) -> None:
    first = record()
    claim(store, first)
    assert claim(store, record(at=T0 + 5 * MINUTE)) is not None
    later = record(at=T0 + 11 * MINUTE)
    assert claim(store, later) is None
    assert not complete(store, first, 201, b"{}")
    found = get(store)
    assert found is not None
    assert found.created_at == later.created_at


def test_delete_older_than_takes_the_oldest_up_to_the_limit(store: Store) -> None:
    for i in range(5):
        claim(store, record(key=f"k{i}", at=T0 + i * MINUTE))
    with store.transaction() as tx:
        assert tx.idempotency_keys.delete_older_than(T0 + 4 * MINUTE, 3) == 3
    assert [get(store, f"k{i}") is None for i in range(5)] == [True] * 3 + [False] * 2
    with store.transaction() as tx:
        assert tx.idempotency_keys.delete_older_than(T0 + 4 * MINUTE, 10) == 1
        assert tx.idempotency_keys.delete_older_than(T0 + 4 * MINUTE, 10) == 0
    assert get(store, "k4") is not None


@pytest.mark.parametrize("attempt", range(3))
def test_racing_claims_of_one_key_leave_one_holder(store: Store, attempt: int) -> None:
    winners: list[int] = []

    def take(i: int) -> None:
        if claim(store, record(digest=f"h{i}", at=T0 + i * timedelta(milliseconds=1))) is None:
            winners.append(i)

    race(4, take)
    assert len(winners) == 1
    found = get(store)
    assert found is not None
    assert found.request_hash == f"h{winners[0]}"
