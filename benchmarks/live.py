"""Live channels: the memory an open channel costs a server, and one stream send's
arrival on every channel.

    .venv/bin/python -m benchmarks.live [--channels 10000]

A `pushctl serve` process (SQLite) gets ``--channels`` accounts, each with one
open GET /api/inbox/events (raw sockets from one asyncio client). Printed: the
server's resident memory before and after (per channel), then for one stream
send to all of them, how long until the first and the last channel had the
event. Printed, not written to docs (docs/architecture.md quotes a run).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

from benchmarks.processes import free_port, library_settings, rss_mb, start_server, stop_server
from pushcore import build_services
from pushcore.domain.inputs import NewApiKey, NewStream
from pushcore.domain.scopes import Scope


async def open_channel(port: int, token: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A channel whose head and first line (``retry: 2000``) have arrived."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /api/inbox/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await reader.readuntil(b"retry: 2000")
    return reader, writer


async def first_event(reader: asyncio.StreamReader, started: float) -> float:
    """Seconds from ``started`` until a notification event arrives."""
    await reader.readuntil(b"event: notification")
    return time.monotonic() - started


async def run(port: int, pid: int, tokens: list[str], send: httpx.Request) -> None:
    opened = [await open_channel(port, tokens[0])]
    await asyncio.sleep(1.0)
    before = rss_mb(pid)
    for start in range(1, len(tokens), 200):
        opened += await asyncio.gather(
            *(open_channel(port, t) for t in tokens[start : start + 200])
        )
    await asyncio.sleep(2.0)
    after = rss_mb(pid)
    per = (after - before) * 1024 / (len(tokens) - 1)
    print(
        f"{len(tokens):,} channels: server RSS {before:.0f} MB -> {after:.0f} MB, {per:.1f} KB each"
    )
    async with httpx.AsyncClient() as client:
        started = time.monotonic()
        waits = [asyncio.ensure_future(first_event(r, started)) for r, _ in opened]
        answer = await client.send(send)
        assert answer.status_code == 201, answer.text
        arrivals = sorted(await asyncio.gather(*waits))
    print(
        f"one stream send to {len(tokens):,} subscribers: the first channel had it after"
        f" {arrivals[0] * 1000:.0f} ms, the median {arrivals[len(arrivals) // 2] * 1000:.0f} ms,"
        f" the last {arrivals[-1] * 1000:.0f} ms"
    )
    for _, writer in opened:
        writer.close()


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--channels", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        settings = library_settings(data_dir)
        services = build_services(settings)
        stream = asyncio.run(services.streams.create("publisher", NewStream(name="Bench"))).stream
        accounts = [f"acct{i:05d}" for i in range(args.channels)]
        for account in accounts:
            services.streams.subscribe(account, stream.code)
        tokens = [services.tokens.issue(a, timedelta(hours=2)) for a in accounts]
        key = services.keys.create(
            "publisher", NewApiKey(name="bench", scopes=(Scope.NOTIFICATIONS_WRITE,))
        ).secret
        services.close()
        port = free_port()
        server = start_server(data_dir, port, {"PUSHCORE_RATE_LIMIT": "0"}, log=data_dir / "log")
        try:
            send = httpx.Request(
                "POST",
                f"http://127.0.0.1:{port}/api/streams/{stream.id}/send",
                json={"title": "to everyone"},
                headers={"X-API-Key": key},
            )
            asyncio.run(run(port, server.pid, tokens, send))
        finally:
            stop_server(server)


if __name__ == "__main__":
    main()
