"""Claims under leases (crashed engines, several engines) and the size of a tick's claims."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pushcore.domain.errors import NotCancellable
from pushcore.domain.outcomes import Failed
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from tests.delivery.conftest import ALICE, DUE, LEASE, Harness, crash_while_sending, until
from tests.fakes.gateway import ScriptedGateway

N = NotificationStatus
D = DeliveryStatus
MS = timedelta(milliseconds=1)


def test_a_crashed_engines_claims_come_back_only_when_its_lease_ends(h: Harness) -> None:
    h.device("tok-a")
    h.device("tok-b")
    h.device("tok-c")
    n = h.notify()
    h.clock.set(DUE)
    # Engine A claims two of the three deliveries, then dies before any answer.
    crashed = crash_while_sending(h, batch_size=2, max_in_flight=2)
    held = {s.delivery_id for s in crashed.sent}
    assert len(held) == 2
    other = h.engine("engine-b")

    # B takes what A does not hold, and nothing A holds before A's lease ends.
    assert h.step(other, DUE) == DUE + LEASE
    (first,) = h.gateway.sent
    assert first.delivery_id not in held
    assert h.step(other, DUE + LEASE - MS) == DUE + LEASE
    assert len(h.gateway.sent) == 1
    assert h.status(n) is N.QUEUED
    with pytest.raises(NotCancellable):  # A's claim counts as handed to a gateway
        h.services.notifications.cancel(ALICE, n.id)

    h.step(other, DUE + LEASE)
    retaken = h.gateway.sent[1:]
    assert {s.delivery_id for s in retaken} == held
    assert {s.attempt for s in retaken} == {2}  # A's claim counted as an attempt
    assert {s.at for s in retaken} == {DUE + LEASE}
    assert h.gateway.duplicates() == {}
    assert h.status(n) is N.DELIVERED
    assert h.delivery_statuses(n) == [D.DELIVERED] * 3


def test_an_abandoned_batch_is_sent_again_after_the_lease(h: Harness) -> None:
    for token in ("tok-a", "tok-b", "tok-c"):
        h.device(token)
    n = h.notify()
    h.clock.set(DUE)
    gateway_a = crash_while_sending(h)
    assert len(gateway_a.sent) == 3
    assert h.delivery_statuses(n) == [D.IN_FLIGHT] * 3

    engine_b = h.engine("engine-b")
    h.step(engine_b, DUE)
    h.step(engine_b, DUE + LEASE - MS)
    assert h.gateway.sent == []

    h.step(engine_b, DUE + LEASE)
    sent_by_a = {s.delivery_id for s in gateway_a.sent}
    sent_by_b = {s.delivery_id for s in h.gateway.sent}
    # At least once: each of the three was handed to a gateway twice.
    assert sent_by_a == sent_by_b
    assert len(sent_by_a & sent_by_b) == 3
    assert {s.attempt for s in h.gateway.sent} == {2}
    assert h.status(n) is N.DELIVERED
    assert h.get(n).deliveries.delivered == 3


def test_a_frozen_engine_loses_its_lease_and_its_late_answer_is_ignored(h: Harness) -> None:
    # Driven by tick() alone, A never beats: as a process frozen for a whole lease.
    h.device("tok-a")
    n = h.notify()
    slow_gateway = ScriptedGateway(h.clock)
    slow_gateway.script("tok-a", Failed("stale answer"))
    slow = h.engine("engine-a", gateway=slow_gateway)
    fast = h.engine("engine-b")

    async def scenario() -> None:
        slow_gateway.hold()
        h.clock.set(DUE)
        await slow.tick()
        await until(lambda: slow_gateway.waiting == 1)
        # The send outlives the lease: B takes the delivery over and delivers it.
        h.clock.set(DUE + LEASE)
        await fast.tick()
        await fast.drain()
        assert h.status(n) is N.DELIVERED
        slow_gateway.let_go()
        await slow.drain()

    asyncio.run(scenario())

    assert len(slow_gateway.sent) + len(h.gateway.sent) == 2
    assert h.status(n) is N.DELIVERED
    assert h.get(n).notification.failure_reason is None
    assert h.delivery_statuses(n) == [D.DELIVERED]


def test_two_engines_never_send_the_same_delivery_within_a_lease(h: Harness) -> None:
    for i in range(12):
        h.device(f"tok-{i:02}")
    n = h.notify()
    first = h.engine("engine-a", batch_size=5)
    second = h.engine("engine-b", batch_size=5)

    async def both() -> None:
        await asyncio.gather(first.tick(), second.tick())
        await asyncio.gather(first.drain(), second.drain())

    h.clock.set(DUE)
    asyncio.run(both())

    assert len(h.gateway.sent) == 12
    assert h.gateway.duplicates() == {}
    assert h.get(n).deliveries.delivered == 12


# -- how much one tick claims ------------------------------------------------


def test_one_tick_claims_everything_due_in_batches(h: Harness) -> None:
    for i in range(25):
        h.device(f"tok-{i:02}")
    n = h.notify()
    engine = h.engine(batch_size=10, max_in_flight=10_000)
    h.clock.set(DUE)

    async def scenario() -> None:
        h.gateway.hold()
        await engine.tick()
        # All 25 claimed by this one tick, none recorded yet.
        assert h.delivery_statuses(n) == [D.IN_FLIGHT] * 25
        await until(lambda: h.gateway.waiting == 3)
        h.gateway.let_go()
        await engine.drain()

    asyncio.run(scenario())

    assert sorted(len(batch) for batch in h.gateway.calls) == [5, 10, 10]
    assert len(h.gateway.sent) == 25
    assert h.gateway.duplicates() == {}
    assert h.get(n).deliveries.delivered == 25


def test_max_in_flight_caps_what_one_tick_claims(h: Harness) -> None:
    for i in range(25):
        h.device(f"tok-{i:02}")
    n = h.notify()
    engine = h.engine(batch_size=10, max_in_flight=15)
    h.clock.set(DUE)

    async def scenario() -> None:
        h.gateway.hold()
        # 10, then the 5 left under the cap; the rest is due now, so say so.
        assert await engine.tick() == DUE
        statuses = h.delivery_statuses(n)
        assert statuses.count(D.IN_FLIGHT) == 15
        assert statuses.count(D.PENDING) == 10
        await until(lambda: h.gateway.waiting == 2)
        # Still full: another tick claims nothing.
        await engine.tick()
        assert h.delivery_statuses(n).count(D.IN_FLIGHT) == 15
        h.gateway.let_go()
        await engine.drain()
        await engine.tick()
        await engine.drain()

    asyncio.run(scenario())

    assert [len(batch) for batch in h.gateway.calls] == [10, 5, 10]
    assert h.gateway.duplicates() == {}
    assert h.get(n).deliveries.delivered == 25
    assert h.status(n) is N.DELIVERED


def test_claimed_ahead_have_a_room_of_their_own_and_are_handed_within_the_cap(
    h: Harness,
) -> None:
    # Thousands may fall due at one instant (a zone's 09:00): a claim lead takes
    # them ahead beyond the in-flight cap, but no more than the cap is ever handed
    # to gateways at once (what a crash can make arrive twice).
    for i in range(5):
        h.device(f"tok-{i}")
    n = h.notify()
    lead = timedelta(milliseconds=20)
    engine = h.engine(lead=lead, batch_size=10, max_in_flight=2)
    h.clock.set(DUE - lead)
    most = 0

    async def scenario() -> None:
        nonlocal most
        h.gateway.hold()
        await engine.tick()
        # Two due (none yet) and two ahead: four claimed, the fifth left.
        assert h.delivery_statuses(n).count(D.IN_FLIGHT) == 4
        assert h.gateway.sent == []
        assert engine.in_flight == 0
        await engine.tick()  # full: claims nothing more
        assert h.delivery_statuses(n).count(D.PENDING) == 1
        h.clock.set(DUE)
        await until(lambda: h.gateway.waiting == 1)
        most = engine.in_flight
        assert len(h.gateway.sent) == 2  # the cap's worth; the other two wait for room
        h.gateway.let_go()
        await until(lambda: len(h.gateway.sent) == 4)
        await engine.drain()
        await engine.tick()
        await engine.drain()

    asyncio.run(scenario())
    assert most == 2
    assert [len(batch) for batch in h.gateway.calls] == [2, 2, 1]
    assert h.gateway.duplicates() == {}
    assert h.get(n).deliveries.delivered == 5
