"""The sender's pipelining (delivery/webhooks.py, outbound/http1.py): an endpoint that
answers quickly gets several POSTs in one write, each event still answered and recorded
once; one that ends a pipelined connection early gets the unanswered ones again, one at a
time from then on; one that stops answering times out every POST written to it. On
SQLite only: what is tested is the sending, not the storage."""

from __future__ import annotations

import asyncio
import socketserver
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pushcore.delivery.webhooks import EventSender, SenderConfig
from pushcore.domain.events import EventType
from tests.events.conftest import World
from tests.events.test_lanes import record

pytestmark = pytest.mark.parametrize("world", ["sqlite"], indirect=True)


class _Endpoint(socketserver.BaseRequestHandler):
    """Answers each request with a 204 and notes how many it found complete at once.

    ``server.mode``: "all" answers every request; "first" answers only the first of
    requests that came together and closes without a word (a server that does not
    keep up pipelining); "stall" answers the first connection's first request, then
    nothing; "gone" answers every request with a 410."""

    def handle(self) -> None:
        server: Any = self.server
        data = b""
        while True:
            more = self.request.recv(65536)
            if not more:
                return
            data += more
            found = []
            while b"\r\n\r\n" in data:
                head, _, rest = data.partition(b"\r\n\r\n")
                lines = [line.split(b": ", 1) for line in head.split(b"\r\n")[1:]]
                fields = {name.lower(): value for name, value in lines}
                length = int(fields[b"content-length"])
                if len(rest) < length:
                    break
                found.append(fields[b"webhook-id"].decode())
                data = rest[length:]
            if not found:
                continue
            with server.lock:
                server.together.append(len(found))
                stalled = server.mode == "stall" and server.answered
                if not stalled:
                    server.answered += 1 if server.mode != "all" else len(found)
            if stalled:
                time.sleep(5)
                return
            if server.mode == "first" and len(found) > 1:
                server.ids.append(found[0])
                self.request.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
                return  # the others read and dropped
            server.ids.extend(found)
            status = b"410 Gone" if server.mode == "gone" else b"204 No Content"
            self.request.sendall(b"HTTP/1.1 %s\r\nContent-Length: 0\r\n\r\n" % status * len(found))


@pytest.fixture
def endpoint() -> Iterator[Any]:
    server: Any = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Endpoint)
    server.daemon_threads = True
    server.mode, server.lock, server.answered = "all", threading.Lock(), 0
    server.together, server.ids = [], []
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def sender(world: World, **config: Any) -> EventSender:
    settings = {"per_endpoint": 4, "claimed_per_endpoint": 64, **config}
    return EventSender(
        world.services.store, world.clock, world.guard, "pipeliner", SenderConfig(**settings)
    )


def send_all(sender: EventSender) -> list[int]:
    """Sender rounds until one claims nothing; what each claimed."""

    async def rounds() -> list[int]:
        started = []
        while True:
            started.append(await sender.round())
            await sender.drain()
            if not started[-1]:
                break
        await sender.aclose()
        return started

    return asyncio.run(rounds())


def warmed(world: World, endpoint: Any, **config: Any) -> tuple[str, EventSender]:
    """An endpoint on ``endpoint`` and a sender that has had a quick answer from it (an
    event of another type, not counted): the next chunk is pipelined."""
    made = world.create(f"http://127.0.0.1:{endpoint.server_address[1]}/hook", ["delivery.*"])
    runner = sender(world, **config)
    record(world, EventType.DELIVERY_EXPIRED, 1)
    assert send_all(runner) == [1, 0]
    endpoint.together.clear()
    endpoint.ids.clear()
    return made["id"], runner


def statuses(world: World, endpoint_id: str) -> Counter[tuple[str, int | None]]:
    path = f"/api/webhooks/{endpoint_id}/attempts?limit=100"
    items = world.client.get(path, headers=world.auth()).json()["items"]
    return Counter(
        (a["status"], a["responseStatus"]) for a in items if a["type"] != "delivery.expired"
    )


def test_a_quick_endpoint_gets_its_events_pipelined_each_once(world: World, endpoint: Any) -> None:
    made, runner = warmed(world, endpoint)
    sent = record(world, EventType.DELIVERY_FAILED, 60)
    assert send_all(runner) == [60, 0]
    # After the first quick answers, several POSTs came in one write, never more than
    # the endpoint's share in flight.
    assert 1 < max(endpoint.together) <= 4
    assert sorted(endpoint.ids) == sorted(sent)
    assert statuses(world, made) == {("succeeded", 204): 60}


def test_pipelining_can_be_turned_off(world: World, endpoint: Any) -> None:
    made = world.create(f"http://127.0.0.1:{endpoint.server_address[1]}/hook", ["delivery.*"])
    record(world, EventType.DELIVERY_FAILED, 30)
    assert send_all(sender(world, pipeline=1, per_endpoint=1)) == [30, 0]
    assert set(endpoint.together) == {1}
    assert statuses(world, made["id"]) == {("succeeded", 204): 30}


def test_requests_a_server_dropped_from_a_pipeline_are_sent_again_one_at_a_time(
    world: World, endpoint: Any
) -> None:
    made, runner = warmed(world, endpoint, per_endpoint=8)
    endpoint.mode = "first"
    sent = record(world, EventType.DELIVERY_FAILED, 40)
    assert send_all(runner) == [40, 0]
    assert max(endpoint.together) > 1  # it was pipelined to, and dropped some
    # Each answered once (those dropped unanswered went again), all recorded at once.
    assert sorted(endpoint.ids) == sorted(sent)
    assert statuses(world, made) == {("succeeded", 204): 40}
    assert runner._depth[made] == 0  # one at a time from then on


def test_every_request_of_a_stalled_pipeline_times_out_within_the_deadline(
    world: World, endpoint: Any
) -> None:
    made, runner = warmed(world, endpoint, per_endpoint=8, timeout=1.0)
    endpoint.mode = "stall"  # the warm-up's answer was its first
    record(world, EventType.DELIVERY_FAILED, 16)
    started = time.monotonic()
    assert send_all(runner) == [16, 0]
    took = time.monotonic() - started
    # Eight pipelined, all timed out 1 s after their write; then eight at once, one
    # each on a connection of its own, timed out together: 2 s, not one deadline each.
    assert endpoint.together[0] == 8
    assert 2.0 <= took < 5.0  # 8 s or more were each answer its own deadline in turn
    assert statuses(world, made) == {("pending", None): 16}


def test_a_410_in_a_pipeline_stops_the_posts_not_yet_written(world: World, endpoint: Any) -> None:
    made, runner = warmed(world, endpoint)
    endpoint.mode = "gone"
    record(world, EventType.DELIVERY_FAILED, 40)
    assert send_all(runner) == [40, 0]
    # One pipelined chunk, the endpoint's share (4) at most, reached it; the rest not.
    assert 1 < len(endpoint.ids) <= 4
    answer = world.client.get(f"/api/webhooks/{made}", headers=world.auth()).json()
    assert (answer["enabled"], answer["disabledReason"]) == (
        False,
        "The endpoint answered 410 Gone",
    )
    # Each failed: those answered with a 410, and those the disabling failed.
    got = statuses(world, made)
    assert got[("failed", 410)] >= 1
    assert {status for status, _ in got} == {"failed"}
    assert got.total() == 40
