"""NotificationService.create_many: 1 to 500 notifications, all or nothing."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pushcore import FieldError, NewNotification, NotificationStatus, Services, ValidationError
from pushcore.domain.scheduling import Delay
from tests.fakes.icons import FakeIconProbe
from tests.services.conftest import ALICE, BOB, DUE, T0, android, stored

# An item due in a minute with a ttl of 60 s expires a minute after that.
DUE_PLUS_MINUTE_TTL = T0 + timedelta(minutes=2)


def item(title: str = "Deploy finished", **fields: object) -> NewNotification:
    """One batch item."""
    return NewNotification(title=title, **fields)  # type: ignore[arg-type]


def nothing_stored(services: Services, account: str = ALICE) -> bool:
    """Whether the account has no notification and no delivery."""
    stats = services.notifications.stats(account)
    return stats.total == 0 and stats.deliveries.pending == 0


def test_the_created_notifications_come_back_in_order_each_with_its_schedule(
    services: Services,
) -> None:
    batch = [
        item("now"),
        item("in a minute", delay=Delay.M1),
        item("in 90 s", delay=Delay.CUSTOM, custom_delay=90),
        item("tomorrow", scheduled_at=T0 + timedelta(days=1)),
    ]

    created = asyncio.run(services.notifications.create_many(ALICE, batch))

    assert [n.title for n in created] == ["now", "in a minute", "in 90 s", "tomorrow"]
    assert [n.scheduled_at - T0 for n in created] == [
        timedelta(seconds=5),
        timedelta(minutes=1),
        timedelta(seconds=90),
        timedelta(days=1),
    ]
    assert {n.status for n in created} == {NotificationStatus.QUEUED}
    assert len({n.id for n in created}) == 4
    for n in created:
        assert stored(services, n) == n
    assert services.notifications.stats(ALICE).total == 4


def test_each_item_gets_the_deliveries_of_its_own_target(services: Services) -> None:
    android(services, ALICE, "tok-a")
    android(services, ALICE, "tok-b")

    everyone, only_b = asyncio.run(
        services.notifications.create_many(
            ALICE, [item("all"), item("b", target_device_token="tok-b")]
        )
    )

    assert (everyone.devices_targeted, only_b.devices_targeted) == (2, 1)
    assert services.notifications.get(ALICE, everyone.id).deliveries.pending == 2
    assert services.notifications.get(ALICE, only_b.id).deliveries.pending == 1


def test_one_invalid_item_stores_nothing_and_is_named_by_its_index(services: Services) -> None:
    batch = [item(f"n{i}") for i in range(5)]
    batch[3] = item("bad", custom_delay=60)  # customDelay without delay: custom

    with pytest.raises(ValidationError) as info:
        asyncio.run(services.notifications.create_many(ALICE, batch))

    assert info.value.details == (
        FieldError("notifications[3].customDelay", "is only allowed when delay is custom"),
    )
    assert nothing_stored(services)


def test_every_invalid_field_of_every_item_is_listed_in_item_order(services: Services) -> None:
    far = T0 + timedelta(days=31)
    batch = [item("ok") for _ in range(12)]
    batch[11] = item("late", scheduled_at=far)
    batch[2] = item("two at once", delay=Delay.M5, custom_delay=60, scheduled_at=far)
    batch[10] = item("custom", delay=Delay.CUSTOM)

    with pytest.raises(ValidationError) as info:
        asyncio.run(services.notifications.create_many(ALICE, batch))

    assert [d.field for d in info.value.details] == [
        "notifications[2].customDelay",
        "notifications[2].scheduledAt",
        "notifications[10].customDelay",
        "notifications[11].scheduledAt",
    ]
    assert nothing_stored(services)


def test_items_of_one_timing_each_get_its_due_time_and_its_errors(services: Services) -> None:
    # Items that share their timing are checked once: each still gets the due time,
    # and each invalid one is named, not only the first.
    far = T0 + timedelta(days=31)
    batch = [item("a", delay=Delay.M1), item("b", scheduled_at=far), item("c", delay=Delay.M1)]
    batch += [item("d", scheduled_at=far), item("e", delay=Delay.M1, ttl=60)]

    with pytest.raises(ValidationError) as info:
        asyncio.run(services.notifications.create_many(ALICE, batch))

    assert [d.field for d in info.value.details] == [
        "notifications[1].scheduledAt",
        "notifications[3].scheduledAt",
    ]
    valid = [batch[0], batch[2], batch[4], item("f", delay=Delay.M1)]
    created = asyncio.run(services.notifications.create_many(ALICE, valid))
    assert [n.scheduled_at - T0 for n in created] == [timedelta(minutes=1)] * 4
    assert [n.expires_at for n in created] == [None, None, DUE_PLUS_MINUTE_TTL, None]


def test_an_unknown_target_token_is_a_validation_error_naming_the_item(
    services: Services,
) -> None:
    android(services, ALICE, "tok-a")
    android(services, BOB, "tok-bob")
    batch = [item("a", target_device_token="tok-a"), item("b", target_device_token="tok-bob")]

    with pytest.raises(ValidationError) as info:
        asyncio.run(services.notifications.create_many(ALICE, batch))

    assert info.value.details == (
        FieldError(
            "notifications[1].targetDeviceToken", "no device with this token on this account"
        ),
    )
    assert nothing_stored(services)


def test_an_icon_that_is_not_an_image_names_each_item_and_stores_nothing(
    services: Services, icons: FakeIconProbe
) -> None:
    page = "https://example.com/page.html"
    batch = [
        item("a", sender_icon=page),
        item("b", sender_icon="https://example.com/ok.png"),
        item("c", sender_icon=page),
    ]

    with pytest.raises(ValidationError) as info:
        asyncio.run(services.notifications.create_many(ALICE, batch))

    assert [d.field for d in info.value.details] == [
        "notifications[0].senderIcon",
        "notifications[2].senderIcon",
    ]
    assert sorted(icons.checked) == ["https://example.com/ok.png", page]  # each URL once
    assert nothing_stored(services)


@pytest.mark.parametrize("size", [0, 501])
def test_a_batch_holds_1_to_500_notifications(services: Services, size: int) -> None:
    with pytest.raises(ValidationError) as info:
        asyncio.run(services.notifications.create_many(ALICE, [item() for _ in range(size)]))
    assert info.value.details == (FieldError("notifications", "must hold 1 to 500 notifications"),)
    assert nothing_stored(services)


def test_a_batch_of_500_is_stored_whole(services: Services) -> None:
    android(services, ALICE, "tok-a")

    created = asyncio.run(
        services.notifications.create_many(ALICE, [item(f"n{i}") for i in range(500)])
    )

    assert len(created) == 500
    stats = services.notifications.stats(ALICE)
    assert stats.total == 500
    assert stats.deliveries.pending == 500
    newest = services.notifications.list(ALICE, limit=1).items[0]
    assert newest == created[-1]
    assert newest.scheduled_at == DUE
