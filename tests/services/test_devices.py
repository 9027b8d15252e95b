"""DeviceService as a library: register (new or upsert), validation, list, remove, reactivation,
and what a device's arrival or departure does to notifications waiting for one."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pushcore import (
    FieldError,
    NewDevice,
    NotFound,
    NotificationStatus,
    Platform,
    Services,
    ValidationError,
    WebPushKeys,
)
from pushcore.domain.outcomes import TokenInvalid
from pushcore.services import Registration  # what devices.register returns
from tests.services.conftest import ALICE, BOB, DUE, T0, Deliveries, android, notify, stored

N = NotificationStatus
APNS_TOKEN = "a1" * 32  # 32 bytes in hex
PUBLIC_HOOK = "https://93.184.216.34/hooks/pushcore"  # a public address: no DNS needed


def b64url(raw: bytes) -> str:
    """Unpadded base64url, as browsers give Web Push keys."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def web_push_keys() -> WebPushKeys:
    """Keys of a real P-256 subscription."""
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return WebPushKeys(p256dh=b64url(point), auth=b64url(b"0123456789abcdef"))


def register(
    services: Services,
    account: str = ALICE,
    *,
    token: str = "fcm-token-1",
    platform: Platform = Platform.ANDROID,
    name: str | None = None,
    keys: WebPushKeys | None = None,
) -> Registration:
    """Register a device (an Android one unless told otherwise): the device, and whether new."""
    request = NewDevice(token=token, platform=platform, name=name, keys=keys)
    return services.devices.register(account, request)


def invalid(services: Services, **fields: Any) -> tuple[FieldError, ...]:
    """Register, expecting ValidationError; its details (and nothing stored)."""
    with pytest.raises(ValidationError) as info:
        register(services, **fields)
    assert services.devices.list(ALICE) == []
    return info.value.details


# -- register --------------------------------------------------------------


def test_a_new_device_is_created(services: Services) -> None:
    registration = register(services, token="fcm-token-123456", name="Pixel")

    assert registration.created is True
    device = registration.device
    assert device.id.startswith("dev_")
    assert (device.account_id, device.platform, device.token, device.name) == (
        ALICE,
        Platform.ANDROID,
        "fcm-token-123456",
        "Pixel",
    )
    assert device.token_prefix == "fcm-toke"
    assert (device.is_active, device.created_at, device.last_delivered_at) == (True, T0, None)
    assert services.devices.list(ALICE) == [device]


def test_the_same_token_again_is_the_same_device_not_a_new_one(services: Services) -> None:
    first = register(services, name="Pixel").device

    again = register(services)

    assert again.created is False
    assert again.device.id == first.id
    assert again.device.name == "Pixel"  # no name given: the old one is kept
    assert again.device.created_at == T0
    assert services.devices.list(ALICE) == [first]


def test_an_upsert_with_a_name_renames(services: Services) -> None:
    first = register(services, name="Pixel").device
    renamed = register(services, name="Work phone")
    assert renamed.created is False
    assert services.devices.list(ALICE) == [renamed.device]
    assert renamed.device.name == "Work phone"
    assert renamed.device.id == first.id


def test_the_same_token_on_another_account_is_another_device(services: Services) -> None:
    mine = register(services, ALICE).device
    theirs = register(services, BOB)

    assert theirs.created is True
    assert theirs.device.id != mine.id
    assert [d.id for d in services.devices.list(BOB)] == [theirs.device.id]
    assert [d.id for d in services.devices.list(ALICE)] == [mine.id]


def test_each_platform_with_a_valid_token(services: Services) -> None:
    keys = web_push_keys()
    registered = [
        register(services, platform=Platform.IOS, token=APNS_TOKEN),
        register(services, platform=Platform.ANDROID, token="fcm:APA91b-x"),
        register(services, platform=Platform.WEB, token="https://push.example/sub/1", keys=keys),
        register(services, platform=Platform.WEBHOOK, token=PUBLIC_HOOK),
        register(services, platform=Platform.LIVE, token="my laptop's app"),
    ]
    assert all(r.created for r in registered)
    listed = {d.platform: d for d in services.devices.list(ALICE)}
    assert set(listed) == set(Platform)
    assert listed[Platform.WEB].keys == keys
    assert listed[Platform.IOS].keys is None


@pytest.mark.parametrize(
    ("fields", "details"),
    [
        (
            {"platform": Platform.IOS, "token": "not-hex"},
            [FieldError("token", "must be an APNs device token in hex")],
        ),
        (
            {"platform": Platform.IOS, "token": "abc"},  # hex, but too short
            [FieldError("token", "must be an APNs device token in hex")],
        ),
        (
            {"platform": Platform.WEB, "token": "https://push.example/sub/1"},
            [FieldError("keys", "is required for web devices (p256dh and auth)")],
        ),
        (
            {
                "platform": Platform.WEB,
                "token": "https://push.example/sub/1",
                "keys": WebPushKeys(p256dh="AAAA", auth="short"),
            },
            [
                FieldError("keys.p256dh", "must be a base64url uncompressed P-256 point"),
                FieldError("keys.auth", "must be a base64url 16-byte secret"),
            ],
        ),
        (
            {"platform": Platform.WEB, "token": "not a url"},  # every field, not the first
            [
                FieldError("token", "must be an http or https URL"),
                FieldError("keys", "is required for web devices (p256dh and auth)"),
            ],
        ),
        (
            {"platform": Platform.ANDROID, "keys": WebPushKeys(p256dh="x", auth="y")},
            [FieldError("keys", "is only for web devices")],
        ),
        (
            {"platform": Platform.WEBHOOK, "token": "ftp://example.com/hook"},
            [FieldError("token", "must be an http or https URL")],
        ),
    ],
)
def test_a_token_or_keys_wrong_for_the_platform_are_refused(
    services: Services, fields: dict[str, Any], details: list[FieldError]
) -> None:
    assert list(invalid(services, **fields)) == details


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "https://10.0.0.7/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/",
    ],
)
def test_a_webhook_on_a_private_address_is_refused(services: Services, url: str) -> None:
    assert invalid(services, platform=Platform.WEBHOOK, token=url) == (
        FieldError("token", "must not point at a private, loopback or link-local address"),
    )


@pytest.mark.parametrize(
    ("token", "name"), [("", None), ("   ", None), ("t" * 4097, None), ("t", "n" * 101)]
)
def test_an_invalid_device_request_is_a_value_error_when_built(
    token: str, name: str | None
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (each case has its own message)
        NewDevice(token=token, platform=Platform.ANDROID, name=name)


# -- list and remove -------------------------------------------------------


def test_list_is_the_accounts_devices_newest_first(services: Services) -> None:
    older = android(services, ALICE, "tok-1")
    newer = android(services, ALICE, "tok-2")
    android(services, BOB, "tok-3")

    assert [d.id for d in services.devices.list(ALICE)] == [newer.id, older.id]


def test_remove_and_register_again_is_a_new_device(services: Services) -> None:
    gone = android(services, ALICE, "tok-1")

    services.devices.remove(ALICE, gone.id)

    assert services.devices.list(ALICE) == []
    again = register(services, token="tok-1")
    assert again.created is True
    assert again.device.id != gone.id


def test_removing_another_accounts_device_is_not_found(services: Services) -> None:
    mine = android(services, ALICE, "tok-1")

    with pytest.raises(NotFound):
        services.devices.remove(BOB, mine.id)
    services.devices.remove(ALICE, mine.id)
    with pytest.raises(NotFound):
        services.devices.remove(ALICE, mine.id)  # gone already


def test_removing_a_device_cancels_what_was_pending_for_it(services: Services) -> None:
    a = android(services, ALICE, "tok-a")
    android(services, ALICE, "tok-b")
    n = notify(services)

    services.devices.remove(ALICE, a.id)

    counts = services.notifications.get(ALICE, n.id).deliveries
    assert (counts.pending, counts.cancelled) == (1, 1)


# -- deactivation and reactivation ----------------------------------------


def test_a_dead_token_deactivates_the_device_and_registering_it_again_revives_it(
    services: Services, deliveries: Deliveries
) -> None:
    device = android(services, ALICE, "tok-a")
    deliveries.gateway.script("tok-a", TokenInvalid("Unregistered"))
    n = notify(services)
    deliveries.run(DUE)

    (dead,) = services.devices.list(ALICE)
    assert (dead.id, dead.is_active) == (device.id, False)  # still listed
    got = stored(services, n)
    assert (got.status, got.failure_reason) == (N.FAILED, "Unregistered")
    assert notify(services).devices_targeted == 0  # it receives nothing

    revived = register(services, token="tok-a")

    assert revived.created is False
    assert (revived.device.id, revived.device.is_active) == (device.id, True)
    assert services.devices.list(ALICE) == [revived.device]
    assert notify(services).devices_targeted == 1


def test_a_delivery_records_when_the_device_last_got_one(
    services: Services, deliveries: Deliveries
) -> None:
    android(services, ALICE, "tok-a")
    n = notify(services)

    deliveries.run(DUE)

    assert stored(services, n).status is N.DELIVERED
    assert services.devices.list(ALICE)[0].last_delivered_at == DUE


# -- a device for the notifications waiting for one ------------------------


def test_a_device_registered_before_the_due_time_is_targeted_too(services: Services) -> None:
    android(services, ALICE, "tok-a")
    n = notify(services)

    android(services, ALICE, "tok-b")

    detail = services.notifications.get(ALICE, n.id)
    assert detail.notification.devices_targeted == 2
    assert detail.deliveries.pending == 2


def test_a_notification_for_one_token_does_not_take_other_devices(services: Services) -> None:
    android(services, ALICE, "tok-a")
    n = notify(services, target_device_token="tok-a")

    android(services, ALICE, "tok-b")

    detail = services.notifications.get(ALICE, n.id)
    assert (detail.notification.devices_targeted, detail.deliveries.pending) == (1, 1)


def test_a_due_notification_waits_for_a_device_and_is_queued_when_one_registers(
    services: Services, deliveries: Deliveries
) -> None:
    n = notify(services)
    deliveries.run(DUE)
    assert stored(services, n).status is N.SCHEDULED

    deliveries.clock.advance(timedelta(hours=1))
    android(services, ALICE, "tok-a")

    detail = services.notifications.get(ALICE, n.id)
    assert detail.notification.status is N.QUEUED
    assert (detail.notification.devices_targeted, detail.deliveries.pending) == (1, 1)
    deliveries.run(deliveries.clock.now())
    assert stored(services, n).status is N.DELIVERED
    assert deliveries.gateway.tokens() == ["tok-a"]


def test_a_reactivated_device_also_gets_what_waits(
    services: Services, deliveries: Deliveries
) -> None:
    android(services, ALICE, "tok-a")
    deliveries.gateway.script("tok-a", TokenInvalid("Unregistered"))
    notify(services)
    deliveries.run(DUE)  # tok-a is dead now
    waiting = notify(services)
    deliveries.run(DUE + timedelta(seconds=5))
    assert stored(services, waiting).status is N.SCHEDULED

    assert register(services, token="tok-a").created is False

    assert stored(services, waiting).status is N.QUEUED
    assert services.notifications.get(ALICE, waiting.id).deliveries.pending == 1


def test_a_targeted_notification_waits_for_its_own_token(
    services: Services, deliveries: Deliveries
) -> None:
    android(services, ALICE, "tok-a")
    deliveries.gateway.script("tok-a", TokenInvalid("Unregistered"))
    notify(services)
    deliveries.run(DUE)  # tok-a is dead now
    n = notify(services, target_device_token="tok-a")
    deliveries.run(DUE + timedelta(seconds=5))
    assert stored(services, n).status is N.SCHEDULED

    android(services, ALICE, "tok-other")
    assert stored(services, n).status is N.SCHEDULED

    register(services, token="tok-a")
    assert stored(services, n).status is N.QUEUED


def test_with_no_device_for_24_hours_a_due_notification_fails(
    services: Services, deliveries: Deliveries
) -> None:
    n = notify(services)
    deliveries.run(DUE)
    deliveries.run(DUE + timedelta(hours=24) - timedelta(milliseconds=1))
    assert stored(services, n).status is N.SCHEDULED

    deliveries.run(DUE + timedelta(hours=24))

    got = stored(services, n)
    assert (got.status, got.failure_reason) == (N.FAILED, "no_devices")
    android(services, ALICE, "tok-late")  # too late: nothing comes back to life
    assert stored(services, n).status is N.FAILED
