"""The front door's floor: what a create costs against /healthz in a bare app of the same stack.

    .venv/bin/python -m benchmarks.ingest_floor [--rounds 3] [--seconds 5] [--no-write]

Issue 33 asks that ``POST /api/notifications`` answer at least 0.4 as many requests a
second as ``GET /healthz`` of the same process. This measures what that ratio is
when the create does only what no create can skip, in the stack pushcore runs on
(uvicorn with uvloop and httptools, Starlette, sqlite3): a bare app, no pushcore code,
served by uvicorn in a process of its own, at each of four levels, each adding a step:

- ``parse``: the POST reads its body, parses the JSON (``json.loads``), checks three
  fields by hand, and answers 201 with a JSON object of 20 fields (a create's view
  is about that size);
- ``key``: and looks its ``X-API-Key`` up: a SHA-256 of the key, a dict lookup;
- ``write``: and stores a notification row and a delivery row in SQLite (WAL,
  ``synchronous = NORMAL``, the indexes pushcore's tables have), by a group-commit
  thread as pushcore's (one transaction for what is queued, ``executemany``), and
  answers after the COMMIT;
- ``pushcore``: ``pushctl serve`` itself (benchmarks/ingest.py's deployment).

Each level's /healthz is the same bare handler (``{"status": "ok"}``), so each ratio
is create / healthz of one process, as the issue measures it. wrk at 32 connections,
the ingest benchmark's request; the levels alternate round by round, each on a fresh
process and database.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import queue
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import httpx

from benchmarks.ingest import BATCH, ITEM, Load, deployment_for, drive, lua, prepare
from benchmarks.processes import free_port
from benchmarks.report import write_run

LEVELS = ("parse", "key", "write", "pushcore")
KEY = "pk_floor_0123456789abcdef0123456789abcdef"
SCHEMA = """
CREATE TABLE notifications (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, title TEXT NOT NULL, body TEXT,
    status TEXT NOT NULL, delay TEXT, priority TEXT, sound TEXT, icon_style TEXT,
    metadata TEXT, scheduled_at INTEGER NOT NULL, created_at INTEGER NOT NULL,
    devices_targeted INTEGER NOT NULL, wake_at INTEGER, settled_at INTEGER,
    collapse_key TEXT, expires_at INTEGER, sender_name TEXT, sender_icon TEXT,
    target_device_token TEXT);
CREATE INDEX notifications_account ON notifications (account_id, id);
CREATE INDEX notifications_account_status ON notifications (account_id, status, id);
CREATE INDEX notifications_wake ON notifications (wake_at, id) WHERE wake_at IS NOT NULL;
CREATE TABLE deliveries (
    id TEXT PRIMARY KEY, notification_id TEXT NOT NULL, account_id TEXT NOT NULL,
    device_id TEXT NOT NULL, status TEXT NOT NULL, due_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, lease_until INTEGER);
CREATE INDEX deliveries_due ON deliveries (due_at, id) WHERE status = 'PENDING';
CREATE INDEX deliveries_notification ON deliveries (notification_id, status);
CREATE INDEX deliveries_device ON deliveries (device_id) WHERE status = 'PENDING';
"""
Row = tuple[Any, ...]
DELAYS = {"1m": 60, "5m": 300, "15m": 900, "30m": 1800, "1h": 3600}


class Writer:
    """Group commit: one thread, one transaction for whatever is queued (at most 64)."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.executescript(SCHEMA)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True).start()

    def submit(self, rows: list[tuple[Row, Row]]) -> asyncio.Future[None]:
        """Queue notifications' and their deliveries' rows; done after their COMMIT."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put((rows, future, loop))
        return future

    def _serve(self) -> None:
        while True:
            group = [self._queue.get()]
            while len(group) < 64:
                try:
                    group.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                f"INSERT INTO notifications VALUES ({', '.join('?' * 20)})",  # noqa: S608
                [pair[0] for job in group for pair in job[0]],
            )
            self._db.executemany(
                "INSERT INTO deliveries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [pair[1] for job in group for pair in job[0]],
            )
            self._db.execute("COMMIT")
            group[0][2].call_soon_threadsafe(_settle, [job[1] for job in group])


def _settle(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        future.set_result(None)


def app(level: str, data: Path) -> Any:
    """The bare app at ``level`` (not ``pushcore``)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    keys = {hashlib.sha256(KEY.encode()).hexdigest(): "bench"}
    writer = Writer(data / "floor.db") if level == "write" else None
    counter = iter(range(1, 1 << 62))

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def account_of(request: Request) -> str | None:
        if level == "parse":
            return "bench"
        given = request.headers.get("x-api-key", "").encode()
        return keys.get(hashlib.sha256(given).hexdigest())

    def item(account: str, fields: Any, now: int) -> tuple[dict[str, Any], tuple[Row, Row]]:
        """One notification's view and rows; ValueError when its fields are not valid."""
        title, body, delay = fields.get("title"), fields.get("body"), fields.get("delay", "1m")
        if not isinstance(title, str) or not 0 < len(title) <= 256 or delay not in DELAYS:
            raise ValueError("title or delay")
        if body is not None and not isinstance(body, str):
            raise ValueError("body")
        due = now + DELAYS[delay] * 1000
        serial = next(counter)
        ntf, dlv = f"ntf_{os.getpid()}_{serial}", f"dlv_{os.getpid()}_{serial}"
        notification = (
            ntf, account, title, body, "QUEUED", delay, "normal", "default", "info", "{}",
            due, now, 1, None, None, None, None, None, None, None,
        )  # fmt: skip
        delivery = (dlv, ntf, account, "dev_1", "PENDING", due, 0, None)
        view = {
            "id": ntf, "title": title, "body": body, "status": "QUEUED", "delay": delay,
            "customDelay": None, "scheduledAt": due, "createdAt": now, "priority": "normal",
            "sound": "default", "iconStyle": "info", "metadata": {}, "devicesTargeted": 1,
            "targetDeviceToken": None, "senderName": None, "senderIcon": None,
            "collapseKey": None, "expiresAt": None, "revision": 1, "settledAt": None,
        }  # fmt: skip
        return view, (notification, delivery)

    async def create(request: Request) -> Response:
        account = account_of(request)
        if account is None:
            return JSONResponse({"error": "unauthorized"}, 401)
        try:
            view, rows = item(account, json.loads(await request.body()), int(time.time() * 1000))
        except ValueError:
            return JSONResponse({"error": "validation"}, 400)
        if writer is not None:
            await writer.submit([rows])
        return JSONResponse(view, 201)

    async def batch(request: Request) -> Response:
        account = account_of(request)
        if account is None:
            return JSONResponse({"error": "unauthorized"}, 401)
        now = int(time.time() * 1000)
        try:
            made = [
                item(account, f, now) for f in json.loads(await request.body())["notifications"]
            ]
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "validation"}, 400)
        if writer is not None:
            await writer.submit([rows for _, rows in made])
        return JSONResponse({"notifications": [view for view, _ in made]}, 201)

    routes = [
        Route("/healthz", healthz),
        Route("/api/notifications", create, methods=["POST"]),
        Route("/api/notifications/batch", batch, methods=["POST"]),
    ]
    return Starlette(routes=routes)


def serve(level: str, data: Path, port: int) -> None:
    """Serve the bare app as ``pushctl serve`` serves pushcore's: uvloop, httptools."""
    import uvicorn

    config = uvicorn.Config(
        app(level, data), port=port, loop="uvloop", http="httptools", access_log=False,
        log_level="warning", lifespan="off",
    )  # fmt: skip
    uvicorn.Server(config).run()


@attrs.frozen
class Measured:
    """One level's round: creates, /healthz, and (where it writes) batches of 500."""

    create: Load
    health: Load
    batch: Load | None


def measure_bare(level: str, seconds: int) -> Measured:
    """Creates, /healthz, batches, of a fresh bare process at ``level``."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        serving = ["-m", "benchmarks.ingest_floor", "--serve", level, tmp, str(port)]
        server = subprocess.Popen([sys.executable, *serving])
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while not _answers(f"{url}/healthz"):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"the bare app at {level} did not start")
                time.sleep(0.1)
            return loads(url, KEY, seconds, Path(tmp), batches=level == "write")
        finally:
            server.terminate()
            server.wait()


def _answers(url: str) -> bool:
    """Whether ``url`` answers 200 now."""
    try:
        return httpx.get(url, timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False


def loads(url: str, key: str, seconds: int, tmp: Path, batches: bool) -> Measured:
    """32 connections: creates (after a 2 s warm-up), then /healthz; then batches of 500
    at 4 connections (as the ingest benchmark sends them)."""
    one, many = tmp / "one.lua", tmp / "batch.lua"
    one.write_text(lua(json.dumps(ITEM)))
    many.write_text(lua(json.dumps({"notifications": [ITEM] * BATCH})))
    drive([f"{url}/api/notifications"], 32, 2, key, one)
    create = drive([f"{url}/api/notifications"], 32, seconds, key, one)
    health = drive([f"{url}/healthz"], 32, seconds, key)
    batch = drive([f"{url}/api/notifications/batch"], 4, seconds, key, many) if batches else None
    return Measured(create, health, batch)


def measure_pushcore(seconds: int) -> Measured:
    """Creates, then /healthz, of a fresh ``pushctl serve`` (the ingest benchmark's)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        deployment_for("serve", Path(tmp) / "data", None, None) as deployment,
    ):
        return loads(deployment.url, prepare(deployment), seconds, Path(tmp), batches=True)


def report(results: dict[str, list[Measured]], rounds: int, seconds: int) -> str:
    """The section for docs/benchmarks.md."""
    rows = []
    for level, runs in results.items():
        ratios = [r.create.rate / r.health.rate for r in runs]
        create = statistics.median(r.create.rate for r in runs)
        health = statistics.median(r.health.rate for r in runs)
        p99 = statistics.median(r.create.p99 for r in runs)
        items = [r.batch.rate * BATCH for r in runs if r.batch is not None]
        batches = (
            f"{statistics.median(items):,.0f} ({min(items):,.0f}-{max(items):,.0f})"
            if items
            else "-"
        )
        rows.append(
            f"| {level} | {create:,.0f} | {p99:.1f} | {health:,.0f} | "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | {batches} |"
        )
    table = "\n".join(rows)
    command = f"python -m benchmarks.ingest_floor --rounds {rounds} --seconds {seconds}"
    return f"""`{command}` ({platform.machine()}, Python {platform.python_version()},
{os.cpu_count()} cores; wrk at 32 connections on the same cores; medians of {rounds}
rounds, levels alternated; the ratio's lowest-highest in brackets):

| level | POST creates/s | p99 ms | GET /healthz/s | create / healthz | batches: items/s |
|---|---|---|---|---|---|
{table}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--serve", nargs=3, metavar=("LEVEL", "DIR", "PORT"), help="(internal)")
    args = parser.parse_args()
    if args.serve:
        level, data, port = args.serve
        serve(level, Path(data), int(port))
        return
    levels = args.levels.split(",")
    results: dict[str, list[Measured]] = {level: [] for level in levels}

    def run(level: str) -> Measured:
        if level == "pushcore":
            return measure_pushcore(args.seconds)
        return measure_bare(level, args.seconds)

    for round_ in range(args.rounds):
        for level in levels:
            done = run(level)
            results[level].append(done)
            ratio = done.create.rate / done.health.rate
            items = f", batches {done.batch.rate * BATCH:,.0f}/s" if done.batch else ""
            print(
                f"round {round_ + 1} {level}: creates {done.create.rate:,.0f}/s"
                f" (p99 {done.create.p99:.1f} ms), healthz {done.health.rate:,.0f}/s,"
                f" ratio {ratio:.2f}{items}",
                flush=True,
            )
    text = report(results, args.rounds, args.seconds)
    print(text)
    if not args.no_write:
        write_run("Ingest: the floor", text)


if __name__ == "__main__":
    main()
