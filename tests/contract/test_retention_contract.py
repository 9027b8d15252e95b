"""The storage contract of retention (``tx.retention``), on every database."""

from __future__ import annotations

from datetime import timedelta

from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Store
from tests.contract.test_counters_contract import recount
from tests.contract.test_queue_contract import (
    HOUR,
    MS,
    add_deliveries,
    add_notifications,
    in_flight,
    make_delivery,
    make_notification,
)
from tests.contract.test_store_contract import T0

N = NotificationStatus
D = DeliveryStatus
CUTOFF = T0 + 10 * HOUR


def sweep(store: Store, limit: int = 500) -> int:
    """Delete in batches of ``limit`` until nothing is left; the rows deleted."""
    total = 0
    while True:
        with store.transaction() as tx:
            deleted = tx.retention.delete_settled(CUTOFF, limit)
        if not deleted:
            return total
        total += deleted


def kept(store: Store) -> list[str]:
    with store.read() as tx:
        return sorted(n.id for n in tx.notifications.list("acc_a", None, 100, None))


def test_deletes_exactly_what_is_settled_before_the_cutoff(store: Store) -> None:
    old, new = CUTOFF - MS, CUTOFF
    add_notifications(
        store,
        make_notification("ntf_01", status=N.DELIVERED, settled_at=old),
        make_notification("ntf_02", status=N.FAILED, settled_at=old),
        make_notification("ntf_03", status=N.CANCELLED, settled_at=old - HOUR),
        # Settled at the cutoff itself, or later: kept.
        make_notification("ntf_04", status=N.DELIVERED, settled_at=new),
        make_notification("ntf_05", status=N.FAILED, settled_at=new + HOUR),
        # Never settled, however old: kept.
        make_notification("ntf_06", status=N.QUEUED, created_at=T0 - 100 * HOUR),
        make_notification("ntf_07", status=N.SCHEDULED, created_at=T0 - 100 * HOUR),
    )
    add_deliveries(
        store,
        make_delivery("dlv_01", "ntf_01", "dev_01", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_02", "ntf_01", "dev_02", status=D.FAILED, attempts=1),
        make_delivery("dlv_03", "ntf_02", "dev_01", status=D.FAILED, attempts=2),
        make_delivery("dlv_04", "ntf_03", "dev_01", status=D.CANCELLED),
        make_delivery("dlv_05", "ntf_04", "dev_01", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_06", "ntf_06", "dev_01"),
    )
    assert sweep(store) == 4 + 3
    assert kept(store) == ["ntf_04", "ntf_05", "ntf_06", "ntf_07"]
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") is None
        assert tx.progress.for_notification("ntf_01") == []
        assert [d.id for d in tx.progress.for_notification("ntf_04")] == ["dlv_05"]
        assert [d.id for d in tx.progress.for_notification("ntf_06")] == ["dlv_06"]
        assert tx.notifications.stats("acc_a", T0) == recount(tx, "acc_a", T0)
        assert tx.notifications.stats("acc_a", T0).total == 4


def test_a_large_fan_out_goes_over_several_batches_its_notification_last(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01", status=N.DELIVERED, settled_at=T0))
    add_deliveries(
        store,
        *(
            make_delivery(f"dlv_{i:02d}", "ntf_01", f"dev_{i:02d}", status=D.DELIVERED)
            for i in range(7)
        ),
    )
    with store.transaction() as tx:
        assert tx.retention.delete_settled(CUTOFF, 5) == 5
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") is not None
        assert tx.notifications.stats("acc_a", T0) == recount(tx, "acc_a", T0)
    with store.transaction() as tx:
        assert tx.retention.delete_settled(CUTOFF, 5) == 2 + 1
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") is None


def test_a_settled_notification_with_an_open_delivery_is_kept(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01", status=N.FAILED, settled_at=T0))
    add_deliveries(store, in_flight(make_delivery("dlv_01"), "engine", T0 + HOUR))
    assert sweep(store) == 0
    assert kept(store) == ["ntf_01"]


def test_batches_take_the_oldest_first(store: Store) -> None:
    add_notifications(
        store,
        *(
            make_notification(f"ntf_{i:02d}", status=N.DELIVERED, settled_at=T0 - i * HOUR)
            for i in range(4)
        ),
    )
    with store.transaction() as tx:
        assert tx.retention.delete_settled(CUTOFF, 2) == 2
    assert kept(store) == ["ntf_00", "ntf_01"]


def test_prune_activity_drops_only_buckets_before_the_time(store: Store) -> None:
    day = timedelta(hours=24)
    add_notifications(
        store,
        make_notification("ntf_01", created_at=T0 - 2 * day),
        make_notification("ntf_02", created_at=T0 - 3 * day),
        make_notification("ntf_03", created_at=T0),
    )
    with store.transaction() as tx:
        assert tx.retention.prune_activity(T0 - day, 1) == 1
    with store.transaction() as tx:
        assert tx.retention.prune_activity(T0 - day, 10) == 1
        assert tx.retention.prune_activity(T0 - day, 10) == 0
    with store.read() as tx:
        # Counts by status are kept; only the windows that reach no more are gone.
        assert tx.notifications.stats("acc_a", T0 - 4 * day).total == 3
        assert tx.notifications.stats("acc_a", T0 - 4 * day).created_24h == 1
