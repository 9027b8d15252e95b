"""Where a create's time goes: py-spy on one `pushctl serve` (SQLite) under wrk.

    .venv/bin/pip install py-spy   # a tool for this benchmark, not a dependency
    .venv/bin/python -m benchmarks.profile [--seconds 15] [--rate 100] [--svg PATH] [--no-write]

One fresh `pushctl serve` (rate limiting off, as every benchmark starts it),
warmed up, takes ``POST /api/notifications`` from wrk at 32 connections (the
ingest benchmark's request) while py-spy samples every thread of it, in two
loads one after the other: first for a flame graph (SVG, written to ``--svg``),
then as collapsed stacks, from which each sample is charged to the innermost layer of the
request path on its stack (LAYERS). The budget is a share of samples, so it
holds on a busy machine where absolute times do not; microseconds per create
are the share times the process's CPU seconds over the creates wrk counted.
py-spy runs ``--nonblocking`` (it does not stop the process to read it), yet
it costs the process some throughput: the rates printed are under the
profiler, not the service's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.ingest import BATCH, ITEM, deployment_for, drive, lua, prepare
from benchmarks.processes import cpu_seconds
from benchmarks.report import write_section

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "docs" / "img" / "ingest-profile.svg"
PY_SPY = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "py-spy"

# (marker in a frame, layer): a sample goes to the last layer whose marker is on
# its stack, innermost first wins; ordered from the socket in to the database.
LAYERS: Sequence[tuple[str, str]] = (
    ("Runner.run", "event loop, sockets, HTTP parsing (C, below Python)"),
    ("data_received", "transport: bytes in, HTTP parsing"),
    ("run_asgi", "ASGI stack: uvicorn, Starlette middleware, routing"),
    ("RateLimit.__call__", "rate-limit layer"),
    ("IdempotentPosts.__call__", "idempotency layer"),
    ("Authenticated.__call__", "credential layer (declared)"),
    ("authenticate (", "credential lookup"),
    ("routes/notifications.py", "endpoint"),
    ("read_message", "body: reading"),
    ("read_json", "body: JSON parsing"),
    ("structure_request", "validation (converter)"),
    ("NotificationService.create", "service (event loop side)"),
    ("GroupWriter.submit", "hand-off to the group writer"),
    ("RequestResponseCycle.send", "answer: rendering, writing"),
    ("Response.__call__", "answer: rendering, writing"),
    ("GroupWriter._serve", "group writer thread: Python"),
    ("FairLock.acquire", "group writer thread: waiting for the write lock"),
    ("FileLock.acquire", "group writer thread: waiting for the write lock"),
    ("new_id", "group writer thread: new ids (os.urandom)"),
    ("Sql.", "group writer thread: SQLite statements"),
    ("SqliteStore._on", "group writer thread: BEGIN / COMMIT"),
    ("_worker (concurrent", "thread pool"),
)


def _waiting_lines() -> tuple[str, ...]:
    """The frames of a thread waiting for work, whose samples are not CPU: py-spy
    ``--nonblocking`` cannot tell a thread blocked in C from a running one, and the group
    writer waits in ``SimpleQueue.get`` (C, so its innermost Python frame is ``_serve``'s
    own line). Found from the source, so an edit of group.py moves them along."""
    source = Path(__file__).resolve().parent.parent / "pushcore" / "storage" / "group.py"
    lines = source.read_text().splitlines()
    where = [n for n, line in enumerate(lines, 1) if "self._queue.get()" in line]
    return (
        *(f"GroupWriter._serve (pushcore/storage/group.py:{n})" for n in where),
        "Condition.wait (threading.py",
        "Event.wait (threading.py",
    )


WAITING = _waiting_lines()
IDLE = "idle: a thread waiting for work (not counted)"


def layer_of(stack: str) -> str:
    """The innermost layer of LAYERS on ``stack`` (frames joined by ";", outermost first)."""
    found = "other"
    frames = stack.split(";")
    if frames and frames[-1].startswith(WAITING):
        return IDLE
    for frame in frames:
        for marker, layer in LAYERS:
            if marker in frame:
                found = layer
    return found


def budget(collapsed: str) -> Counter[str]:
    """Samples per layer, from py-spy's collapsed ("raw") output."""
    per_layer: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            per_layer[layer_of(stack)] += int(count)
    return per_layer


def spy(pid: int, seconds: int, rate: int, form: str, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording ``pid`` for ``seconds`` into ``out`` (``form``: flamegraph or raw)."""
    command = [str(PY_SPY), "record", "-p", str(pid), "-d", str(seconds), "-r", str(rate)]
    command += ["-f", form, "-o", str(out), "--nonblocking"]
    return subprocess.Popen(command, stderr=subprocess.DEVNULL)


def main() -> None:
    """Profile, print the budget, and write docs/benchmarks.md's section unless --no-write."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples/s")
    parser.add_argument("--svg", type=Path, default=SVG)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--batch", action="store_true", help=f"batches of {BATCH} (4 connections), not creates"
    )
    args = parser.parse_args()
    # Batches: each "request" below is one batch; the budget is then per batch.
    body = {"notifications": [ITEM] * BATCH} if args.batch else ITEM
    path, connections = (
        ("/api/notifications/batch", 4) if args.batch else ("/api/notifications", 32)
    )
    with tempfile.TemporaryDirectory() as tmp:
        script, raw = Path(tmp) / "one.lua", Path(tmp) / "stacks.txt"
        script.write_text(lua(json.dumps(body)))
        with deployment_for("serve", Path(tmp) / "data", None, None) as deployment:
            key = prepare(deployment)
            url = f"{deployment.url}{path}"
            drive([url], connections, 2, key, script)  # warm-up
            pid = deployment.pids()["serve-1"][0]
            # One profiler at a time: two at once slow the process down twice as much.
            with_svg = spy(pid, args.seconds, args.rate, "flamegraph", args.svg)
            drive([url], connections, args.seconds, key, script)
            with_svg.wait()
            collapsed = spy(pid, args.seconds, args.rate, "raw", raw)
            cpu = cpu_seconds(pid)
            load = drive([url], connections, args.seconds, key, script)
            cpu = cpu_seconds(pid) - cpu
            collapsed.wait()
            health = drive([f"{deployment.url}/healthz"], 32, args.seconds, key)
        per_layer = budget(raw.read_text())
    idle = per_layer.pop(IDLE, 0)
    total = sum(per_layer.values())
    per_create = cpu / load.requests * 1e6
    lines = [
        "| layer | share of samples | µs per create (of the process's CPU) |",
        "|---|---|---|",
        *(
            f"| {layer} | {100 * n / total:.1f}% | {per_create * n / total:,.0f} |"
            for layer, n in per_layer.most_common()
        ),
    ]
    table = "\n".join(lines)
    print(table)
    print(f"creates/s under the profiler {load.rate:,.0f}, /healthz/s {health.rate:,.0f}")
    print(f"CPU per create {per_create:,.0f} µs ({cpu:.1f} s CPU for {load.requests} creates)")
    print(f"left out: {idle} samples of threads waiting for work ({idle + total} in all)")
    if not args.no_write and not args.batch:
        write_section("Ingest profile", render(table, load.rate, health.rate, per_create, args))


def render(
    table: str, creates: float, health: float, per_create: float, args: argparse.Namespace
) -> str:
    """The docs/benchmarks.md section."""
    svg = args.svg.resolve().relative_to(ROOT / "docs")
    command = f".venv/bin/python -m benchmarks.profile --seconds {args.seconds} --rate {args.rate}"
    return f"""Command: `{command}`

py-spy ({args.rate} samples/s, `--nonblocking`) on one `pushctl serve` on SQLite while wrk
sends `POST /api/notifications` at 32 connections. Flame graph: [{svg}]({svg}).
Under the profiler: {creates:,.0f} creates/s, then {health:,.0f} /healthz/s; {per_create:,.0f} µs
of the process's CPU per create. Each sample is charged to the innermost layer on its stack.

{table}
"""


if __name__ == "__main__":
    main()
