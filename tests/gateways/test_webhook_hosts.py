"""The webhook gateway's cap per host: a fan-out to one receiver does not take every slot."""

from __future__ import annotations

import asyncio

from pushcore.domain.outcomes import Delivered, Dispatch, Outcome
from pushcore.gateways.webhook import WebhookGateway
from pushcore.outbound.guard import NetworkGuard
from tests.fakes.clock import FakeClock
from tests.gateways.support import dispatch, running_fast_receiver


def test_requests_to_one_host_are_capped_and_other_hosts_are_not_held_up() -> None:
    gateway = WebhookGateway(
        NetworkGuard(allow_private=True), FakeClock(), concurrency=64, host_concurrency=2
    )

    async def go(dispatches: list[Dispatch]) -> list[Outcome]:
        try:
            return list(await gateway.send(dispatches))
        finally:
            await gateway.aclose()

    with running_fast_receiver() as receiver:
        receiver.delay = 0.1  # each answer keeps its request open a while
        other_host = receiver.url("/b").replace("127.0.0.1", "localhost")
        dispatches = [dispatch(receiver.url("/a"), suffix=str(i)) for i in range(8)]
        dispatches += [dispatch(other_host, suffix=f"b{i}") for i in range(8)]

        assert asyncio.run(go(dispatches)) == [Delivered()] * 16

    # Both host names were served, never more than two requests at once each.
    assert set(receiver.peak) == {f"127.0.0.1:{receiver.port}", f"localhost:{receiver.port}"}
    assert all(peak <= 2 for peak in receiver.peak.values())
