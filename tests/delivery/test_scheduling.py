"""When the engine sends, and to which devices: due times, targets, waiting for a device."""

from __future__ import annotations

from datetime import timedelta

from pushcore.domain.lifecycle import NO_DEVICES
from pushcore.domain.outcomes import TokenInvalid
from pushcore.domain.scheduling import NO_DEVICE_GRACE
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import BOB, DUE, LEASE, T0, Harness, at
from tests.fakes.gateway import sent_tokens

N = NotificationStatus
D = DeliveryStatus
MS = timedelta(milliseconds=1)


def test_nothing_is_sent_before_the_due_time_and_everything_due_at_it(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    soon = h.notify()  # the default delay: due at T0 + 5 s
    later = h.notify_in(60)
    engine = h.engine()

    assert h.step(engine) == DUE
    assert h.step(engine, DUE - MS) == DUE
    assert h.gateway.sent == []
    assert h.status(soon) is N.QUEUED

    # At the due time both devices get ``soon``; while its batch is out, the
    # next time a claim could find work is its lease end (before ``later``).
    assert h.step(engine, DUE) == DUE + LEASE
    assert sent_tokens(h.gateway.sent) == ["tok-a", "tok-b"]
    assert {s.notification_id for s in h.gateway.sent} == {soon.id}
    assert all(s.at == DUE for s in h.gateway.sent)
    assert h.status(soon) is N.DELIVERED

    # Recorded: the next look is exactly ``later``'s due time.
    assert h.step(engine) == at(60)
    assert h.step(engine, at(60) - MS) == at(60)
    assert len(h.gateway.sent) == 2

    h.step(engine, at(60))
    assert sent_tokens(h.gateway.for_notification(later.id)) == ["tok-a", "tok-b"]
    assert h.status(later) is N.DELIVERED
    assert h.step(engine) is None  # nothing left: the loop sleeps its backstop tick


def test_a_late_engine_sends_everything_overdue_at_once(h: Harness) -> None:
    h.device("tok-a")
    first, second, third = h.notify(), h.notify_in(30), h.notify_in(90)
    engine = h.engine()

    assert h.step(engine, at(3600)) == at(3600) + LEASE
    assert sorted(s.notification_id for s in h.gateway.sent) == sorted(
        [first.id, second.id, third.id]
    )
    assert {h.status(n) for n in (first, second, third)} == {N.DELIVERED}


def test_tick_returns_the_wake_time_of_a_notification_without_devices(h: Harness) -> None:
    waiting = h.notify()
    engine = h.engine()

    assert h.step(engine) == DUE  # wake_at: look again at its due time
    assert h.step(engine, DUE) == DUE + NO_DEVICE_GRACE
    assert h.status(waiting) is N.SCHEDULED


def test_a_targeted_notification_reaches_only_its_device(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.device("tok-b", account=BOB)  # the same token on another account
    targeted = h.notify(targetDeviceToken="tok-b")
    engine = h.engine()

    h.step(engine, DUE)

    assert [s.token for s in h.gateway.sent] == ["tok-b"]
    assert h.gateway.sent[0].device_id == h.devices()["tok-b"].id
    detail = h.get(targeted)
    assert detail.notification.status is N.DELIVERED
    assert (detail.deliveries.delivered, detail.deliveries.failed) == (1, 0)


def test_an_untargeted_notification_reaches_every_active_device_only(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.device("tok-dead")
    h.device("tok-bob", account=BOB)
    engine = h.engine()
    # tok-dead's token turns out to be dead: it is deactivated.
    h.gateway.script("tok-dead", TokenInvalid("Unregistered"))
    h.notify(targetDeviceToken="tok-dead")
    h.step(engine, DUE)
    assert not h.devices()["tok-dead"].is_active
    h.gateway.sent.clear()

    everyone = h.notify()
    h.step(engine, h.clock.now() + timedelta(seconds=5))

    assert sent_tokens(h.gateway.sent) == ["tok-a", "tok-b"]
    detail = h.get(everyone)
    assert detail.notification.devices_targeted == 2
    assert detail.deliveries.delivered == 2
    assert h.status(everyone) is N.DELIVERED


def test_a_device_registered_before_the_due_time_also_gets_it(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify_in(60)
    targeted = h.notify_in(60, targetDeviceToken="tok-a")
    engine = h.engine()
    h.step(engine, at(10))

    h.clock.set(at(30))
    h.device("tok-late")  # targets are resolved at the due time

    assert h.get(n).notification.devices_targeted == 2
    h.step(engine, at(60))
    assert sent_tokens(h.gateway.for_notification(n.id)) == ["tok-a", "tok-late"]
    # The targeted one is not for the newcomer.
    assert sent_tokens(h.gateway.for_notification(targeted.id)) == ["tok-a"]
    assert h.get(n).deliveries.delivered == 2


def test_a_device_registered_before_the_due_time_of_a_deviceless_notification(
    h: Harness,
) -> None:
    n = h.notify_in(60)
    engine = h.engine()
    assert h.step(engine, at(10)) == at(60)

    h.clock.set(at(20))
    h.device("tok-a")

    assert h.step(engine) == at(60)  # now a delivery due then, no wake-up needed
    assert h.gateway.sent == []
    h.step(engine, at(60))
    assert h.gateway.tokens() == ["tok-a"]
    assert h.status(n) is N.DELIVERED


def test_a_device_removed_before_the_due_time_does_not_get_it(h: Harness) -> None:
    h.device("tok-a")
    gone = h.device("tok-gone")
    n = h.notify_in(60)
    engine = h.engine()

    h.clock.set(at(30))
    h.services.devices.remove("acct_alice", gone.id)

    h.step(engine, at(60))
    assert h.gateway.tokens() == ["tok-a"]
    assert h.delivery_statuses(n) == [D.CANCELLED, D.DELIVERED]
    detail = h.get(n)
    assert detail.notification.status is N.DELIVERED
    assert (detail.deliveries.delivered, detail.deliveries.failed) == (1, 0)


def test_removing_the_only_device_before_the_due_time_makes_it_wait(h: Harness) -> None:
    only = h.device("tok-a")
    n = h.notify_in(60)
    engine = h.engine()
    h.services.devices.remove("acct_alice", only.id)

    assert h.step(engine, at(30)) == at(60)
    h.step(engine, at(60))
    assert h.gateway.sent == []
    assert h.status(n) is N.SCHEDULED


def test_a_device_registered_after_the_notification_was_sent_does_not_get_it(
    h: Harness,
) -> None:
    h.device("tok-a")
    n = h.notify()
    engine = h.engine()
    h.step(engine, DUE)

    h.clock.set(at(10))
    h.device("tok-new")
    h.step(engine, at(20))

    assert h.gateway.tokens() == ["tok-a"]
    assert h.get(n).notification.devices_targeted == 1


def test_with_no_device_at_the_due_time_it_waits_and_a_new_device_gets_it(h: Harness) -> None:
    n = h.notify()
    engine = h.engine()

    h.step(engine, DUE)
    detail = h.get(n)
    assert detail.notification.status is N.SCHEDULED
    assert detail.notification.wake_at == DUE + NO_DEVICE_GRACE
    assert h.gateway.sent == []

    h.clock.set(DUE + timedelta(hours=3))
    h.device("tok-a")
    assert h.status(n) is N.QUEUED
    assert h.step(engine) == h.clock.now() + LEASE  # sent now: only its lease is left

    assert h.gateway.tokens() == ["tok-a"]
    assert h.gateway.sent[0].at == DUE + timedelta(hours=3)
    detail = h.get(n)
    assert detail.notification.status is N.DELIVERED
    assert detail.notification.wake_at is None
    assert detail.deliveries.delivered == 1


def test_a_waiting_targeted_notification_only_wakes_for_its_token(h: Harness) -> None:
    h.device("tok-a")
    n = h.notify(targetDeviceToken="tok-a")
    engine = h.engine()
    h.gateway.script("tok-a", TokenInvalid("Unregistered"), TokenInvalid("Unregistered"))
    first = h.notify(targetDeviceToken="tok-a")
    h.step(engine, DUE)  # both sent in one batch: the token is dead
    assert h.status(n) is N.FAILED
    assert h.status(first) is N.FAILED

    later = h.notify_in(60, targetDeviceToken="tok-a")
    h.step(engine, at(5 + 60))
    assert h.status(later) is N.SCHEDULED

    h.device("tok-other")
    assert h.status(later) is N.SCHEDULED
    h.device("tok-a")  # registered again: reactivated
    assert h.status(later) is N.QUEUED
    h.step(engine, at(70))
    assert h.status(later) is N.DELIVERED
    assert h.status(n) is N.FAILED  # settled before: not sent again
    assert [s.token for s in h.gateway.for_notification(later.id)] == ["tok-a"]


def test_with_no_device_for_24_hours_it_fails_with_no_devices(h: Harness) -> None:
    n = h.notify()
    engine = h.engine()
    h.step(engine, DUE)

    deadline = DUE + NO_DEVICE_GRACE
    assert h.step(engine, deadline - MS) == deadline
    assert h.status(n) is N.SCHEDULED

    assert h.step(engine, deadline) is None
    detail = h.get(n)
    assert detail.notification.status is N.FAILED
    assert detail.notification.failure_reason == NO_DEVICES
    assert detail.notification.settled_at == deadline

    # Too late now: a device registered afterwards does not revive it.
    h.device("tok-a")
    h.step(engine, deadline + timedelta(seconds=1))
    assert h.gateway.sent == []
    assert h.status(n) is N.FAILED


def test_an_engine_first_looking_after_the_grace_period_fails_it_at_once(h: Harness) -> None:
    n = h.notify()
    engine = h.engine()

    h.step(engine, T0 + timedelta(days=2))
    assert h.status(n) is N.FAILED
    assert h.get(n).notification.failure_reason == NO_DEVICES
