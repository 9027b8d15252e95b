"""Replacing a stream send on open live channels: until the last channel has the new entry.

    .venv/bin/python -m benchmarks.replace_live [--channels 10000] [--rounds 3] [--busy 8]
        [--quick] [--spy STACKS] [--no-write]

One `pushctl serve` (SQLite, rate limiting off) with ``--channels`` accounts
subscribed to one stream, each with one open GET /api/inbox/events (raw
sockets from one asyncio client, 100 from each loopback source address: the
server's bound per client address). A stream
send reaches every channel; then, ``rounds`` times, ``POST
/api/notifications/:id/replace`` (a new title) of the latest send is timed
from the request until the last channel has had `event: withdrawn` naming
its old entry and then `event: notification` of the new one (`replaces`: the
old entry's id). Counted per round: channels whose new entry came without the
old one's withdrawal before it, or naming another entry (none may show the
old). ``--busy N``: meanwhile, wrk keeps N connections of `POST
/api/notifications` (another account's) in flight against the same server.
API.md's goal (issue 27): the last channel within 2 s at 10,000 subscribers.
Printed and written to docs/benchmarks.md ("After sending: replacing on live
channels").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.fairness import spread
from benchmarks.ingest import ITEM, drive, lua
from benchmarks.live import Channel
from benchmarks.processes import cpu_seconds, free_port, library_settings, start_server, stop_server
from benchmarks.profile import PY_SPY
from benchmarks.report import write_section
from pushcore import build_services
from pushcore.domain.inputs import NewApiKey, NewStream
from pushcore.domain.scopes import Scope

GOAL = 2.0  # seconds, at 10,000 subscribers
PER_ADDRESS = 100  # the server's bound on open channels per client address


def source_of(index: int) -> str:
    """The loopback address channel ``index`` comes from: 100 channels an address."""
    group = index // PER_ADDRESS
    return f"127.1.{group // 250}.{group % 250 + 1}"


async def open_channel(port: int, token: str, index: int) -> Channel:
    """A channel (as benchmarks/live.py opens one) from its own loopback source address."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, local_addr=(source_of(index), 0)
    )
    writer.write(
        f"GET /api/inbox/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await reader.readuntil(b"retry: 2000")
    return reader, writer


async def next_notification(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, Any]]:
    """Everything before the next `notification` event, and that event's entry."""
    head = await reader.readuntil(b"event: notification")
    data = await reader.readuntil(b"\n\n")
    entry: dict[str, Any] = json.loads(data.split(b"data: ", 1)[1])
    return head, entry


async def replaced(
    reader: asyncio.StreamReader, old: str, started: float
) -> tuple[float, str, bool]:
    """Seconds from ``started`` to the new entry, its id, and whether the old entry was
    withdrawn before it and the new one names it in ``replaces``."""
    head, entry = await next_notification(reader)
    elapsed = time.monotonic() - started
    withdrawn = b"event: withdrawn" in head and f'"{old}"'.encode() in head
    return elapsed, entry["id"], withdrawn and entry.get("replaces") == old


async def rounds_on(
    base: str, key: str, stream_id: str, channels: list[Channel], rounds: int
) -> list[dict[str, Any]]:
    """The original send, then ``rounds`` replacements, each timed on every channel."""
    async with httpx.AsyncClient(base_url=base, headers={"X-API-Key": key}, timeout=120) as client:
        waits = [asyncio.ensure_future(next_notification(r)) for r, _ in channels]
        sent = await client.post(f"/api/streams/{stream_id}/send", json={"title": "v0"})
        assert sent.status_code == 201, sent.text
        latest = sent.json()["notificationId"]
        entries = [entry["id"] for _, entry in await asyncio.gather(*waits)]
        results = []
        for n in range(1, rounds + 1):
            started = time.monotonic()
            tasks = [
                asyncio.ensure_future(replaced(r, old, started))
                for (r, _), old in zip(channels, entries, strict=True)
            ]
            answer = await client.post(
                f"/api/notifications/{latest}/replace", json={"title": f"v{n}"}
            )
            answered = time.monotonic() - started
            assert answer.status_code == 201, answer.text
            latest = answer.json()["id"]
            got = await asyncio.gather(*tasks)
            arrivals = sorted(elapsed for elapsed, _, _ in got)
            results.append(
                {
                    "answered": answered,
                    "first": arrivals[0],
                    "median": arrivals[len(arrivals) // 2],
                    "last": arrivals[-1],
                    "bad": sum(not ok for _, _, ok in got),
                }
            )
            entries = [entry for _, entry, _ in got]
            print(
                f"round {n}: answered {answered * 1000:.0f} ms; last channel"
                f" {arrivals[-1] * 1000:.0f} ms; {results[-1]['bad']} showing the old",
                flush=True,
            )
            await asyncio.sleep(0.5)
    return results


@contextlib.contextmanager
def busy(base: str, key: str, connections: int) -> Iterator[None]:
    """wrk creating notifications at ``connections`` connections meanwhile (0: nothing)."""
    if not connections:
        yield
        return
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "create.lua"
        script.write_text(lua(json.dumps(ITEM)))

        def loop() -> None:
            while not stop.is_set():
                drive([f"{base}/api/notifications"], connections, 2, key, script)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(10)


@contextlib.contextmanager
def spied(pid: int, out: Path | None) -> Iterator[None]:
    """py-spy's collapsed stacks of ``pid`` into ``out`` meanwhile (None: no profile)."""
    if out is None:
        yield
        return
    command = [str(PY_SPY), "record", "-p", str(pid), "-r", "50", "-f", "raw", "-o", str(out)]
    spy = subprocess.Popen([*command, "--nonblocking"], stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)


def run(
    channels: int, rounds: int, load: int, spy: Path | None = None
) -> tuple[list[dict[str, Any]], float]:
    """One fresh server with ``channels`` subscribers on open channels; the rounds, and
    the server's CPU seconds over them."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        services = build_services(library_settings(data_dir))
        stream = asyncio.run(services.streams.create("publisher", NewStream(name="Bench"))).stream
        accounts = [f"acct{i:05d}" for i in range(channels)]
        for account in accounts:
            services.streams.subscribe(account, stream.code)
        tokens = [services.tokens.issue(a, timedelta(hours=2)) for a in accounts]
        scopes = (Scope.NOTIFICATIONS_WRITE, Scope.NOTIFICATIONS_READ)
        key = services.keys.create("publisher", NewApiKey(name="bench", scopes=scopes)).secret
        other = services.keys.create("busy", NewApiKey(name="busy", scopes=scopes)).secret
        services.close()
        port = free_port()
        server = start_server(data_dir, port, log=data_dir / "log")
        base = f"http://127.0.0.1:{port}"
        try:

            async def scenario() -> tuple[list[dict[str, Any]], float]:
                opened: list[Channel] = []
                for start in range(0, len(tokens), 200):
                    batch = enumerate(tokens[start : start + 200], start)
                    opened += await asyncio.gather(*(open_channel(port, t, i) for i, t in batch))
                cpu = cpu_seconds(server.pid)
                with busy(base, other, load), spied(server.pid, spy):
                    results = await rounds_on(base, key, stream.id, opened, rounds)
                used = cpu_seconds(server.pid) - cpu
                for _, writer in opened:
                    writer.close()
                return results, used

            return asyncio.run(scenario())
        finally:
            stop_server(server)


def report(results: list[dict[str, Any]], cpu: float, args: argparse.Namespace) -> str:
    """The docs/benchmarks.md section."""
    ms = {k: [r[k] * 1000 for r in results] for k in ("answered", "first", "median", "last")}
    bad = sum(r["bad"] for r in results)
    command = f".venv/bin/python -m benchmarks.replace_live --channels {args.channels}"
    command += f" --rounds {args.rounds} --busy {args.busy}"
    load = f"wrk creating at {args.busy} connections meanwhile" if args.busy else "no other load"
    uptime = subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout
    uptime = uptime.strip()
    return "\n".join(
        [
            f"Command: `{command}`",
            "",
            f"Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python"
            f" {platform.python_version()}, 2 cores ({uptime.split('load', 1)[-1].strip()})."
            f" One `pushctl serve` on SQLite, {args.channels:,} subscribers each with an open"
            f" live channel, {load}; {len(results)} replacements of the latest send, one after"
            " another; median (lowest-highest) in ms from the replace request:",
            "",
            "| answered (201) | first channel | median channel | last channel | channels"
            " showing the old | goal (last) |",
            "|---|---|---|---|---|---|",
            f"| {spread(ms['answered'])} | {spread(ms['first'])} | {spread(ms['median'])}"
            f" | {spread(ms['last'])} | **{bad}** | {GOAL * 1000:.0f} |",
            "",
            f"Server CPU over the rounds: {cpu:.1f} s.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="wrk connections creating meanwhile")
    parser.add_argument("--quick", action="store_true", help="1,000 channels, 2 rounds")
    parser.add_argument("--spy", type=Path, help="py-spy's collapsed stacks of the server here")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.channels, args.rounds = 1000, 2
    results, cpu = run(args.channels, args.rounds, args.busy, args.spy)
    text = report(results, cpu, args)
    print(text)
    if not args.no_write:
        write_section("After sending: replacing on live channels", text)


if __name__ == "__main__":
    main()
