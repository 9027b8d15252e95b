"""Where a PATCH's time goes, beside a create's: wrk and py-spy on one `pushctl serve`.

    .venv/bin/pip install py-spy   # a tool for this benchmark, not a dependency
    .venv/bin/python -m benchmarks.patch_profile [--seconds 10] [--rounds 3] [--rate 100]
        [--no-spy] [--raw DIR] [--tree DIR] [--no-write]

One fresh `pushctl serve` (SQLite, rate limiting off) whose account has one
webhook device takes, in turn and ``rounds`` times, wrk at 32 connections
sending ``POST /api/notifications`` (the ingest benchmark's request) and
``PATCH /api/notifications/:id`` (a new title) of 1,000 notifications made
first, each in turn. For each: requests a second, p99, and the server
process's CPU seconds per request (steadier than rates on a shared machine).
Then, unless ``--no-spy``, py-spy samples each load once and charges every
sample to the innermost layer of the request path on its stack (the ingest
profile's layers, with the PATCH's own), giving a per-layer budget in µs of
the process's CPU per request.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import httpx

from benchmarks import profile
from benchmarks.ingest import ITEM, Load, deployment_for, drive, lua, prepare
from benchmarks.processes import cpu_seconds
from benchmarks.report import write_section

COUNT = 1000
# The PATCH's own layers, inserted before the answer's (innermost wins).
PATCH_LAYERS: Sequence[tuple[str, str]] = (
    ("merge_patch", "merge patch"),
    ("request_json", "the stored notification as a request (merge base)"),
    ("NotificationService.edit", "service (event loop side)"),
    ("NotificationService.get", "read of the answer (thread pool)"),
)


def patch_lua(ids: Sequence[str], body: str) -> str:
    """A wrk script PATCHing ``body`` to each of ``ids`` in turn."""
    listed = ",".join(f'"{i}"' for i in ids)
    return f"""local ids = {{{listed}}}
local n = 0
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("KEY")
request = function()
  n = n % #ids + 1
  return wrk.format("PATCH", "/api/notifications/" .. ids[n], nil, [==[{body}]==])
end
"""


def make_ids(base: str, key: str) -> list[str]:
    """COUNT notifications an hour ahead, made in batches; their ids."""
    ids: list[str] = []
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=60) as client:
        for _ in range(COUNT // 500):
            items = [{"title": "rev1", "delay": "1h"} for _ in range(500)]
            answer = client.post("/api/notifications/batch", json={"notifications": items})
            answer.raise_for_status()
            ids += [n["id"] for n in answer.json()["items"]]
    return ids


def layer_of(stack: str) -> str:
    """The innermost layer on ``stack``: the ingest profile's, or a PATCH's own."""
    found = "other"
    layers = [*profile.LAYERS[:-4], *PATCH_LAYERS, *profile.LAYERS[-4:]]
    for frame in stack.split(";"):
        for marker, layer in layers:
            if marker in frame:
                found = layer
    return found


def budget(collapsed: str) -> Counter[str]:
    """Samples per layer, from py-spy's collapsed output."""
    per_layer: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            per_layer[layer_of(stack)] += int(count)
    return per_layer


def measure(pid: int, url: str, key: str, script: Path, seconds: int) -> tuple[Load, float]:
    """One wrk load; it and the server's CPU µs per request."""
    cpu = cpu_seconds(pid)
    load = drive([url], 32, seconds, key, script)
    return load, (cpu_seconds(pid) - cpu) / max(1, load.requests) * 1e6


def main() -> None:
    """Measure, profile, print, and write docs/benchmarks.md's section unless --no-write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples/s")
    parser.add_argument("--no-spy", action="store_true")
    parser.add_argument("--tree", type=Path, help="serve this source tree (an A/B against it)")
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks in this folder")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows: dict[str, list[tuple[Load, float]]] = {"create": [], "patch": []}
    budgets: dict[str, tuple[Counter[str], float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {"create": Path(tmp) / "create.lua", "patch": Path(tmp) / "patch.lua"}
        with deployment_for("serve", Path(tmp) / "data", None, args.tree) as deployment:
            key = prepare(deployment)
            ids = make_ids(deployment.url, key)
            scripts["create"].write_text(lua(json.dumps(ITEM)))
            scripts["patch"].write_text(patch_lua(ids, json.dumps({"title": "edited"})))
            url = f"{deployment.url}/api/notifications"
            pid = deployment.pids()["serve-1"][0]
            for kind in ("create", "patch"):  # warm-up
                drive([url], 32, 2, key, scripts[kind])
            for _ in range(args.rounds):
                for kind in ("create", "patch"):
                    rows[kind].append(measure(pid, url, key, scripts[kind], args.seconds))
                    load, us = rows[kind][-1]
                    print(f"{kind}: {load.rate:,.0f}/s p99 {load.p99:.1f} ms, {us:,.0f} µs CPU")
            if not args.no_spy:
                for kind in ("create", "patch"):
                    raw = Path(tmp) / f"{kind}.txt"
                    spy = profile.spy(pid, args.seconds, args.rate, "raw", raw)
                    _, us = measure(pid, url, key, scripts[kind], args.seconds)
                    spy.wait()
                    budgets[kind] = (budget(raw.read_text()), us)
                    if args.raw:
                        args.raw.mkdir(parents=True, exist_ok=True)
                        (args.raw / raw.name).write_text(raw.read_text())
    text = render(rows, budgets, args)
    print(text)
    if not args.no_write:
        write_section("PATCH against create: where the time goes", text)


def _spread(values: list[float], digits: int = 0) -> str:
    low, mid, high = (
        f"{v:,.{digits}f}" for v in (min(values), statistics.median(values), max(values))
    )
    return f"{mid} ({low}-{high})"


def render(
    rows: dict[str, list[tuple[Load, float]]],
    budgets: dict[str, tuple[Counter[str], float]],
    args: argparse.Namespace,
) -> str:
    """The docs/benchmarks.md section: rates, p99 and CPU per request, then the budget."""
    command = f".venv/bin/python -m benchmarks.patch_profile --seconds {args.seconds}"
    command += f" --rounds {args.rounds}"
    lines = [
        f"Command: `{command}`",
        "",
        "One `pushctl serve` on SQLite, wrk at 32 connections, creates and PATCHes"
        " alternated; median (lowest-highest) of the rounds:",
        "",
        "| request | per s | p99 ms | server CPU µs per request |",
        "|---|---|---|---|",
    ]
    for kind, label in (("create", "POST /api/notifications"), ("patch", "PATCH .../:id")):
        loads = rows[kind]
        lines.append(
            f"| {label} | {_spread([r.rate for r, _ in loads])}"
            f" | {_spread([r.p99 for r, _ in loads], 1)} | {_spread([us for _, us in loads])} |"
        )
    if budgets:
        layers = Counter[str]()
        for counts, _ in budgets.values():
            layers.update(counts)
        lines += [
            "",
            "Per-layer budget (py-spy, µs of the process's CPU per request, by share of samples):",
            "",
            "| layer | create | PATCH |",
            "|---|---|---|",
        ]
        for layer, _ in layers.most_common():
            cells = []
            for kind in ("create", "patch"):
                counts, us = budgets.get(kind, (Counter(), 0.0))
                total = sum(counts.values()) or 1
                cells.append(f"{us * counts[layer] / total:,.0f}")
            lines.append(f"| {layer} | {' | '.join(cells)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
