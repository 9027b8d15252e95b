"""The webhook gateway's connections (outbound/http1.py): kept alive from one post to the
next, opened again when the receiver closed one while idle, never reused after an answer
that did not come; and no post while the engine's records lag (delivery/pace.py). Against
a real asyncio server on loopback that counts its connections."""

from __future__ import annotations

import asyncio

from pushcore.delivery.pace import RecordPace
from pushcore.domain.outcomes import Delivered, Outcome, Retry
from pushcore.gateways.webhook import TIMED_OUT, WebhookGateway
from pushcore.outbound.guard import NetworkGuard
from tests.fakes.clock import FakeClock
from tests.gateways.support import dispatch


class CountingReceiver:
    """Answers 200 to each POST, except to ``/hang`` (never); counts its connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.posts: list[str] = []
        self._open: list[asyncio.StreamWriter] = []
        self.port = 0

    async def start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        return server

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close_idle(self) -> None:
        """Close every connection from the server's side (a keep-alive timeout)."""
        for writer in self._open:
            writer.close()
        self._open.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._open.append(writer)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                path = head.split(" ", 2)[1]
                length = next(
                    int(line.split(":", 1)[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length:")
                )
                await reader.readexactly(length)
                self.posts.append(path)
                if path == "/hang":
                    await asyncio.sleep(3600)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def gateway(timeout: float = 5.0) -> WebhookGateway:
    return WebhookGateway(NetworkGuard(allow_private=True), FakeClock(), timeout=timeout)


def test_posts_to_one_receiver_share_a_kept_alive_connection_reopened_once_closed() -> None:
    async def go() -> tuple[list[Outcome], int, list[Outcome], int]:
        receiver = CountingReceiver()
        server = await receiver.start()
        hooks = gateway()
        try:
            first: list[Outcome] = []
            for i in range(3):  # one after another: each finds the last one's connection
                first += await hooks.send([dispatch(receiver.url("/a"), suffix=str(i))])
            kept = receiver.connections
            receiver.close_idle()
            await asyncio.sleep(0.05)  # the close reaches the client's socket
            # Found closed before any answer: opened again, and the post delivered.
            after = list(await hooks.send([dispatch(receiver.url("/a"), suffix="x")]))
            return first, kept, after, receiver.connections
        finally:
            await hooks.aclose()
            server.close()

    first, kept, after, connections = asyncio.run(go())

    assert first == [Delivered()] * 3
    assert kept == 1
    assert after == [Delivered()]
    assert connections == 2


def test_a_post_that_timed_out_leaves_its_connection_to_no_one() -> None:
    # Had the connection gone back to the pool, the next post would wait behind the
    # answer that never came, and time out too.
    async def go() -> tuple[list[Outcome], list[Outcome], int]:
        receiver = CountingReceiver()
        server = await receiver.start()
        hooks = gateway(timeout=0.3)
        try:
            hung = list(await hooks.send([dispatch(receiver.url("/hang"), suffix="h")]))
            then = list(await hooks.send([dispatch(receiver.url("/a"), suffix="a")]))
            return hung, then, receiver.connections
        finally:
            await hooks.aclose()
            server.close()

    hung, then, connections = asyncio.run(go())

    assert hung == [Retry(TIMED_OUT)]
    assert then == [Delivered()]
    assert connections == 2


def test_a_post_waits_for_the_engines_records_to_catch_up() -> None:
    # delivery/pace.py: with an answer unrecorded past the limit, nothing is posted.
    async def go() -> tuple[list[str], list[Outcome]]:
        receiver = CountingReceiver()
        server = await receiver.start()
        hooks = gateway()
        pace = RecordPace(late=0.02, longest_wait=10.0)
        try:
            pace.answered("dlv_earlier")
            await asyncio.sleep(0.05)
            [answer] = hooks.send_each([dispatch(receiver.url("/a"))], pace.ready)
            await asyncio.sleep(0.2)
            before = list(receiver.posts)
            pace.recorded(["dlv_earlier"])
            return before, [await asyncio.wait_for(answer, 5.0)]
        finally:
            await hooks.aclose()
            server.close()

    before, outcomes = asyncio.run(go())

    assert before == []
    assert outcomes == [Delivered()]
