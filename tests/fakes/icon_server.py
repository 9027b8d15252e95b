"""A scripted HTTP server on loopback: serves icons, redirects, errors and slow answers.

Every request is counted per path (and its Host header kept), so tests can
assert that a cached verdict made no new request, or that a redirect target
behind the SSRF guard was never contacted. GET and POST are answered alike,
so it also stands in for a misbehaving webhook receiver.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def tiny_png() -> bytes:
    """A valid 1x1 opaque black PNG."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\x00\x00\x00")  # filter byte + one RGB pixel
    return (
        PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )


# The start of a JFIF file, enough for a magic-bytes check, and its end marker.
TINY_JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
TINY_GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"  # noqa: E501
HTML_PAGE = b"<!doctype html><html><head><title>icon</title></head><body>hi</body></html>"


@attrs.frozen
class Route:
    """How to answer one path.

    ``chunked`` sends the body with chunked transfer encoding (no
    Content-Length) in pieces of ``chunk_size``, pausing ``trickle`` seconds
    between pieces; ``delay`` waits before answering at all (the server is
    released early when it shuts down); ``head_trickle`` sends the status line
    and headers one byte at a time, pausing that long between bytes.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = attrs.Factory(dict)
    chunked: bool = False
    chunk_size: int = 1024
    delay: float = 0.0
    trickle: float = 0.0
    head_trickle: float = 0.0


@attrs.frozen
class Hit:
    """One request as the server saw it."""

    method: str
    path: str
    host: str | None


@attrs.define
class IconServer:
    """Scripted routes (404 for unknown paths); every request is recorded."""

    host: str = "127.0.0.1"
    port: int = 0
    scheme: str = "http"
    routes: dict[str, Route] = attrs.Factory(dict)
    hits: list[Hit] = attrs.Factory(list)
    lock: threading.Lock = attrs.Factory(threading.Lock)
    closing: threading.Event = attrs.Factory(threading.Event)

    def url(self, path: str, host: str | None = None) -> str:
        """A URL on this server (naming it ``host``, which must resolve to it)."""
        return f"{self.scheme}://{host or self.host}:{self.port}{path}"

    def route(self, path: str, route: Route) -> str:
        """Answer ``path`` with ``route``; returns its URL."""
        with self.lock:
            self.routes[path] = route
        return self.url(path)

    def serve(
        self,
        path: str,
        body: bytes,
        content_type: str = "application/octet-stream",
        **options: Any,
    ) -> str:
        """Serve ``body`` at ``path`` (``options`` as in :class:`Route`); returns its URL."""
        headers = {"Content-Type": content_type, **options.pop("headers", {})}
        return self.route(path, Route(body=body, headers=headers, **options))

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        """Redirect ``path`` to ``location``; returns its URL."""
        return self.route(path, Route(status=status, headers={"Location": location}))

    def count(self, path: str | None = None) -> int:
        """How many requests arrived (at ``path``)."""
        with self.lock:
            return sum(1 for hit in self.hits if path is None or hit.path == path)

    def _arrived(self, method: str, path: str, host: str | None) -> Route:
        with self.lock:
            self.hits.append(Hit(method, path, host))
            return self.routes.get(path, Route(status=404, body=b"not found"))


def _handler(server: IconServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            self.rfile.read(length)
            self._answer()

        def _answer(self) -> None:
            route = server._arrived(self.command, self.path, self.headers.get("host"))
            if route.delay and server.closing.wait(route.delay):
                self.close_connection = True
                return
            try:
                self._write(route)
            except OSError:  # the client gave up (a cap or a timeout): fine
                self.close_connection = True

        def _write(self, route: Route) -> None:
            if route.head_trickle:
                self._trickle_head(route)
                return
            self.send_response(route.status)
            for name, value in route.headers.items():
                self.send_header(name, value)
            if not route.chunked:
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                self.wfile.write(route.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            body = route.body
            for start in range(0, len(body), route.chunk_size):
                piece = body[start : start + route.chunk_size]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if route.trickle:
                    if server.closing.is_set():
                        return
                    time.sleep(route.trickle)
            self.wfile.write(b"0\r\n\r\n")

        def _trickle_head(self, route: Route) -> None:
            lines = [f"HTTP/1.1 {route.status} Whatever"]
            lines += [f"{name}: {value}" for name, value in route.headers.items()]
            lines.append(f"Content-Length: {len(route.body)}")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode()
            for byte in head:
                if server.closing.wait(route.head_trickle):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            self.wfile.write(route.body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the hits instead."""

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many concurrent clients: the default 5 resets connections

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-answer are expected here."""


class _QuietServer6(_QuietServer):
    address_family = socket.AF_INET6


@contextmanager
def running_icon_server(
    tls: ssl.SSLContext | None = None, host: str = "127.0.0.1"
) -> Iterator[IconServer]:
    """An icon server on a free loopback port for the block's duration.

    With ``tls`` (a server-side context holding a certificate) it speaks HTTPS.
    """
    icons = IconServer(host=host, scheme="https" if tls is not None else "http")
    server_class = _QuietServer6 if ":" in host else _QuietServer
    server = server_class((host, 0), _handler(icons))
    icons.port = server.server_address[1]
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # A short poll interval makes shutdown() quick (the default waits up to 0.5 s).
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield icons
    finally:
        icons.closing.set()
        server.shutdown()
        server.server_close()
