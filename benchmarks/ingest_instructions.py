"""Instructions per create, per batched notification and per PATCH (valgrind).

    .venv/bin/python -m benchmarks.ingest_instructions [--creates 320,640] [--batches 1,2]
        [--patches 32,320] [--tasks 32] [--tree DIR]...

The whole app as `pushctl serve` makes it (SQLite, rate limiting off, no engine),
called in process as uvicorn calls it (benchmarks.ingest_layers: no sockets, no
HTTP parsing), runs ``POST /api/notifications`` from 32 tasks at once (so the
group writer commits them in groups, as under wrk), then ``POST
/api/notifications/batch`` of 500 items, one at a time, then, with ``--patches``,
``PATCH /api/notifications/:id`` (a new title, benchmarks.patch_profile's) of
that many of the created notifications from 32 tasks, under ``valgrind
--tool=cachegrind --cache-sim=no``; each count is run twice, at the two sizes
given, and the difference over the difference in requests is the cost of one
(start-up and set-up cancel out). All threads count (the group writer's
transaction too). ``--tree DIR`` counts the pushcore of another source tree
too (e.g. ``git archive main | tar -x -C DIR``).

From 32 tasks the counts still move with the machine: how many requests the
group writer's transactions hold depends on the threads' timing, and a
group's BEGIN, COMMIT and wake-ups are shared by its requests (two counts of
one tree have differed by a quarter at load 12-18). ``--tasks 1`` sends each
request alone: no sharing, and the count of a request's own work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ITEM = {"title": "Deploy finished", "body": "build 1234 is live", "delay": "1h"}
BATCH = 500
TASKS = 32


async def run(creates: int, batches: int, patches: int = 0, tasks: int = TASKS) -> None:
    """``creates`` creates from ``tasks`` tasks, ``batches`` batches one by one, then
    ``patches`` PATCHes of the created from ``tasks`` tasks."""
    import httpx

    from benchmarks.ingest_layers import _api_key, scope_of
    from pushcore import build_services, load_settings
    from pushcore_http import create_app

    data_dir = Path(tempfile.mkdtemp())
    settings = load_settings(
        env={"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"},
        data_dir=data_dir,
    )
    app = create_app(build_services(settings), run_engine=False)
    statuses: dict[int, int] = {}
    created: list[str] = []
    collect = True

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses[message["status"]] = statuses.get(message["status"], 0) + 1
        elif patches and collect and message["type"] == "http.response.body":
            # Both counts of --patches are above 0: this reading cancels out.
            created.append(json.loads(message["body"])["id"])

    async with app.router.lifespan_context(app):
        key = await _api_key(app, data_dir, httpx)

        async def post(path: str, body: bytes, method: str = "POST") -> None:
            headers = [
                (b"x-api-key", key.encode()),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ]

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            await app({**scope_of(method, path, headers), "app": app}, receive, send)

        one = json.dumps(ITEM).encode()
        many = json.dumps({"notifications": [ITEM] * BATCH}).encode()

        async def worker(n: int) -> None:
            for _ in range(n):
                await post("/api/notifications", one)

        await asyncio.gather(*(worker(creates // tasks) for _ in range(tasks)))
        collect = False
        for _ in range(batches):
            await post("/api/notifications/batch", many)
        if patches > len(created):
            raise RuntimeError(f"{patches} PATCHes of {len(created)} creates")
        edit = json.dumps({"title": "edited"}).encode()
        ids = iter(created[:patches])

        async def editor() -> None:
            for notification_id in ids:
                await post(f"/api/notifications/{notification_id}", edit, "PATCH")

        await asyncio.gather(*(editor() for _ in range(tasks)))
    if set(statuses) - {200, 201} or statuses.get(200, 0) != patches:
        raise RuntimeError(f"answers other than 201 and {patches} 200s: {statuses}")


def instructions(
    tree: Path | None, creates: int, batches: int, patches: int = 0, tasks: int = TASKS
) -> int:
    """Instructions of one process running ``creates`` creates, ``batches`` batches and
    ``patches`` PATCHes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        code = (
            "import sys, asyncio, runpy; sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None;"
            f"m = runpy.run_path({str(HERE)!r});"
            "asyncio.run(m['run'](*map(int, sys.argv[2:6])))"
        )
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
        command += [f"--cachegrind-out-file={out}", sys.executable, "-c", code]
        command += [str(tree.resolve()) if tree else "", str(creates), str(batches)]
        command += [str(patches), str(tasks)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            raise RuntimeError(done.stderr[-2000:])
        return int(found.group(1).replace(",", ""))


def main() -> None:
    """Count each tree at the two sizes; print instructions per create and per notification."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--creates", default="320,640")
    parser.add_argument("--batches", default="1,2")
    parser.add_argument(
        "--patches", help="two counts of PATCHes above 0, e.g. 32,320 (at most --creates' first)"
    )
    parser.add_argument("--tasks", type=int, default=TASKS, help="1: each request alone")
    parser.add_argument("--tree", type=Path, action="append", default=[])
    args = parser.parse_args()
    low, high = (int(n) for n in args.creates.split(","))
    few, more = (int(n) for n in args.batches.split(","))
    header = "| tree | instructions per create | per notification in batches of 500 |"
    if args.patches:
        header += " per PATCH | PATCH / create |"
    print(header)
    print("|---|---|---|" + ("---|---|" if args.patches else ""))
    for tree in [*args.tree, None]:
        base = instructions(tree, low, few, tasks=args.tasks)
        creates = instructions(tree, high, few, tasks=args.tasks)
        batches = instructions(tree, low, more, tasks=args.tasks)
        per_create = (creates - base) / (high - low)
        per_item = (batches - base) / ((more - few) * BATCH)
        name = str(tree) if tree else "this tree"
        row = f"| {name} | {per_create / 1e3:,.0f} k | {per_item / 1e3:,.0f} k |"
        if args.patches:
            none, some = (int(n) for n in args.patches.split(","))
            edits = instructions(tree, low, few, some, args.tasks)
            edits -= instructions(tree, low, few, none, args.tasks)
            per_patch = edits / (some - none)
            row += f" {per_patch / 1e3:,.0f} k | {per_patch / per_create:.2f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
