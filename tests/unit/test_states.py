"""Notification and delivery state machines (pushcore.domain.states)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from pushcore.domain.errors import Conflict, IllegalTransition, PushcoreError
from pushcore.domain.states import (
    TERMINAL_NOTIFICATION,
    DeliveryEvent,
    DeliveryStatus,
    NotificationEvent,
    NotificationStatus,
    next_delivery_status,
    next_notification_status,
    settled_event,
)

N = NotificationStatus
NE = NotificationEvent
D = DeliveryStatus
DE = DeliveryEvent

# The legal transitions, written out from API.md rather than read from the module.
LEGAL_NOTIFICATION = {
    (N.QUEUED, NE.NO_DEVICES): N.SCHEDULED,
    (N.SCHEDULED, NE.DEVICE_REGISTERED): N.QUEUED,
    (N.SCHEDULED, NE.WAIT_EXPIRED): N.FAILED,
    (N.QUEUED, NE.SETTLED_DELIVERED): N.DELIVERED,
    (N.QUEUED, NE.SETTLED_FAILED): N.FAILED,
    (N.QUEUED, NE.CANCEL): N.CANCELLED,
    (N.SCHEDULED, NE.CANCEL): N.CANCELLED,
}
LEGAL_DELIVERY = {
    (D.PENDING, DE.CLAIM): D.IN_FLIGHT,
    (D.PENDING, DE.CANCEL): D.CANCELLED,
    (D.IN_FLIGHT, DE.SUCCEED): D.DELIVERED,
    (D.IN_FLIGHT, DE.FAIL): D.FAILED,
    (D.IN_FLIGHT, DE.RETRY): D.PENDING,
    (D.IN_FLIGHT, DE.RELEASE): D.PENDING,
    # Quiet hours: a claimed delivery waits unsent; released at the end or on a change.
    (D.IN_FLIGHT, DE.HOLD): D.HELD,
    (D.HELD, DE.CLAIM): D.IN_FLIGHT,
    (D.HELD, DE.RELEASE): D.PENDING,
    (D.HELD, DE.CANCEL): D.CANCELLED,
}
# A delivery in one of these is settled: no event moves it again.
TERMINAL_DELIVERY = frozenset({D.DELIVERED, D.FAILED, D.CANCELLED})
ILLEGAL_NOTIFICATION = [pair for pair in itertools.product(N, NE) if pair not in LEGAL_NOTIFICATION]
ILLEGAL_DELIVERY = [pair for pair in itertools.product(D, DE) if pair not in LEGAL_DELIVERY]


# -- tables ------------------------------------------------------------------


@pytest.mark.parametrize(("pair", "after"), LEGAL_NOTIFICATION.items())
def test_legal_notification_transitions(
    pair: tuple[NotificationStatus, NotificationEvent], after: NotificationStatus
) -> None:
    assert next_notification_status(*pair) is after


@pytest.mark.parametrize("pair", ILLEGAL_NOTIFICATION)
def test_illegal_notification_transitions_raise(
    pair: tuple[NotificationStatus, NotificationEvent],
) -> None:
    status, event = pair
    with pytest.raises(IllegalTransition) as info:
        next_notification_status(status, event)
    assert info.value.message == f"notification cannot {event.value} from {status.value}"


@pytest.mark.parametrize(("pair", "after"), LEGAL_DELIVERY.items())
def test_legal_delivery_transitions(
    pair: tuple[DeliveryStatus, DeliveryEvent], after: DeliveryStatus
) -> None:
    assert next_delivery_status(*pair) is after


@pytest.mark.parametrize("pair", ILLEGAL_DELIVERY)
def test_illegal_delivery_transitions_raise(pair: tuple[DeliveryStatus, DeliveryEvent]) -> None:
    status, event = pair
    with pytest.raises(IllegalTransition) as info:
        next_delivery_status(status, event)
    assert info.value.message == f"delivery cannot {event.value} from {status.value}"


@pytest.mark.parametrize(
    ("status", "event"),
    [
        (N.CANCELLED, NE.CANCEL),  # cancelling twice is a conflict
        (N.DELIVERED, NE.CANCEL),
        (N.FAILED, NE.DEVICE_REGISTERED),
        (N.SCHEDULED, NE.SETTLED_DELIVERED),
        (N.QUEUED, NE.WAIT_EXPIRED),
    ],
)
def test_some_notable_illegal_notification_transitions(
    status: NotificationStatus, event: NotificationEvent
) -> None:
    with pytest.raises(Conflict):
        next_notification_status(status, event)


@pytest.mark.parametrize(
    ("status", "event"),
    [
        (D.IN_FLIGHT, DE.CANCEL),  # handed to a gateway: too late to cancel
        (D.PENDING, DE.SUCCEED),
        (D.DELIVERED, DE.RETRY),
        (D.FAILED, DE.CLAIM),
        (D.CANCELLED, DE.CLAIM),
    ],
)
def test_some_notable_illegal_delivery_transitions(
    status: DeliveryStatus, event: DeliveryEvent
) -> None:
    with pytest.raises(Conflict):
        next_delivery_status(status, event)


def test_illegal_transition_is_a_conflict() -> None:
    assert issubclass(IllegalTransition, Conflict)
    assert issubclass(IllegalTransition, PushcoreError)
    assert IllegalTransition.code == "illegal_transition"


def test_terminal_sets() -> None:
    assert frozenset({N.DELIVERED, N.FAILED, N.CANCELLED}) == TERMINAL_NOTIFICATION
    for status, _event in LEGAL_NOTIFICATION:
        assert status not in TERMINAL_NOTIFICATION
    for delivery_status, _delivery_event in LEGAL_DELIVERY:
        assert delivery_status not in TERMINAL_DELIVERY


@pytest.mark.parametrize(
    ("delivered", "failed", "open_count", "expected"),
    [
        (0, 0, 0, None),  # nothing settled (e.g. all cancelled): not a settlement
        (0, 0, 1, None),
        (1, 0, 0, NE.SETTLED_DELIVERED),
        (0, 1, 0, NE.SETTLED_FAILED),
        (1, 1, 0, NE.SETTLED_DELIVERED),
        (3, 0, 1, None),
        (0, 3, 2, None),
        (5, 5, 0, NE.SETTLED_DELIVERED),
    ],
)
def test_settled_event(
    delivered: int, failed: int, open_count: int, expected: NotificationEvent | None
) -> None:
    assert settled_event(delivered, failed, open_count) is expected


# -- one notification and its deliveries, as a state machine -----------------

OPEN = frozenset({D.PENDING, D.IN_FLIGHT})


class NotificationLifecycle(RuleBasedStateMachine):
    """One notification with N deliveries, driven only through the real transition functions."""

    def __init__(self) -> None:
        super().__init__()
        self.status = N.QUEUED
        self.deliveries: list[DeliveryStatus] = []
        self.cancelled = False
        self.failed_from: NotificationStatus | None = None
        # The first terminal status each thing reached: it must never change afterwards.
        self.notification_terminal: NotificationStatus | None = None
        self.delivery_terminal: dict[int, DeliveryStatus] = {}

    # helpers

    def _count(self, status: DeliveryStatus) -> int:
        return sum(1 for d in self.deliveries if d is status)

    def _indices(self, *statuses: DeliveryStatus) -> list[int]:
        return [i for i, d in enumerate(self.deliveries) if d in statuses]

    def _notify(self, event: NotificationEvent) -> None:
        before = self.status
        self.status = next_notification_status(self.status, event)
        if self.status is N.FAILED:
            self.failed_from = before
        if self.status in TERMINAL_NOTIFICATION and self.notification_terminal is None:
            self.notification_terminal = self.status

    def _deliver(self, index: int, event: DeliveryEvent) -> None:
        self.deliveries[index] = next_delivery_status(self.deliveries[index], event)
        if self.deliveries[index] in TERMINAL_DELIVERY:
            self.delivery_terminal.setdefault(index, self.deliveries[index])

    def _pick(self, data: st.DataObject, *statuses: DeliveryStatus) -> int:
        return data.draw(st.sampled_from(self._indices(*statuses)), label="delivery")

    # setup

    @initialize(devices=st.integers(0, 4))
    def create(self, devices: int) -> None:
        """A QUEUED notification with one PENDING delivery per target device (maybe none)."""
        self.deliveries = [D.PENDING] * devices

    # notification-level rules

    @precondition(lambda self: self.status is N.QUEUED and not self.deliveries)
    @rule()
    def due_without_devices(self) -> None:
        self._notify(NE.NO_DEVICES)
        assert self.status is N.SCHEDULED

    @precondition(lambda self: self.status is N.SCHEDULED)
    @rule(new_devices=st.integers(1, 3))
    def device_registered(self, new_devices: int) -> None:
        self._notify(NE.DEVICE_REGISTERED)
        assert self.status is N.QUEUED
        self.deliveries.extend([D.PENDING] * new_devices)

    @precondition(lambda self: self.status is N.SCHEDULED)
    @rule()
    def wait_expired(self) -> None:
        self._notify(NE.WAIT_EXPIRED)
        assert self.status is N.FAILED

    @precondition(
        lambda self: (
            self.status not in TERMINAL_NOTIFICATION
            and all(d is D.PENDING for d in self.deliveries)
        )
    )
    @rule()
    def cancel(self) -> None:
        """Cancel while nothing has been handed to a gateway: every delivery is cancelled."""
        self._notify(NE.CANCEL)
        self.cancelled = True
        for index in range(len(self.deliveries)):
            self._deliver(index, DE.CANCEL)

    @precondition(lambda self: self.status is N.QUEUED)
    @rule()
    def settle(self) -> None:
        """Ask whether the deliveries settle the notification, and apply the answer."""
        open_count = self._count(D.PENDING) + self._count(D.IN_FLIGHT)
        event = settled_event(self._count(D.DELIVERED), self._count(D.FAILED), open_count)
        if open_count or not self.deliveries:
            assert event is None
            return
        assert event is not None
        self._notify(event)

    @precondition(lambda self: self.status in TERMINAL_NOTIFICATION)
    @rule(event=st.sampled_from(NE))
    def poke_settled_notification(self, event: NotificationEvent) -> None:
        with pytest.raises(IllegalTransition):
            self._notify(event)

    # delivery-level rules

    @precondition(lambda self: self.status is N.QUEUED and D.PENDING in self.deliveries)
    @rule(data=st.data())
    def claim(self, data: st.DataObject) -> None:
        self._deliver(self._pick(data, D.PENDING), DE.CLAIM)

    @precondition(lambda self: D.IN_FLIGHT in self.deliveries)
    @rule(data=st.data())
    def succeed(self, data: st.DataObject) -> None:
        self._deliver(self._pick(data, D.IN_FLIGHT), DE.SUCCEED)

    @precondition(lambda self: D.IN_FLIGHT in self.deliveries)
    @rule(data=st.data())
    def fail(self, data: st.DataObject) -> None:
        self._deliver(self._pick(data, D.IN_FLIGHT), DE.FAIL)

    @precondition(lambda self: D.IN_FLIGHT in self.deliveries)
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        self._deliver(self._pick(data, D.IN_FLIGHT), DE.RETRY)

    @precondition(lambda self: D.IN_FLIGHT in self.deliveries)
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        self._deliver(self._pick(data, D.IN_FLIGHT), DE.RELEASE)

    @precondition(lambda self: D.IN_FLIGHT in self.deliveries)
    @rule(data=st.data())
    def cancel_in_flight_is_refused(self, data: st.DataObject) -> None:
        index = self._pick(data, D.IN_FLIGHT)
        with pytest.raises(IllegalTransition):
            self._deliver(index, DE.CANCEL)
        assert self.deliveries[index] is D.IN_FLIGHT

    @precondition(lambda self: any(d in TERMINAL_DELIVERY for d in self.deliveries))
    @rule(data=st.data(), event=st.sampled_from(DE))
    def poke_settled_delivery(self, data: st.DataObject, event: DeliveryEvent) -> None:
        index = self._pick(data, *TERMINAL_DELIVERY)
        with pytest.raises(IllegalTransition):
            self._deliver(index, event)

    # invariants

    @invariant()
    def terminal_states_never_change(self) -> None:
        if self.notification_terminal is not None:
            assert self.status is self.notification_terminal
        for index, status in self.delivery_terminal.items():
            assert self.deliveries[index] is status

    @invariant()
    def a_cancelled_notification_stays_cancelled(self) -> None:
        if self.cancelled:
            assert self.status is N.CANCELLED  # so never DELIVERED (nor anything else)
            assert all(d is D.CANCELLED for d in self.deliveries)

    @invariant()
    def delivered_means_one_success_and_nothing_open(self) -> None:
        if self.status is N.DELIVERED:
            assert self._count(D.DELIVERED) >= 1
            assert not any(d in OPEN for d in self.deliveries)

    @invariant()
    def failed_means_every_settled_delivery_failed(self) -> None:
        if self.status is N.FAILED:
            assert not any(d in OPEN for d in self.deliveries)
            if self.failed_from is N.QUEUED:
                assert self._count(D.FAILED) >= 1
                assert self._count(D.DELIVERED) == 0
            else:
                assert self.failed_from is N.SCHEDULED
                assert not self.deliveries  # the wait for a device expired

    @invariant()
    def scheduled_means_waiting_without_deliveries(self) -> None:
        if self.status is N.SCHEDULED:
            assert not self.deliveries

    @invariant()
    def deliveries_of_an_open_notification_are_never_cancelled(self) -> None:
        if self.status in (N.QUEUED, N.SCHEDULED):
            assert D.CANCELLED not in self.deliveries


def test_notification_lifecycle_state_machine() -> None:
    run_state_machine_as_test(
        NotificationLifecycle,
        settings=settings(max_examples=150, stateful_step_count=40, deadline=None),
    )
