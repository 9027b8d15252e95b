"""Lanes: fair shares of a gateway's connections by host and account, with deferral."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from pushcore.domain.model import Device, Platform
from pushcore.domain.outcomes import Deferred, Delivered, Dispatch, Outcome
from pushcore.domain.states import DeliveryStatus
from pushcore.gateways.lanes import MAX_DEFER, MIN_DEFER, Lane, Lanes, host_of
from tests.contract.test_queue_contract import make_delivery, make_notification
from tests.contract.test_store_contract import T0


def dispatch(n: int, url: str, account: str = "alice") -> Dispatch:
    """Delivery ``n`` of a webhook device at ``url``, in flight."""
    notification = make_notification(f"ntf_{n:04}", account)
    device = Device(f"dev_{n:04}", account, Platform.WEBHOOK, url, None, T0)
    delivery = make_delivery(
        f"dlv_{n:04}", notification.id, device.id, account, status=DeliveryStatus.IN_FLIGHT
    )
    return Dispatch(delivery, device, notification)


def lanes(**overrides: float) -> Lanes:
    options: dict[str, float] = {
        "concurrency": 8,
        "host_concurrency": 2,
        "account_concurrency": 4,
        "max_wait": 0.2,
    }
    options.update(overrides)
    return Lanes(
        concurrency=int(options["concurrency"]),
        host_concurrency=int(options["host_concurrency"]),
        account_concurrency=int(options["account_concurrency"]),
        max_wait=options["max_wait"],
        unreachable=frozenset({"timed out"}),
        uniform=lambda: 0.5,
    )


class Sender:
    """Answers each URL after its delay, counting requests at once per host."""

    def __init__(self, delays: dict[str, float], outcome: Outcome | None = None) -> None:
        self.delays = delays
        self.outcome = outcome or Delivered()
        self.active: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.started: list[str] = []

    def __call__(self, d: Dispatch) -> Awaitable[Outcome]:
        return self._send(d)

    async def _send(self, d: Dispatch) -> Outcome:
        host = host_of(d.device.token)
        self.started.append(d.delivery.id)
        self.active[host] = self.active.get(host, 0) + 1
        self.peak[host] = max(self.peak.get(host, 0), self.active[host])
        try:
            await asyncio.sleep(self.delays.get(host, 0.0))
            return self.outcome
        finally:
            self.active[host] -= 1


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(coro())  # type: ignore[arg-type]


def test_host_of_names_scheme_host_and_port() -> None:
    assert host_of("https://Example.COM/hook?a=1") == "https://example.com:"
    assert host_of("http://10.0.0.1:8080/x") == "http://10.0.0.1:8080"


def test_a_host_never_gets_more_than_its_share_at_once() -> None:
    sender = Sender({host_of("http://a.test/"): 0.05})

    async def scenario() -> None:
        lane = lanes(max_wait=5.0)
        answers = lane.send_each([dispatch(i, f"http://a.test/{i}") for i in range(6)], sender)
        outcomes = await asyncio.gather(*answers)
        assert outcomes == [Delivered()] * 6

    run(scenario)
    assert sender.peak == {"http://a.test:": 2}


def test_what_would_wait_past_max_wait_is_deferred_at_once_not_held() -> None:
    slow = "http://slow.test/"
    sender = Sender({host_of(slow): 0.3})

    async def scenario() -> None:
        lane = lanes(max_wait=0.2)
        # The first answers teach the lane the host's pace (0.3 s).
        await asyncio.gather(*lane.send_each([dispatch(0, slow), dispatch(1, slow)], sender))
        started = asyncio.get_running_loop().time()
        answers = lane.send_each([dispatch(10 + i, slow) for i in range(10)], sender)
        # Two run, about nothing more can start within 0.2 s: deferred without waiting.
        deferred = [a.result() for a in answers if a.done()]
        assert len(deferred) >= 7
        assert all(isinstance(o, Deferred) for o in deferred)
        assert asyncio.get_running_loop().time() - started < 0.05
        await asyncio.gather(*answers)

    run(scenario)


def test_a_deferral_waits_about_as_long_as_the_queue_ahead_within_bounds() -> None:
    slow = "http://slow.test/"
    sender = Sender({host_of(slow): 0.3})

    async def scenario() -> None:
        lane = lanes(max_wait=0.2)
        await asyncio.gather(*lane.send_each([dispatch(0, slow), dispatch(1, slow)], sender))
        answers = lane.send_each([dispatch(10 + i, slow) for i in range(200)], sender)
        at_once = [a.result() for a in answers if a.done()]
        outcomes = await asyncio.gather(*answers)
        afters = [o.after for o in at_once if isinstance(o, Deferred)]
        assert len(afters) >= 190
        # Each behind those deferred before it: later ones wait longer, about the
        # time the host takes for the queue ahead (2 at a time, 0.3 s each).
        assert afters == sorted(afters)
        assert afters[0] == pytest.approx(MIN_DEFER, rel=0.01)
        assert afters[-1] == pytest.approx(0.3 * 200 / 2, rel=0.1)
        # Those that waited for a slot in vain were ahead: due again soon.
        waited = [o for o in outcomes[: len(outcomes) - len(at_once)] if isinstance(o, Deferred)]
        assert all(MIN_DEFER <= o.after < 5 for o in waited)

    run(scenario)


def test_a_deferral_is_never_longer_than_the_cap() -> None:
    dead = "http://dead.test/"
    lane = lanes(max_wait=0.2)
    host = lane._lane(lane._hosts, host_of(dead), 2, True)
    host.observe(10.0, 0.0, failed=True)
    host.deferred = 10_000
    account = lane._lane(lane._accounts, "alice", 4, False)
    deferred = lane._defer(host, account, 0.0)
    assert deferred.after == MAX_DEFER


def test_a_first_burst_to_a_host_not_heard_from_comes_back_soon_once_its_pace_is_known() -> None:
    fast = "http://fast.test/"
    sender = Sender({host_of(fast): 0.001})

    async def scenario() -> None:
        lane = lanes(max_wait=0.2)
        answers = lane.send_each([dispatch(i, fast) for i in range(50)], sender)
        outcomes = await asyncio.gather(*answers)
        # Nothing known of the host: a few admitted; the rest back after the shortest wait...
        deferred = [o for o in outcomes if isinstance(o, Deferred)]
        assert deferred
        assert max(o.after for o in deferred) <= MIN_DEFER * 1.25
        # ...when its pace is known, and the same burst is taken whole.
        again = await asyncio.gather(
            *lane.send_each([dispatch(i, fast) for i in range(50)], sender)
        )
        assert again == [Delivered()] * 50

    run(scenario)


def test_requests_that_hang_tell_the_pace_before_any_answer() -> None:
    lane = Lane(2)
    assert lane.pace(100.0) is None

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        assert await lane.enter(0.1)
        started = loop.time()
        # No answer yet, but one has been running for 30 s: a request takes at least that.
        pace = lane.pace(started + 30.0)
        assert pace is not None
        assert pace == pytest.approx(30.0, abs=0.1)

    run(scenario)


def test_a_short_wait_for_answers_is_not_taken_for_the_hosts_pace() -> None:
    # Thousands handed at one instant keep the event loop from reading the first
    # answers for a while: that wait is this process's, not the host's, and taken for
    # the host's pace it deferred the rest of the burst by tens of seconds.
    lane = Lane(2)

    async def scenario() -> None:
        assert await lane.enter(0.1)
        answered = asyncio.get_running_loop().time()
        lane.observe(0.005, answered, failed=False)  # it answers in 5 ms
        assert lane.pace(answered + 0.5) == pytest.approx(0.005)
        # A second and more without an answer: the host is slow, or hangs.
        assert lane.pace(answered + 2.0) == pytest.approx(2.0)

    run(scenario)


def test_a_slot_that_does_not_come_within_max_wait_defers_the_delivery() -> None:
    slow = "http://slow.test/"
    sender = Sender({host_of(slow): 1.0})

    async def scenario() -> None:
        lane = lanes(max_wait=0.1)
        # Nothing known of the host yet: a few are admitted to wait, and give up after 0.1 s.
        answers = lane.send_each([dispatch(i, slow) for i in range(4)], sender)
        started = asyncio.get_running_loop().time()
        waited = await asyncio.gather(*answers[2:])
        assert all(isinstance(o, Deferred) for o in waited)
        assert asyncio.get_running_loop().time() - started < 0.5
        await asyncio.gather(*answers)

    run(scenario)
    assert len(sender.started) == 2


def test_a_host_that_times_out_is_soon_down_to_one_request_and_recovers() -> None:
    lane = Lane(16, adaptive=True)
    for _ in range(5):
        lane.observe(10.0, 0.0, failed=True)
    assert lane.limit == 1
    for _ in range(15):
        lane.observe(0.01, 0.0, failed=False)
    assert lane.limit == 16


def test_a_fixed_lane_keeps_its_limit_when_answers_fail() -> None:
    lane = Lane(4)
    lane.observe(10.0, 0.0, failed=True)
    assert lane.limit == 4


def test_one_accounts_dead_hosts_leave_the_others_their_slots() -> None:
    # Alice has many hosts that hang; Bob's one healthy host must start at once.
    dead = {host_of(f"http://dead{i}.test/"): 5.0 for i in range(10)}
    sender = Sender(dead)

    async def scenario() -> None:
        lane = lanes(concurrency=8, host_concurrency=2, account_concurrency=4, max_wait=0.2)
        alice = [dispatch(i, f"http://dead{i % 10}.test/", "alice") for i in range(40)]
        hanging = lane.send_each(alice, sender)
        await asyncio.sleep(0.01)
        # Alice holds at most her account's share, whatever the number of her hosts.
        assert sum(sender.active.values()) == 4
        started = asyncio.get_running_loop().time()
        (bob,) = lane.send_each([dispatch(100, "http://ok.test/", "bob")], sender)
        assert await bob == Delivered()
        assert asyncio.get_running_loop().time() - started < 0.1
        for answer in hanging:
            answer.cancel()
        await asyncio.gather(*hanging, return_exceptions=True)

    run(scenario)


def test_cancelled_sends_give_every_slot_and_count_back() -> None:
    slow = "http://slow.test/"
    sender = Sender({host_of(slow): 5.0})

    async def scenario() -> None:
        lane = lanes(max_wait=5.0)
        answers = lane.send_each([dispatch(i, slow) for i in range(6)], sender)
        await asyncio.sleep(0.01)  # two running, four waiting for the host
        for answer in answers:
            answer.cancel()
        await asyncio.gather(*answers, return_exceptions=True)
        for kept in (lane._hosts[host_of(slow)], lane._accounts["alice"], lane._all):
            assert (kept.running, kept.admitted, kept.idle) == (0, 0, True)
        # And the lanes work as before: the next sends start at once.
        fast = Sender({})
        assert await asyncio.gather(*lane.send_each([dispatch(9, slow)], fast)) == [Delivered()]

    run(scenario)


def stream_dispatch(n: int, url: str, owner: str, subscriber: str) -> Dispatch:
    """Delivery ``n`` of a stream send by ``owner`` to a webhook device of ``subscriber``."""
    notification = make_notification(f"ntf_{n:04}", owner)
    device = Device(f"dev_{n:04}", subscriber, Platform.WEBHOOK, url, None, T0)
    delivery = make_delivery(
        f"dlv_{n:04}", notification.id, device.id, subscriber, status=DeliveryStatus.IN_FLIGHT
    )
    return Dispatch(delivery, device, notification)


def test_one_subscribers_dead_hosts_leave_the_other_subscribers_their_slots() -> None:
    # One stream send: mallory's 40 devices hang; carol's healthy one starts at once.
    dead = {host_of(f"http://dead{i}.test/"): 5.0 for i in range(10)}
    sender = Sender(dead)

    async def scenario() -> None:
        lane = lanes(concurrency=16, host_concurrency=2, account_concurrency=4, max_wait=0.2)
        mallory = [
            stream_dispatch(i, f"http://dead{i % 10}.test/", "owner", "mallory") for i in range(40)
        ]
        hanging = lane.send_each(mallory, sender)
        await asyncio.sleep(0.01)
        # The subscriber holds at most one account's share, whoever sent the stream.
        assert sum(sender.active.values()) == 4
        started = asyncio.get_running_loop().time()
        (carol,) = lane.send_each(
            [stream_dispatch(100, "http://ok.test/", "owner", "carol")], sender
        )
        assert await carol == Delivered()
        assert asyncio.get_running_loop().time() - started < 0.1
        for answer in hanging:
            answer.cancel()
        await asyncio.gather(*hanging, return_exceptions=True)

    run(scenario)
