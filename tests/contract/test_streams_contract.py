"""The storage contract of streams and subscriptions, ``has_open`` and ``fan_out``.

Each test runs against every adapter (see ``conftest.py``). The docstrings of
``StreamRepository``, ``SubscriptionRepository``, ``DeliveryProgress.has_open``
and ``DeliverySchedule.fan_out`` in ``pushcore.ports`` are the contract. Where a
port leaves an order open, the tests compare sorted ids.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta, timezone
from typing import Any

import attrs
import pytest

from pushcore.domain.model import (
    Device,
    Platform,
    Stream,
    StreamRef,
    StreamView,
    Subscription,
    WebPushKeys,
)
from pushcore.domain.states import DeliveryStatus
from pushcore.ports import Store, Transaction
from tests.contract.test_queue_contract import (
    add_deliveries,
    add_notifications,
    make_delivery,
    make_notification,
)
from tests.contract.test_store_contract import MINUTE, T0, Boom, make_device

D = DeliveryStatus


def make_stream(stream_id: str = "str_01", account_id: str = "acc_a", **changes: Any) -> Stream:
    """A stream whose code is derived from its id (``str_01``: ``falcon-abqq``)."""
    stream = Stream(
        id=stream_id,
        account_id=account_id,
        name=f"name of {stream_id}",
        code="falcon-" + "".join("abcdefghjk"[int(c)] for c in stream_id[-2:]) + "qq",
        description=f"description of {stream_id}",
        icon_url=None,
        created_at=T0,
    )
    return attrs.evolve(stream, **changes)


def make_subscription(
    subscription_id: str = "sub_01", account_id: str = "acc_b", stream_id: str = "str_01"
) -> Subscription:
    return Subscription(subscription_id, account_id, stream_id, T0 + MINUTE)


def add_streams(store: Store, *streams: Stream) -> None:
    with store.transaction() as tx:
        for stream in streams:
            tx.streams.add(stream)


def add_subscriptions(store: Store, *subscriptions: Subscription) -> None:
    with store.transaction() as tx:
        for subscription in subscriptions:
            tx.subscriptions.add(subscription)


def add_devices(store: Store, *devices: Device) -> None:
    with store.transaction() as tx:
        for device in devices:
            tx.devices.add(device)


def delete_stream(store: Store, account_id: str, stream_id: str) -> bool:
    with store.transaction() as tx:
        return tx.streams.delete(account_id, stream_id, T0 + 2 * MINUTE)


# Streams: round trip, lookups, scoping


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(make_stream(), id="no-icon"),
        pytest.param(
            make_stream(
                name="Déploiements 🚀",
                description="",
                icon_url="https://example.com/icon.png?size=64&v=2",
            ),
            id="icon-unicode-empty-description",
        ),
        pytest.param(
            make_stream(name="n" * 50, description="d" * 200, created_at=T0 + 999 * MINUTE),
            id="longest-fields",
        ),
    ],
)
def test_stream_round_trips_every_field(store: Store, stream: Stream) -> None:
    add_streams(store, stream)
    with store.read() as tx:
        by_id = tx.streams.get(stream.account_id, stream.id)
        by_code = tx.streams.by_code(stream.code)
        listed = tx.streams.list(stream.account_id)
    assert by_id == StreamView(stream, 0)
    assert by_code == StreamView(stream, 0)
    assert listed == [StreamView(stream, 0)]
    assert by_id is not None
    assert by_id.stream.created_at.utcoffset() == timedelta(0)


def test_created_at_in_another_offset_is_the_same_instant(store: Store) -> None:
    paris = timezone(timedelta(hours=1))
    add_streams(store, make_stream(created_at=T0.astimezone(paris)))
    with store.read() as tx:
        found = tx.streams.get("acc_a", "str_01")
    assert found is not None
    assert found.stream.created_at == T0


def test_get_is_scoped_by_account_and_by_code_is_not(store: Store) -> None:
    stream = make_stream("str_01", "acc_a")
    add_streams(store, stream)
    with store.read() as tx:
        assert tx.streams.get("acc_b", "str_01") is None
        assert tx.streams.get("acc_a", "str_99") is None
        assert tx.streams.by_code(stream.code) == StreamView(stream, 0)
        assert tx.streams.by_code("nobody-2222") is None
        assert tx.streams.list("acc_b") == []
        assert tx.streams.count("acc_b") == 0


def test_list_is_newest_first_by_id_and_scoped(store: Store) -> None:
    add_streams(
        store,
        make_stream("str_02"),
        make_stream("str_04", "acc_b"),
        make_stream("str_03"),
        make_stream("str_01"),
    )
    with store.read() as tx:
        assert [v.stream.id for v in tx.streams.list("acc_a")] == ["str_03", "str_02", "str_01"]
        assert [v.stream.id for v in tx.streams.list("acc_b")] == ["str_04"]


def test_count_is_per_account_and_of_live_streams(store: Store) -> None:
    add_streams(
        store,
        make_stream("str_01"),
        make_stream("str_02"),
        make_stream("str_03"),
        make_stream("str_04", "acc_b"),
    )
    with store.read() as tx:
        assert tx.streams.count("acc_a") == 3
        assert tx.streams.count("acc_b") == 1
        assert tx.streams.count("acc_c") == 0
    assert delete_stream(store, "acc_a", "str_02")
    with store.read() as tx:
        assert tx.streams.count("acc_a") == 2
        assert tx.streams.count("acc_b") == 1


def test_a_code_is_taken_once(store: Store) -> None:
    add_streams(store, make_stream("str_01", code="falcon-7k2q"))
    with pytest.raises(KeyError), store.transaction() as tx:
        tx.streams.add(make_stream("str_02", "acc_b", code="falcon-7k2q"))
    with store.read() as tx:
        assert tx.streams.get("acc_b", "str_02") is None
        found = tx.streams.by_code("falcon-7k2q")
    assert found is not None
    assert found.stream.id == "str_01"


def test_a_caught_code_collision_leaves_the_transaction_usable(store: Store) -> None:
    add_streams(store, make_stream("str_01", code="falcon-7k2q"))
    with store.transaction() as tx:
        with pytest.raises(KeyError):
            tx.streams.add(make_stream("str_02", code="falcon-7k2q"))
        tx.streams.add(make_stream("str_02", code="falcon-8k2q"))
    with store.read() as tx:
        assert [v.stream.code for v in tx.streams.list("acc_a")] == ["falcon-8k2q", "falcon-7k2q"]


def test_an_exception_rolls_back_stream_writes(store: Store) -> None:
    add_streams(store, make_stream("str_01"))
    add_subscriptions(store, make_subscription("sub_01", "acc_b", "str_01"))

    def write_then_fail(tx: Transaction) -> None:
        tx.streams.add(make_stream("str_02"))
        tx.subscriptions.add(make_subscription("sub_02", "acc_c", "str_01"))
        assert tx.streams.delete("acc_a", "str_01", T0)
        raise Boom

    with pytest.raises(Boom), store.transaction() as tx:
        write_then_fail(tx)
    with store.read() as tx:
        assert [v.stream.id for v in tx.streams.list("acc_a")] == ["str_01"]
        assert tx.subscriptions.get("acc_b", "sub_01") is not None
        assert tx.subscriptions.get("acc_c", "sub_02") is None


# Deleting: soft, the code stays taken, the subscriptions go


def test_delete_is_soft_and_keeps_the_code_taken(store: Store) -> None:
    stream = make_stream("str_01", code="falcon-7k2q")
    add_streams(store, stream, make_stream("str_02"))
    assert delete_stream(store, "acc_a", "str_01")
    with store.read() as tx:
        assert tx.streams.get("acc_a", "str_01") is None
        assert tx.streams.by_code("falcon-7k2q") is None
        assert [v.stream.id for v in tx.streams.list("acc_a")] == ["str_02"]
        assert tx.streams.count("acc_a") == 1
    for account in ("acc_a", "acc_b"):
        with pytest.raises(KeyError), store.transaction() as tx:
            tx.streams.add(make_stream("str_09", account, code="falcon-7k2q"))
    with store.read() as tx:
        assert tx.streams.by_code("falcon-7k2q") is None
        assert tx.streams.count("acc_b") == 0


def test_delete_is_scoped_and_reports_whether_it_deleted(store: Store) -> None:
    stream = make_stream("str_01", "acc_a")
    add_streams(store, stream)
    assert not delete_stream(store, "acc_b", "str_01")
    assert not delete_stream(store, "acc_a", "str_99")
    with store.read() as tx:
        assert tx.streams.get("acc_a", "str_01") == StreamView(stream, 0)
    assert delete_stream(store, "acc_a", "str_01")
    assert not delete_stream(store, "acc_a", "str_01")


def test_delete_removes_the_streams_subscriptions_only(store: Store) -> None:
    add_streams(store, make_stream("str_01"), make_stream("str_02"))
    add_subscriptions(
        store,
        make_subscription("sub_01", "acc_b", "str_01"),
        make_subscription("sub_02", "acc_c", "str_01"),
        make_subscription("sub_03", "acc_b", "str_02"),
    )
    add_devices(store, make_device("dev_01", "acc_b"))
    assert delete_stream(store, "acc_a", "str_01")
    with store.read() as tx:
        assert tx.subscriptions.get("acc_b", "sub_01") is None
        assert tx.subscriptions.get("acc_c", "sub_02") is None
        assert tx.subscriptions.find("acc_b", "str_01") is None
        assert [s.id for s, _ in tx.subscriptions.list("acc_b")] == ["sub_03"]
        assert tx.subscriptions.list("acc_c") == []
        assert tx.streams.subscriber_devices("str_01") == []
        assert [d.id for d in tx.streams.subscriber_devices("str_02")] == ["dev_01"]
        kept = tx.streams.get("acc_a", "str_02")
    assert kept is not None
    assert kept.subscribers == 1


def test_a_deleted_stream_cannot_be_found_by_a_stale_subscription_row(store: Store) -> None:
    """Subscribing after deletion is a service error, but the store must not resurrect it."""
    add_streams(store, make_stream("str_01"))
    assert delete_stream(store, "acc_a", "str_01")
    with store.transaction() as tx, contextlib.suppress(KeyError):  # refusing it is fine too
        tx.subscriptions.add(make_subscription("sub_01", "acc_b", "str_01"))
    with store.read() as tx:
        assert tx.subscriptions.list("acc_b") == []
        assert tx.streams.get("acc_a", "str_01") is None


# Subscriber counts and devices


def test_views_carry_the_live_subscriber_count(store: Store) -> None:
    add_streams(store, make_stream("str_01"), make_stream("str_02"))
    add_subscriptions(
        store,
        make_subscription("sub_01", "acc_b", "str_01"),
        make_subscription("sub_02", "acc_c", "str_01"),
        make_subscription("sub_03", "acc_c", "str_02"),
    )

    def counts() -> tuple[int, int, dict[str, int]]:
        with store.read() as tx:
            by_id = tx.streams.get("acc_a", "str_01")
            by_code = tx.streams.by_code(make_stream("str_01").code)
            listed = {v.stream.id: v.subscribers for v in tx.streams.list("acc_a")}
        assert by_id is not None
        assert by_code is not None
        return by_id.subscribers, by_code.subscribers, listed

    assert counts() == (2, 2, {"str_01": 2, "str_02": 1})
    with store.transaction() as tx:
        assert tx.subscriptions.delete("acc_b", "sub_01")
    assert counts() == (1, 1, {"str_01": 1, "str_02": 1})


def test_subscriber_devices_are_the_active_devices_of_every_subscriber(store: Store) -> None:
    web = make_device(
        "dev_03",
        "acc_c",
        platform=Platform.WEB,
        token="https://push.example/endpoint",
        name="Firefox",
        keys=WebPushKeys(p256dh="BPk3-p256dh_value", auth="auth_value-1"),
        last_delivered_at=T0 + MINUTE,
    )
    add_streams(store, make_stream("str_01", "acc_a"), make_stream("str_02", "acc_a"))
    add_devices(
        store,
        make_device("dev_01", "acc_b"),
        make_device("dev_02", "acc_b", platform=Platform.ANDROID, name="Pixel"),
        web,
        make_device("dev_04", "acc_c", is_active=False),
        make_device("dev_05", "acc_a"),  # the creator's own device
        make_device("dev_06", "acc_d"),  # subscribes to another stream
        make_device("dev_07", "acc_e"),  # subscribes to nothing
    )
    add_subscriptions(
        store,
        make_subscription("sub_01", "acc_b", "str_01"),
        make_subscription("sub_02", "acc_c", "str_01"),
        make_subscription("sub_03", "acc_d", "str_02"),
    )
    with store.read() as tx:
        found = sorted(tx.streams.subscriber_devices("str_01"), key=lambda d: d.id)
        assert tx.streams.subscriber_devices("str_99") == []
        assert [d.id for d in tx.streams.subscriber_devices("str_02")] == ["dev_06"]
    assert found == [
        make_device("dev_01", "acc_b"),
        make_device("dev_02", "acc_b", platform=Platform.ANDROID, name="Pixel"),
        web,
    ]
    with store.transaction() as tx:
        assert tx.subscriptions.delete("acc_b", "sub_01")
        assert tx.devices.deactivate("dev_03")
    with store.read() as tx:
        assert tx.streams.subscriber_devices("str_01") == []


# Subscriptions


def test_subscription_round_trips_and_is_scoped(store: Store) -> None:
    stream = make_stream("str_01", "acc_a")
    subscription = make_subscription("sub_01", "acc_b", "str_01")
    add_streams(store, stream)
    add_subscriptions(store, subscription)
    with store.read() as tx:
        assert tx.subscriptions.get("acc_b", "sub_01") == subscription
        assert tx.subscriptions.find("acc_b", "str_01") == subscription
        assert tx.subscriptions.list("acc_b") == [(subscription, StreamView(stream, 1))]
        for other in ("acc_a", "acc_c"):
            assert tx.subscriptions.get(other, "sub_01") is None
            assert tx.subscriptions.find(other, "str_01") is None
            assert tx.subscriptions.list(other) == []
        assert tx.subscriptions.get("acc_b", "sub_99") is None
        assert tx.subscriptions.find("acc_b", "str_99") is None
        found = tx.subscriptions.get("acc_b", "sub_01")
    assert found is not None
    assert found.created_at.utcoffset() == timedelta(0)


def test_subscriptions_are_listed_newest_first_with_their_streams(store: Store) -> None:
    icon = make_stream("str_02", "acc_x", icon_url="https://example.com/i.png")
    add_streams(store, make_stream("str_01"), icon, make_stream("str_03"))
    add_subscriptions(
        store,
        make_subscription("sub_02", "acc_b", "str_03"),
        make_subscription("sub_03", "acc_b", "str_02"),
        make_subscription("sub_01", "acc_b", "str_01"),
        make_subscription("sub_04", "acc_c", "str_01"),
        make_subscription("sub_05", "acc_c", "str_02"),
    )
    with store.read() as tx:
        listed = tx.subscriptions.list("acc_b")
    assert [(s.id, v.stream.id) for s, v in listed] == [
        ("sub_03", "str_02"),
        ("sub_02", "str_03"),
        ("sub_01", "str_01"),
    ]
    assert [v.subscribers for _, v in listed] == [2, 1, 2]
    assert listed[0][1].stream == icon
    assert listed[0][0] == make_subscription("sub_03", "acc_b", "str_02")


def test_one_subscription_per_account_and_stream(store: Store) -> None:
    add_streams(store, make_stream("str_01"))
    add_subscriptions(store, make_subscription("sub_01", "acc_b", "str_01"))
    with pytest.raises(KeyError), store.transaction() as tx:
        tx.subscriptions.add(make_subscription("sub_02", "acc_b", "str_01"))
    add_subscriptions(store, make_subscription("sub_03", "acc_c", "str_01"))
    with store.read() as tx:
        assert tx.subscriptions.get("acc_b", "sub_02") is None
        assert [s.id for s, _ in tx.subscriptions.list("acc_b")] == ["sub_01"]
        assert [s.id for s, _ in tx.subscriptions.list("acc_c")] == ["sub_03"]


def test_subscription_delete_is_scoped_and_reports_whether_it_deleted(store: Store) -> None:
    add_streams(store, make_stream("str_01"))
    subscription = make_subscription("sub_01", "acc_b", "str_01")
    add_subscriptions(store, subscription)
    with store.transaction() as tx:
        assert not tx.subscriptions.delete("acc_c", "sub_01")
        assert not tx.subscriptions.delete("acc_a", "sub_01")  # the creator does not own it
        assert not tx.subscriptions.delete("acc_b", "sub_99")
    with store.read() as tx:
        assert tx.subscriptions.get("acc_b", "sub_01") == subscription
    with store.transaction() as tx:
        assert tx.subscriptions.delete("acc_b", "sub_01")
        assert not tx.subscriptions.delete("acc_b", "sub_01")
    with store.read() as tx:
        assert tx.subscriptions.get("acc_b", "sub_01") is None
        assert tx.subscriptions.find("acc_b", "str_01") is None
    # Gone means the pair is free again.
    add_subscriptions(store, make_subscription("sub_02", "acc_b", "str_01"))
    with store.read() as tx:
        assert [s.id for s, _ in tx.subscriptions.list("acc_b")] == ["sub_02"]


# Deliveries: has_open and fan_out


def test_has_open_of_a_notification_without_deliveries_is_false(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01"))
    with store.read() as tx:
        assert not tx.progress.has_open("ntf_01")
        assert not tx.progress.has_open("ntf_unknown")


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([D.PENDING], True),
        ([D.IN_FLIGHT], True),
        ([D.DELIVERED], False),
        ([D.FAILED], False),
        ([D.CANCELLED], False),
        ([D.DELIVERED, D.FAILED, D.CANCELLED], False),
        ([D.DELIVERED, D.FAILED, D.PENDING], True),
        ([D.CANCELLED, D.IN_FLIGHT], True),
    ],
)
def test_has_open_is_whether_a_delivery_is_pending_or_in_flight(
    store: Store, statuses: list[DeliveryStatus], expected: bool
) -> None:
    add_notifications(store, make_notification("ntf_01"), make_notification("ntf_02"))
    add_deliveries(
        store,
        *(
            make_delivery(
                f"dlv_{i:02}",
                "ntf_01",
                f"dev_{i:02}",
                status=status,
                lease_owner="engine" if status is D.IN_FLIGHT else None,
                lease_expires_at=T0 + MINUTE if status is D.IN_FLIGHT else None,
            )
            for i, status in enumerate(statuses)
        ),
        # Another notification's open delivery does not count.
        make_delivery("dlv_99", "ntf_02", "dev_99"),
    )
    with store.read() as tx:
        assert tx.progress.has_open("ntf_01") is expected


def test_has_open_follows_the_delivery_lifecycle(store: Store) -> None:
    add_notifications(store, make_notification("ntf_01"))
    add_deliveries(store, make_delivery("dlv_01", "ntf_01", "dev_01"))
    with store.read() as tx:
        assert tx.progress.has_open("ntf_01")
    with store.transaction() as tx:
        (claimed,) = tx.deliveries.claim_due(T0, "engine", T0 + MINUTE, 10)
    with store.read() as tx:
        assert tx.progress.has_open("ntf_01")
    with store.transaction() as tx:
        assert tx.deliveries.settle(claimed.id, "engine", D.DELIVERED, None, T0)
    with store.read() as tx:
        assert not tx.progress.has_open("ntf_01")


def test_fan_out_enqueues_one_delivery_per_active_subscriber_device(store: Store) -> None:
    add_streams(store, make_stream("str_01", "acc_a"), make_stream("str_02", "acc_a"))
    add_devices(
        store,
        make_device("dev_01", "acc_b"),
        make_device("dev_02", "acc_b"),
        make_device("dev_03", "acc_c"),
        make_device("dev_04", "acc_c", is_active=False),
        make_device("dev_05", "acc_a"),
        make_device("dev_06", "acc_d"),
    )
    add_subscriptions(
        store,
        make_subscription("sub_01", "acc_b", "str_01"),
        make_subscription("sub_02", "acc_c", "str_01"),
        make_subscription("sub_03", "acc_d", "str_02"),
    )
    notification = make_notification(
        "ntf_01", "acc_a", stream=StreamRef("str_01", "name of str_01", "falcon-abqq")
    )
    due = T0 + 3 * MINUTE
    with store.transaction() as tx:
        tx.notifications.add(notification)
        assert tx.schedule.fan_out(notification, "str_01", due) == 3
    with store.read() as tx:
        deliveries = tx.progress.for_notification("ntf_01")
        assert tx.progress.has_open("ntf_01")
        counts = tx.progress.counts("ntf_01")
    assert sorted(d.device_id for d in deliveries) == ["dev_01", "dev_02", "dev_03"]
    assert len({d.id for d in deliveries}) == 3
    for delivery in deliveries:
        assert delivery.notification_id == "ntf_01"
        assert delivery.account_id == "acc_a"  # the notification's owner
        assert delivery.status is D.PENDING
        assert delivery.due_at == due
        assert delivery.attempts == 0
    assert (counts.pending, counts.delivered, counts.failed) == (3, 0, 0)


def test_fan_out_to_nobody_enqueues_nothing(store: Store) -> None:
    add_streams(store, make_stream("str_01", "acc_a"))
    add_devices(store, make_device("dev_01", "acc_a"))
    add_subscriptions(store, make_subscription("sub_01", "acc_b", "str_01"))  # no devices
    notification = make_notification("ntf_01", "acc_a")
    with store.transaction() as tx:
        tx.notifications.add(notification)
        assert tx.schedule.fan_out(notification, "str_01", T0) == 0
        assert tx.schedule.fan_out(notification, "str_99", T0) == 0
    with store.read() as tx:
        assert tx.progress.for_notification("ntf_01") == []
        assert not tx.progress.has_open("ntf_01")
