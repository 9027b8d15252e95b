"""Live channels: the memory an open channel costs a server, and one stream send's
arrival on every channel.

    .venv/bin/python -m benchmarks.live [--channels 10000] [--worker]
    .venv/bin/python -m benchmarks.live --due-rate 1000 [--due-count 10000] [--worker]

A `pushctl serve` process (SQLite) gets ``--channels`` accounts, each with one
open GET /api/inbox/events (raw sockets from one asyncio client). Printed: the
server's resident memory before and after (per channel), its CPU time over 10 s
of idle with every channel open (keep-alives only), then for one stream send to
all of them, how long until the first and the last channel had the event. With
``--worker``, the server is `serve --no-engine` and a `pushctl worker` runs the
engine beside it. With ``--due-rate``, instead: notifications of a hundred
accounts, each with a `live` device and an open channel, fall due at that rate,
and each one's due time to its event on the channel is timed (p50, p99).
Printed, not written to docs (docs/benchmarks.md quotes runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks.processes import (
    cpu_seconds,
    free_port,
    library_settings,
    rss_mb,
    start_server,
    start_worker,
    stop_server,
)
from pushcore import build_services
from pushcore.converter import structure_request
from pushcore.domain.inputs import NewApiKey, NewDevice, NewNotification, NewStream
from pushcore.domain.scopes import Scope

Channel = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def open_channel(port: int, token: str, last_id: str | None = None) -> Channel:
    """A channel whose head and first line (``retry: 2000``) have arrived; resuming
    after ``last_id`` when given."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    resume = f"Last-Event-ID: {last_id}\r\n" if last_id else ""
    writer.write(
        f"GET /api/inbox/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        f"Accept: text/event-stream\r\n{resume}\r\n".encode()
    )
    await reader.readuntil(b"retry: 2000")
    return reader, writer


async def next_entry(reader: asyncio.StreamReader) -> str:
    """The id of the next notification event (its ``id:`` line comes first)."""
    head = await reader.readuntil(b"event: notification")
    await reader.readuntil(b"\n\n")  # its data
    return head.rsplit(b"id: ", 1)[1].split(b"\n", 1)[0].decode()


async def first_event(reader: asyncio.StreamReader, started: float) -> tuple[float, str]:
    """Seconds from ``started`` until a notification event arrives, and its id."""
    entry = await next_entry(reader)
    return time.monotonic() - started, entry


async def nothing_more(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether no other notification event arrives within ``seconds``."""
    try:
        await asyncio.wait_for(reader.readuntil(b"event: notification"), seconds)
    except TimeoutError:
        return True
    return False


async def storm(port: int, tokens: list[str], seen: list[str], send: httpx.Request) -> None:
    """Every channel is dropped, a send happens while all are away, and every one
    resumes with Last-Event-ID at once: each must get exactly that send, once."""
    async with httpx.AsyncClient() as client:
        answer = await client.send(send)
        assert answer.status_code == 201, answer.text
    started = time.monotonic()

    async def resume(token: str, last_id: str) -> tuple[float, str, Channel]:
        channel = await open_channel(port, token, last_id)
        entry = await next_entry(channel[0])
        return time.monotonic() - started, entry, channel

    resumed = await asyncio.gather(*(resume(t, i) for t, i in zip(tokens, seen, strict=True)))
    live = max(elapsed for elapsed, _, _ in resumed)
    new = {entry for _, entry, _ in resumed}
    repeated = sum(entry == old for (_, entry, _), old in zip(resumed, seen, strict=True))
    quiet = await asyncio.gather(*(nothing_more(c[0], 1.0) for _, _, c in resumed))
    print(
        f"reconnect storm: {len(resumed):,} channels resumed with Last-Event-ID at once; all"
        f" had the send made while they were away after {live * 1000:.0f} ms;"
        f" {len(new):,} distinct new entries (one per account), {repeated} repeated,"
        f" {quiet.count(False)} with anything more within 1 s"
    )
    for _, _, (_, writer) in resumed:
        writer.close()


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
    idle_from = cpu_seconds(pid)
    await asyncio.sleep(10.0)
    idle = (cpu_seconds(pid) - idle_from) / 10.0
    print(f"idle with them open: the server used {idle * 100:.1f}% of a core")
    async with httpx.AsyncClient() as client:
        started = time.monotonic()
        waits = [asyncio.ensure_future(first_event(r, started)) for r, _ in opened]
        answer = await client.send(send)
        assert answer.status_code == 201, answer.text
        got = await asyncio.gather(*waits)
    arrivals = sorted(elapsed for elapsed, _ in got)
    print(
        f"one stream send to {len(tokens):,} subscribers: the first channel had it after"
        f" {arrivals[0] * 1000:.0f} ms, the median {arrivals[len(arrivals) // 2] * 1000:.0f} ms,"
        f" the last {arrivals[-1] * 1000:.0f} ms"
    )
    for _, writer in opened:
        writer.close()
    await asyncio.sleep(0.5)
    await storm(port, tokens, [entry for _, entry in got], send)


async def arrivals(port: int, tokens: list[str], due: dict[str, float]) -> list[float]:
    """Milliseconds from each notification's due time to its event on an open channel,
    for every notification in ``due`` (by id), over channels of ``tokens``."""
    channels = [await open_channel(port, t) for t in tokens]
    late: list[float] = []

    async def follow(reader: asyncio.StreamReader) -> None:
        while len(late) < len(due):
            await reader.readuntil(b"event: notification")
            data = await reader.readuntil(b"\n\n")
            now = time.time()
            entry = json.loads(data.split(b"data: ", 1)[1])
            late.append((now - due[entry["notificationId"]]) * 1000)

    tasks = [asyncio.ensure_future(follow(reader)) for reader, _ in channels]
    deadline = max(due.values()) + 30
    while len(late) < len(due) and time.time() < deadline:
        await asyncio.sleep(0.2)
    for task in tasks:
        task.cancel()
    for _, writer in channels:
        writer.close()
    return late


def due_latency(rate: float, count: int, accounts: int, worker: bool) -> None:
    """``count`` notifications of ``accounts`` accounts (a live device and an open
    channel each) falling due at ``rate`` per second: due time to event, p50 and p99."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        services = build_services(library_settings(data_dir))
        names = [f"acct{i:05d}" for i in range(accounts)]
        for name in names:
            device = structure_request(NewDevice, {"platform": "live", "token": f"app-{name}"})
            services.devices.register(name, device)
        tokens = [services.tokens.issue(a, timedelta(hours=2)) for a in names]
        start = datetime.now(UTC) + timedelta(seconds=25)
        due: dict[str, float] = {}

        async def create_all() -> None:
            for i in range(count):
                at = start + timedelta(seconds=i / rate)
                request = structure_request(
                    NewNotification, {"title": f"n{i}", "scheduledAt": at.isoformat()}
                )
                made = await services.notifications.create(names[i % accounts], request)
                due[made.id] = at.timestamp()

        asyncio.run(create_all())
        services.close()
        port = free_port()
        limits_off = {"PUSHCORE_RATE_LIMIT": "0"}
        log = data_dir / "log"
        server = start_server(data_dir, port, limits_off, engine=not worker, log=log)
        helper = start_worker(data_dir, log, limits_off) if worker else None
        try:
            if time.time() > start.timestamp() - 2:
                raise RuntimeError("setting up took too long: fewer notifications or accounts")
            late = sorted(asyncio.run(arrivals(port, tokens, due)))
        finally:
            if helper is not None:
                stop_server(helper)
            stop_server(server)
    where = "a `pushctl worker` beside `serve --no-engine`" if worker else "one `pushctl serve`"
    print(
        f"due time to event, {count:,} notifications at {rate:,.0f}/s over {accounts} open"
        f" channels, {where}: {len(late):,} arrived; p50 {late[len(late) // 2]:.1f} ms,"
        f" p99 {late[int(len(late) * 0.99)]:.1f} ms, max {late[-1]:.1f} ms"
    )


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--worker", action="store_true", help="the engine in a pushctl worker")
    parser.add_argument("--due-rate", type=float, help="instead: due time to event at this rate")
    parser.add_argument("--due-count", type=int, default=10_000)
    parser.add_argument("--due-accounts", type=int, default=100)
    args = parser.parse_args()
    if args.due_rate:
        due_latency(args.due_rate, args.due_count, args.due_accounts, args.worker)
        return
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
        limits_off = {"PUSHCORE_RATE_LIMIT": "0"}
        log = data_dir / "log"
        server = start_server(data_dir, port, limits_off, engine=not args.worker, log=log)
        worker = start_worker(data_dir, log, limits_off) if args.worker else None
        try:
            send = httpx.Request(
                "POST",
                f"http://127.0.0.1:{port}/api/streams/{stream.id}/send",
                json={"title": "to everyone"},
                headers={"X-API-Key": key},
            )
            asyncio.run(run(port, server.pid, tokens, send))
        finally:
            if worker is not None:
                stop_server(worker)
            stop_server(server)


if __name__ == "__main__":
    main()
