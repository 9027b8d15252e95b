"""The engine's pace (delivery/pace.py): requests wait while an answer goes unrecorded
longer than the limit, and go as soon as it is recorded; never longer than the bound;
and an answer whose record was given up holds nothing."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

from pushcore.delivery.pace import LEAST_IN_FLIGHT, RECORD_RELAX, RecordCost, RecordPace
from pushcore.delivery.sending import send
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Delivered, Dispatch, Outcome
from pushcore.ports.delivery import Ready
from tests.gateways.support import dispatch


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


class HangingGateway:
    """Answers nothing by itself: the test sets each future."""

    def __init__(self) -> None:
        self.answers: list[asyncio.Future[Outcome]] = []

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        return await asyncio.gather(*self.send_each(dispatches))

    def send_each(
        self, dispatches: Sequence[Dispatch], ready: Ready | None = None
    ) -> Sequence[asyncio.Future[Outcome]]:
        loop = asyncio.get_running_loop()
        self.answers = [loop.create_future() for _ in dispatches]
        return self.answers

    async def aclose(self) -> None:
        pass


def test_a_send_given_up_leaves_nothing_for_later_requests_to_wait_for() -> None:
    # Stopping cancels a batch's send between an answer and its record: the pace must
    # not keep that answer (every later request would wait its longest for it).
    async def go() -> tuple[bool, list[str]]:
        pace = RecordPace(late=0.01, longest_wait=10.0)
        gateway = HangingGateway()
        settled: list[str] = []

        async def settle(pairs: list[tuple[Dispatch, Outcome]]) -> None:
            settled.extend(d.delivery.id for d, _ in pairs)

        group = [dispatch("https://a.example/hook", suffix=str(i)) for i in range(3)]
        task = asyncio.ensure_future(send(gateway, Platform.WEBHOOK, group, settle, pace))
        await asyncio.sleep(0)
        gateway.answers[0].set_result(Delivered())
        task.cancel()  # the answer is noted; its record never starts
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.05)
        return pace.behind(), settled

    assert asyncio.run(go()) == (False, [])


def test_each_recorded_answer_s_wait_is_counted_and_a_given_up_one_is_not() -> None:
    # The record lag (pushcore_engine_record_lag_seconds): what a crash would repeat.
    async def go() -> tuple[list[int], float, int, int]:
        pace = RecordPace(late=10.0)
        pace.answered("dlv_old")
        await asyncio.sleep(0.12)
        pace.answered("dlv_new")
        pace.answered("dlv_dropped")
        pace.recorded(["dlv_old", "dlv_new", "dlv_unknown"])
        pace.recorded(["dlv_dropped"], stored=False)
        lag = pace.lag
        return lag.counts, lag.total, lag.past(0.1), lag.past(0.01)

    counts, total, past_100ms, past_10ms = asyncio.run(go())
    assert sum(counts) == 2  # the unknown and the given-up one are not counted
    assert past_100ms == 1  # the old one: 0.12 s and more
    assert past_10ms == 1  # the new one was recorded at once
    assert 0.12 <= total < 3.0


def test_the_record_cost_is_measured_on_large_records_and_bounds_what_is_handed() -> None:
    cost = RecordCost(0.000015, budget=0.06)
    assert cost.keeps() == 4000  # 60 ms at 15 us an answer
    cost.took(256, 0.012)  # a claim's group: mostly a transaction's fixed cost, ignored
    assert cost.keeps() == 4000
    for _ in range(30):
        cost.took(3000, 0.09)  # 30 us an answer: a slower machine
    assert 1900 <= cost.keeps() <= 2100
    for _ in range(30):
        cost.took(3000, 1.5)  # a database in trouble: never fewer than a claim's batch
    assert cost.keeps() == LEAST_IN_FLIGHT


def test_a_record_that_waited_past_the_budget_makes_the_next_hands_smaller_for_a_while() -> None:
    cost = RecordCost(0.00001, budget=0.06)
    cost.waited(0.05, now=0.0)  # within the budget: nothing learnt
    assert cost.keeps() == 6000
    cost.waited(0.09, now=1.0)  # 1.5 times the budget
    assert cost.keeps() == 4000
    cost.waited(5.0, now=2.0)  # at most half at a time
    assert cost.keeps() == 2000
    cost.waited(0.01, now=2.0 + RECORD_RELAX / 2)  # in time, but not for long enough yet
    assert cost.keeps() == 2000
    cost.waited(0.01, now=2.0 + RECORD_RELAX)  # in time since: half way back
    assert cost.keeps() == 4000
    cost.waited(0.01, now=2.0 + 2 * RECORD_RELAX)
    cost.waited(0.01, now=2.0 + 3 * RECORD_RELAX)  # back to what was measured, no further
    assert cost.keeps() == 6000
