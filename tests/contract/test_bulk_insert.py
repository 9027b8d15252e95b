"""Notifications inserted in bulk (the batch endpoint): all or none, counted like one by one."""

from __future__ import annotations

import pytest

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
