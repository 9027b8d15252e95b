"""The sender's own HTTP/1.1 (outbound/http1.py) against a scripted server: https
with the certificate checked, answers chunked or with a Retry-After, an answer too
large to read. On SQLite only: what is tested is the HTTP, not the storage."""

from __future__ import annotations

import asyncio
import socketserver
import ssl
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import trustme

from pushcore.converter import parse_timestamp
from pushcore.delivery.webhooks import EventSender, SenderConfig
from tests.events.conftest import World
from tests.fakes.icon_server import IconServer, Route, running_icon_server

pytestmark = pytest.mark.parametrize("world", ["sqlite"], indirect=True)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def https(ca: trustme.CA) -> Iterator[IconServer]:
    """A scripted HTTPS server with a certificate for 127.0.0.1 from ``ca``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    with running_icon_server(tls=context) as server:
        yield server


@pytest.fixture
def http() -> Iterator[IconServer]:
    with running_icon_server() as server:
        yield server


def post_tests(world: World, endpoint_id: str, count: int = 1) -> None:
    for _ in range(count):
        answer = world.client.post(f"/api/webhooks/{endpoint_id}/test", headers=world.auth())
        assert answer.status_code == 202


def pump(world: World, sender: EventSender) -> int:
    async def once() -> int:
        started = await sender.round()
        await sender.drain()
        await sender.aclose()
        return started

    return asyncio.run(once())


def attempts(world: World, endpoint_id: str) -> list[dict[str, Any]]:
    answer = world.client.get(f"/api/webhooks/{endpoint_id}/attempts", headers=world.auth())
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def test_an_https_endpoint_gets_events_only_over_a_certificate_it_can_check(
    world: World, https: IconServer, ca: trustme.CA
) -> None:
    made = world.create(https.route("/hook", Route(status=204)))
    post_tests(world, made["id"])
    # The system's roots only: the test CA's certificate is refused, nothing is posted.
    world.pump()
    assert https.count("/hook") == 0
    (refused,) = attempts(world, made["id"])
    assert (refused["status"], refused["responseStatus"]) == ("pending", None)

    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    sender = EventSender(
        world.services.store, world.clock, world.guard, "tls", SenderConfig(timeout=2.0),
        tls=trusting,
    )  # fmt: skip
    world.clock.advance(timedelta(seconds=5))
    post_tests(world, made["id"], 2)
    assert pump(world, sender) == 3
    assert https.count("/hook") == 3
    assert {a["status"] for a in attempts(world, made["id"])} == {"succeeded"}


def test_chunked_answers_are_read_and_a_retry_after_in_one_is_honoured(
    world: World, http: IconServer
) -> None:
    fine = world.create(http.route("/fine", Route(status=200, body=b"x" * 5000, chunked=True)))
    busy = world.create(
        http.route(
            "/busy",
            Route(status=503, body=b"later", chunked=True, headers={"Retry-After": "600"}),
        )
    )
    post_tests(world, fine["id"], 3)
    post_tests(world, busy["id"])
    now = world.clock.now()
    assert world.pump() == 4
    # One worker per endpoint here (per_endpoint=2): its connection carried several.
    assert {a["status"] for a in attempts(world, fine["id"])} == {"succeeded"}
    (later,) = attempts(world, busy["id"])
    assert (later["status"], later["responseStatus"]) == ("pending", 503)
    assert parse_timestamp(later["nextAttemptAt"]) == now + timedelta(seconds=600)


def test_an_answer_with_a_head_too_large_is_dropped_and_the_next_one_goes_on(
    world: World, http: IconServer
) -> None:
    huge = world.create(http.route("/huge", Route(status=200, headers={"X-Big": "y" * 20_000})))
    fine = world.create(http.route("/fine", Route(status=204)))
    post_tests(world, huge["id"])
    post_tests(world, fine["id"])
    assert world.pump() == 2
    (dropped,) = attempts(world, huge["id"])
    # Not read as a success: retried later, like an endpoint that broke off.
    assert (dropped["status"], dropped["responseStatus"]) == ("pending", None)
    (done,) = attempts(world, fine["id"])
    assert (done["status"], done["responseStatus"]) == ("succeeded", 204)


class _OneAnswerEach(socketserver.BaseRequestHandler):
    """Answers one request with a 204 that says nothing of closing, then closes: as a
    server whose keep-alive ran out between two requests."""

    def handle(self) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.request.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += self.request.recv(65536)
        self.server.answered += 1  # type: ignore[attr-defined]
        self.request.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")


def test_a_kept_alive_connection_the_server_closed_is_opened_again_for_the_next_event(
    world: World,
) -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _OneAnswerEach)
    server.daemon_threads = True
    server.answered = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        made = world.create(f"http://127.0.0.1:{server.server_address[1]}/hook")
        post_tests(world, made["id"], 3)
        # One worker: the three go one after another on its connection.
        sender = EventSender(
            world.services.store, world.clock, world.guard, "one", SenderConfig(per_endpoint=1)
        )
        assert pump(world, sender) == 3
    finally:
        server.shutdown()
        server.server_close()
    assert server.answered == 3  # type: ignore[attr-defined]
    assert {a["status"] for a in attempts(world, made["id"])} == {"succeeded"}


class _KeptAlive(socketserver.BaseRequestHandler):
    """Answers every request on a connection with a 204, counting the connections."""

    def handle(self) -> None:
        self.server.connections += 1  # type: ignore[attr-defined]
        data = b""
        while True:
            while b"\r\n\r\n" not in data:
                more = self.request.recv(65536)
                if not more:
                    return
                data += more
            head, _, data = data.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(data) < length:
                data += self.request.recv(65536)
            data = data[length:]
            self.request.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")


def test_the_next_claims_events_go_out_on_the_connection_the_last_one_left_open(
    world: World,
) -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _KeptAlive)
    server.daemon_threads = True
    server.connections = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    made = world.create(f"http://127.0.0.1:{server.server_address[1]}/hook")
    sender = EventSender(world.services.store, world.clock, world.guard, "one")

    async def rounds() -> list[int]:
        started = []
        for _ in range(3):  # an event a claim, each posted by a worker of its own
            post_tests(world, made["id"])
            started.append(await sender.round())
            await sender.drain()
        await sender.aclose()
        return started

    try:
        assert asyncio.run(rounds()) == [1, 1, 1]
    finally:
        server.shutdown()
        server.server_close()
    assert {a["status"] for a in attempts(world, made["id"])} == {"succeeded"}
    assert server.connections == 1  # type: ignore[attr-defined]
