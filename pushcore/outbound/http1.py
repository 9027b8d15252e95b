"""pushcore's own HTTP/1.1 for the URLs accounts give it: one kept-alive connection per
POST in flight, written and read with asyncio streams. The event sender posts through it
(one connection per lane worker, a few requests pipelined), and so does the webhook
gateway (a connection per request in flight, the answer taken at its head).

Why not aiohttp, as the other gateways use: a webhook or an event is one small POST of
one known shape whose answer is only a status (and a Retry-After), and aiohttp's
request and response machinery (its session, request and response objects, header
multidicts, timers and payload writers) was about 60% of the sender's CPU per event
(py-spy, 5,000 events), and half of the engine's event-loop CPU per webhook delivery
(docs/benchmarks.md, "Webhooks over pushcore's own HTTP/1.1"). Here a request is one
bytes write of a head built by string formatting, and an answer is a head split on
CRLF and a body read and dropped, about a third of that.

What it takes of a server is only HTTP/1.1 as RFC 9112 says: a status line,
headers, a body sized by Content-Length, chunked, or the connection's end;
interim 1xx answers skipped. Bounds, as an endpoint is the account's and may
answer anything: a head of at most :data:`MAX_HEAD_BYTES` (the whole answer's,
or the connection is dropped), a body read up to :data:`MAX_ANSWER_BYTES` (past
that the connection is closed rather than drained), a deadline for connecting
when the pool is given one, and the caller's deadline over connecting, writing
and reading. Redirects are never followed (a 3xx is an answer like any other
non-2xx).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import quote, urlsplit

import attrs

from pushcore.gateways._answer import MAX_ANSWER_BYTES, Answer
from pushcore.outbound.guard import Pinned, tls_context

_T = TypeVar("_T")

MAX_HEAD_BYTES = 16 * 1024
"""Status line and headers of one answer (and a chunk-size or trailer line) at most."""

# What a request target may hold as it is; anything else is percent-encoded.
_TARGET_SAFE = "/?&=%:@!$'()*+,;-._~"


class BadAnswer(ValueError):
    """The server's answer was not HTTP/1.1 as this client reads it, or too large."""


@attrs.frozen
class Target:
    """Where a lane's POSTs go: the pinned address, and the request's fixed lines."""

    host: str  # the address connected to (the checked one)
    port: int
    server_name: str | None  # TLS (SNI and the certificate's name); None for http
    head: str  # "POST <target> HTTP/1.1" and the Host line, CRLF-ended

    @classmethod
    def of(cls, pinned: Pinned) -> Target:
        """The target of a pinned URL."""
        parts = urlsplit(pinned.url)
        path = quote(parts.path or "/", safe=_TARGET_SAFE)
        if parts.query:
            path += "?" + quote(parts.query, safe=_TARGET_SAFE)
        https = parts.scheme == "https"
        host = parts.hostname
        assert host is not None  # a pinned URL holds the address
        port = parts.port or (443 if https else 80)
        head = f"POST {path} HTTP/1.1\r\nHost: {pinned.host_header}\r\n"
        return cls(host, port, pinned.server_name if https else None, head)


@attrs.frozen
class Head:
    """An answer's status line and headers (names in lowercase), its body not yet read."""

    version: str
    status: int
    fields: dict[str, str]

    @property
    def retry_after(self) -> str | None:
        """The Retry-After header, if any."""
        return self.fields.get("retry-after")


class Connection:
    """One connection to a target; POSTs one after another, reopened when it breaks."""

    def __init__(
        self, target: Target, tls: ssl.SSLContext | None, connect_timeout: float | None = None
    ) -> None:
        self.target = target
        self._tls = tls
        self._connect_timeout = connect_timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    def request(self, headers: str, body: bytes) -> bytes:
        """The bytes of a POST of ``body`` with ``headers`` (``Name: value`` lines, each
        CRLF-ended)."""
        return f"{self.target.head}{headers}Content-Length: {len(body)}\r\n\r\n".encode() + body

    async def post(self, headers: str, body: bytes) -> Answer:
        """POST ``body`` with ``headers``; its answer.

        Raises OSError (or asyncio.IncompleteReadError) when the server could not
        be reached or broke off, :class:`BadAnswer` for an answer it cannot read.
        A kept-alive connection the server closed meanwhile is opened again once.
        """
        answers: list[Answer] = []
        await self.post_many([self.request(headers, body)], answers.append)
        return answers[0]

    async def post_many(self, requests: list[bytes], answered: Callable[[Answer], None]) -> int:
        """Send ``requests`` (from :meth:`request`) at once, HTTP/1.1 pipelining, and hand
        their answers to ``answered`` in order as each is read; how many were answered.

        Why: on loopback or a fast network the sender's largest cost per event was its
        own send (a system call, and the TCP stack's work for it); one write of a few
        requests pays it once. RFC 9112 (9.3.2) has every HTTP/1.1 server take
        pipelined requests and answer them in order.

        Fewer than all are answered when the server ended the connection after an
        answer (``Connection: close``, or closed it without one): the rest may not
        have been read, so the caller sends them again. Raises as :meth:`post` does
        when nothing was answered, and BadAnswer for an answer it cannot read (those
        before it stand); a kept-alive connection found closed before any answer is
        opened again once, and all sent again.
        """
        count = 0

        def note(answer: Answer) -> None:
            nonlocal count
            count += 1
            answered(answer)

        await self._reopening(lambda: self._exchange(requests, note), lambda: count > 0)
        return count

    async def post_head(self, headers: str, body: bytes) -> Head:
        """POST ``body`` with ``headers``; the answer's head, as soon as it is read.

        For a caller to whom the status is the answer: a receiver that sends its
        status at once and then trickles a body must not hold it. Then either
        :meth:`drop_body` (the connection may carry the next POST after it) or
        :meth:`close`. Raises as :meth:`post` does.
        """
        heads: list[Head] = []

        async def exchange() -> None:
            reader = await self._write(self.request(headers, body))
            heads.append(await self._read(_read_head(reader)))

        await self._reopening(exchange, lambda: bool(heads))
        return heads[0]

    async def drop_body(self, head: Head) -> None:
        """Read and drop the body of the answer ``head`` began; the connection is closed
        when it may not carry another request (raises as :meth:`post` does)."""
        assert self._reader is not None
        _, keep = await self._read(_read_body(self._reader, head))
        if not keep:
            self.close()

    async def _reopening(
        self, exchange: Callable[[], Awaitable[None]], answered: Callable[[], bool]
    ) -> None:
        """Run ``exchange``; once more on a new connection when a kept-alive one was found
        closed before anything was ``answered``."""
        for again in (False, True):
            reused = self._writer is not None
            try:
                await exchange()
                return
            except (OSError, asyncio.IncompleteReadError) as exc:
                self.close()
                if answered():
                    return  # the rest unanswered
                stale = not isinstance(exc, asyncio.IncompleteReadError) or not exc.partial
                # Nothing came back on a connection that had served before: it was closed
                # while idle (a keep-alive timeout); no request reached a server that answers.
                if again or not (reused and stale):
                    raise

    async def _write(self, data: bytes) -> asyncio.StreamReader:
        """Write ``data`` (opening the connection first if need be); the reader."""
        if self._writer is None:
            target = self.target
            async with asyncio.timeout(self._connect_timeout):
                self._reader, self._writer = await asyncio.open_connection(
                    target.host,
                    target.port,
                    ssl=self._tls if target.server_name is not None else None,
                    server_hostname=target.server_name,
                    limit=MAX_HEAD_BYTES,
                )
        assert self._reader is not None
        self._writer.write(data)
        return self._reader

    async def _read(self, reading: Awaitable[_T]) -> _T:
        """What ``reading`` reads; an answer it cannot read closes the connection."""
        try:
            return await reading
        except (BadAnswer, asyncio.LimitOverrunError) as exc:
            self.close()
            raise BadAnswer(str(exc)) from exc

    async def _exchange(self, requests: list[bytes], answered: Callable[[Answer], None]) -> None:
        reader = await self._write(requests[0] if len(requests) == 1 else b"".join(requests))
        for _ in requests:
            answer, keep = await self._read(_read_answer(reader))
            if not keep:
                self.close()  # any requests after it are not answered on this connection
            answered(answer)
            if not keep:
                return

    @property
    def is_open(self) -> bool:
        """Whether the connection is open (kept alive after its last answer)."""
        return self._writer is not None

    def close(self) -> None:
        """Drop the connection (the next POST opens another)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        self._reader = self._writer = None


class Pool:
    """The sender's open connections: each worker holds one while it posts (``held``, a
    list of at most one), and gives it back kept alive; those no worker holds wait by
    target for the next worker posting there (a connection per claim of a few events
    cost a fifth of the sender's CPU), closed once idle too long or with the pool."""

    def __init__(self, tls: ssl.SSLContext | None, connect_timeout: float | None = None) -> None:
        self._tls = tls  # None: the system's roots, loaded at the first https target
        self._connect_timeout = connect_timeout
        self._open: set[Connection] = set()
        self._idle: dict[Target, list[tuple[float, Connection]]] = {}

    def take(self, target: Target, held: list[Connection]) -> Connection:
        """The worker's connection to ``target`` (another when the address changed)."""
        if held and held[0].target == target:
            return held[0]
        for old in held:  # its address changed
            self._drop(old)
        idle = self._idle.get(target)
        if idle:
            held[:] = [idle.pop()[1]]  # the most recently used: least likely closed
            return held[0]
        tls = None
        if target.server_name is not None:  # the system's roots loaded for https only
            if self._tls is None:
                self._tls = tls_context(None)
            tls = self._tls
        held[:] = [Connection(target, tls, self._connect_timeout)]
        self._open.add(held[0])
        return held[0]

    def give_back(self, held: list[Connection]) -> None:
        """A worker's connection, kept for the next worker posting there if still open."""
        for connection in held:
            if connection.is_open:
                idle = self._idle.setdefault(connection.target, [])
                idle.append((time.monotonic(), connection))
            else:
                self._open.discard(connection)

    def close_idle(self, before: float) -> None:
        """Close the connections no worker has used since ``before`` (monotonic)."""
        for target, idle in list(self._idle.items()):
            while idle and idle[0][0] < before:
                self._drop(idle.pop(0)[1])
            if not idle:
                del self._idle[target]

    def close(self) -> None:
        """Close every connection."""
        for connection in self._open:
            connection.close()
        self._open.clear()
        self._idle.clear()

    def _drop(self, connection: Connection) -> None:
        connection.close()
        self._open.discard(connection)


async def _read_answer(reader: asyncio.StreamReader) -> tuple[Answer, bool]:
    """The answer, and whether the connection may carry another request."""
    head = await _read_head(reader)
    body, keep = await _read_body(reader, head)
    return Answer(head.status, head.retry_after, body), keep


async def _read_body(reader: asyncio.StreamReader, head: Head) -> tuple[bytes, bool]:
    """The body of the answer ``head`` began (up to MAX_ANSWER_BYTES), and whether the
    connection may carry another request."""
    fields, status = head.fields, head.status
    keep = head.version == "HTTP/1.1" and "close" not in fields.get("connection", "").lower()
    if "transfer-encoding" in fields:
        if fields["transfer-encoding"].lower().rsplit(",", 1)[-1].strip() == "chunked":
            body, whole = await _chunked(reader)
        else:  # delimited by the connection's end
            body, whole = await reader.read(MAX_ANSWER_BYTES), False
        keep = keep and whole
    elif "content-length" in fields:
        size = fields["content-length"]
        if not size.isdigit():
            raise BadAnswer("Content-Length is not a number")
        length = int(size)
        body = await reader.readexactly(min(length, MAX_ANSWER_BYTES))
        keep = keep and length <= MAX_ANSWER_BYTES
    elif status in (204, 304):
        body = b""
    else:
        body, keep = await reader.read(MAX_ANSWER_BYTES), False
    return body, keep


async def _read_head(reader: asyncio.StreamReader) -> Head:
    """The final answer's version, status and headers (names in lowercase); interim
    1xx answers are passed over."""
    while True:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if version not in ("HTTP/1.1", "HTTP/1.0") or not (code.isdigit() and len(code) == 3):
            raise BadAnswer(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        status = int(code)
        if status == 101:
            raise BadAnswer("101 Switching Protocols to a POST")
        if not 100 <= status < 200:
            break
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BadAnswer("a header line without a name")
        name, value = name.lower(), value.strip()
        if name in fields and name in ("content-length", "transfer-encoding"):
            raise BadAnswer(f"{name} twice")
        fields[name] = value
    return Head(version, status, fields)


async def _chunked(reader: asyncio.StreamReader) -> tuple[bytes, bool]:
    """A chunked body up to MAX_ANSWER_BYTES; whether it was read to its end."""
    body = bytearray()
    while True:
        line = await reader.readuntil(b"\r\n")
        size = line.split(b";", 1)[0].strip()
        if not size or len(size) > 8 or size.strip(b"0123456789abcdefABCDEF"):
            raise BadAnswer("a chunk size that is not hexadecimal")
        length = int(size, 16)
        if length == 0:
            # Trailers, up to the empty line.
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return bytes(body), True
        if len(body) + length > MAX_ANSWER_BYTES:
            return bytes(body), False  # not drained: the connection is closed
        body += await reader.readexactly(length)
        if await reader.readexactly(2) != b"\r\n":
            raise BadAnswer("a chunk not followed by CRLF")
