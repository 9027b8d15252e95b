"""The storage contract of the recipient's settings and HELD deliveries (migration 0024),
on SQLite and PostgreSQL; ``RecipientRepository`` in ``pushcore.ports`` is the contract."""

from __future__ import annotations

from datetime import time, timedelta

from pushcore.domain.model import Account, Plan, Priority
from pushcore.domain.quiet import QuietHours, QuietMode
from pushcore.domain.recipient import Mute, RecipientSettings
from pushcore.domain.states import DeliveryStatus
from pushcore.ports import Store
from tests.contract.test_queue_contract import (
    add_deliveries,
    add_notifications,
    deliveries_of,
    make_delivery,
    make_notification,
)
from tests.contract.test_store_contract import MINUTE, T0, make_device
from tests.contract.test_streams_contract import add_streams, make_stream, make_subscription

HOURS = QuietHours(
    time(22), time(7), frozenset({4, 5}), QuietMode.SILENT, frozenset({Priority.HIGH})
)


def test_settings_are_stored_whole_and_read_back_for_a_batch(store: Store) -> None:
    with store.transaction() as tx:
        for account in ("acc_a", "acc_b", "acc_c"):
            tx.accounts.ensure(Account(account, Plan.FREE, T0))
        assert tx.recipients.settings("acc_a") == RecipientSettings()
        full = RecipientSettings("Europe/Berlin", HOURS, T0 + MINUTE)
        tx.recipients.save("acc_a", full)
        tx.recipients.save("acc_b", RecipientSettings("Asia/Tokyo"))  # a zone only
    with store.read() as tx:
        assert tx.recipients.settings("acc_a") == full
        assert tx.recipients.settings("nobody") == RecipientSettings()
        # Only those with something to screen: a zone alone holds nothing.
        assert tx.recipients.settings_many(["acc_a", "acc_b", "acc_c"]) == {"acc_a": full}


def test_a_mute_is_its_subscriber_s_and_read_by_account_and_stream(store: Store) -> None:
    add_streams(store, make_stream("str_01"), make_stream("str_02"))
    with store.transaction() as tx:
        tx.subscriptions.add(make_subscription("sub_01", "acc_b", "str_01"))
        tx.subscriptions.add(make_subscription("sub_02", "acc_c", "str_01"))
        assert not tx.recipients.mute("sub_01", "acc_c", Mute(T0))  # not acc_c's
        assert tx.recipients.mute("sub_01", "acc_b", Mute(T0 + MINUTE, False))
    with store.read() as tx:
        found = tx.recipients.mutes(["acc_b", "acc_c"], ["str_01", "str_02"])
        assert found == {("acc_b", "str_01"): Mute(T0 + MINUTE, False), ("acc_c", "str_01"): Mute()}
        assert tx.recipients.subscription_mute("sub_01") == Mute(T0 + MINUTE, False)
        (listed, _) = tx.subscriptions.list("acc_b")[0]
        assert (listed.muted_until, listed.allow_critical) == (T0 + MINUTE, False)


def test_held_deliveries_wait_for_their_end_and_go_back_when_released(store: Store) -> None:
    end = T0 + timedelta(hours=1)
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01", "acc_b"))
        tx.devices.add(make_device("dev_02", "acc_c"))
    add_notifications(store, make_notification("ntf_01"))
    add_deliveries(
        store,
        make_delivery("dlv_02", device_id="dev_01", due_at=T0 + MINUTE),
        make_delivery("dlv_01", device_id="dev_01", due_at=T0),
        make_delivery("dlv_03", device_id="dev_02"),
    )
    with store.transaction() as tx:
        claimed = tx.deliveries.claim_due(T0 + MINUTE, "e", T0 + 10 * MINUTE, 10)
        assert len(claimed) == 3
        assert tx.recipients.hold(["dlv_01", "dlv_02", "dlv_03"], "e", end) == 3
        assert tx.deliveries.next_due_at() == end
        assert tx.progress.open_among(["ntf_01"]) == {"ntf_01"}
    stored = deliveries_of(store)
    assert {d.status for d in stored.values()} == {DeliveryStatus.HELD}
    assert (stored["dlv_01"].held_until, stored["dlv_01"].attempts) == (end, 0)
    with store.transaction() as tx:
        assert tx.deliveries.claim_due(end - MINUTE, "e", end, 10) == []
        # At the end: in due order, not in id order.
        released = tx.deliveries.claim_due(end, "e", end + MINUTE, 2)
        assert [d.id for d in released] == ["dlv_01", "dlv_03"]
        assert tx.recipients.hold(["dlv_01", "dlv_03"], "e", end + MINUTE) == 2
        # A change of acc_b's settings: its devices' held deliveries go back to the queue.
        assert tx.recipients.release_account("acc_b") == 2
        held = tx.recipients.held_for_devices(["dev_01"])
        assert sorted(h[0] for h in held) == ["dlv_01", "dlv_02"]
    stored = deliveries_of(store)
    assert stored["dlv_02"].status is DeliveryStatus.PENDING
    assert stored["dlv_03"].status is DeliveryStatus.HELD
