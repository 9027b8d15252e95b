"""The end of quiet hours releases what they held in slices: a release larger than the
engine's in-flight room never keeps another account's due notification waiting for it
(API.md, "The recipient's time"; delivery/release.py). On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pushcore.delivery import DeliveryEngine
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Dispatch, Outcome
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


class Watching(ScriptedGateway):
    """Notes, at each send, whether the engine says it is stuck (what /readyz reports)."""

    def __init__(self, h: Harness) -> None:
        super().__init__(h.clock)
        self.engine: DeliveryEngine | None = None
        self.stuck: list[bool] = []

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        assert self.engine is not None
        self.stuck.append(self.engine.stuck())
        return await super().send(dispatches)


def test_a_release_longer_than_30_s_is_no_stuck_engine(h: Harness) -> None:
    # One tick claims the release's slices one after another: 100,000 take about 30 s,
    # the time after which /readyz calls an engine that got through no claim "stuck".
    h.device("tok-a")
    settle(h, ALICE, quietHours={"start": "09:00", "end": "10:30"})
    for i in range(4):
        h.notify_in(5, title=f"held {i}")
    h.step(h.engine("holder"), at(5))
    h.clock.set(HALF_PAST)
    gateway = Watching(h)
    engine = h.engine(gateways=dict.fromkeys(Platform, gateway), release_batch=1, tick=1.0)
    gateway.engine = engine
    claim = engine._ledger.claim

    def slow(now: datetime, *args: Any, **kwargs: Any) -> Any:
        h.clock.advance(11.0)  # each slice's claim takes 11 s of the clock
        return claim(h.clock.now(), *args, **kwargs)

    engine._ledger.claim = slow  # type: ignore[method-assign]

    async def scenario() -> None:
        task = engine.start()
        await until(lambda: len(gateway.sent) == 4, timeout=10)
        await engine.drain()
        await engine.stop()
        await task

    asyncio.run(scenario())
    assert gateway.stuck == [False] * 4
