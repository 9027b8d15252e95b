"""A scripted stand-in for the API on loopback: answers in order, records every request."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Seen:
    """One request as the fake saw it."""

    method: str
    path: str
    headers: dict[str, str]


@attrs.define
class FakeApi:
    """Answers each request with the next scripted (status, headers, body); 500 when out."""

    port: int = 0
    answers: deque[tuple[int, dict[str, str], Any]] = attrs.Factory(deque)
    seen: list[Seen] = attrs.Factory(list)
    lock: threading.Lock = attrs.Factory(threading.Lock)

    @property
    def url(self) -> str:
        """Where the fake listens."""
        return f"http://127.0.0.1:{self.port}"

    def answer(self, status: int, body: Any, times: int = 1, **headers: str) -> None:
        """Answer the next ``times`` requests so."""
        with self.lock:
            for _ in range(times):
                self.answers.append(
                    (status, {k.replace("_", "-"): v for k, v in headers.items()}, body)
                )

    def handle(
        self, method: str, path: str, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        with self.lock:
            self.seen.append(Seen(method, path, headers))
            return self.answers.popleft() if self.answers else (500, {}, {"error": "unscripted"})


def _handler(fake: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, body = fake.handle(self.command, self.path, headers)
            raw = json.dumps(body).encode()
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the records instead."""

    return Handler


@contextmanager
def running_fake(port: int = 0) -> Iterator[FakeApi]:
    """A fake listening on ``port`` (0: any free one) for the block's duration."""
    fake = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(fake))
    server.daemon_threads = True
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
