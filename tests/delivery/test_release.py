"""The end of quiet hours releases what they held in slices: a release larger than the
engine's in-flight room never keeps another account's due notification waiting for it
(API.md, "The recipient's time"; delivery/release.py). On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pushcore.domain.model import Platform
from pushcore.domain.states import DeliveryStatus
from tests.delivery.conftest import ALICE, BOB, Harness, at, until
from tests.delivery.test_quiet import HALF_PAST, h, held, settle
from tests.fakes.gateway import ScriptedGateway

__all__ = ["h"]  # the quiet-hours harness: SQLite and PostgreSQL


def test_a_release_leaves_room_for_what_falls_due_meanwhile(h: Harness) -> None:
    h.device("tok-a")  # ALICE's phone, quiet until 10:30
    h.device("b0" * 32, BOB, platform="ios")  # BOB has no quiet hours
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})
    quieted = [h.notify_in(5, title=f"held {i}") for i in range(6)]
    h.step(h.engine("holder"), at(5))
    assert [held(h, n) for n in quieted] == [[(DeliveryStatus.HELD, HALF_PAST)]] * 6
    due = HALF_PAST + timedelta(seconds=1)
    h.notify(BOB, title="on time", scheduledAt=due.isoformat())
    released, others = ScriptedGateway(h.clock), ScriptedGateway(h.clock)
    # Room for four in flight: at most half of it for the release.
    engine = h.engine(gateways={Platform.ANDROID: released, Platform.IOS: others}, max_in_flight=4)

    async def scenario() -> None:
        released.hold()  # the release's receiver is slow: its slice stays in flight
        h.clock.set(HALF_PAST)
        await engine.tick()
        await until(lambda: released.waiting > 0, timeout=10)
        h.clock.set(due)
        await engine.tick()
        # BOB's notification goes at its time, the release still in flight.
        await until(lambda: [s.title for s in others.sent] == ["on time"], timeout=10)
        assert [s.at for s in others.sent] == [due]
        assert len(released.sent) == 2
        released.let_go()
        while len(released.sent) < 6:  # the rest, a slice at a time
            await engine.drain()
            await engine.tick()
        await engine.drain()

    asyncio.run(scenario())
    assert [s.title for s in released.sent] == [f"held {i}" for i in range(6)]
    assert [h.delivery_statuses(n) for n in quieted] == [[DeliveryStatus.DELIVERED]] * 6


def test_a_release_is_claimed_slice_after_slice_without_waiting_between(h: Harness) -> None:
    # Slices are small so that a one-off waits for a short claim; one tick claims
    # them one after another while the release's room takes them, rather than one a
    # tick and half a lead's sleep before the next (a slice of 16 then went out at
    # about 1,000 a second: 100,000 in 94 s).
    h.device("tok-a")
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})
    quieted = [h.notify_in(5, title=f"held {i}") for i in range(7)]
    h.step(h.engine("holder"), at(5))
    released = ScriptedGateway(h.clock)
    engine = h.engine(gateways=dict.fromkeys(Platform, released), release_batch=2)

    async def scenario() -> None:
        h.clock.set(HALF_PAST)
        await engine.tick()
        await engine.drain()

    asyncio.run(scenario())
    assert sorted(s.title for s in released.sent) == [f"held {i}" for i in range(7)]
    assert [h.delivery_statuses(n) for n in quieted] == [[DeliveryStatus.DELIVERED]] * 7
