"""The storage contract of the engine's queue: notifications, deliveries, device targets.

Each test runs against every adapter (see ``conftest.py``). The docstrings of
``NotificationRepository``, ``DeliveryQueue``, ``DeliveryProgress``, ``DeliverySchedule`` and
``DeviceRepository.active_targets``/``by_ids`` in ``pushcore.ports`` are the
contract; where a port leaves an order open, the tests compare sets (sorted ids).
Times are millisecond-precision and timezone-aware, the precision promised.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from pushcore.domain.model import (
    Delivery,
    DeliveryCounts,
    IconStyle,
    Notification,
    Priority,
    QueueDepth,
    Sound,
    StreamRef,
)
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Store, Transaction
from tests.contract.test_store_contract import MINUTE, T0, Boom, make_device

N = NotificationStatus
D = DeliveryStatus
SECOND = timedelta(seconds=1)
MS = timedelta(milliseconds=1)
HOUR = timedelta(hours=1)
LEASE = 30 * SECOND


def make_notification(
    notification_id: str = "ntf_01", account_id: str = "acc_a", **changes: Any
) -> Notification:
    """A plain QUEUED notification due at T0, adjusted by ``changes``."""
    notification = Notification(
        id=notification_id,
        account_id=account_id,
        title=f"title of {notification_id}",
        body=f"body of {notification_id}",
        icon_style=IconStyle.BELL,
        sound=Sound.DEFAULT,
        priority=Priority.NORMAL,
        delay="5s",
        custom_delay=None,
        target_device_token=None,
        metadata={},
        scheduled_at=T0,
        sender_name=None,
        sender_icon=None,
        status=N.QUEUED,
        created_at=T0,
        devices_targeted=1,
    )
    return attrs.evolve(notification, **changes)


def make_delivery(
    delivery_id: str = "dlv_01",
    notification_id: str = "ntf_01",
    device_id: str = "dev_01",
    account_id: str = "acc_a",
    **changes: Any,
) -> Delivery:
    """A PENDING, never-attempted delivery due at T0, adjusted by ``changes``."""
    delivery = Delivery(
        id=delivery_id,
        notification_id=notification_id,
        account_id=account_id,
        device_id=device_id,
        status=D.PENDING,
        due_at=T0,
    )
    return attrs.evolve(delivery, **changes)


def in_flight(delivery: Delivery, owner: str, lease_end: datetime, attempts: int = 1) -> Delivery:
    """``delivery`` as a claim by ``owner`` leaves it."""
    return attrs.evolve(
        delivery,
        status=D.IN_FLIGHT,
        lease_owner=owner,
        lease_expires_at=lease_end,
        attempts=attempts,
    )


def add_notifications(store: Store, *notifications: Notification) -> None:
    with store.transaction() as tx:
        for notification in notifications:
            tx.notifications.add(notification)


def add_deliveries(store: Store, *deliveries: Delivery) -> None:
    with store.transaction() as tx:
        tx.schedule.add_many(deliveries)


def deliveries_of(store: Store, notification_id: str = "ntf_01") -> dict[str, Delivery]:
    """The notification's stored deliveries by id."""
    with store.read() as tx:
        return {d.id: d for d in tx.progress.for_notification(notification_id)}


def stored(store: Store, delivery_id: str, notification_id: str = "ntf_01") -> Delivery:
    return deliveries_of(store, notification_id)[delivery_id]


def claim(
    store: Store, owner: str, now: datetime = T0, limit: int = 100, lease: timedelta = LEASE
) -> list[Delivery]:
    """Claim in a transaction of its own, as a scheduler does."""
    with store.transaction() as tx:
        return list(tx.deliveries.claim_due(now, owner, now + lease, limit))


def ids(items: Sequence[Notification] | Sequence[Delivery]) -> list[str]:
    """The ids in the order given."""
    return [item.id for item in items]


def id_set(items: Sequence[Notification] | Sequence[Delivery]) -> list[str]:
    """The ids, sorted: for results whose order the port leaves open."""
    return sorted(item.id for item in items)


# Notifications: round trip and scoping


EVERY_FIELD = make_notification(
    "ntf_full",
    title="Déploiement terminé ✅",
    body="line one\nline two, with \"quotes\" and 'apostrophes'",
    icon_style=IconStyle.TERMINAL,
    sound=Sound.CRITICAL,
    priority=Priority.CRITICAL,
    delay="custom",
    custom_delay=90,
    target_device_token="token-dev_01",
    metadata={"build": "1234", "branch": "main", "empty": "", "ünï": "çødé ✓"},
    scheduled_at=T0 + 90 * SECOND,
    sender_name="CI bot",
    sender_icon="https://example.com/icon.png",
    status=N.FAILED,
    created_at=T0 - MS,
    devices_targeted=3,
    failure_reason="no_devices",
    stream=StreamRef(id="str_01", name="Releases", code="falcon-7k2q"),
    wake_at=T0 + HOUR + 7 * MS,
    settled_at=T0 + 2 * HOUR + 999 * MS,
)


@pytest.mark.parametrize(
    "notification",
    [
        pytest.param(make_notification(), id="minimal-optional-fields-none"),
        pytest.param(EVERY_FIELD, id="every-optional-field-set"),
        pytest.param(
            make_notification(
                status=N.SCHEDULED, delay="0s", devices_targeted=0, wake_at=T0 + 24 * HOUR
            ),
            id="scheduled-waiting-with-wake-at",
        ),
    ],
)
def test_notification_round_trips_every_field(store: Store, notification: Notification) -> None:
    add_notifications(store, notification)
    with store.read() as tx:
        found = tx.notifications.get(notification.account_id, notification.id)
        (by_id,) = tx.notifications.by_ids([notification.id])
    assert found == notification
    assert by_id == notification
    assert found is not None
    assert dict(found.metadata) == dict(notification.metadata)
    assert found.stream == notification.stream
    assert found.scheduled_at.utcoffset() == timedelta(0)
    assert found.created_at.utcoffset() == timedelta(0)


def test_notification_times_in_another_offset_are_the_same_instants(store: Store) -> None:
    paris = timezone(timedelta(hours=1))
    notification = make_notification(
        scheduled_at=T0.astimezone(paris),
        created_at=(T0 - MINUTE).astimezone(paris),
        wake_at=(T0 + MINUTE).astimezone(paris),
        settled_at=(T0 + HOUR).astimezone(paris),
    )
    add_notifications(store, notification)
    with store.read() as tx:
        found = tx.notifications.get("acc_a", "ntf_01")
    assert found is not None
    assert found.scheduled_at == T0
    assert found.created_at == T0 - MINUTE
    assert found.wake_at == T0 + MINUTE
    assert found.settled_at == T0 + HOUR


def test_get_is_scoped_by_account(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01", "acc_a"))
    with store.read() as tx:
        assert tx.notifications.get("acc_b", "ntf_01") is None
        assert tx.notifications.get("acc_a", "ntf_99") is None
        assert tx.notifications.get("acc_a", "ntf_01") == make_notification("ntf_01", "acc_a")


def test_by_ids_spans_accounts_and_ignores_unknown_ids(store: Store) -> None:
    add_notifications(
        store,
        make_notification("ntf_01", "acc_a"),
        make_notification("ntf_02", "acc_a"),
        make_notification("ntf_03", "acc_b"),
    )
    with store.read() as tx:
        found = tx.notifications.by_ids(["ntf_03", "ntf_99", "ntf_01"])
        none = tx.notifications.by_ids([])
        unknown = tx.notifications.by_ids(["ntf_98", "ntf_99"])
    assert sorted(found, key=lambda n: n.id) == [
        make_notification("ntf_01", "acc_a"),
        make_notification("ntf_03", "acc_b"),
    ]
    assert list(none) == []
    assert list(unknown) == []


def test_by_ids_finds_every_id_of_a_long_list(store: Store) -> None:
    # Long enough that an adapter must split it (SQLite's bound-variable limit).
    add_notifications(
        store,
        make_notification("ntf_0000"),
        make_notification("ntf_0600", "acc_b"),
        make_notification("ntf_1200"),
    )
    wanted = [f"ntf_{i:04d}" for i in range(1201)]
    with store.read() as tx:
        found = tx.notifications.by_ids(wanted)
    assert id_set(found) == ["ntf_0000", "ntf_0600", "ntf_1200"]


# Notifications: listing


def test_list_is_newest_first_by_id_and_scoped(store: Store) -> None:
    # Inserted out of order, created_at against the id order: the order is the id's.
    add_notifications(
        store,
        make_notification("ntf_02", created_at=T0 + 3 * MINUTE),
        make_notification("ntf_04", created_at=T0 + 1 * MINUTE),
        make_notification("ntf_01", created_at=T0 + 4 * MINUTE),
        make_notification("ntf_03", created_at=T0 + 2 * MINUTE),
        make_notification("ntf_05", "acc_b"),
    )
    with store.read() as tx:
        listed = tx.notifications.list("acc_a", None, 100, None)
        other = tx.notifications.list("acc_b", None, 100, None)
        nobody = tx.notifications.list("acc_nobody", None, 100, None)
    assert ids(listed) == ["ntf_04", "ntf_03", "ntf_02", "ntf_01"]
    assert listed[0] == make_notification("ntf_04", created_at=T0 + 1 * MINUTE)
    assert ids(other) == ["ntf_05"]
    assert list(nobody) == []


def test_list_filters_by_status_and_limits(store: Store) -> None:
    add_notifications(
        store,
        make_notification("ntf_01", status=N.DELIVERED),
        make_notification("ntf_02", status=N.QUEUED),
        make_notification("ntf_03", status=N.DELIVERED),
        make_notification("ntf_04", status=N.FAILED),
        make_notification("ntf_05", status=N.DELIVERED),
        make_notification("ntf_06", "acc_b", status=N.DELIVERED),
    )
    with store.read() as tx:
        delivered = tx.notifications.list("acc_a", N.DELIVERED, 100, None)
        delivered_two = tx.notifications.list("acc_a", N.DELIVERED, 2, None)
        cancelled = tx.notifications.list("acc_a", N.CANCELLED, 100, None)
        any_three = tx.notifications.list("acc_a", None, 3, None)
        one = tx.notifications.list("acc_a", None, 1, None)
    assert ids(delivered) == ["ntf_05", "ntf_03", "ntf_01"]
    assert all(n.status is N.DELIVERED for n in delivered)
    assert ids(delivered_two) == ["ntf_05", "ntf_03"]
    assert list(cancelled) == []
    assert ids(any_three) == ["ntf_05", "ntf_04", "ntf_03"]
    assert ids(one) == ["ntf_05"]


def test_list_before_id_is_an_exclusive_cursor(store: Store) -> None:
    add_notifications(store, *(make_notification(f"ntf_{i:02d}") for i in range(1, 6)))
    with store.read() as tx:
        below_three = tx.notifications.list("acc_a", None, 100, "ntf_03")
        below_first = tx.notifications.list("acc_a", None, 100, "ntf_01")
        below_unknown = tx.notifications.list("acc_a", None, 100, "ntf_03x")
        below_all = tx.notifications.list("acc_a", None, 100, "ntf_99")
    assert ids(below_three) == ["ntf_02", "ntf_01"]
    assert list(below_first) == []
    # A cursor need not be a stored id: it is a bound on the ids.
    assert ids(below_unknown) == ["ntf_03", "ntf_02", "ntf_01"]
    assert ids(below_all) == ["ntf_05", "ntf_04", "ntf_03", "ntf_02", "ntf_01"]


def walk(store: Store, status: NotificationStatus | None, page_size: int) -> list[list[str]]:
    """Every page of acc_a's list, following the cursor as the API does."""
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        with store.read() as tx:
            page = ids(tx.notifications.list("acc_a", status, page_size, cursor))
        if page:
            pages.append(page)
        if len(page) < page_size:
            return pages
        cursor = page[-1]


@pytest.mark.parametrize("page_size", [1, 2, 3, 7, 8])
def test_paging_with_the_cursor_visits_every_notification_once(
    store: Store, page_size: int
) -> None:
    statuses = [N.QUEUED, N.DELIVERED, N.FAILED, N.DELIVERED, N.SCHEDULED, N.DELIVERED, N.CANCELLED]
    add_notifications(
        store,
        *(make_notification(f"ntf_{i:02d}", status=s) for i, s in enumerate(statuses, start=1)),
        make_notification("ntf_50", "acc_b"),
    )
    pages = walk(store, None, page_size)
    flat = [i for page in pages for i in page]
    assert flat == [f"ntf_{i:02d}" for i in range(7, 0, -1)]
    assert all(len(page) <= page_size for page in pages)

    delivered = [i for page in walk(store, N.DELIVERED, page_size) for i in page]
    assert delivered == ["ntf_06", "ntf_04", "ntf_02"]


# Notifications: update


def test_update_stores_the_changed_state(store: Store) -> None:
    original = make_notification(status=N.QUEUED, devices_targeted=0)
    add_notifications(store, original)
    waiting = attrs.evolve(original, status=N.SCHEDULED, wake_at=T0 + 24 * HOUR, devices_targeted=0)
    with store.transaction() as tx:
        tx.notifications.update(waiting)
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") == waiting

    failed = attrs.evolve(
        waiting,
        status=N.FAILED,
        failure_reason="no_devices",
        wake_at=None,
        settled_at=T0 + 24 * HOUR + 5 * MS,
        devices_targeted=2,
    )
    with store.transaction() as tx:
        tx.notifications.update(failed)
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") == failed
        assert tx.notifications.next_wake_at() is None

    # Clearing an optional field is stored too.
    with store.transaction() as tx:
        tx.notifications.update(attrs.evolve(failed, failure_reason=None, settled_at=None))
    with store.read() as tx:
        found = tx.notifications.get("acc_a", "ntf_01")
    assert found is not None
    assert found.failure_reason is None
    assert found.settled_at is None


def test_update_changes_only_its_own_notification(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01"), make_notification("ntf_02"))
    with store.transaction() as tx:
        tx.notifications.update(make_notification("ntf_01", status=N.CANCELLED))
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_02") == make_notification("ntf_02")


def test_update_does_not_create_a_missing_notification(store: Store) -> None:
    with store.transaction() as tx:
        tx.notifications.update(make_notification("ntf_01", status=N.DELIVERED))
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") is None
        assert list(tx.notifications.by_ids(["ntf_01"])) == []
        assert list(tx.notifications.list("acc_a", None, 100, None)) == []


def test_update_many_stores_each_changed_state_and_creates_nothing(store: Store) -> None:
    add_notifications(store, *(make_notification(f"ntf_0{i}") for i in range(1, 4)))
    delivered = make_notification("ntf_01", status=N.DELIVERED, settled_at=T0 + 5 * MS)
    waiting = make_notification("ntf_02", status=N.SCHEDULED, wake_at=T0 + HOUR)
    with store.transaction() as tx:
        tx.notifications.update_many(
            [delivered, waiting, make_notification("ntf_99", status=N.FAILED)]
        )
    with store.read() as tx:
        assert list(tx.notifications.by_ids(["ntf_01", "ntf_02", "ntf_03", "ntf_99"])) == [
            delivered,
            waiting,
            make_notification("ntf_03"),
        ]
        tx.notifications.update_many([])


def test_refresh_reads_back_the_changeable_state_and_skips_deleted_ones(store: Store) -> None:
    first, second = make_notification("ntf_01"), make_notification("ntf_02")
    add_notifications(store, first, second)
    changed = attrs.evolve(
        second,
        status=N.FAILED,
        failure_reason="Unregistered",
        wake_at=None,
        settled_at=T0 + 2 * SECOND + 7 * MS,
        devices_targeted=3,
    )
    with store.transaction() as tx:
        tx.notifications.update(changed)
    with store.read() as tx:
        # What a claim read earlier, refreshed: unchanged and changed alike
        # equal what is stored; an id never stored is left out.
        fresh = tx.notifications.refresh([first, second, make_notification("ntf_99")])
        assert list(fresh) == [first, changed]
        assert list(fresh) == list(tx.notifications.by_ids(["ntf_01", "ntf_02"]))
        waiting = attrs.evolve(first, status=N.SCHEDULED, wake_at=T0 + HOUR)
    with store.transaction() as tx:
        tx.notifications.update(waiting)
        assert list(tx.notifications.refresh([first])) == [waiting]
        assert list(tx.notifications.refresh([])) == []


# Notifications: waiting for a device


def test_waiting_for_finds_what_a_new_device_should_get(store: Store) -> None:
    stream = StreamRef(id="str_01", name="Releases", code="falcon-7k2q")
    later = T0 + MINUTE
    add_notifications(
        store,
        # Wanted:
        make_notification("ntf_01", status=N.SCHEDULED, scheduled_at=T0 - HOUR),
        make_notification("ntf_02", status=N.SCHEDULED, target_device_token="tok"),
        make_notification("ntf_03", status=N.QUEUED, scheduled_at=later),
        make_notification(
            "ntf_04", status=N.QUEUED, scheduled_at=T0 + MS, target_device_token="tok"
        ),
        # Not wanted:
        make_notification("ntf_11", status=N.SCHEDULED, target_device_token="other-token"),
        make_notification(
            "ntf_12", status=N.QUEUED, scheduled_at=later, target_device_token="other-token"
        ),
        make_notification("ntf_13", status=N.QUEUED, scheduled_at=T0),  # due now
        make_notification("ntf_14", status=N.QUEUED, scheduled_at=T0 - MINUTE),  # overdue
        make_notification("ntf_15", status=N.SCHEDULED, stream=stream),
        make_notification("ntf_16", status=N.QUEUED, scheduled_at=later, stream=stream),
        make_notification("ntf_17", "acc_b", status=N.SCHEDULED),
        make_notification("ntf_18", "acc_b", status=N.QUEUED, scheduled_at=later),
        make_notification("ntf_19", status=N.DELIVERED, scheduled_at=later),
        make_notification("ntf_20", status=N.FAILED, scheduled_at=later),
        make_notification("ntf_21", status=N.CANCELLED, scheduled_at=later),
        make_notification("ntf_22", status=N.CANCELLED, target_device_token="tok"),
    )
    with store.read() as tx:
        found = tx.notifications.waiting_for("acc_a", "tok", T0)
        for_other = tx.notifications.waiting_for("acc_a", "other-token", T0)
        nobody = tx.notifications.waiting_for("acc_nobody", "tok", T0)
    assert id_set(found) == ["ntf_01", "ntf_02", "ntf_03", "ntf_04"]
    assert sorted(found, key=lambda n: n.id)[1] == make_notification(
        "ntf_02", status=N.SCHEDULED, target_device_token="tok"
    )
    assert id_set(for_other) == ["ntf_01", "ntf_03", "ntf_11", "ntf_12"]
    assert list(nobody) == []


def test_waiting_for_compares_the_due_time_with_now(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01", scheduled_at=T0 + MINUTE))
    with store.read() as tx:
        before = tx.notifications.waiting_for("acc_a", "tok", T0 + MINUTE - MS)
        at = tx.notifications.waiting_for("acc_a", "tok", T0 + MINUTE)
    assert ids(before) == ["ntf_01"]
    assert list(at) == []


# Notifications: wake-ups


def test_due_wakeups_are_earliest_first_limited_and_span_accounts(store: Store) -> None:
    add_notifications(
        store,
        make_notification("ntf_01", status=N.SCHEDULED, wake_at=T0 - MINUTE),
        make_notification("ntf_02", "acc_b", status=N.SCHEDULED, wake_at=T0 - 3 * MINUTE),
        make_notification("ntf_03", wake_at=T0),
        make_notification("ntf_04", wake_at=T0 - 2 * MINUTE),
        make_notification("ntf_05", wake_at=T0 + MS),
        make_notification("ntf_06"),
    )
    with store.read() as tx:
        everything = tx.notifications.due_wakeups(T0, 100)
        first_two = tx.notifications.due_wakeups(T0, 2)
        earlier = tx.notifications.due_wakeups(T0 - MINUTE - MS, 100)
        later = tx.notifications.due_wakeups(T0 + MINUTE, 100)
    assert ids(everything) == ["ntf_02", "ntf_04", "ntf_01", "ntf_03"]
    assert everything[0] == make_notification(
        "ntf_02", "acc_b", status=N.SCHEDULED, wake_at=T0 - 3 * MINUTE
    )
    assert ids(first_two) == ["ntf_02", "ntf_04"]
    assert ids(earlier) == ["ntf_02", "ntf_04"]
    assert ids(later) == ["ntf_02", "ntf_04", "ntf_01", "ntf_03", "ntf_05"]


def test_next_wake_at_is_the_earliest_wake_at(store: Store) -> None:
    with store.read() as tx:
        assert tx.notifications.next_wake_at() is None
    add_notifications(store, make_notification("ntf_01"))
    with store.read() as tx:
        assert tx.notifications.next_wake_at() is None
    add_notifications(
        store,
        make_notification("ntf_02", wake_at=T0 + HOUR),
        make_notification("ntf_03", "acc_b", wake_at=T0 + MINUTE + 7 * MS),
        make_notification("ntf_04", wake_at=T0 + 2 * MINUTE),
    )
    with store.read() as tx:
        assert tx.notifications.next_wake_at() == T0 + MINUTE + 7 * MS
    with store.transaction() as tx:
        tx.notifications.update(make_notification("ntf_03", "acc_b"))
    with store.read() as tx:
        assert tx.notifications.next_wake_at() == T0 + 2 * MINUTE


# Notifications: stats


def test_stats_of_an_empty_account_has_every_status_at_zero(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01", "acc_b"))
    with store.read() as tx:
        stats = tx.notifications.stats("acc_a", T0 - 24 * HOUR)
    assert dict(stats.by_status) == {s.value: 0 for s in N}
    assert stats.total == 0
    assert (stats.deliveries.pending, stats.deliveries.delivered) == (0, 0)
    assert (stats.deliveries.failed, stats.deliveries.cancelled) == (0, 0)
    assert (stats.created_24h, stats.delivered_24h, stats.failed_24h) == (0, 0, 0)


def test_stats_counts_statuses_deliveries_and_the_window(store: Store) -> None:
    # The window is counted in whole minutes: here it starts on one.
    since = (T0 - 24 * HOUR).replace(second=0, microsecond=0)
    add_notifications(
        store,
        make_notification("ntf_01", status=N.QUEUED, created_at=T0),
        # Created before the window, settled exactly at its start: delivered in it.
        make_notification("ntf_02", status=N.DELIVERED, created_at=since - MS, settled_at=since),
        # Created exactly at the window's start, settled just before it.
        make_notification("ntf_03", status=N.DELIVERED, created_at=since, settled_at=since - MS),
        make_notification("ntf_04", status=N.FAILED, created_at=T0, settled_at=T0),
        make_notification("ntf_05", status=N.SCHEDULED, created_at=since - HOUR),
        make_notification("ntf_06", status=N.CANCELLED, created_at=T0, settled_at=T0),
        make_notification("ntf_07", status=N.FAILED, created_at=since - HOUR, settled_at=since),
        make_notification("ntf_08", status=N.DELIVERED, created_at=T0, settled_at=T0),
        # Another account's: none of these count.
        make_notification("ntf_50", "acc_b", status=N.DELIVERED, settled_at=T0),
        make_notification("ntf_51", "acc_b", status=N.FAILED, settled_at=T0),
        make_notification("ntf_52", "acc_b", status=N.CANCELLED),
    )
    lease_end = T0 + LEASE
    add_deliveries(
        store,
        make_delivery("dlv_01", "ntf_01", "dev_01"),
        make_delivery("dlv_02", "ntf_01", "dev_02", status=D.PENDING, attempts=1),
        in_flight(make_delivery("dlv_03", "ntf_01", "dev_03"), "sched-a", lease_end),
        make_delivery("dlv_04", "ntf_02", "dev_01", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_05", "ntf_03", "dev_01", status=D.DELIVERED, attempts=2),
        make_delivery("dlv_06", "ntf_04", "dev_01", status=D.FAILED, attempts=1),
        make_delivery("dlv_07", "ntf_06", "dev_01", status=D.CANCELLED),
        make_delivery("dlv_50", "ntf_50", "dev_50", "acc_b", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_51", "ntf_51", "dev_50", "acc_b", status=D.FAILED, attempts=1),
        make_delivery("dlv_52", "ntf_52", "dev_50", "acc_b"),
        in_flight(make_delivery("dlv_53", "ntf_52", "dev_51", "acc_b"), "sched-a", lease_end),
    )
    with store.read() as tx:
        stats = tx.notifications.stats("acc_a", since)
    assert dict(stats.by_status) == {
        "SCHEDULED": 1,
        "QUEUED": 1,
        "DELIVERED": 3,
        "FAILED": 2,
        "CANCELLED": 1,
    }
    assert stats.total == 8
    assert stats.deliveries.pending == 3  # two PENDING and one IN_FLIGHT
    assert stats.deliveries.delivered == 2
    assert stats.deliveries.failed == 1
    assert stats.deliveries.cancelled == 1
    assert stats.created_24h == 5  # ntf_01, 03, 04, 06, 08
    assert stats.delivered_24h == 2  # ntf_02, 08
    assert stats.failed_24h == 2  # ntf_04, 07


def test_stats_window_starts_at_the_start_of_its_minute(store: Store) -> None:
    since = T0 - 24 * HOUR  # 10:15:30.123 the day before
    minute = since.replace(second=0, microsecond=0)
    add_notifications(
        store,
        make_notification("ntf_01", status=N.DELIVERED, created_at=minute, settled_at=minute),
        make_notification("ntf_02", status=N.FAILED, created_at=minute - MS, settled_at=since),
    )
    with store.read() as tx:
        stats = tx.notifications.stats("acc_a", since)
    assert (stats.created_24h, stats.delivered_24h, stats.failed_24h) == (1, 1, 1)


# Deliveries: round trip and counts


def test_deliveries_round_trip_in_id_order(store: Store) -> None:
    full = make_delivery(
        "dlv_02",
        device_id="dev_02",
        status=D.FAILED,
        due_at=T0 + 5 * SECOND + 250 * MS,
        attempts=3,
        lease_owner=None,
        lease_expires_at=None,
        failure_reason="BadDeviceToken",
        settled_at=T0 + 6 * SECOND + 1 * MS,
    )
    leased = in_flight(
        make_delivery("dlv_03", device_id="dev_03", due_at=T0 - MS), "sched-a", T0 + LEASE + 9 * MS
    )
    plain = make_delivery("dlv_01", device_id="dev_01")
    other = make_delivery("dlv_04", "ntf_02", "dev_01")
    # Inserted out of id order, in one bulk call.
    add_deliveries(store, leased, other, full, plain)
    with store.read() as tx:
        listed = tx.progress.for_notification("ntf_01")
        unknown = tx.progress.for_notification("ntf_99")
    assert list(listed) == [plain, full, leased]
    assert listed[1].due_at.utcoffset() == timedelta(0)
    assert list(unknown) == []
    assert list(deliveries_of(store, "ntf_02").values()) == [other]


def test_add_many_of_nothing_is_a_no_op(store: Store) -> None:
    add_deliveries(store)
    with store.read() as tx:
        assert list(tx.progress.for_notification("ntf_01")) == []
        assert tx.deliveries.next_due_at() is None


def test_counts_by_status_with_in_flight_as_pending(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01"),
        make_delivery("dlv_02", device_id="dev_02", attempts=2),  # retried, waiting
        in_flight(make_delivery("dlv_03", device_id="dev_03"), "sched-a", T0 + LEASE),
        make_delivery("dlv_04", device_id="dev_04", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_05", device_id="dev_05", status=D.DELIVERED, attempts=3),
        make_delivery("dlv_06", device_id="dev_06", status=D.FAILED, attempts=1),
        make_delivery("dlv_07", device_id="dev_07", status=D.CANCELLED),
        make_delivery("dlv_08", device_id="dev_08", status=D.CANCELLED, attempts=1),
        make_delivery("dlv_09", "ntf_02", "dev_01", status=D.DELIVERED, attempts=1),
    )
    with store.read() as tx:
        counts = tx.progress.counts("ntf_01")
        other = tx.progress.counts("ntf_02")
        unknown = tx.progress.counts("ntf_99")
    assert counts == DeliveryCounts(pending=3, delivered=2, failed=1, cancelled=2, handed=6)
    assert other == DeliveryCounts(delivered=1, handed=1)
    assert unknown == DeliveryCounts()


def test_counts_many_equals_counts_of_each(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01"),
        in_flight(make_delivery("dlv_02", device_id="dev_02"), "sched-a", T0 + LEASE),
        make_delivery("dlv_03", device_id="dev_03", status=D.FAILED, attempts=1),
        make_delivery("dlv_04", "ntf_02", "dev_01", status=D.DELIVERED, attempts=1),
    )
    with store.read() as tx:
        many = tx.progress.counts_many(["ntf_01", "ntf_02", "ntf_99"])
        one, two = tx.progress.counts("ntf_01"), tx.progress.counts("ntf_02")
    assert many == {"ntf_01": one, "ntf_02": two}
    assert one == DeliveryCounts(pending=2, failed=1, handed=2)


def test_open_among_names_those_with_pending_or_in_flight_deliveries(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", "ntf_01", "dev_01"),
        in_flight(make_delivery("dlv_02", "ntf_02", "dev_01"), "sched-a", T0 + LEASE),
        make_delivery("dlv_03", "ntf_03", "dev_01", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_04", "ntf_04", "dev_01", status=D.CANCELLED),
    )
    with store.read() as tx:
        found = tx.progress.open_among(["ntf_01", "ntf_02", "ntf_03", "ntf_04", "ntf_99"])
        nothing = tx.progress.open_among([])
    assert found == {"ntf_01", "ntf_02"}
    assert nothing == set()


# Deliveries: claims and leases


def test_claim_takes_due_pending_ones_earliest_first_up_to_the_limit(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - MINUTE),
        make_delivery("dlv_02", device_id="dev_02", due_at=T0 - 3 * MINUTE),
        make_delivery("dlv_03", "ntf_02", "dev_03", "acc_b", due_at=T0 - 2 * MINUTE),
        make_delivery("dlv_04", device_id="dev_04", due_at=T0),  # due exactly now
        make_delivery("dlv_05", device_id="dev_05", due_at=T0 + MS),  # not yet
        make_delivery(
            "dlv_06", device_id="dev_06", status=D.DELIVERED, due_at=T0 - HOUR, attempts=1
        ),
        make_delivery("dlv_07", device_id="dev_07", status=D.FAILED, due_at=T0 - HOUR, attempts=1),
        make_delivery("dlv_08", device_id="dev_08", status=D.CANCELLED, due_at=T0 - HOUR),
    )
    first = claim(store, "sched-a", limit=2)
    assert id_set(first) == ["dlv_02", "dlv_03"]
    lease_end = T0 + LEASE
    assert sorted(first, key=lambda d: d.id) == [
        in_flight(
            make_delivery("dlv_02", device_id="dev_02", due_at=T0 - 3 * MINUTE),
            "sched-a",
            lease_end,
        ),
        in_flight(
            make_delivery("dlv_03", "ntf_02", "dev_03", "acc_b", due_at=T0 - 2 * MINUTE),
            "sched-a",
            lease_end,
        ),
    ]
    # The claim is stored, not only returned.
    assert stored(store, "dlv_03", "ntf_02") == first[ids(first).index("dlv_03")]

    second = claim(store, "sched-b")
    assert id_set(second) == ["dlv_01", "dlv_04"]
    assert all(d.lease_owner == "sched-b" and d.attempts == 1 for d in second)

    assert claim(store, "sched-c") == []
    after = deliveries_of(store)
    assert after["dlv_02"].lease_owner == "sched-a"
    assert after["dlv_05"] == make_delivery("dlv_05", device_id="dev_05", due_at=T0 + MS)
    assert after["dlv_06"].status is D.DELIVERED
    assert after["dlv_07"].status is D.FAILED
    assert after["dlv_08"].status is D.CANCELLED


def test_claim_with_a_zero_limit_takes_nothing(store: Store) -> None:
    add_deliveries(store, make_delivery("dlv_01", due_at=T0 - MINUTE))
    assert claim(store, "sched-a", limit=0) == []
    assert stored(store, "dlv_01") == make_delivery("dlv_01", due_at=T0 - MINUTE)


def test_a_second_claim_at_the_same_time_gets_none_of_the_first(store: Store) -> None:
    add_deliveries(
        store,
        *(
            make_delivery(f"dlv_{i:02d}", device_id=f"dev_{i:02d}", due_at=T0 - i * SECOND)
            for i in range(5)
        ),
    )
    first = claim(store, "sched-a", limit=3)
    second = claim(store, "sched-b", limit=100)
    assert id_set(first) == ["dlv_02", "dlv_03", "dlv_04"]
    assert id_set(second) == ["dlv_00", "dlv_01"]
    assert set(ids(first)).isdisjoint(ids(second))
    assert claim(store, "sched-c", now=T0 + LEASE - MS) == []
    owners = {d.id: d.lease_owner for d in deliveries_of(store).values()}
    assert owners == {
        **dict.fromkeys(ids(first), "sched-a"),
        **dict.fromkeys(ids(second), "sched-b"),
    }
    assert all(d.attempts == 1 for d in [*first, *second])


def test_an_expired_lease_is_claimed_again_by_another_owner(store: Store) -> None:
    add_deliveries(store, make_delivery("dlv_01", due_at=T0 - SECOND))
    (first,) = claim(store, "sched-a", lease=LEASE)
    assert first.attempts == 1
    # Not while the lease runs.
    assert claim(store, "sched-b", now=T0 + LEASE - MS) == []
    assert stored(store, "dlv_01") == first
    # From the instant it ends (lease_expires_at <= now).
    later = T0 + LEASE
    (again,) = claim(store, "sched-b", now=later, lease=LEASE)
    assert again == in_flight(
        make_delivery("dlv_01", due_at=T0 - SECOND), "sched-b", later + LEASE, attempts=2
    )
    assert stored(store, "dlv_01") == again
    # The first owner lost it: it can neither settle nor retry it.
    with store.transaction() as tx:
        assert tx.deliveries.settle("dlv_01", "sched-a", D.DELIVERED, None, later) is False
        assert tx.deliveries.retry("dlv_01", "sched-a", later + MINUTE, "timeout") is False
        assert tx.deliveries.release(["dlv_01"], "sched-a") == 0
    assert stored(store, "dlv_01") == again


def test_expired_leases_are_taken_before_due_ones_when_the_limit_is_tight(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - HOUR),
        in_flight(
            make_delivery("dlv_02", device_id="dev_02", due_at=T0 - 2 * MINUTE),
            "sched-dead",
            T0 - SECOND,
        ),
        in_flight(
            make_delivery("dlv_03", device_id="dev_03", due_at=T0 - 3 * MINUTE),
            "sched-dead",
            T0 - 2 * SECOND,
            attempts=2,
        ),
        in_flight(
            make_delivery("dlv_04", device_id="dev_04", due_at=T0 - 4 * MINUTE),
            "sched-alive",
            T0 + SECOND,
        ),
    )
    taken = claim(store, "sched-b", limit=2)
    assert id_set(taken) == ["dlv_02", "dlv_03"]
    attempts = {d.id: d.attempts for d in taken}
    assert attempts == {"dlv_02": 2, "dlv_03": 3}
    assert all(d.lease_owner == "sched-b" for d in taken)

    # Then the due PENDING one; the unexpired lease stays with its owner.
    assert ids(claim(store, "sched-c")) == ["dlv_01"]
    after = deliveries_of(store)
    assert after["dlv_04"].lease_owner == "sched-alive"
    assert after["dlv_04"].attempts == 1


def test_the_earliest_expired_lease_is_taken_first(store: Store) -> None:
    add_deliveries(
        store,
        in_flight(make_delivery("dlv_01", device_id="dev_01"), "sched-dead", T0 - SECOND),
        in_flight(make_delivery("dlv_02", device_id="dev_02"), "sched-dead", T0 - 3 * SECOND),
        in_flight(make_delivery("dlv_03", device_id="dev_03"), "sched-dead", T0 - 2 * SECOND),
    )
    assert ids(claim(store, "sched-b", limit=1)) == ["dlv_02"]
    assert ids(claim(store, "sched-b", limit=1)) == ["dlv_03"]
    assert ids(claim(store, "sched-b", limit=1)) == ["dlv_01"]


def test_next_due_at_is_the_earliest_due_time_or_lease_end(store: Store) -> None:
    with store.read() as tx:
        assert tx.deliveries.next_due_at() is None
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 + 5 * MINUTE),
        in_flight(
            make_delivery("dlv_02", device_id="dev_02", due_at=T0 - HOUR),
            "sched-a",
            T0 + 2 * MINUTE + 3 * MS,
        ),
        make_delivery("dlv_03", device_id="dev_03", status=D.DELIVERED, due_at=T0 - HOUR),
    )
    with store.read() as tx:
        # The IN_FLIGHT one's due time is past, but it can be claimed only at its lease end.
        assert tx.deliveries.next_due_at() == T0 + 2 * MINUTE + 3 * MS
    add_deliveries(store, make_delivery("dlv_04", "ntf_02", "dev_01", "acc_b", due_at=T0 + MINUTE))
    with store.read() as tx:
        assert tx.deliveries.next_due_at() == T0 + MINUTE


def test_due_count_counts_pending_deliveries_due_by_a_time_up_to_a_limit(store: Store) -> None:
    with store.read() as tx:
        assert tx.deliveries.due_count(T0, 10) == 0
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - MINUTE),
        make_delivery("dlv_02", device_id="dev_02", due_at=T0),  # due exactly then
        make_delivery("dlv_03", "ntf_02", "dev_03", "acc_b", due_at=T0),  # any account's
        make_delivery("dlv_04", device_id="dev_04", due_at=T0 + MS),  # later
        # Claimed or settled: not waiting for a due time.
        in_flight(make_delivery("dlv_05", device_id="dev_05", due_at=T0 - HOUR), "a", T0 + LEASE),
        make_delivery("dlv_06", device_id="dev_06", due_at=T0 - HOUR, status=D.DELIVERED),
    )
    with store.read() as tx:
        assert tx.deliveries.due_count(T0, 10) == 3
        assert tx.deliveries.due_count(T0 + MS, 10) == 4
        assert tx.deliveries.due_count(T0, 2) == 2  # counted no further than the limit


def test_next_due_at_is_none_once_everything_is_settled(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_02", device_id="dev_02", status=D.FAILED, attempts=1),
        make_delivery("dlv_03", device_id="dev_03", status=D.CANCELLED),
    )
    with store.read() as tx:
        assert tx.deliveries.next_due_at() is None


def test_queue_depth_counts_open_deliveries_of_every_account(store: Store) -> None:
    with store.read() as tx:
        assert tx.deliveries.queue_depth(T0) == QueueDepth()
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - MINUTE - 7 * MS),
        make_delivery("dlv_02", "ntf_02", "dev_02", "acc_b", due_at=T0),  # due exactly now
        make_delivery("dlv_03", device_id="dev_03", due_at=T0 + MS),  # not yet due
        make_delivery("dlv_04", device_id="dev_04", due_at=T0 + HOUR, attempts=2),
        in_flight(make_delivery("dlv_05", device_id="dev_05", due_at=T0 - HOUR), "a", T0 + LEASE),
        # Settled ones are history, not queue, whatever their due time.
        make_delivery("dlv_06", device_id="dev_06", due_at=T0 - HOUR, status=D.DELIVERED),
        make_delivery("dlv_07", device_id="dev_07", due_at=T0 - HOUR, status=D.FAILED),
        make_delivery("dlv_08", device_id="dev_08", due_at=T0 - HOUR, status=D.CANCELLED),
    )
    with store.read() as tx:
        depth = tx.deliveries.queue_depth(T0)
        later = tx.deliveries.queue_depth(T0 + HOUR)
    assert depth == QueueDepth(pending=4, due=2, in_flight=1, oldest_due_at=T0 - MINUTE - 7 * MS)
    assert later == QueueDepth(pending=4, due=4, in_flight=1, oldest_due_at=T0 - MINUTE - 7 * MS)


# Deliveries: settle, retry, release


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param(D.DELIVERED, None, id="delivered"),
        pytest.param(D.FAILED, "Unregistered", id="failed"),
    ],
)
def test_settle_by_the_lease_owner(
    store: Store, status: DeliveryStatus, reason: str | None
) -> None:
    add_deliveries(store, make_delivery("dlv_01", due_at=T0 - SECOND))
    (claimed,) = claim(store, "sched-a")
    at = T0 + 2 * SECOND + 5 * MS
    with store.transaction() as tx:
        assert tx.deliveries.settle("dlv_01", "sched-a", status, reason, at) is True
    assert stored(store, "dlv_01") == attrs.evolve(
        claimed,
        status=status,
        failure_reason=reason,
        settled_at=at,
        lease_owner=None,
        lease_expires_at=None,
        # What the deliveries list shows: the answer's time, and when it was accepted.
        last_attempt_at=at,
        delivered_at=at if status is D.DELIVERED else None,
    )
    # Settled is final: the same owner cannot settle it again, nor can a claim find it.
    with store.transaction() as tx:
        assert tx.deliveries.settle("dlv_01", "sched-a", D.FAILED, "again", at + SECOND) is False
        assert tx.deliveries.retry("dlv_01", "sched-a", at + MINUTE, "again") is False
    assert claim(store, "sched-b", now=T0 + HOUR) == []
    assert stored(store, "dlv_01").status is status


def test_settle_and_retry_by_another_owner_change_nothing(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - SECOND),
        make_delivery("dlv_02", device_id="dev_02", due_at=T0 + HOUR),  # PENDING, unclaimed
    )
    claim(store, "sched-a")
    before = deliveries_of(store)
    with store.transaction() as tx:
        assert tx.deliveries.settle("dlv_01", "sched-b", D.DELIVERED, None, T0) is False
        assert tx.deliveries.retry("dlv_01", "sched-b", T0 + MINUTE, "500") is False
        # Nobody holds a lease on a PENDING delivery, nor on an unknown one.
        assert tx.deliveries.settle("dlv_02", "sched-a", D.DELIVERED, None, T0) is False
        assert tx.deliveries.retry("dlv_02", "sched-a", T0 + MINUTE, "500") is False
        assert tx.deliveries.settle("dlv_99", "sched-a", D.DELIVERED, None, T0) is False
        assert tx.deliveries.retry("dlv_99", "sched-a", T0 + MINUTE, "500") is False
    assert deliveries_of(store) == before


def test_settle_many_settles_only_what_the_owner_holds(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - SECOND),
        make_delivery("dlv_02", device_id="dev_02", due_at=T0 - SECOND),
        make_delivery("dlv_03", device_id="dev_03", due_at=T0 + HOUR),  # PENDING, unclaimed
    )
    claimed = {d.id: d for d in claim(store, "sched-a")}
    assert sorted(claimed) == ["dlv_01", "dlv_02"]
    at = T0 + 3 * SECOND + 1 * MS
    with store.transaction() as tx:
        assert tx.deliveries.settle_many(["dlv_01"], "sched-b", D.DELIVERED, None, at) == set()
        settled = tx.deliveries.settle_many(
            ["dlv_01", "dlv_02", "dlv_03", "dlv_99"], "sched-a", D.DELIVERED, None, at
        )
    assert settled == {"dlv_01", "dlv_02"}
    for delivery_id in ("dlv_01", "dlv_02"):
        assert stored(store, delivery_id) == attrs.evolve(
            claimed[delivery_id],
            status=D.DELIVERED,
            settled_at=at,
            lease_owner=None,
            lease_expires_at=None,
            last_attempt_at=at,
            delivered_at=at,
        )
    assert stored(store, "dlv_03") == make_delivery("dlv_03", device_id="dev_03", due_at=T0 + HOUR)
    with store.transaction() as tx:
        # Settled is final, and nothing is nothing.
        assert tx.deliveries.settle_many(["dlv_01"], "sched-a", D.FAILED, "x", at) == set()
        assert tx.deliveries.settle_many([], "sched-a", D.FAILED, "x", at) == set()


def test_retry_puts_it_back_to_pending_keeping_attempts(store: Store) -> None:
    add_deliveries(store, make_delivery("dlv_01", due_at=T0 - SECOND))
    (claimed,) = claim(store, "sched-a")
    next_due = T0 + 30 * SECOND + 125 * MS
    with store.transaction() as tx:
        assert tx.deliveries.retry("dlv_01", "sched-a", next_due, "HTTP 503", T0) is True
    retried = stored(store, "dlv_01")
    assert retried == attrs.evolve(
        claimed,
        status=D.PENDING,
        due_at=next_due,
        failure_reason="HTTP 503",
        lease_owner=None,
        lease_expires_at=None,
        last_attempt_at=T0,  # when the gateway answered
    )
    assert retried.attempts == 1
    assert retried.settled_at is None
    with store.read() as tx:
        assert tx.deliveries.next_due_at() == next_due
    # Due again at its new time, and claimed with one more attempt.
    assert claim(store, "sched-b", now=next_due - MS) == []
    (again,) = claim(store, "sched-b", now=next_due)
    assert again.attempts == 2
    assert again.failure_reason == "HTTP 503"


def test_release_hands_back_only_own_leases_undoing_the_attempt(store: Store) -> None:
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01", due_at=T0 - 3 * SECOND),
        make_delivery("dlv_02", device_id="dev_02", due_at=T0 - 2 * SECOND, attempts=2),
        make_delivery("dlv_03", device_id="dev_03", due_at=T0 - SECOND),
        make_delivery("dlv_04", device_id="dev_04", due_at=T0 + HOUR),  # stays PENDING
    )
    claim(store, "sched-a", limit=2)  # dlv_01 and dlv_02
    claim(store, "sched-b", limit=1)  # dlv_03
    with store.transaction() as tx:
        released = tx.deliveries.release(
            ["dlv_01", "dlv_02", "dlv_03", "dlv_04", "dlv_99"], "sched-a"
        )
    assert released == 2
    after = deliveries_of(store)
    assert after["dlv_01"] == make_delivery("dlv_01", device_id="dev_01", due_at=T0 - 3 * SECOND)
    assert after["dlv_02"] == make_delivery(
        "dlv_02", device_id="dev_02", due_at=T0 - 2 * SECOND, attempts=2
    )
    assert after["dlv_03"] == in_flight(
        make_delivery("dlv_03", device_id="dev_03", due_at=T0 - SECOND), "sched-b", T0 + LEASE
    )
    assert after["dlv_04"] == make_delivery("dlv_04", device_id="dev_04", due_at=T0 + HOUR)
    with store.transaction() as tx:
        assert tx.deliveries.release(["dlv_01", "dlv_02"], "sched-a") == 0
        assert tx.deliveries.release([], "sched-a") == 0
    # Released ones are due again at once.
    assert id_set(claim(store, "sched-c")) == ["dlv_01", "dlv_02"]


def test_release_with_a_due_time_hands_back_due_then_without_the_attempt(store: Store) -> None:
    add_deliveries(store, make_delivery("dlv_01", device_id="dev_01", due_at=T0 - SECOND))
    claim(store, "sched-a")
    with store.transaction() as tx:
        assert tx.deliveries.release(["dlv_01"], "sched-b", T0 + 10 * SECOND) == 0
        assert tx.deliveries.release(["dlv_01"], "sched-a", T0 + 10 * SECOND) == 1
    assert stored(store, "dlv_01") == make_delivery(
        "dlv_01", device_id="dev_01", due_at=T0 + 10 * SECOND
    )
    assert claim(store, "sched-c", now=T0 + 10 * SECOND - MS) == []
    (again,) = claim(store, "sched-c", now=T0 + 10 * SECOND)
    assert again.attempts == 1


def test_defer_hands_back_own_leases_each_due_at_its_own_time(store: Store) -> None:
    add_deliveries(
        store,
        *(make_delivery(f"dlv_0{i}", device_id=f"dev_0{i}", due_at=T0 - SECOND) for i in (1, 2, 3)),
    )
    claim(store, "sched-a", limit=2)  # dlv_01 and dlv_02
    claim(store, "sched-b", limit=1)  # dlv_03
    with store.transaction() as tx:
        back = tx.deliveries.defer(
            [("dlv_01", T0 + 5 * SECOND), ("dlv_02", T0 + 7 * SECOND), ("dlv_03", T0)], "sched-a"
        )
        assert tx.deliveries.defer([], "sched-a") == set()
    assert back == {"dlv_01", "dlv_02"}  # dlv_03 is sched-b's
    after = deliveries_of(store)
    assert after["dlv_01"] == make_delivery("dlv_01", device_id="dev_01", due_at=T0 + 5 * SECOND)
    assert after["dlv_02"] == make_delivery("dlv_02", device_id="dev_02", due_at=T0 + 7 * SECOND)
    assert after["dlv_03"].status is DeliveryStatus.IN_FLIGHT
    (first,) = claim(store, "sched-c", now=T0 + 5 * SECOND)
    assert (first.id, first.attempts) == ("dlv_01", 1)


def test_renew_extends_only_own_leases_that_end_before_the_bound(store: Store) -> None:
    add_deliveries(
        store,
        *(make_delivery(f"dlv_0{i}", device_id=f"dev_0{i}", due_at=T0 - SECOND) for i in (1, 2, 3)),
    )
    claim(store, "sched-a", limit=1)  # dlv_01, lease to T0 + 30 s
    claim(store, "sched-a", now=T0 + 20 * SECOND, limit=1)  # dlv_02, lease to T0 + 50 s
    claim(store, "sched-b", limit=1)  # dlv_03
    now = T0 + 25 * SECOND
    with store.transaction() as tx:
        # Renewed: those of sched-a listed and ending before now + 15 s (dlv_01 only).
        renewed = tx.deliveries.renew(
            ["dlv_01", "dlv_02", "dlv_03", "dlv_99"], "sched-a", now + LEASE, now + 15 * SECOND
        )
        assert tx.deliveries.renew([], "sched-a", now + LEASE, now) == 0
    assert renewed == 1
    after = deliveries_of(store)
    assert after["dlv_01"].lease_expires_at == now + LEASE
    assert after["dlv_02"].lease_expires_at == T0 + 50 * SECOND
    assert after["dlv_03"].lease_expires_at == T0 + LEASE
    # A renewed lease is not taken over when the old one would have ended.
    assert claim(store, "sched-c", now=T0 + LEASE) == [
        in_flight(
            make_delivery("dlv_03", device_id="dev_03", due_at=T0 - SECOND),
            "sched-c",
            T0 + 2 * LEASE,
            attempts=2,
        )
    ]


def test_release_of_a_long_list(store: Store) -> None:
    add_deliveries(
        store,
        *(make_delivery(f"dlv_{i:04d}", device_id=f"dev_{i:04d}") for i in (0, 600, 1200)),
    )
    claim(store, "sched-a")
    with store.transaction() as tx:
        assert tx.deliveries.release([f"dlv_{i:04d}" for i in range(1201)], "sched-a") == 3
    assert all(d.status is D.PENDING and d.attempts == 0 for d in deliveries_of(store).values())


# Deliveries: cancelling


def test_cancel_unsent_cancels_only_pending_never_handed_ones(store: Store) -> None:
    lease_end = T0 + LEASE
    originals = {
        d.id: d
        for d in [
            make_delivery("dlv_01", device_id="dev_01", due_at=T0 + MINUTE),
            make_delivery("dlv_02", device_id="dev_02", due_at=T0 + MINUTE),
            make_delivery("dlv_03", device_id="dev_03", attempts=1, failure_reason="HTTP 503"),
            in_flight(make_delivery("dlv_04", device_id="dev_04"), "sched-a", lease_end),
            make_delivery("dlv_05", device_id="dev_05", status=D.DELIVERED, attempts=1),
            make_delivery("dlv_06", device_id="dev_06", status=D.FAILED, attempts=1),
        ]
    }
    elsewhere = make_delivery("dlv_07", "ntf_02", "dev_01")
    add_deliveries(store, *originals.values(), elsewhere)
    with store.transaction() as tx:
        assert tx.schedule.cancel_unsent("ntf_01", "cancelled") == 2
    after = deliveries_of(store)
    for cancelled in ("dlv_01", "dlv_02"):
        assert after[cancelled].status is D.CANCELLED
        assert after[cancelled].failure_reason == "cancelled"
        assert after[cancelled].attempts == 0
    for kept in ("dlv_03", "dlv_04", "dlv_05", "dlv_06"):
        assert after[kept] == originals[kept]
    assert deliveries_of(store, "ntf_02") == {"dlv_07": elsewhere}
    with store.transaction() as tx:
        assert tx.schedule.cancel_unsent("ntf_01", "cancelled") == 0
        assert tx.schedule.cancel_unsent("ntf_99", "cancelled") == 0
    with store.read() as tx:
        assert tx.progress.counts("ntf_01") == DeliveryCounts(
            pending=2, delivered=1, failed=1, cancelled=2, handed=4
        )


def test_a_released_delivery_counts_as_never_handed(store: Store) -> None:
    add_deliveries(store, make_delivery("dlv_01", due_at=T0 - SECOND))
    claim(store, "sched-a")
    with store.transaction() as tx:
        assert tx.schedule.cancel_unsent("ntf_01", "cancelled") == 0
        assert tx.deliveries.release(["dlv_01"], "sched-a") == 1
        assert tx.schedule.cancel_unsent("ntf_01", "cancelled") == 1
    assert stored(store, "dlv_01").status is D.CANCELLED


def test_cancel_for_device_cancels_its_pending_deliveries(store: Store) -> None:
    lease_end = T0 + LEASE
    kept = [
        in_flight(make_delivery("dlv_05", "ntf_05", "dev_01"), "sched-a", lease_end),
        make_delivery("dlv_06", "ntf_06", "dev_01", status=D.DELIVERED, attempts=1),
        make_delivery("dlv_07", "ntf_07", "dev_01", status=D.FAILED, attempts=1),
        make_delivery("dlv_08", "ntf_02", "dev_02"),
        make_delivery("dlv_09", "ntf_08", "dev_02", "acc_b"),
    ]
    add_deliveries(
        store,
        make_delivery("dlv_01", "ntf_03", "dev_01"),
        make_delivery("dlv_02", "ntf_01", "dev_01", due_at=T0 + HOUR),
        make_delivery("dlv_03", "ntf_01", "dev_01", attempts=1),  # retried, waiting
        make_delivery("dlv_04", "ntf_02", "dev_01"),
        *kept,
    )
    with store.transaction() as tx:
        touched = tx.schedule.cancel_for_device("dev_01", "device_removed")
    assert list(touched) == ["ntf_01", "ntf_02", "ntf_03"]
    cancelled = {
        **deliveries_of(store, "ntf_01"),
        **deliveries_of(store, "ntf_02"),
        **deliveries_of(store, "ntf_03"),
    }
    for delivery_id in ("dlv_01", "dlv_02", "dlv_03", "dlv_04"):
        assert cancelled[delivery_id].status is D.CANCELLED
        assert cancelled[delivery_id].failure_reason == "device_removed"
    for delivery in kept:
        assert stored(store, delivery.id, delivery.notification_id) == delivery
    with store.transaction() as tx:
        assert list(tx.schedule.cancel_for_device("dev_01", "device_removed")) == []
        assert list(tx.schedule.cancel_for_device("dev_99", "device_removed")) == []


# Devices: targets


def test_active_targets_are_the_accounts_active_devices(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01"))
        tx.devices.add(make_device("dev_02", is_active=False))
        tx.devices.add(make_device("dev_03", name="phone"))
        tx.devices.add(make_device("dev_04", "acc_b"))
        tx.devices.add(make_device("dev_05", "acc_b", token="token-dev_01"))
    with store.read() as tx:
        every = tx.devices.active_targets("acc_a", None)
        by_token = tx.devices.active_targets("acc_a", "token-dev_03")
        inactive = tx.devices.active_targets("acc_a", "token-dev_02")
        others = tx.devices.active_targets("acc_a", "token-dev_04")
        unknown = tx.devices.active_targets("acc_a", "token-unknown")
        shared = tx.devices.active_targets("acc_b", "token-dev_01")
        nobody = tx.devices.active_targets("acc_nobody", None)
    assert sorted(every, key=lambda d: d.id) == [
        make_device("dev_01"),
        make_device("dev_03", name="phone"),
    ]
    assert list(by_token) == [make_device("dev_03", name="phone")]
    assert list(inactive) == []
    assert list(others) == []
    assert list(unknown) == []
    assert list(shared) == [make_device("dev_05", "acc_b", token="token-dev_01")]
    assert list(nobody) == []


def test_devices_by_ids_span_accounts_and_ignore_unknown_ids(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01"))
        tx.devices.add(make_device("dev_02", is_active=False))
        tx.devices.add(make_device("dev_03", "acc_b"))
    with store.read() as tx:
        found = tx.devices.by_ids(["dev_03", "dev_99", "dev_02"])
        none = tx.devices.by_ids([])
    assert sorted(found, key=lambda d: d.id) == [
        make_device("dev_02", is_active=False),
        make_device("dev_03", "acc_b"),
    ]
    assert list(none) == []


# Transactions


def test_queue_writes_are_visible_inside_their_own_transaction(store: Store) -> None:
    with store.transaction() as tx:
        tx.notifications.add(make_notification())
        tx.schedule.add_many([make_delivery("dlv_01", due_at=T0 - SECOND)])
        assert tx.notifications.get("acc_a", "ntf_01") == make_notification()
        (claimed,) = tx.deliveries.claim_due(T0, "sched-a", T0 + LEASE, 10)
        assert claimed.lease_owner == "sched-a"
        assert tx.deliveries.claim_due(T0, "sched-b", T0 + LEASE, 10) == []
        assert tx.progress.counts("ntf_01") == DeliveryCounts(pending=1, handed=1)


def test_an_exception_rolls_back_queue_writes(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01"))
    add_deliveries(store, make_delivery("dlv_01", due_at=T0 - SECOND))

    def write_then_fail(tx: Transaction) -> None:
        tx.notifications.add(make_notification("ntf_02"))
        tx.notifications.update(make_notification("ntf_01", status=N.CANCELLED, wake_at=T0))
        tx.schedule.add_many(
            [
                make_delivery("dlv_02", device_id="dev_02"),
                make_delivery("dlv_03", "ntf_02", "dev_01"),
            ]
        )
        assert tx.schedule.cancel_for_device("dev_01", "device_removed") == ["ntf_01", "ntf_02"]
        assert ids(tx.deliveries.claim_due(T0, "sched-a", T0 + LEASE, 10)) == ["dlv_02"]
        raise Boom

    with pytest.raises(Boom), store.transaction() as tx:
        write_then_fail(tx)
    with store.read() as tx:
        assert tx.notifications.get("acc_a", "ntf_01") == make_notification("ntf_01")
        assert tx.notifications.get("acc_a", "ntf_02") is None
        assert tx.notifications.next_wake_at() is None
        assert list(tx.progress.for_notification("ntf_01")) == [
            make_delivery("dlv_01", due_at=T0 - SECOND)
        ]
        assert list(tx.progress.for_notification("ntf_02")) == []
        assert tx.deliveries.next_due_at() == T0 - SECOND
