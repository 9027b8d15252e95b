"""The engine's pace (delivery/pace.py): requests wait while an answer goes unrecorded
longer than the limit, and go as soon as it is recorded; never longer than the bound."""

from __future__ import annotations

import asyncio
import time

from pushcore.delivery.pace import RecordPace


async def ready_within(pace: RecordPace, seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await pace.ready()
    except TimeoutError:
        return False
    return True


def test_nothing_waits_while_the_records_keep_up() -> None:
    async def go() -> tuple[bool, bool]:
        pace = RecordPace(late=0.2)
        idle = await ready_within(pace, 0.05)
        pace.answered("dlv_1")  # just answered: younger than the limit
        fresh = await ready_within(pace, 0.05)
        return idle, fresh

    assert asyncio.run(go()) == (True, True)


def test_requests_wait_for_an_answer_unrecorded_past_the_limit_until_it_is_recorded() -> None:
    async def go() -> tuple[bool, bool, bool]:
        pace = RecordPace(late=0.02, longest_wait=10.0)
        pace.answered("dlv_1")
        pace.answered("dlv_2")
        await asyncio.sleep(0.05)
        waiting = [asyncio.ensure_future(pace.ready()) for _ in range(3)]
        await asyncio.sleep(0.1)
        held = not any(w.done() for w in waiting)
        pace.recorded(["dlv_1"])  # the other, as old, still waits
        await asyncio.sleep(0.05)
        still = not any(w.done() for w in waiting)
        pace.answered("dlv_3")  # a new answer does not hold anyone
        pace.recorded(["dlv_2"])
        await asyncio.wait_for(asyncio.gather(*waiting), 1.0)
        return held, still, pace.behind()

    assert asyncio.run(go()) == (True, True, False)


def test_a_wait_is_bounded_when_records_stall() -> None:
    async def go() -> float:
        pace = RecordPace(late=0.01, longest_wait=0.2)
        pace.answered("dlv_1")
        await asyncio.sleep(0.03)
        started = time.monotonic()
        await asyncio.wait_for(pace.ready(), 5.0)
        return time.monotonic() - started

    assert 0.15 <= asyncio.run(go()) < 3.0
