"""After sending: PATCH against create, and 1,000 PATCHes racing the due instant.

    .venv/bin/python -m benchmarks.edits [--runs 3] [--count 1000] [--connections 32]
        [--seconds 5] [--no-write]

Each run starts a fresh `pushctl serve` (SQLite, rate limiting off) whose one
account has one webhook device at a raw asyncio receiver (benchmarks/receiver.py).

Throughput: ``count`` notifications an hour ahead are made first; then the load
client (benchmarks/load.py, a process of its own) keeps ``connections`` requests
in flight for ``seconds``: POST /api/notifications, then PATCH
/api/notifications/:id (a new title) of those made first, in turn. The issue's
target: a PATCH within 10% of a create.

The race: ``count`` notifications due together at T (a few seconds ahead); each
gets one PATCH of its title, sent from T - 20 ms spread over 40 ms (the
issue's race: within 20 ms of the due time), all of them in flight at once.
API.md: either the PATCH answers 200 and the device gets
the new title, or it answers 409 `not_editable` and the device gets the old one;
never a mix, never twice. Counted: each answer, the deliveries whose title does
not match their answer, the deliveries beyond one per notification, and the
PATCHes' latency. Results are printed and written to docs/benchmarks.md
(section "After sending: edits").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from benchmarks.fairness import api_key, spread
from benchmarks.load import measured as load
from benchmarks.processes import free_port, start_server, stop_server
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section

SETTINGS = {"PUSHCORE_RATE_LIMIT": "0"}
LEAD = 4.0  # seconds from the race's set-up to its due instant
WINDOW = 0.04  # the race's PATCHes are sent over this many seconds around it


def make(base: str, key: str, count: int, timing: dict[str, Any]) -> list[str]:
    """``count`` notifications titled "rev1" with ``timing``, in batches; their ids."""
    ids: list[str] = []
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=60) as client:
        for start in range(0, count, 500):
            items = [{"title": "rev1", **timing} for _ in range(start, min(count, start + 500))]
            answer = client.post("/api/notifications/batch", json={"notifications": items})
            answer.raise_for_status()
            ids += [n["id"] for n in answer.json()["items"]]
    return ids


def throughput(base: str, key: str, count: int, connections: int, seconds: float) -> dict[str, Any]:
    """Creates a second, then PATCHes a second, with their statuses."""
    ids = make(base, key, count, {"delay": "custom", "customDelay": 3600})
    url = f"{base}/api/notifications"
    created = load(
        url, key, connections, seconds, "--post", json.dumps({"title": "t", "delay": "1h"})
    )
    with tempfile.NamedTemporaryFile("w", suffix=".ids", delete=False) as file:
        file.write("\n".join(ids))
    edited = load(
        url, key, connections, seconds, "--patch", json.dumps({"title": "e"}), "--ids", file.name
    )
    Path(file.name).unlink()
    return {"create": created, "patch": edited}


async def race(
    base: str, key: str, ids: list[str], due: float
) -> tuple[dict[str, int], list[float]]:
    """One PATCH per notification around ``due`` (epoch seconds); each one's status and
    the latencies."""
    statuses: dict[str, int] = {}
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=200)
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(index: int, notification_id: str) -> None:
            at = due - WINDOW / 2 + WINDOW * index / len(ids)
            await asyncio.sleep(max(0.0, at - time.time()))
            started = time.monotonic()
            async with session.patch(
                f"{base}/api/notifications/{notification_id}",
                data=json.dumps({"title": "rev2"}),
                headers=headers,
            ) as response:
                await response.read()
                statuses[notification_id] = response.status
            latencies.append(time.monotonic() - started)

        await asyncio.gather(*(one(i, n) for i, n in enumerate(ids)))
    return statuses, latencies


def run_once(count: int, connections: int, seconds: float) -> dict[str, Any]:
    """One fresh server: the throughput, then the race; the figures."""
    receiver = BenchReceiver(keep_bodies=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        data, port = Path(tmp) / "data", free_port()
        process = start_server(data, port, SETTINGS, log=Path(tmp) / "server.log")
        base = f"http://127.0.0.1:{port}"
        try:
            key = api_key(base, data, "bench")
            hook = {"token": f"http://127.0.0.1:{receiver.port}/hook", "platform": "webhook"}
            httpx.post(
                f"{base}/api/devices", json=hook, headers={"X-API-Key": key}
            ).raise_for_status()
            rates = throughput(base, key, count, connections, seconds)
            due = time.time() + LEAD
            at = datetime.fromtimestamp(due, UTC).isoformat(timespec="milliseconds")
            ids = make(base, key, count, {"scheduledAt": at.replace("+00:00", "Z")})
            statuses, latencies = asyncio.run(race(base, key, ids, due))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(_raced(receiver, ids)) < count:
                time.sleep(0.2)
            time.sleep(2)  # anything sent twice would come now
        finally:
            stop_server(process)
            receiver.stop()
    bodies = _raced(receiver, ids)
    per: Counter[str] = Counter(b["notificationId"] for b in bodies)
    wrong = sum(
        1
        for b in bodies
        if b["title"] != ("rev2" if statuses.get(b["notificationId"]) == 200 else "rev1")
    )
    arrivals = [at for at, n, _ in receiver.received if n in set(ids)]
    return {
        "create": rates["create"],
        "patch": rates["patch"],
        "answers": Counter(statuses.values()),
        "delivered": len(per),
        "twice": sum(n - 1 for n in per.values()),
        "wrong": wrong,
        "latency": sorted(latencies),
        "late": sorted(a - due for a in arrivals),
    }


def _raced(receiver: BenchReceiver, ids: list[str]) -> list[dict[str, Any]]:
    wanted = set(ids)
    return [b for b in list(receiver.bodies or []) if b.get("notificationId") in wanted]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (0 when empty)."""
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def report(runs: list[dict[str, Any]], count: int, connections: int, seconds: float) -> str:
    """The docs/benchmarks.md section."""
    creates = [r["create"]["rate"] for r in runs]
    patches = [r["patch"]["rate"] for r in runs]
    ratios = [p / c for p, c in zip(patches, creates, strict=True)]
    lines = [
        f"Command: `.venv/bin/python -m benchmarks.edits --runs {len(runs)} --count {count}"
        f" --connections {connections} --seconds {seconds:g}`",
        "",
        f"Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python"
        f" {platform.python_version()}, 2 cores shared with other work (read the spread). One"
        " `pushctl serve` on SQLite per run, rate limiting off, one webhook device at a raw"
        " asyncio receiver; the load client is a process of its own.",
        "",
        f"**PATCH against create**, {connections} connections, {seconds:g} s each; median"
        " (lowest-highest) of the runs:",
        "",
        "| POST /api/notifications per s | PATCH /api/notifications/:id per s | PATCH / create |",
        "|---|---|---|",
        f"| {spread(creates)} | {spread(patches)} | {spread([r * 100 for r in ratios])} % |",
        "",
        f"Statuses: creates {[r['create']['statuses'] for r in runs]}, PATCHes"
        f" {[r['patch']['statuses'] for r in runs]}.",
        "",
        f"**The race**: {count} notifications due at one instant, each PATCHed once from 20 ms"
        " before it to 20 ms after.",
        "",
        "| run | 200 (new title) | 409 (old title) | other answers | delivered | wrong title"
        " | delivered twice | PATCH p50 / p99 ms | lateness p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        answers: Counter[int] = r["answers"]
        ms = {
            k: f"{percentile(r[k], 0.5) * 1000:.0f} / {percentile(r[k], 0.99) * 1000:.0f}"
            for k in ("latency", "late")
        }
        other = sum(v for k, v in answers.items() if k not in (200, 409))
        lines.append(
            f"| {i} | {answers.get(200, 0)} | {answers.get(409, 0)} | {other} | {r['delivered']}"
            f" | **{r['wrong']}** | **{r['twice']}** | {ms['latency']} | {ms['late']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        runs.append(run_once(args.count, args.connections, args.seconds))
        r = runs[-1]
        print(
            f"run {i + 1}: create {r['create']['rate']:.0f}/s, patch {r['patch']['rate']:.0f}/s;"
            f" race {dict(r['answers'])}, delivered {r['delivered']}, wrong {r['wrong']},"
            f" twice {r['twice']}, lateness p99"
            f" {percentile(r['late'], 0.99) * 1000:.0f} ms",
            flush=True,
        )
    text = report(runs, args.count, args.connections, args.seconds)
    print(text)
    if not args.no_write:
        write_section("After sending: edits", text)
    if any(r["wrong"] or r["twice"] for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
