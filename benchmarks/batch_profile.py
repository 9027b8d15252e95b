"""Where a batch item's time goes: py-spy over the app in process, batches of 500.

    .venv/bin/pip install py-spy   # a tool for this benchmark, not a dependency
    .venv/bin/python -m benchmarks.batch_profile [--batches 40] [--tree DIR]...

The app as `pushctl serve` makes it (SQLite, rate limiting off, no engine) is
called as uvicorn calls it (benchmarks.ingest_layers: no sockets) with
``POST /api/notifications/batch`` of 500 items (the ingest benchmark's item, to
one webhook device), one batch at a time, while py-spy samples every thread.
Each sample is charged to the innermost stage of the batch path on its stack
(STAGES); a stage's µs per item is its share of the samples times the
process's CPU time per item (measured by the process itself, under the
profiler). Shares hold on a busy machine where times do not. ``--tree DIR``
profiles the pushcore of another source tree too (``git archive main``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
PY_SPY = HERE.parent.parent / ".venv" / "bin" / "py-spy"
ITEM = {"title": "Deploy finished", "body": "build 1234 is live", "delay": "1h"}
BATCH = 500
# (stage, markers): a sample goes to the stage whose marker sits innermost on its stack.
STAGES: Sequence[tuple[str, tuple[str, ...]]] = (
    ("new ids", ("UlidGenerator.new_id", "UlidGenerator.new_ids", "_Drawn.__init__")),
    ("writer: INSERT statements", ("Sql.send_held",)),
    ("writer: BEGIN, COMMIT, counters", ("SqliteStore.transaction",)),
    ("writer: the batch's Python (compose, deliveries)", ("_create_many_write.<locals>.write",)),
    ("body: reading, JSON parsing and checks", ("read_json",)),
    ("validation (structure_batch)", ("structure_batch",)),
    (
        "answer: views, JSON",
        (
            "view_response",
            "BatchCreatedView.of",
            "BatchCreatedView.json_of",
            "JSONResponse.__init__",
        ),
    ),
    ("service checks on the event loop", ("NotificationService.create_many",)),
    ("SQLite checkpoint thread", ("SqliteStore._checkpoints",)),
    ("ASGI stack, layers, routing", ("Starlette.__call__",)),
)
OTHER = "other (event loop, interpreter, thread switches)"
# Waiting, not working; and the set-up before the measured batches.
IDLE = ("Condition.wait", "EpollSelector.select", "Event.wait", "Queue.get", "GroupWriter._serve")
SET_UP = ("_find_and_load", "_api_key", "build_services")


async def run(batches: int) -> float:
    """Post ``batches`` batches after three to warm up; the process's CPU µs per item."""
    import httpx

    from benchmarks.ingest_layers import _api_key, scope_of
    from pushcore import build_services, load_settings
    from pushcore_http import create_app

    data_dir = Path(tempfile.mkdtemp())
    env = {"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}
    app = create_app(build_services(load_settings(env=env, data_dir=data_dir)), run_engine=False)
    statuses: Counter[int] = Counter()

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses[message["status"]] += 1

    body = json.dumps({"notifications": [ITEM] * BATCH}).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async with app.router.lifespan_context(app):
        key = await _api_key(app, data_dir, httpx)
        headers = [(b"x-api-key", key.encode()), (b"content-type", b"application/json")]
        scope = {**scope_of("POST", "/api/notifications/batch", headers), "app": app}
        for _ in range(3):
            await app(dict(scope), receive, send)
        start = time.process_time()
        for _ in range(batches):
            await app(dict(scope), receive, send)
        cpu = time.process_time() - start
    if set(statuses) != {201}:
        raise RuntimeError(f"answers other than 201: {dict(statuses)}")
    return cpu / (batches * BATCH) * 1e6


def budget(raw: Path, per_item: float) -> dict[str, float]:
    """µs per item of each stage, from py-spy's raw (collapsed) stacks."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        names = [re.sub(r" \(.*\)$", "", frame) for frame in stack.split(";")]
        if names[-1] in IDLE or any(mark in names for mark in SET_UP):
            continue
        stage, innermost = OTHER, -1
        for name, markers in STAGES:
            for at, frame in enumerate(names):
                if frame.endswith(markers) and at > innermost:
                    stage, innermost = name, at
        counts[stage] += int(n)
    total = sum(counts.values()) or 1
    return {stage: count / total * per_item for stage, count in counts.items()}


def profile(tree: Path | None, batches: int) -> dict[str, float]:
    """Profile one tree's batches in a process of its own; its budget."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "stacks.txt"
        code = (
            "import sys, asyncio, runpy; sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None;"
            f"m = runpy.run_path({str(HERE)!r});"
            "open(sys.argv[3], 'w').write(str(asyncio.run(m['run'](int(sys.argv[2])))))"
        )
        command = [str(PY_SPY), "record", "-r", "250", "-f", "raw", "--threads", "-o", str(raw)]
        command += ["--", sys.executable, "-c", code, str(tree.resolve()) if tree else ""]
        figure = Path(tmp) / "per_item.txt"  # py-spy talks on stdout
        subprocess.run([*command, str(batches), str(figure)], capture_output=True, check=True)
        return budget(raw, float(figure.read_text()))


def main() -> None:
    """Print each tree's per-item budget side by side."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    args = parser.parse_args()
    trees: list[Path | None] = [*args.tree, None]
    found = [profile(tree, args.batches) for tree in trees]
    names = [str(tree) if tree else "this tree" for tree in trees]
    print(f"| stage | {' | '.join(f'µs per item, {name}' for name in names)} |")
    print(f"|---|{'---|' * len(names)}")
    stages = sorted({s for f in found for s in f}, key=lambda s: -found[0].get(s, 0.0))
    for stage in stages:
        print(f"| {stage} | {' | '.join(f'{f.get(stage, 0.0):.1f}' for f in found)} |")
    print(f"| in all | {' | '.join(f'{sum(f.values()):.1f}' for f in found)} |")


if __name__ == "__main__":
    main()
