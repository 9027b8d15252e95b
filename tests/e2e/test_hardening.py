"""End to end against a real `pushctl serve`: what only a real socket can send.

A request head far over 16 KiB, and a client that goes away halfway through
its body. Both go through the HTTP parser uvicorn really uses here.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.server import Server

pytestmark = pytest.mark.slow

HUGE = 64 * 1024 * 1024
CHUNK = 256 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module."""
    s = Server(tmp_path_factory.mktemp("hardening") / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def connect(server: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.settimeout(30)
    return sock


def answer(sock: socket.socket) -> bytes:
    """What the server wrote before closing; b"" when it reset the connection instead."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass
    return received


def send_huge_header(server: Server) -> tuple[int, bytes]:
    """Send a request whose one header is 64 MiB; how much went out before the server
    stopped taking it, and what it answered."""
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = 0
        chunk = b"a" * CHUNK
        try:
            while sent < HUGE:
                sent += sock.send(chunk)
        except (ConnectionResetError, BrokenPipeError):
            pass
        else:
            sock.sendall(b"\r\n\r\n")
        return sent, answer(sock)


def test_a_64_mib_header_is_refused_without_reading_it_and_others_are_served(
    server: Server,
) -> None:
    results: list[tuple[int, bytes]] = []
    attacker = threading.Thread(target=lambda: results.append(send_huge_header(server)))
    attacker.start()
    # Another client is served meanwhile and after.
    assert server.request("GET", "/healthz").status_code == 200
    attacker.join(60)
    assert not attacker.is_alive()
    sent, reply = results[0]
    # The server stopped reading long before the end: what got out is only what
    # the kernel's socket buffers held.
    assert sent < HUGE // 4
    assert reply == b"" or reply.startswith(b"HTTP/1.1 431 ")
    assert server.request("GET", "/healthz").status_code == 200


def test_heads_up_to_16_kib_are_read_and_longer_ones_431(server: Server) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: "
    pad = 16 * 1024 - len(head) - len(b"\r\n\r\n")
    with connect(server) as sock:
        sock.sendall(head + b"p" * pad + b"\r\n\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 200 ")
    with connect(server) as sock:
        sock.sendall(head + b"p" * (pad + 1) + b"\r\n\r\n")
        reply = answer(sock)
    assert reply == b"" or reply.startswith(b"HTTP/1.1 431 ")
    if reply:
        body = reply.split(b"\r\n\r\n", 1)[1]
        assert body == b'{"error":"Request headers too large","code":"request_headers_too_large"}'


def test_a_client_gone_mid_body_is_neither_an_error_nor_a_500(server: Server) -> None:
    key = server.key("alice")["X-API-Key"]
    for _ in range(5):
        with connect(server) as sock:
            sock.sendall(
                b"POST /api/notifications HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 1000\r\n"
                b"X-API-Key: " + key.encode() + b'\r\n\r\n{"title": "half'
            )
    # The same connection kind still works, and nothing was stored.
    listed = server.request("GET", "/api/notifications", headers={"X-API-Key": key})
    assert listed.json()["items"] == []
    # Each disconnect is noted when its request task ends, maybe after the GET above.
    deadline = time.monotonic() + 10
    while True:
        metrics = httpx.get(f"{server.base}/metrics", timeout=10).text
        if re.search(r'route="/api/notifications",status="499"\} 5', metrics):
            break
        assert time.monotonic() < deadline, metrics
        time.sleep(0.1)
    assert 'status="500"' not in metrics
    log = server.log.read_text()
    assert "Traceback" not in log
    assert "ERROR" not in log


@pytest.mark.parametrize(
    "target",
    [
        b"/api/notifications/ntf_\xff\xfe",
        b"/api/notifications/ntf_\xed\xa0\x80",
        b"/api/notifications/%ED%A0%80",
        b"/api/notifications?cursor=\xed\xa0\x80",
        b"/api/notifications?status=%FF",
    ],
)
def test_odd_bytes_in_the_request_target_are_4xx(server: Server, target: bytes) -> None:
    key = server.key("odd")["X-API-Key"]
    with connect(server) as sock:
        sock.sendall(
            b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"X-API-Key: " + key.encode() + b"\r\n\r\n"
        )
        reply = answer(sock)
    status = int(reply.split(b" ", 2)[1])
    assert 400 <= status < 500, reply
    assert server.request("GET", "/healthz").status_code == 200
