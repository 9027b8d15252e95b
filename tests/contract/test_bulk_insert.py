"""Notifications inserted in bulk (the batch endpoint): all or none, counted like one by one."""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pushcore.ports import Store
from tests.contract.test_queue_contract import make_notification
from tests.contract.test_store_contract import T0


def test_add_many_stores_every_notification_and_counts_them(store: Store) -> None:
    batch = [make_notification(f"ntf_{i:03}", metadata={"i": str(i)}) for i in range(120)]
    with store.transaction() as tx:
        tx.notifications.add_many(batch)
    with store.read() as tx:
        assert tx.notifications.by_ids([n.id for n in batch]) == batch
        stats = tx.notifications.stats("acc_a", T0)
    assert stats.by_status["QUEUED"] == 120


def test_add_many_with_a_taken_id_stores_none_of_the_batch(store: Store) -> None:
    with store.transaction() as tx:
        tx.notifications.add(make_notification("ntf_taken"))
    with pytest.raises(KeyError), store.transaction() as tx:
        tx.notifications.add_many([make_notification("ntf_new"), make_notification("ntf_taken")])
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_new") is None
        assert tx.notifications.stats("acc_a", T0).by_status["QUEUED"] == 1


# Any text a request may hold (PostgreSQL's text has no NUL; no lone surrogates in UTF-8).
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.tuples(
            _TEXT,
            st.none() | _TEXT,
            st.dictionaries(_TEXT, _TEXT, max_size=3),
            st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
            | st.sampled_from([ZoneInfo("America/New_York"), ZoneInfo("Asia/Kathmandu")]),
            st.integers(0, 10**9),
            st.booleans(),
            st.none() | st.integers(1, 2**31 - 1),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_bulk_rows_come_back_as_they_went_in(store: Store, rows: list[Any]) -> None:
    # The rows of a bulk insert go to PostgreSQL as one JSON document and are cast back
    # column by column: quotes, backslashes, any Unicode, JSON-looking text, NULLs,
    # JSON objects, booleans, and times in any offset or zone must come back unchanged.
    with store.transaction() as tx:
        first = len(tx.notifications.list("acc_a", None, 1000, None))
    batch = [
        make_notification(
            f"ntf_p{first + i:04}",
            title=title,
            sender_name=sender,
            metadata=metadata,
            scheduled_at=(T0 + timedelta(milliseconds=ms)).astimezone(zone),
            renotify=renotify,
            custom_delay=custom,
        )
        for i, (title, sender, metadata, zone, ms, renotify, custom) in enumerate(rows)
    ]
    with store.transaction() as tx:
        tx.notifications.add_many(batch)
    with store.read() as tx:
        assert tx.notifications.by_ids([n.id for n in batch]) == batch
