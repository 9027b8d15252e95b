"""One subscriber's dead webhooks delay only that subscriber (API.md, People-side limits).

A real `pushctl serve` process; a stream with five healthy subscribers, each
with a webhook on a real receiver, and one subscriber with 60 webhook devices
on hosts that accept connections and never answer. Before deliveries were
queued per receiving account, the dead ones filled the stream owner's share
of the gateway and every subscriber's deliveries waited behind them (the
median went from 0.05 s to 8.2 s).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.fakes.blackhole import BlackHole, black_hole
from tests.fakes.receiver import Receiver, running_receiver

# Timing bounds: run after the parallel pass (scripts/check.sh).
pytestmark = [pytest.mark.slow, pytest.mark.serial]

HEALTHY = 5
DEAD_DEVICES = 60
DEAD_HOSTS = 4  # 15 devices each: below a host's share, so the account's lane is what fills
SENDS = 8


@pytest.fixture
def holes() -> Iterator[list[BlackHole]]:
    with ExitStack() as stack:
        yield [stack.enter_context(black_hole()) for _ in range(DEAD_HOSTS)]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def test_one_subscribers_dead_webhooks_do_not_delay_the_other_subscribers(
    tmp_path: Path, receiver: Receiver, holes: list[BlackHole]
) -> None:
    with Server.running(tmp_path / "data", env={"PUSHCORE_RATE_LIMIT": "0"}) as server:
        owner = server.key("fair-owner")
        stream = server.request("POST", "/api/streams", json={"name": "Deploys"}, headers=owner)
        assert stream.status_code == 201, stream.text
        stream_id, code = stream.json()["id"], stream.json()["code"]

        def subscribe(account: str) -> dict[str, str]:
            user = server.user(account)
            joined = server.request(
                "POST", "/api/streams/subscribe", json={"code": code}, headers=user
            )
            assert joined.status_code == 201, joined.text
            return user

        dead = subscribe("fair-mallory")
        for i in range(DEAD_DEVICES):
            server.webhook(dead, holes[i % DEAD_HOSTS].url(f"/dead{i}"))
        for n in range(HEALTHY):
            server.webhook(subscribe(f"fair-sub{n}"), receiver.url(f"/sub{n}"))

        sent_at: dict[str, float] = {}
        for i in range(SENDS):
            started = time.time()
            response = server.request(
                "POST", f"/api/streams/{stream_id}/send", json={"title": f"#{i}"}, headers=owner
            )
            assert response.status_code == 201, response.text
            assert response.json()["sent"] == HEALTHY + DEAD_DEVICES
            sent_at[response.json()["notificationId"]] = started
            time.sleep(0.25)  # a stream sends now and then, not in one burst

        assert receiver.wait_for(SENDS * HEALTHY, timeout=30), len(receiver.requests)
        latencies = [r.at - sent_at[r.body["notificationId"]] for r in receiver.delivered()]
        assert len(latencies) == SENDS * HEALTHY
        assert sum(h.accepted for h in holes) > 0  # the dead ones were being tried meanwhile
        # Generous for a shared machine: the telling figure is the median (the
        # bad case waits at least a deferral, 1 s, behind the dead ones).
        assert statistics.median(latencies) < 0.5, sorted(latencies)
        assert max(latencies) < 3.0, sorted(latencies)
