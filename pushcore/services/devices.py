"""Devices: register (idempotent upsert), list, remove."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from pushcore.consistency import attach_device, detach_device
from pushcore.domain.errors import FieldError, NotFound, PlanLimit, ValidationError
from pushcore.domain.inputs import NewDevice, device_errors
from pushcore.domain.model import Device, Plan, Platform
from pushcore.domain.scheduling import FREE_PLAN_DEVICES, PRO_PLAN_DEVICES
from pushcore.domain.webhooks import new_secret
from pushcore.ports import Clock, IdGenerator, Random, Store, Transaction, UrlGuard, Waker


@attrs.frozen
class Registration:
    """The registered device, whether it is new (201) or was already there (200), and
    (a webhook device) the secret its deliveries are signed with from now on."""

    device: Device
    created: bool

    @property
    def secret(self) -> str | None:
        """The webhook signing secret: to be shown once, in the registration's answer."""
        return self.device.webhook_secret


@attrs.define(slots=False, eq=False, repr=False)
class DeviceService:
    """Use cases on devices."""

    _store: Store
    _clock: Clock
    _ids: IdGenerator
    _guard: UrlGuard
    _waker: Waker
    _random: Random

    def register(self, account_id: str, request: NewDevice) -> Registration:
        """Register a device, or refresh and reactivate the one with the same token."""
        errors = device_errors(request)
        if not errors and request.platform is Platform.WEBHOOK:
            try:
                self._guard.check(request.token)
            except ValueError as exc:
                errors.append(FieldError("token", str(exc)))
        if errors:
            raise ValidationError(errors)
        now = self._clock.now()
        # A new secret at every registration (API.md): the old one stops signing.
        secret = (
            new_secret(self._random.randbelow) if request.platform is Platform.WEBHOOK else None
        )
        with self._store.transaction() as tx:
            tx.locks.device_token(account_id, request.token)
            existing = tx.devices.find_by_token(account_id, request.token)
            if existing is not None:
                device = attrs.evolve(
                    existing,
                    platform=request.platform,
                    name=request.name if request.name is not None else existing.name,
                    keys=request.keys,
                    is_active=True,
                    webhook_secret=secret,
                    refreshed_at=now,
                )
                tx.devices.update(device)
                result = Registration(device, created=False)
            else:
                self._within_plan(tx, account_id)
                device = Device(
                    id=self._ids.new_id("dev"),
                    account_id=account_id,
                    platform=request.platform,
                    token=request.token,
                    name=request.name,
                    created_at=now,
                    keys=request.keys,
                    webhook_secret=secret,
                    refreshed_at=now,
                )
                tx.devices.add(device)
                result = Registration(device, created=True)
            # A new or revived device also gets what is waiting for a device.
            due = attach_device(tx, self._ids, device, now)
        if due is not None:
            self._waker.wake(due)
        return result

    @staticmethod
    def _within_plan(tx: Transaction, account_id: str) -> None:
        """PlanLimit when the account already holds its plan's number of devices."""
        # Counted under the account's plan-limit lock: two registrations at once
        # are serialised, so the second sees the first and the limit holds.
        tx.locks.plan_limits(account_id)
        account = tx.accounts.get(account_id)
        pro = account is not None and account.plan is Plan.PRO
        limit = PRO_PLAN_DEVICES if pro else FREE_PLAN_DEVICES
        if tx.devices.count(account_id) >= limit:
            plan = "pro" if pro else "free"
            raise PlanLimit(f"The {plan} plan allows {limit} devices; remove one first")

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        with self._store.read() as tx:
            return tx.devices.list(account_id)

    def remove(self, account_id: str, device_id: str) -> None:
        """Remove a device of this account; NotFound for any other id."""
        with self._store.transaction() as tx:
            if not tx.devices.delete(account_id, device_id):
                raise NotFound("Device not found")
            detach_device(tx, device_id, self._clock.now(), "device_removed")
