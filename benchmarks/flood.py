"""Channel flood: with every live channel slot taken, what do /healthz and a sign-in answer?

    .venv/bin/python -m benchmarks.flood [--runs 3] [--channels 700] [--source DIR] [--no-write]

One `pushctl serve` (SQLite) with the common open-files limit of 1,024 (this
process lowers its own, and the server inherits it): a connection bound of 640,
of which 480 may be live channels. An attacker's client opens ``--channels``
live channels (35 accounts, 20 each, from 7 loopback addresses, 100 each: the
per-account and per-address limits) and keeps them open, never reading a byte
more than their first line. Then /healthz and a sign-in (POST /api/auth/login
with the right password) are timed, one at a time, 20 each. ``--source``: run
the server of another source tree (a `git archive` of an older commit) to
compare. Results are printed and written to docs/benchmarks.md ("Channel flood").
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import resource
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.fairness import spread
from benchmarks.processes import library_settings, start_server, stop_server
from benchmarks.report import write_section
from pushcore import build_services
from pushcore.domain.model import Plan
from tests.e2e.server import free_port

OPEN_FILES = 1024
PASSWORD = "a long passphrase of the owner"  # noqa: S105 (a throwaway account)
ADDRESSES = [f"127.0.0.{i}" for i in range(2, 9)]  # 7 addresses, 100 channels each
PER_ACCOUNT = 20
SAMPLES = 20


async def open_channel(port: int, token: str, source: str) -> tuple[int, Any]:
    """Open a channel from ``source``; its status and writer (None when refused)."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), 10
        )
        writer.write(
            f"GET /api/inbox/events HTTP/1.1\r\nHost: flood\r\n"
            f"Authorization: Bearer {token}\r\n\r\n".encode()
        )
        line = await asyncio.wait_for(reader.readline(), 10)
    except (OSError, TimeoutError):
        return 0, None
    status = int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0
    if status != 200:
        writer.close()
        return status, None
    return status, writer


def timed(client: httpx.Client, method: str, url: str, **kwargs: Any) -> tuple[int, float]:
    """Status and milliseconds of one request (status 0: no answer within 10 s)."""
    started = time.perf_counter()
    try:
        status = client.request(method, url, **kwargs).status_code
    except httpx.HTTPError:
        status = 0
    return status, (time.perf_counter() - started) * 1000


def open_channels(base: str) -> int:
    """pushcore_live_channels of the server (-1 when it does not answer)."""
    try:
        text = httpx.get(f"{base}/metrics", timeout=10).text
    except httpx.HTTPError:
        return -1
    for line in text.splitlines():
        if line.startswith("pushcore_live_channels "):
            return int(float(line.split()[1]))
    return -1


async def one_run(channels: int, source: Path | None) -> dict[str, Any]:
    """One server, one flood; what the flood and the timed requests got."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        services = build_services(library_settings(data_dir))
        try:
            services.people.create("owner", Plan.FREE, PASSWORD)
            accounts = [f"flood{i}" for i in range(-(-channels // PER_ACCOUNT))]
            tokens = [services.tokens.issue(a, timedelta(hours=1)) for a in accounts]
        finally:
            services.close()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(data_dir, port, {"PUSHCORE_RATE_LIMIT": "0"}, cwd=source)
        writers: list[Any] = []
        try:
            opened = await asyncio.gather(
                *(
                    open_channel(port, tokens[i // PER_ACCOUNT], ADDRESSES[i % len(ADDRESSES)])
                    for i in range(channels)
                )
            )
            statuses = Counter(status for status, _ in opened)
            writers = [w for _, w in opened if w is not None]
            held = await asyncio.to_thread(open_channels, base)
            login = {"account": "owner", "password": PASSWORD}
            with httpx.Client(timeout=10) as client:
                health = [timed(client, "GET", f"{base}/healthz") for _ in range(SAMPLES)]
                signin = [
                    timed(client, "POST", f"{base}/api/auth/login", json=login)
                    for _ in range(SAMPLES)
                ]
        finally:
            for writer in writers:
                writer.close()
            try:
                stop_server(server)
            except subprocess.TimeoutExpired:  # a server of before the clean stop
                server.kill()
                server.wait()
    return {"opened": statuses, "held": held, "healthz": health, "signin": signin}


def statuses(answers: list[tuple[int, float]]) -> str:
    """``200 x 20``, or each status with its count."""
    return counted(Counter(status for status, _ in answers))


def counted(counts: Counter[int]) -> str:
    """Each status (0: no answer) with its count."""
    return ", ".join(f"{status or 'none'} x {n}" for status, n in sorted(counts.items()))


def ms(runs: list[dict[str, Any]], key: str, pick: str) -> str:
    """The median (and range over runs) of each run's p50 or max latency for ``key``."""
    values = []
    for run in runs:
        times = [t for _, t in run[key]]
        values.append(statistics.median(times) if pick == "p50" else max(times))
    return spread(values)


def report(runs: list[dict[str, Any]], channels: int, source: Path | None) -> str:
    """The section of docs/benchmarks.md."""
    opened: Counter[int] = sum((run["opened"] for run in runs), Counter())
    held = sorted({run["held"] for run in runs})
    which = f"the server of `{source}`" if source else "this tree's server"
    command = f".venv/bin/python -m benchmarks.flood --runs {len(runs)} --channels {channels}"
    return f"""Command: `{command}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{which}; 2 cores shared with other work. One `pushctl serve` on SQLite per run, with
rate limiting off and an open-files limit of {OPEN_FILES} (so a connection bound of
640 and, with this change, 480 live channels). The flood: {channels} live channels
opened at once, 20 per account from 7 loopback addresses (100 each), kept open; then
{SAMPLES} GET /healthz and {SAMPLES} sign-ins (POST /api/auth/login, the right
password), one at a time. Latencies in ms: the median of the runs' p50 (or max),
with their range.

| figure | {len(runs)} runs |
|---|---|
| channel opens answered (all runs) | {counted(opened)} |
| channels the server held after the flood | {", ".join(str(h) for h in held)} |
| /healthz: statuses (all runs) | {statuses([a for run in runs for a in run["healthz"]])} |
| /healthz p50 / max | {ms(runs, "healthz", "p50")} / {ms(runs, "healthz", "max")} |
| sign-in: statuses (all runs) | {statuses([a for run in runs for a in run["signin"]])} |
| sign-in p50 / max | {ms(runs, "signin", "p50")} / {ms(runs, "signin", "max")} |
"""


def main() -> None:
    """Run the flood ``--runs`` times; print and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--channels", type=int, default=700)
    parser.add_argument("--source", type=Path, default=None)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    # The server inherits this limit (soft and hard: it raises its soft limit to the hard).
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    runs = []
    for _ in range(args.runs):
        runs.append(asyncio.run(one_run(args.channels, args.source)))
        print(runs[-1]["opened"], runs[-1]["held"], statuses(runs[-1]["healthz"]))
    body = report(runs, args.channels, args.source)
    print(body)
    if not args.no_write and args.source is None:
        write_section("Channel flood", body)


if __name__ == "__main__":
    main()
