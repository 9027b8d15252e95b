"""The storage contract of single sign-on's rows (``tx.sign_ins``), on every database:
round trips and one-time codes are taken once, also by two takers at the same instant."""

from __future__ import annotations

from datetime import datetime

from pushcore.domain.oidc import CODE_TTL, FLOW_TTL, SignInCode, SignInFlow, hash_secret
from pushcore.ports import Store
from tests.contract.test_store_contract import MINUTE, T0
from tests.contract.threads import race


def flow(state: str = "s1", at: datetime = T0) -> SignInFlow:
    return SignInFlow(
        hash_secret(state), hash_secret("n"), hash_secret("v"), "/app/é?x=1", at, at + FLOW_TTL
    )


def code(secret: str = "c1", account: str = "Carol@Example", at: datetime = T0) -> SignInCode:
    return SignInCode(hash_secret(secret), account, at, at + CODE_TTL)


def test_a_round_trip_is_taken_once_as_it_was_stored(store: Store) -> None:
    with store.transaction() as tx:
        tx.sign_ins.add_flow(flow())
        tx.sign_ins.add_flow(flow("s2"))
    with store.transaction() as tx:
        assert tx.sign_ins.take_flow(hash_secret("s1")) == flow()
    with store.transaction() as tx:
        assert tx.sign_ins.take_flow(hash_secret("s1")) is None
        assert tx.sign_ins.take_flow(hash_secret("s2")) == flow("s2")


def test_a_code_is_taken_once_as_it_was_stored(store: Store) -> None:
    with store.transaction() as tx:
        tx.sign_ins.add_code(code())
    with store.transaction() as tx:
        assert tx.sign_ins.take_code(hash_secret("c1")) == code()
        assert tx.sign_ins.take_code(hash_secret("c1")) is None


def test_a_take_undone_with_its_transaction_leaves_the_row(store: Store) -> None:
    with store.transaction() as tx:
        tx.sign_ins.add_code(code())

    class Undo(Exception):
        pass

    try:
        with store.transaction() as tx:
            assert tx.sign_ins.take_code(hash_secret("c1")) is not None
            raise Undo
    except Undo:
        pass
    with store.transaction() as tx:
        assert tx.sign_ins.take_code(hash_secret("c1")) == code()


def test_of_two_takers_at_once_exactly_one_gets_the_row(store: Store) -> None:
    for round_ in range(5):
        with store.transaction() as tx:
            tx.sign_ins.add_flow(flow(f"s{round_}"))
            tx.sign_ins.add_code(code(f"c{round_}"))
        taken: list[object] = []

        def take(i: int, n: int = round_, taken: list[object] = taken) -> None:
            with store.transaction() as tx:
                found = (
                    tx.sign_ins.take_flow(hash_secret(f"s{n}"))
                    if i % 2
                    else tx.sign_ins.take_code(hash_secret(f"c{n}"))
                )
            if found is not None:
                taken.append(found)

        race(4, take)
        assert len(taken) == 2, taken  # one round trip, one code


def test_expired_rows_are_swept_in_batches(store: Store) -> None:
    with store.transaction() as tx:
        for i in range(3):
            tx.sign_ins.add_flow(flow(f"old{i}", T0))
            tx.sign_ins.add_code(code(f"old{i}", at=T0))
        tx.sign_ins.add_flow(flow("new", T0 + 30 * MINUTE))
        tx.sign_ins.add_code(code("new", at=T0 + 30 * MINUTE))
    after = T0 + 20 * MINUTE  # every old one expired, the new ones not
    with store.transaction() as tx:
        assert tx.sign_ins.delete_expired(after, 2) == 4  # up to 2 of each
    with store.transaction() as tx:
        assert tx.sign_ins.delete_expired(after, 2) == 2
        assert tx.sign_ins.delete_expired(after, 2) == 0
    with store.transaction() as tx:
        assert tx.sign_ins.take_flow(hash_secret("new")) is not None
        assert tx.sign_ins.take_code(hash_secret("new")) is not None
