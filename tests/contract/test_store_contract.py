"""The storage contract: what every adapter behind ``pushcore.ports.Store`` must do.

Each test runs against every adapter (see ``conftest.py``); entities use
millisecond-precision, timezone-aware times, which is the precision the
contract promises.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from pushcore.domain.model import Account, ApiKey, Device, Plan, Platform, WebPushKeys
from pushcore.domain.scopes import Scope
from pushcore.ports import Store, Transaction

T0 = datetime(2026, 11, 21, 10, 15, 30, 123000, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def make_key(key_id: str = "key_01", account_id: str = "acc_a", **changes: Any) -> ApiKey:
    """A key with every field set to something distinctive, adjusted by ``changes``."""
    key = ApiKey(
        id=key_id,
        account_id=account_id,
        name=f"name of {key_id}",
        key_hash=f"hash-{key_id}",
        key_prefix="psk_abcdefgh",
        scopes=(Scope.NOTIFICATIONS_WRITE, Scope.DEVICES_READ),
        expires_at=None,
        created_at=T0,
    )
    return attrs.evolve(key, **changes)


def make_device(device_id: str = "dev_01", account_id: str = "acc_a", **changes: Any) -> Device:
    """A device with a token derived from its id, adjusted by ``changes``."""
    device = Device(
        id=device_id,
        account_id=account_id,
        platform=Platform.IOS,
        token=f"token-{device_id}",
        name=None,
        created_at=T0,
    )
    return attrs.evolve(device, **changes)


# Accounts


def test_unknown_account_is_none(store: Store) -> None:
    with store.read() as tx:
        assert tx.accounts.get("acc_nobody") is None


def test_ensure_inserts_and_round_trips_every_field(store: Store) -> None:
    account = Account("acc_a", Plan.PRO, T0)
    with store.transaction() as tx:
        assert tx.accounts.ensure(account) == account
    with store.read() as tx:
        stored = tx.accounts.get("acc_a")
    assert stored == account
    assert stored is not None
    assert stored.created_at.utcoffset() == timedelta(0)


def test_ensure_keeps_an_existing_account(store: Store) -> None:
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.PRO, T0))
    with store.transaction() as tx:
        returned = tx.accounts.ensure(Account("acc_a", Plan.FREE, T0 + MINUTE))
    assert returned == Account("acc_a", Plan.PRO, T0)
    with store.read() as tx:
        assert tx.accounts.get("acc_a") == Account("acc_a", Plan.PRO, T0)


def test_set_plan_creates_a_missing_account_at_now(store: Store) -> None:
    with store.transaction() as tx:
        returned = tx.accounts.set_plan("acc_new", Plan.PRO, T0)
    assert returned == Account("acc_new", Plan.PRO, T0)
    with store.read() as tx:
        assert tx.accounts.get("acc_new") == returned


def test_set_plan_changes_only_the_plan(store: Store) -> None:
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0))
    with store.transaction() as tx:
        returned = tx.accounts.set_plan("acc_a", Plan.PRO, T0 + MINUTE)
    assert returned == Account("acc_a", Plan.PRO, T0)
    with store.read() as tx:
        assert tx.accounts.get("acc_a") == Account("acc_a", Plan.PRO, T0)


def test_another_offset_is_the_same_instant(store: Store) -> None:
    paris = timezone(timedelta(hours=1))
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0.astimezone(paris)))
    with store.read() as tx:
        stored = tx.accounts.get("acc_a")
    assert stored is not None
    assert stored.created_at == T0


# API keys


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(make_key(), id="unused-active-never-expiring"),
        pytest.param(
            make_key(
                scopes=(Scope.DEVICES_WRITE, Scope.NOTIFICATIONS_READ, Scope.DEVICES_READ),
                expires_at=T0 + timedelta(days=30),
                is_active=False,
                last_used_at=T0 + MINUTE,
                revoked_at=T0 + 2 * MINUTE,
            ),
            id="every-optional-field-set",
        ),
        pytest.param(make_key(scopes=tuple(Scope)), id="all-scopes"),
    ],
)
def test_key_round_trips_every_field(store: Store, key: ApiKey) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(key)
    with store.read() as tx:
        by_id = tx.api_keys.get(key.account_id, key.id)
        by_hash = tx.api_keys.find_by_hash(key.key_hash)
    assert by_id == key
    assert by_hash == key
    assert by_id is not None
    assert by_id.scopes == key.scopes  # the order given, not a canonical one
    assert by_id.created_at.utcoffset() == timedelta(0)


def test_key_of_another_account_is_invisible(store: Store) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key("key_01", "acc_a"))
    with store.read() as tx:
        assert tx.api_keys.get("acc_b", "key_01") is None
        assert tx.api_keys.get("acc_a", "key_99") is None
        assert tx.api_keys.list("acc_b") == []


def test_unknown_hash_is_none(store: Store) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key())
    with store.read() as tx:
        assert tx.api_keys.find_by_hash("no-such-hash") is None


def test_keys_are_listed_newest_first_revoked_included(store: Store) -> None:
    with store.transaction() as tx:
        # Inserted out of order: the order comes from the (creation-sortable) ids.
        tx.api_keys.add(make_key("key_02"))
        tx.api_keys.add(make_key("key_03", is_active=False, revoked_at=T0))
        tx.api_keys.add(make_key("key_01"))
        tx.api_keys.add(make_key("key_04", "acc_b"))
    with store.read() as tx:
        listed = tx.api_keys.list("acc_a")
    assert [k.id for k in listed] == ["key_03", "key_02", "key_01"]
    assert listed[0] == make_key("key_03", is_active=False, revoked_at=T0)


def test_adding_a_key_id_twice_raises_key_error(store: Store) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key("key_01"))
    with pytest.raises(KeyError), store.transaction() as tx:
        tx.api_keys.add(make_key("key_01", key_hash="another-hash"))
    with store.read() as tx:
        assert tx.api_keys.get("acc_a", "key_01") == make_key("key_01")


def test_update_stores_revocation_and_last_use(store: Store) -> None:
    key = make_key()
    with store.transaction() as tx:
        tx.api_keys.add(key)
    changed = attrs.evolve(key.revoked(T0 + MINUTE), last_used_at=T0 + 2 * MINUTE)
    with store.transaction() as tx:
        tx.api_keys.update(changed)
    with store.read() as tx:
        assert tx.api_keys.get("acc_a", key.id) == changed
        assert tx.api_keys.find_by_hash(key.key_hash) == changed


def test_touch_last_used_writes_at_most_once_per_interval(store: Store) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key())

    def touch(at: datetime) -> bool:
        with store.transaction() as tx:
            return tx.api_keys.touch_last_used("key_01", at, at - MINUTE)

    def last_used() -> datetime | None:
        with store.read() as tx:
            key = tx.api_keys.get("acc_a", "key_01")
        assert key is not None
        return key.last_used_at

    assert touch(T0) is True
    assert last_used() == T0
    assert touch(T0 + timedelta(seconds=30)) is False
    assert last_used() == T0
    # Exactly one interval later the stored time is not *before* the bound: no write.
    assert touch(T0 + MINUTE) is False
    assert last_used() == T0
    assert touch(T0 + MINUTE + timedelta(milliseconds=1)) is True
    assert last_used() == T0 + MINUTE + timedelta(milliseconds=1)


def test_touch_last_used_of_an_unknown_key_is_false(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.api_keys.touch_last_used("key_99", T0, T0 - MINUTE) is False


@pytest.mark.parametrize(
    ("bound", "writes"),
    [
        pytest.param(T0 + timedelta(microseconds=500), True, id="stored-time-just-before"),
        pytest.param(T0 - timedelta(microseconds=500), False, id="stored-time-just-after"),
    ],
)
def test_touch_last_used_compares_exactly_with_a_sub_millisecond_bound(
    store: Store, bound: datetime, writes: bool
) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key(last_used_at=T0))
    with store.transaction() as tx:
        assert tx.api_keys.touch_last_used("key_01", T0 + MINUTE, bound) is writes


# Devices


@pytest.mark.parametrize(
    "device",
    [
        pytest.param(make_device(), id="minimal"),
        pytest.param(
            make_device(
                platform=Platform.WEB,
                token="https://push.example/subscription/abc",
                name="Firefox on the laptop",
                keys=WebPushKeys(p256dh="BPk3-p256dh_value", auth="auth_value-1"),
                is_active=False,
                last_delivered_at=T0 + MINUTE,
            ),
            id="web-push-every-field-set",
        ),
        pytest.param(make_device(platform=Platform.WEBHOOK, name=""), id="empty-name"),
    ],
)
def test_device_round_trips_every_field(store: Store, device: Device) -> None:
    with store.transaction() as tx:
        tx.devices.add(device)
    with store.read() as tx:
        by_id = tx.devices.get(device.account_id, device.id)
        by_token = tx.devices.find_by_token(device.account_id, device.token)
    assert by_id == device
    assert by_token == device
    assert by_id is not None
    assert by_id.created_at.utcoffset() == timedelta(0)


def test_device_of_another_account_is_invisible(store: Store) -> None:
    device = make_device("dev_01", "acc_a")
    with store.transaction() as tx:
        tx.devices.add(device)
    with store.read() as tx:
        assert tx.devices.get("acc_b", "dev_01") is None
        assert tx.devices.get("acc_a", "dev_99") is None
        assert tx.devices.find_by_token("acc_b", device.token) is None
        assert tx.devices.find_by_token("acc_a", "token-unknown") is None
        assert tx.devices.list("acc_b") == []


def test_devices_are_listed_newest_first_deactivated_included(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_02"))
        tx.devices.add(make_device("dev_03", is_active=False))
        tx.devices.add(make_device("dev_01"))
        tx.devices.add(make_device("dev_04", "acc_b"))
    with store.read() as tx:
        listed = tx.devices.list("acc_a")
    assert [d.id for d in listed] == ["dev_03", "dev_02", "dev_01"]
    assert listed[0] == make_device("dev_03", is_active=False)


def test_a_token_is_unique_per_account_only(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01", "acc_a", token="shared-token"))
    with pytest.raises(KeyError), store.transaction() as tx:
        tx.devices.add(make_device("dev_02", "acc_a", token="shared-token"))
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_03", "acc_b", token="shared-token"))
    with store.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_01"]
        found = tx.devices.find_by_token("acc_b", "shared-token")
    assert found is not None
    assert found.id == "dev_03"


def test_update_stores_every_changeable_field(store: Store) -> None:
    device = make_device()
    with store.transaction() as tx:
        tx.devices.add(device)
    changed = attrs.evolve(
        device,
        platform=Platform.WEB,
        name="renamed",
        keys=WebPushKeys(p256dh="p", auth="a"),
        is_active=False,
        last_delivered_at=T0 + MINUTE,
    )
    with store.transaction() as tx:
        tx.devices.update(changed)
    with store.read() as tx:
        assert tx.devices.get("acc_a", device.id) == changed
    # And back to None: clearing optional fields is stored too.
    with store.transaction() as tx:
        tx.devices.update(device)
    with store.read() as tx:
        assert tx.devices.get("acc_a", device.id) == device


def test_delete_is_scoped_and_reports_whether_it_deleted(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01", "acc_a"))
        tx.devices.add(make_device("dev_02", "acc_a"))
    with store.transaction() as tx:
        assert tx.devices.delete("acc_b", "dev_01") is False
        assert tx.devices.delete("acc_a", "dev_99") is False
        assert tx.devices.delete("acc_a", "dev_01") is True
        assert tx.devices.delete("acc_a", "dev_01") is False
    with store.read() as tx:
        assert tx.devices.get("acc_a", "dev_01") is None
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_02"]


def test_a_deleted_token_can_be_registered_again(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01", token="tok"))
        tx.devices.delete("acc_a", "dev_01")
        tx.devices.add(make_device("dev_02", token="tok"))
    with store.read() as tx:
        found = tx.devices.find_by_token("acc_a", "tok")
    assert found is not None
    assert found.id == "dev_02"


def test_update_does_not_bring_back_a_deleted_device(store: Store) -> None:
    device = make_device()
    with store.transaction() as tx:
        tx.devices.add(device)
        tx.devices.delete("acc_a", device.id)
        tx.devices.update(attrs.evolve(device, last_delivered_at=T0 + MINUTE))
    with store.read() as tx:
        assert tx.devices.get("acc_a", device.id) is None


# Transactions


def test_committed_writes_are_visible_to_a_later_read(store: Store) -> None:
    with store.transaction() as tx:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0))
        tx.api_keys.add(make_key())
        tx.devices.add(make_device())
    with store.read() as tx:
        assert tx.accounts.get("acc_a") is not None
        assert tx.api_keys.get("acc_a", "key_01") == make_key()
        assert tx.devices.get("acc_a", "dev_01") == make_device()


def test_writes_are_visible_inside_their_own_transaction(store: Store) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key())
        assert tx.api_keys.get("acc_a", "key_01") == make_key()
        assert tx.api_keys.touch_last_used("key_01", T0, T0 - MINUTE) is True
        assert tx.api_keys.touch_last_used("key_01", T0, T0 - MINUTE) is False


class Boom(Exception):
    """Raised inside a transaction to make it roll back."""


def test_an_exception_rolls_back_every_write(store: Store) -> None:
    with store.transaction() as tx:
        tx.api_keys.add(make_key("key_01"))
        tx.devices.add(make_device("dev_01"))

    def write_everything_then_fail(tx: Transaction) -> None:
        tx.accounts.ensure(Account("acc_a", Plan.FREE, T0))
        tx.accounts.set_plan("acc_b", Plan.PRO, T0)
        tx.api_keys.add(make_key("key_02"))
        tx.api_keys.update(make_key("key_01").revoked(T0))
        tx.api_keys.touch_last_used("key_01", T0, T0 - MINUTE)
        tx.devices.add(make_device("dev_02"))
        tx.devices.delete("acc_a", "dev_01")
        raise Boom

    with pytest.raises(Boom), store.transaction() as tx:
        write_everything_then_fail(tx)
    with store.read() as tx:
        assert tx.accounts.get("acc_a") is None
        assert tx.accounts.get("acc_b") is None
        assert tx.api_keys.list("acc_a") == [make_key("key_01")]
        assert tx.devices.list("acc_a") == [make_device("dev_01")]


def test_a_caught_duplicate_does_not_undo_the_rest_of_the_transaction(store: Store) -> None:
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01", token="tok"))
        with pytest.raises(KeyError):
            tx.devices.add(make_device("dev_02", token="tok"))
        tx.devices.add(make_device("dev_03"))
    with store.read() as tx:
        assert [d.id for d in tx.devices.list("acc_a")] == ["dev_03", "dev_01"]


def test_the_store_can_be_used_after_a_rollback(store: Store) -> None:

    def add_then_fail(tx: Transaction) -> None:
        tx.devices.add(make_device("dev_01"))
        raise Boom

    with pytest.raises(Boom), store.transaction() as tx:
        add_then_fail(tx)
    with store.transaction() as tx:
        tx.devices.add(make_device("dev_01"))
    with store.read() as tx:
        assert tx.devices.get("acc_a", "dev_01") == make_device("dev_01")


def test_ping_succeeds_on_an_open_store(store: Store) -> None:
    store.ping()
