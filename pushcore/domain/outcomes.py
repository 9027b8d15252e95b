"""What the engine hands a gateway, and what a gateway answers for each delivery."""

from __future__ import annotations

import attrs

from pushcore.domain.model import Delivery, Device, Notification
from pushcore.domain.states import DeliveryEvent


@attrs.frozen
class Dispatch:
    """One delivery with everything a gateway needs to send it."""

    delivery: Delivery
    device: Device
    notification: Notification
    # The delivery's receipt token (pushcore/receipts.py), for its payload.
    receipt: str | None = None
    # Inside the recipient's quiet hours in `silent` mode: each gateway's quiet form.
    quiet: bool = False


@attrs.frozen
class Delivered:
    """The gateway accepted the notification for the device."""


@attrs.frozen
class Retry:
    """A passing failure; try again, no sooner than ``after`` seconds when given."""

    reason: str
    after: float | None = None


@attrs.frozen
class TokenInvalid:
    """The gateway says the device token is dead: fail, and deactivate the device."""

    reason: str


@attrs.frozen
class Failed:
    """The gateway refused for good; ``reason`` is kept as the failure reason."""

    reason: str


@attrs.frozen
class Deferred:
    """Not sent: its destination is busy. Back to the queue unsent, due again in
    ``after`` seconds, without counting an attempt (it was never tried)."""

    reason: str
    after: float


Outcome = Delivered | Retry | TokenInvalid | Failed | Deferred


def delivery_event(outcome: Outcome, may_retry: bool) -> DeliveryEvent:
    """What a gateway's answer does to its delivery: succeed, retry (while allowed) or fail."""
    if isinstance(outcome, Delivered):
        return DeliveryEvent.SUCCEED
    if isinstance(outcome, Deferred):
        return DeliveryEvent.RELEASE
    if isinstance(outcome, Retry) and may_retry:
        return DeliveryEvent.RETRY
    return DeliveryEvent.FAIL


def is_redelivery(delivery: Delivery) -> bool:
    """Whether a just-claimed delivery was handed to a gateway before with no answer recorded.

    Every recorded retry leaves its reason and a release (or deferral) undoes
    its attempt, so a second attempt without a reason follows a claim whose
    lease ran out: leases are renewed while their process lives, so its
    process died (or stopped beating for a whole lease). A lease that runs
    out on a later retry looks like that retry, and is not counted.
    """
    return delivery.attempts > 1 and delivery.failure_reason is None
