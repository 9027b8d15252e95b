"""Stalled request heads and bodies are closed, and the connections open are bounded below
the open-files limit (API.md, "Limits and fairness"), on a real `pushctl serve` process.

Before, uvicorn timed out neither: a connection that sent half a head stayed open
for ever, and with RLIMIT_NOFILE at 1,024, 1,100 of them made /healthz and every
create fail. Here the server runs with short timeouts (1 s) and 512 open files
(so a bound of 128 connections), and the tests open more stalled connections
than it has descriptors.
"""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.e2e.server import Server

pytestmark = pytest.mark.slow

OPEN_FILES = 512
TIMEOUT = 1.0
# Generous for a busy machine: a close due after 1 s must come within this.
CLOSED_WITHIN = 6.0
STALLED = OPEN_FILES + 100


def low_open_files_limit() -> None:
    """In the server's process, before it starts: RLIMIT_NOFILE of OPEN_FILES."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module, with 1 s timeouts and OPEN_FILES descriptors."""
    running = Server(
        tmp_path_factory.mktemp("connections") / "data",
        env={
            "PUSHCORE_HTTP_HEAD_TIMEOUT": f"{TIMEOUT}s",
            "PUSHCORE_HTTP_BODY_TIMEOUT": f"{TIMEOUT}s",
            # Low enough for one account to be over it at once, high enough for the others.
            "PUSHCORE_RATE_LIMIT": "5",
            "PUSHCORE_RATE_LIMIT_BURST": "5",
        },
        preexec_fn=low_open_files_limit,
    )
    running.start()
    try:
        yield running
    finally:
        running.stop()


def connect(server: Server, stack: ExitStack | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    if stack is not None:
        stack.enter_context(sock)
    return sock


def until_closed(sock: socket.socket) -> tuple[float, bytes]:
    """Seconds until the server closed ``sock`` (reading all it sent), and what it sent."""
    started = time.monotonic()
    sock.settimeout(CLOSED_WITHIN * 2)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return time.monotonic() - started, received


def test_a_half_sent_head_is_closed_after_the_head_timeout(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        took, received = until_closed(sock)
    assert TIMEOUT * 0.9 <= took < CLOSED_WITHIN, took
    assert received.startswith(b"HTTP/1.1 408 "), received


def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout(server: Server) -> None:
    with connect(server) as sock:
        took, received = until_closed(sock)
    assert TIMEOUT * 0.9 <= took < CLOSED_WITHIN, took
    assert received == b""


def test_a_body_that_stalls_is_closed_after_the_body_timeout_and_nothing_is_stored(
    server: Server,
) -> None:
    key = server.key("stalling")
    body = b'{"title": "never finished"}'
    with connect(server) as sock:
        sock.sendall(
            b"POST /api/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"X-API-Key: {key['X-API-Key']}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        took, received = until_closed(sock)
    assert TIMEOUT * 0.9 <= took < CLOSED_WITHIN, took
    assert received == b""  # nobody is told anything was stored: nothing was
    assert server.request("GET", "/api/notifications", headers=key).json()["items"] == []


def test_a_body_that_keeps_coming_is_not_cut_off(server: Server) -> None:
    """The body timeout is for a pause, not for the whole body."""
    key = server.key("trickling")
    body = b'{"title": "slow but steady", "body": "' + b"x" * 10 + b'"}'
    with connect(server) as sock:
        sock.sendall(
            b"POST /api/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"X-API-Key: {key['X-API-Key']}\r\nContent-Length: {len(body)}\r\n".encode()
            + b"Connection: close\r\n\r\n"
        )
        for i in range(0, len(body), 10):  # 2 s in all, a pause of 0.4 s at most
            time.sleep(TIMEOUT * 0.4)
            sock.sendall(body[i : i + 10])
        _, received = until_closed(sock)
    assert received.startswith(b"HTTP/1.1 201 "), received


def test_stalled_connections_past_the_open_files_limit_leave_room_for_health_and_creates(
    server: Server,
) -> None:
    key = server.key("creating")
    with ExitStack() as stack:
        for _ in range(STALLED):
            connect(server, stack).sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        assert server.request("GET", "/healthz").status_code == 200
        created = server.request("POST", "/api/notifications", json={"title": "t"}, headers=key)
        assert created.status_code == 201, created.text


def test_connections_held_for_429s_past_the_limit_leave_room_for_health_and_creates(
    server: Server,
) -> None:
    """An account far over its rate limit, on more connections than the server has
    descriptors: its held refusals are what the bound closes first."""
    hammer = server.key("hammering")["X-API-Key"].encode()
    key = server.key("patient")
    request = b"GET /api/devices HTTP/1.1\r\nHost: x\r\nX-API-Key: " + hammer + b"\r\n\r\n"
    with ExitStack() as stack:
        for _ in range(STALLED):
            connect(server, stack).sendall(request)
        # Within the 0.5 s the refusals are held.
        assert server.request("GET", "/healthz").status_code == 200
        created = server.request("POST", "/api/notifications", json={"title": "t"}, headers=key)
        assert created.status_code == 201, created.text
