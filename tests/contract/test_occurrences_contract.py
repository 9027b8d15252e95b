"""The storage contract of schedule occurrences (``OccurrenceRepository``) on every
database (see ``conftest.py``): one notification per occurrence, whoever races for it."""

from __future__ import annotations

from pushcore.ports import Store
from tests.contract.test_store_contract import MINUTE, T0
from tests.contract.threads import race


def claim(store: Store, notification_id: str, schedule_id: str = "sch_a", minutes: int = 0) -> bool:
    with store.transaction() as tx:
        return tx.occurrences.claim(schedule_id, T0 + minutes * MINUTE, notification_id, T0)


def made(store: Store, schedule_id: str = "sch_a", minutes: int = 0) -> str | None:
    with store.read() as tx:
        return tx.occurrences.notification_of(schedule_id, T0 + minutes * MINUTE)


def test_an_occurrence_is_claimed_once(store: Store) -> None:
    assert made(store) is None
    assert claim(store, "ntf_1")
    assert not claim(store, "ntf_2")
    assert made(store) == "ntf_1"


def test_other_times_and_schedules_are_other_occurrences(store: Store) -> None:
    assert claim(store, "ntf_1")
    assert claim(store, "ntf_2", minutes=1)
    assert claim(store, "ntf_3", schedule_id="sch_b")
    assert (made(store), made(store, minutes=1), made(store, "sch_b")) == (
        "ntf_1",
        "ntf_2",
        "ntf_3",
    )


def test_of_racing_claims_exactly_one_wins(store: Store) -> None:
    won: list[int] = []

    def work(i: int) -> None:
        if claim(store, f"ntf_{i}"):
            won.append(i)

    race(8, work)
    assert len(won) == 1
    assert made(store) == f"ntf_{won[0]}"


def test_a_rolled_back_claim_leaves_the_occurrence_free(store: Store) -> None:
    # The claim and its notification are one transaction: lost together on a crash.
    class Crash(Exception):
        pass

    try:
        with store.transaction() as tx:
            tx.occurrences.claim("sch_a", T0, "ntf_lost", T0)
            raise Crash
    except Crash:
        pass
    assert made(store) is None
    assert claim(store, "ntf_1")


def test_a_batch_of_claims_takes_only_the_occurrences_not_made(store: Store) -> None:
    assert claim(store, "ntf_1", minutes=1)
    with store.transaction() as tx:
        won = tx.occurrences.claim_many(
            [("sch_a", T0, "ntf_2"), ("sch_a", T0 + MINUTE, "ntf_3"), ("sch_b", T0, "ntf_4")], T0
        )
    assert won == {"ntf_2", "ntf_4"}
    assert (made(store), made(store, minutes=1), made(store, "sch_b")) == (
        "ntf_2",
        "ntf_1",
        "ntf_4",
    )
