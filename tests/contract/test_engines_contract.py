"""The storage contract of engine heartbeats (``EngineRepository`` in ``pushcore.ports``).

``pushctl send`` will warn when no engine was seen lately; these tests run on
every database (see ``conftest.py``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pushcore.ports import Store, Transaction
from tests.contract.test_store_contract import MINUTE, T0, Boom

SECOND = timedelta(seconds=1)


def beat(store: Store, engine_id: str, at: datetime) -> None:
    with store.transaction() as tx:
        tx.engines.beat(engine_id, at)


def last_seen(store: Store) -> datetime | None:
    with store.read() as tx:
        return tx.engines.last_seen()


def test_no_engine_was_ever_seen_on_a_new_database(store: Store) -> None:
    assert last_seen(store) is None


def test_the_last_beat_of_any_engine_is_what_was_seen_last(store: Store) -> None:
    beat(store, "serve-1", T0)
    assert last_seen(store) == T0
    beat(store, "worker-1", T0 + 5 * SECOND)
    beat(store, "serve-1", T0 + 2 * SECOND)
    assert last_seen(store) == T0 + 5 * SECOND
    beat(store, "serve-1", T0 + MINUTE)
    assert last_seen(store) == T0 + MINUTE


def test_a_late_beat_with_an_earlier_time_does_not_undo_a_later_one(store: Store) -> None:
    beat(store, "serve-1", T0 + MINUTE)
    beat(store, "serve-1", T0)
    assert last_seen(store) == T0 + MINUTE


def test_beats_are_instants_whatever_their_offset(store: Store) -> None:
    beat(store, "serve-1", T0.astimezone(timezone(timedelta(hours=-5))))
    seen = last_seen(store)
    assert seen == T0
    assert seen is not None
    assert seen.utcoffset() == timedelta(0)


def test_a_beat_rolled_back_was_never_seen(store: Store) -> None:
    def beat_then_fail(tx: Transaction) -> None:
        tx.engines.beat("serve-1", T0)
        raise Boom

    with pytest.raises(Boom), store.transaction() as tx:
        beat_then_fail(tx)
    assert last_seen(store) is None


def test_a_naive_time_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="naive"), store.transaction() as tx:
        tx.engines.beat("serve-1", datetime(2026, 1, 1))
