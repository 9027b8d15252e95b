"""The storage a PATCH uses: the locked read with its counts, and the UPDATE of what changed.

Every adapter must answer as the plain reads would (``get`` then ``counts``) and
store an edit whole, however few columns its statement writes.
"""

from __future__ import annotations

import attrs

from pushcore.domain.localtime import LocalTime
from pushcore.domain.model import DeliveryCounts, IconStyle, Priority
from pushcore.ports import Store
from tests.contract.test_queue_contract import (
    EVERY_FIELD,
    HOUR,
    LEASE,
    D,
    add_deliveries,
    add_notifications,
    in_flight,
    make_delivery,
    make_notification,
)
from tests.contract.test_store_contract import T0


def test_locked_with_counts_is_the_notification_and_its_counts(store: Store) -> None:
    add_notifications(
        store,
        make_notification("ntf_01"),
        make_notification("ntf_02"),
        make_notification("ntf_03"),
        EVERY_FIELD,
    )
    add_deliveries(
        store,
        make_delivery("dlv_01", device_id="dev_01"),
        in_flight(make_delivery("dlv_02", device_id="dev_02"), "sched-a", T0 + LEASE),
        make_delivery("dlv_03", device_id="dev_03", status=D.DELIVERED, attempts=2),
        make_delivery("dlv_04", device_id="dev_04", status=D.CANCELLED),
        make_delivery("dlv_05", "ntf_02", "dev_01", status=D.FAILED, attempts=1),
        make_delivery("dlv_06", "ntf_full", "dev_01"),
    )
    with store.transaction() as tx:
        found = {
            n: tx.progress.locked_with_counts("acc_a", n)
            for n in ("ntf_01", "ntf_02", "ntf_03", "ntf_full")
        }
        plain = {
            n: (tx.notifications.get("acc_a", n), tx.progress.counts(n))
            for n in ("ntf_01", "ntf_02", "ntf_03", "ntf_full")
        }
        other_account = tx.progress.locked_with_counts("acc_b", "ntf_01")
        unknown = tx.progress.locked_with_counts("acc_a", "ntf_99")
    assert found == plain
    assert found["ntf_01"] == (
        make_notification("ntf_01"),
        DeliveryCounts(pending=2, delivered=1, cancelled=1, handed=2),
    )
    # No delivery at all: one row of the join, and every count 0.
    assert found["ntf_03"] == (make_notification("ntf_03"), DeliveryCounts())
    assert other_account is None
    assert unknown is None


def test_an_edit_given_the_stored_row_stores_the_whole_edit(store: Store) -> None:
    original = make_notification("ntf_01")
    add_notifications(store, original, make_notification("ntf_02"))
    edits = [
        attrs.evolve(original, title="edited", revision=2),
        attrs.evolve(
            original,
            body="new body",
            icon_style=IconStyle.TERMINAL,
            priority=Priority.CRITICAL,
            metadata={"build": "1235"},
            sender_name="CI bot",
            scheduled_at=T0 + HOUR,
            wake_at=T0 + HOUR,
            expires_at=T0 + 2 * HOUR,
            ttl=3600,
            deliver_at=LocalTime("09:00", "2026-11-22"),
            revision=3,
        ),
        # Optional fields cleared again, the title as it was.
        attrs.evolve(original, revision=4),
    ]
    stored = original
    for edited in edits:
        with store.transaction() as tx:
            tx.notifications.edit(edited, stored)
        with store.read() as tx:
            assert tx.notifications.get("acc_a", "ntf_01") == edited
            assert tx.notifications.get("acc_a", "ntf_02") == make_notification("ntf_02")
        stored = edited
