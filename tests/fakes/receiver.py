"""A webhook receiver on loopback: records every POST and answers as scripted.

It speaks plain HTTP/1.1 like any webhook endpoint (UnifiedPush distributors,
ntfy, a user's own server), so the gateway under test is exercised end to
end over a real socket.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Received:
    """One request as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float  # time.time() when it arrived
    status: int  # what the receiver answered
    raw: bytes = b""  # the body as it came (signatures are over these bytes)


@attrs.define
class Receiver:
    """Scripted answers per path; every request is recorded, in order."""

    host: str = "127.0.0.1"
    port: int = 0
    requests: list[Received] = attrs.Factory(list)
    script: dict[str, deque[tuple[int, dict[str, str]]]] = attrs.Factory(lambda: defaultdict(deque))
    # Seconds to wait before answering: keeps deliveries in flight (crash tests).
    delay: float = 0.0
    lock: threading.Lock = attrs.Factory(threading.Lock)
    arrived: threading.Condition = attrs.Factory(threading.Condition)
    # Requests being answered right now, and the most there ever were, per Host header.
    active: dict[str, int] = attrs.Factory(lambda: defaultdict(int))
    peak: dict[str, int] = attrs.Factory(lambda: defaultdict(int))

    def url(self, path: str = "/hook") -> str:
        """A URL on this receiver."""
        return f"http://{self.host}:{self.port}{path}"

    def answer(self, path: str, status: int, times: int = 1, **headers: str) -> None:
        """Answer the next ``times`` requests to ``path`` with ``status`` and ``headers``."""
        with self.lock:
            for _ in range(times):
                self.script[path].append(
                    (status, {k.replace("_", "-"): v for k, v in headers.items()})
                )

    def to(self, path: str) -> list[Received]:
        """What arrived at ``path``."""
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def delivered(self, path: str | None = None) -> list[Received]:
        """Requests answered with a 2xx (optionally only at ``path``)."""
        with self.lock:
            return [
                r
                for r in self.requests
                if 200 <= r.status < 300 and (path is None or r.path == path)
            ]

    def wait_for(self, count: int, timeout: float = 10.0, path: str | None = None) -> bool:
        """Block until ``count`` 2xx-answered requests arrived (at ``path``); False on timeout."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.delivered(path)) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.arrived.wait(remaining)
        return True

    def _begin(self, host: str) -> None:
        with self.lock:
            self.active[host] += 1
            self.peak[host] = max(self.peak[host], self.active[host])

    def _end(self, host: str) -> None:
        with self.lock:
            self.active[host] -= 1

    def _handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str]]:
        with self.lock:
            queue = self.script.get(path)
            status, extra = queue.popleft() if queue else (200, {})
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                body = {"_raw": raw.decode(errors="replace")}
            self.requests.append(Received(path, headers, body, time.time(), status, raw))
        with self.arrived:
            self.arrived.notify_all()
        return status, extra


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            receiver._begin(headers.get("host", ""))
            try:
                status, extra = receiver._handle(self.path, headers, raw)
                if receiver.delay:
                    time.sleep(receiver.delay)
            finally:
                receiver._end(headers.get("host", ""))
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the records instead."""

    return Handler


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    """A receiver listening on a free loopback port for the block's duration."""
    receiver = Receiver()
    server = ThreadingHTTPServer((receiver.host, 0), _handler(receiver))
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
