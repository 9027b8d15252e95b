"""What an account holds (API.md "People-side limits"): devices per plan, stale live
devices removed by retention; on every database."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pushcore import build_services, load_settings
from pushcore.delivery.retention import Retention, RetentionConfig
from pushcore.domain.errors import PlanLimit
from pushcore.domain.inputs import NewDevice
from pushcore.domain.model import Account, Plan, Platform
from pushcore.ports import Store
from tests.contract.test_lock_intents import PausingStore, services_on
from tests.contract.test_store_contract import T0
from tests.contract.threads import race
from tests.fakes.clock import FakeClock

DAY = timedelta(days=1)


def ios(i: int) -> NewDevice:
    """An iOS registration with the i-th token."""
    return NewDevice(token=f"{i:064x}", platform=Platform.IOS)


def live(token: str) -> NewDevice:
    """A live device's registration."""
    return NewDevice(token=token, platform=Platform.LIVE)


def test_a_free_account_holds_100_devices_and_re_registering_is_no_new_one(
    store: Store, tmp_path: Path
) -> None:
    services = services_on(store, tmp_path)
    for i in range(100):
        services.devices.register("acc_free", ios(i))
    with pytest.raises(PlanLimit):
        services.devices.register("acc_free", ios(100))
    # The upsert of a token it holds is not a new device.
    assert services.devices.register("acc_free", ios(7)).created is False
    assert len(services.devices.list("acc_free")) == 100
    # Another account is not counted with it.
    assert services.devices.register("acc_other", ios(100)).created is True
    # Removing one makes room for one.
    services.devices.remove("acc_free", services.devices.list("acc_free")[0].id)
    assert services.devices.register("acc_free", ios(100)).created is True


def test_a_pro_account_holds_1000_devices(store: Store, tmp_path: Path) -> None:
    services = services_on(store, tmp_path)
    with store.transaction() as tx:
        tx.accounts.ensure(Account(id="acc_pro", plan=Plan.PRO, created_at=T0))
    for i in range(1000):
        services.devices.register("acc_pro", ios(i))
    with pytest.raises(PlanLimit):
        services.devices.register("acc_pro", ios(1000))


def test_the_device_limit_holds_when_registrations_race(store: Store, tmp_path: Path) -> None:
    for i in range(99):
        services_on(store, tmp_path).devices.register("acc_free", ios(i))
    # Every registration counts, then waits before it inserts: without the
    # account's plan lock all four would count 99 and register.
    services = services_on(PausingStore(store, "devices", "count"), tmp_path)
    outcomes: list[str] = []

    def register(i: int) -> None:
        try:
            services.devices.register("acc_free", ios(1000 + i))
            outcomes.append("created")
        except PlanLimit:
            outcomes.append("plan_limit")

    race(4, register)
    assert sorted(outcomes) == ["created"] + ["plan_limit"] * 3
    assert len(services.devices.list("acc_free")) == 100


def test_live_devices_unused_for_30_days_are_removed(store: Store, tmp_path: Path) -> None:
    clock = FakeClock(T0)
    services = build_services(load_settings(env={}, data_dir=tmp_path), store=store, clock=clock)
    idle = services.devices.register("acc_a", live("idle")).device
    reopened = services.devices.register("acc_a", live("reopened")).device
    delivered = services.devices.register("acc_a", live("delivered")).device
    phone = services.devices.register("acc_a", ios(1)).device
    clock.advance(20 * DAY)
    # The app (or `pushctl listen`) opening again registers its device again.
    services.devices.register("acc_a", live("reopened"))
    with store.transaction() as tx:
        tx.devices.mark_delivered([delivered.id], clock.now())
    clock.advance(10 * DAY + timedelta(seconds=1))
    retention = Retention(store, clock, RetentionConfig(keep=timedelta(0), batch=2))
    while retention.sweep():
        pass
    left = {d.id for d in services.devices.list("acc_a")}
    assert left == {reopened.id, delivered.id, phone.id}
    assert idle.id not in left
    # Thirty more days of nothing: they go too; the phone (not live) stays.
    clock.advance(30 * DAY + timedelta(seconds=1))
    while retention.sweep():
        pass
    assert {d.id for d in services.devices.list("acc_a")} == {phone.id}
