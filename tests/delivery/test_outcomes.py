"""What the engine makes of each gateway answer: aggregation, retries, dead tokens, bugs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pushcore.domain.errors import NotCancellable
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Failed, Retry, TokenInvalid
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import ALICE, DUE, LEASE, Harness, at, crash_while_sending
from tests.fakes.gateway import ScriptedGateway, sent_tokens

N = NotificationStatus
D = DeliveryStatus
MS = timedelta(milliseconds=1)
IOS_TOKEN = "ab" * 32


# -- aggregation -------------------------------------------------------------


def test_all_delivered_makes_it_delivered(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)

    detail = h.get(n)
    assert detail.notification.status is N.DELIVERED
    assert detail.notification.failure_reason is None
    assert detail.notification.settled_at == DUE
    counts = detail.deliveries
    assert (counts.pending, counts.delivered, counts.failed) == (0, 2, 0)
    assert {d.last_delivered_at for d in h.devices().values()} == {DUE}
    stats = h.services.notifications.stats(ALICE)
    assert stats.by_status["DELIVERED"] == 1
    assert stats.delivered_24h == 1


def test_some_delivered_some_failed_is_delivered_with_the_counts(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.device("tok-c")
    h.gateway.script("tok-b", Failed("InvalidPayload"))
    h.gateway.script("tok-c", TokenInvalid("Unregistered"))
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)

    detail = h.get(n)
    assert detail.notification.status is N.DELIVERED
    # Partly failed: the notification says why (one of its failed deliveries' reasons).
    assert detail.notification.failure_reason in {"InvalidPayload", "Unregistered"}
    counts = detail.deliveries
    assert (counts.pending, counts.delivered, counts.failed) == (0, 1, 2)
    reasons = sorted(str(d.failure_reason) for d in h.deliveries(n))
    assert reasons == ["InvalidPayload", "None", "Unregistered"]


def test_all_failed_is_failed_with_the_gateways_reason(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.gateway.script("tok-a", Failed("MismatchSenderId"))
    h.gateway.script("tok-b", Failed("MismatchSenderId"))
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)

    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "MismatchSenderId"
    assert detail.notification.settled_at == DUE
    counts = detail.deliveries
    assert (counts.pending, counts.delivered, counts.failed) == (0, 0, 2)
    assert h.services.notifications.stats(ALICE).failed_24h == 1


def test_the_status_settles_only_when_the_last_delivery_does(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.gateway.script("tok-b", Retry("Service Unavailable"))
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)
    detail = h.get(n)
    assert detail.notification.status is N.QUEUED
    assert (detail.deliveries.pending, detail.deliveries.delivered) == (1, 1)

    h.step(engine, at(10))
    detail = h.get(n)
    assert detail.notification.status is N.DELIVERED
    assert (detail.deliveries.pending, detail.deliveries.delivered) == (0, 2)
    assert detail.notification.settled_at == at(10)


def test_a_platform_without_gateway_fails_with_a_clear_reason(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine(gateways={Platform.WEBHOOK: h.gateway})

    h.step(engine, DUE)

    assert h.gateway.sent == []
    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "No gateway for android devices"


# -- retries -----------------------------------------------------------------


def test_a_retry_goes_back_to_pending_and_is_resent_after_its_backoff(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", Retry("Service Unavailable"))
    n = h.notify()
    engine = h.engine()
    backoff = timedelta(milliseconds=1500)  # drawn from 1 to 2 s, pinned in the middle

    # tick answers before the batch is recorded (the lease end); recorded, the
    # retry's due time is the next look (the run loop is woken for it).
    assert h.step(engine, DUE) == DUE + LEASE
    assert h.step(engine) == DUE + backoff
    (delivery,) = h.deliveries(n)
    assert delivery.status is D.PENDING
    assert delivery.attempts == 1
    assert delivery.due_at == DUE + backoff
    assert delivery.failure_reason == "Service Unavailable"
    assert h.status(n) is N.QUEUED
    assert h.get(n).deliveries.pending == 1

    assert h.step(engine, DUE + backoff - MS) == DUE + backoff
    assert len(h.gateway.sent) == 1

    h.step(engine, DUE + backoff)
    assert [(s.attempt, s.at) for s in h.gateway.sent] == [(1, DUE), (2, DUE + backoff)]
    assert h.status(n) is N.DELIVERED


def test_retry_after_is_a_floor(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", Retry("Too Many Requests", after=30))
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)
    assert h.step(engine) == DUE + timedelta(seconds=30)
    h.step(engine, DUE + timedelta(seconds=29))
    h.step(engine, DUE + timedelta(seconds=30) - MS)
    assert len(h.gateway.sent) == 1

    h.step(engine, DUE + timedelta(seconds=30))
    assert [s.at for s in h.gateway.sent] == [DUE, DUE + timedelta(seconds=30)]
    assert h.status(n) is N.DELIVERED


def test_a_retry_after_shorter_than_the_backoff_does_not_shorten_it(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", Retry("Service Unavailable", after=0.1))
    h.notify()
    engine = h.engine()

    h.step(engine, DUE)
    assert h.step(engine) == DUE + timedelta(milliseconds=1500)


def test_backoff_grows_and_the_last_attempt_fails_with_the_last_reason(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script(
        "tok-a",
        Retry("Service Unavailable"),
        Retry("Internal Server Error"),
        Retry("Bad Gateway"),
        Retry("never asked"),
    )
    n = h.notify()
    engine = h.engine()  # max_attempts=3

    second = DUE + timedelta(milliseconds=1500)  # drawn from 1 to 2 s
    third = second + timedelta(seconds=3)  # drawn from 2 to 4 s
    h.step(engine, DUE)
    assert h.step(engine) == second
    h.step(engine, second)
    assert h.step(engine) == third
    assert h.step(engine, third - MS) == third
    assert h.status(n) is N.QUEUED

    assert h.step(engine, third) == third + LEASE
    assert h.step(engine, third + timedelta(hours=1)) is None
    assert [(s.attempt, s.at) for s in h.gateway.sent] == [(1, DUE), (2, second), (3, third)]
    (delivery,) = h.deliveries(n)
    assert (delivery.status, delivery.attempts) == (D.FAILED, 3)
    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "Bad Gateway"


def test_a_retried_notification_can_no_longer_be_cancelled(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", Retry("Service Unavailable"))
    n = h.notify()
    h.step(h.engine(), DUE)

    with pytest.raises(NotCancellable):
        h.services.notifications.cancel(ALICE, n.id)


# -- dead tokens -------------------------------------------------------------


def test_a_dead_token_fails_the_delivery_and_deactivates_the_device(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.gateway.script("tok-a", TokenInvalid("Unregistered"))
    now = h.notify()
    everyone_later = h.notify_in(60)
    only_a_later = h.notify_in(120, targetDeviceToken="tok-a")
    engine = h.engine()

    h.step(engine, DUE)

    dead = h.devices()["tok-a"]
    assert not dead.is_active
    assert h.devices()["tok-b"].is_active
    (failed,) = [d for d in h.deliveries(now) if d.device_id == dead.id]
    assert (failed.status, failed.failure_reason) == (D.FAILED, "Unregistered")
    assert h.status(now) is N.DELIVERED  # tok-b got it
    # The dead device's other pending deliveries are cancelled.
    for n in (everyone_later, only_a_later):
        (cancelled,) = [d for d in h.deliveries(n) if d.device_id == dead.id]
        assert cancelled.status is D.CANCELLED
    assert h.status(everyone_later) is N.QUEUED

    # A later notification does not target it.
    newest = h.notify_in(30)
    assert h.get(newest).notification.devices_targeted == 1

    h.step(engine, at(300))
    assert len(h.gateway.for_token("tok-a")) == 1  # only the answer that killed it
    assert sent_tokens(h.gateway.for_notification(everyone_later.id)) == ["tok-b"]
    assert sent_tokens(h.gateway.for_notification(newest.id)) == ["tok-b"]
    assert h.gateway.for_notification(only_a_later.id) == []
    assert h.status(everyone_later) is N.DELIVERED
    assert h.status(only_a_later) is N.SCHEDULED  # due, and its device is gone


def test_a_dead_token_alone_fails_the_notification_with_the_gateways_reason(
    h: Harness,
) -> None:
    h.device("tok-a")
    h.gateway.script("tok-a", TokenInvalid("Unregistered"))
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)
    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "Unregistered"
    assert len(h.gateway.sent) == 1  # never retried
    h.step(engine, at(3600))
    assert len(h.gateway.sent) == 1


def test_registering_a_deactivated_device_again_reactivates_it(h: Harness) -> None:
    first = h.device("tok-a")
    h.gateway.script("tok-a", TokenInvalid("Unregistered"))
    h.notify()
    waiting = h.notify_in(600, targetDeviceToken="tok-a")
    engine = h.engine()
    h.step(engine, DUE)
    assert not h.devices()["tok-a"].is_active

    h.clock.set(at(60))
    again = h.device("tok-a")

    assert again.id == first.id
    assert again.is_active
    assert h.devices()["tok-a"].is_active
    # What was waiting for it is queued for it again, and later ones target it.
    later = h.notify_in(30)
    assert h.get(later).notification.devices_targeted == 1
    h.step(engine, at(600))
    assert h.status(waiting) is N.DELIVERED
    assert h.status(later) is N.DELIVERED
    assert len(h.gateway.for_token("tok-a")) == 3


def test_a_pending_retry_of_a_device_that_dies_is_cancelled(h: Harness) -> None:
    # Two batches for the same device: the first answer is a retry, the second
    # says the token is dead, which cancels the pending retry: that notification
    # has no open delivery left and waits for a device again.
    h.device("tok-a")
    h.gateway.script("tok-a", Retry("Service Unavailable"), TokenInvalid("Unregistered"))
    first, second = h.notify(), h.notify()
    engine = h.engine(batch_size=1)

    h.step(engine, DUE)
    assert not h.devices()["tok-a"].is_active
    assert [s.notification_id for s in h.gateway.sent] == [first.id, second.id]
    assert h.delivery_statuses(first) == [D.CANCELLED]
    assert h.status(first) is N.SCHEDULED
    assert h.status(second) is N.FAILED

    h.step(engine, at(60))
    assert len(h.gateway.sent) == 2


@pytest.mark.parametrize("how", ["deactivated", "removed"])
def test_a_reclaimed_delivery_whose_device_is_gone_fails_without_a_send(
    h: Harness, how: str
) -> None:
    device = h.device("tok-a")
    stuck = h.notify()
    h.clock.set(DUE)
    assert len(crash_while_sending(h).sent) == 1  # engine A claims it and dies
    engine = h.engine("engine-b")
    if how == "deactivated":
        h.gateway.script("tok-a", TokenInvalid("Unregistered"))
        h.notify_in(10, targetDeviceToken="tok-a")
        h.step(engine, at(15))
        assert not h.devices()["tok-a"].is_active
    else:
        h.services.devices.remove(ALICE, device.id)
    sent_before = len(h.gateway.sent)

    h.step(engine, DUE + LEASE)

    assert len(h.gateway.sent) == sent_before
    (delivery,) = h.deliveries(stuck)
    reason = "Device inactive" if how == "deactivated" else "Device removed"
    assert (delivery.status, delivery.failure_reason) == (D.FAILED, reason)
    detail = h.get(stuck)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == reason


# -- gateway bugs ------------------------------------------------------------


def test_a_gateway_that_raises_has_its_deliveries_retried_not_lost(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.gateway.raise_for("tok-a")
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)
    next_due = h.step(engine)

    assert next_due == DUE + timedelta(milliseconds=1500)
    # The whole batch raised: both deliveries go back to PENDING.
    assert h.delivery_statuses(n) == [D.PENDING, D.PENDING]
    assert {d.failure_reason for d in h.deliveries(n)} == {"Gateway error: RuntimeError"}
    assert h.status(n) is N.QUEUED

    h.gateway.stop_raising("tok-a")
    h.step(engine, next_due)
    assert h.delivery_statuses(n) == [D.DELIVERED, D.DELIVERED]
    assert h.status(n) is N.DELIVERED


def test_a_gateway_that_keeps_raising_fails_after_the_last_attempt(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.raise_for("tok-a", ValueError("boom"))
    n = h.notify()
    engine = h.engine()

    for _ in range(5):
        h.step(engine, h.clock.now() + timedelta(seconds=10))

    assert len(h.gateway.sent) == 3
    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "Gateway error: ValueError"


def test_a_gateway_bug_on_one_platform_does_not_hold_back_another(h: Harness) -> None:
    h.device("tok-a")
    h.device(IOS_TOKEN, platform="ios")
    broken = ScriptedGateway(h.clock)
    broken.raise_for("tok-a")
    n = h.notify()
    engine = h.engine(gateways={Platform.ANDROID: broken, Platform.IOS: h.gateway})

    h.step(engine, DUE)

    assert h.gateway.tokens() == [IOS_TOKEN]
    assert h.delivery_statuses(n) == [D.DELIVERED, D.PENDING]


def test_a_notification_failed_by_a_removal_keeps_the_gateways_reason(h: Harness) -> None:
    h.device("tok-a")
    retrying = h.device("tok-b")
    h.gateway.script("tok-a", Failed("InvalidRegistration"))
    h.gateway.script("tok-b", Retry("Service Unavailable"))
    n = h.notify()
    h.step(h.engine(), DUE)
    assert h.status(n) is N.QUEUED  # tok-a failed, tok-b waits for its retry

    h.services.devices.remove(ALICE, retrying.id)  # cancels tok-b's pending retry

    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "InvalidRegistration"


def test_a_notification_failed_by_a_dead_token_elsewhere_keeps_the_gateways_reason(
    h: Harness,
) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.gateway.script("tok-a", Failed("InvalidRegistration"))
    # tok-b: a retry for ``both``, then the news that the token is dead for ``only_b``.
    h.gateway.script("tok-b", Retry("Service Unavailable"), TokenInvalid("Unregistered"))
    both = h.notify()
    only_b = h.notify(targetDeviceToken="tok-b")

    h.step(h.engine(), DUE)  # one batch: both/tok-a, both/tok-b, only_b/tok-b

    assert h.status(only_b) is N.FAILED
    detail = h.get(both)
    assert (detail.deliveries.failed, detail.deliveries.cancelled) == (1, 1)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == "InvalidRegistration"
