"""Fairness benchmark: does one abusive account slow the others down, at the median and
in the tail?

    .venv/bin/python -m benchmarks.fairness [--runs 3] [--slow-icons 80]
        [--before SOURCE_TREE]

Two kinds of scenario against a real `pushctl serve` process (SQLite):

- Hammering: account A sends requests over many connections (a separate
  process, benchmarks/load.py) far over its rate limit, while account B sends
  one GET /api/devices at a time, every 20 ms (within its own limit); B's
  p50 and p99 under load are compared with B's idle. A hammers GET
  /api/devices over 200 connections, or creates (POST /api/notifications)
  over 64 as in the probe of issue 16, with the default limits; GET over 400
  connections with a limit of 400/s (the case tests/faults/test_hammer_tail.py
  runs); and GET over 200 with limits off (PUSHCORE_RATE_LIMIT=0), for
  comparison.
- Slow icons: account A sends 80 notifications at once, each naming a
  different icon URL on a loopback server that answers after 4 s (so the
  per-URL cache cannot help); meanwhile B's GET /api/devices and GET /readyz
  are timed.

``--before`` runs the hammering scenarios a second time against `pushctl serve`
from another source tree (e.g. ``git archive`` of an earlier commit), for a
before/after table. Results are printed and written to docs/benchmarks.md
(section "Fairness").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import httpx

from benchmarks.processes import start_server, stop_server
from benchmarks.report import write_section
from benchmarks.scheduling import percentile
from pushcore import build_services, load_settings
from tests.e2e.server import free_port
from tests.fakes.icon_server import IconServer, Route, running_icon_server, tiny_png

SCOPES = ["notifications:read", "notifications:write", "devices:read", "devices:write"]
ICON_DELAY = 4.0
# B sends 50 requests a second at most: well within its own limit.
PACE = 0.02
IDLE_SECONDS = 4.0
HAMMER_SECONDS = 10.0
# B is timed from this long after A starts (past A's burst and its first holds).
SETTLE_SECONDS = 1.5
DEFAULT_LIMITS = {"PUSHCORE_RATE_LIMIT": "100", "PUSHCORE_RATE_LIMIT_BURST": "500"}


@attrs.frozen
class Hammer:
    """One hammering scenario: A's requests, connections and limits."""

    label: str
    path: str
    connections: int
    limits: dict[str, str] | None
    post: str | None = None


HAMMERS = [
    Hammer("GET, 200 connections, default limits", "/api/devices", 200, DEFAULT_LIMITS),
    Hammer(
        "creates, 64 connections, default limits",
        "/api/notifications",
        64,
        DEFAULT_LIMITS,
        post='{"title": "hammer"}',
    ),
    Hammer(
        "GET, 400 connections, 400/s",
        "/api/devices",
        400,
        {"PUSHCORE_RATE_LIMIT": "400", "PUSHCORE_RATE_LIMIT_BURST": "500"},
    ),
    # start_server turns limits off unless told otherwise.
    Hammer("GET, 200 connections, limits off (0)", "/api/devices", 200, None),
]


def api_key(base: str, data_dir: Path, account: str) -> str:
    """A new API key with every scope for ``account``."""
    services = build_services(load_settings(env={}, data_dir=data_dir))
    try:
        from datetime import timedelta

        token = services.tokens.issue(account, timedelta(hours=1))
    finally:
        services.close()
    response = httpx.post(
        f"{base}/api/keys",
        json={"name": "bench", "scopes": SCOPES},
        headers={"Authorization": f"Bearer {token}"},
    )
    response.raise_for_status()
    key: str = response.json()["key"]
    return key


def latencies(
    client: httpx.Client, paths: list[str], headers: dict[str, str], until: Callable[[], bool]
) -> dict[str, list[float]]:
    """Milliseconds per request, one request at a time every PACE seconds (within
    the account's limit), cycling over ``paths``."""
    found: dict[str, list[float]] = {path: [] for path in paths}
    while not until():
        for path in paths:
            started = time.perf_counter()
            response = client.get(path, headers=headers)
            took = time.perf_counter() - started
            found[path].append(took * 1000)
            assert response.status_code == 200, response.text
            time.sleep(max(0.0, PACE - took))
    return found


def summary(values: list[float]) -> tuple[float, float]:
    """p50 and p99."""
    return percentile(values, 0.5), percentile(values, 0.99)


def hammering_run(base: str, hammer: Hammer, hammer_key: str, victim_key: str) -> dict[str, Any]:
    """B's latency idle, then while A hammers (timed from SETTLE_SECONDS after A starts)."""
    victim = {"X-API-Key": victim_key}
    post = ["--post", hammer.post] if hammer.post is not None else []
    with httpx.Client(base_url=base, timeout=30) as client:
        client.get("/api/devices", headers=victim)
        stop = time.monotonic() + IDLE_SECONDS
        idle = latencies(client, ["/api/devices"], victim, lambda: time.monotonic() > stop)
        load = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.load",
                f"{base}{hammer.path}",
                hammer_key,
                "--connections",
                str(hammer.connections),
                "--seconds",
                str(HAMMER_SECONDS),
                *post,
            ],
            stdout=subprocess.PIPE,
        )
        time.sleep(SETTLE_SECONDS)
        busy = latencies(client, ["/api/devices"], victim, lambda: load.poll() is not None)
        out, _ = load.communicate(timeout=60)
    return {
        "idle": summary(idle["/api/devices"]),
        "busy": summary(busy["/api/devices"]),
        "samples": (len(idle["/api/devices"]), len(busy["/api/devices"])),
        "hammer": json.loads(out),
        "load": os.getloadavg()[0],
    }


def hammering(runs: int, source: Path | None, label: str) -> dict[str, list[dict[str, Any]]]:
    """Every hammering scenario ``runs`` times, on `pushctl serve` from ``source`` (or this
    tree), one server per scenario."""
    results: dict[str, list[dict[str, Any]]] = {}
    for hammer in HAMMERS:
        with tempfile.TemporaryDirectory() as tmp:
            data_dir = Path(tmp)
            port = free_port()
            server = start_server(data_dir, port, hammer.limits, cwd=source)
            base = f"http://127.0.0.1:{port}"
            try:
                hammer_key = api_key(base, data_dir, "hammer")
                victim_key = api_key(base, data_dir, "victim")
                for run in range(runs):
                    result = hammering_run(base, hammer, hammer_key, victim_key)
                    print(label, hammer.label, run, json.dumps(result), flush=True)
                    results.setdefault(hammer.label, []).append(result)
                    time.sleep(5)  # the hammering account's bucket refills
            finally:
                stop_server(server)
    return results


def slow_icon_run(
    base: str, icons: IconServer, abuser_key: str, victim_key: str, count: int
) -> Any:
    """B's GET /api/devices and /readyz idle, then while A's ``count`` slow icon checks run."""
    run = f"{time.monotonic_ns()}"
    urls = [
        icons.route(f"/slow/{run}/{i}.png", Route(body=tiny_png(), delay=ICON_DELAY))
        for i in range(count)
    ]
    victim = {"X-API-Key": victim_key}
    paths = ["/api/devices", "/readyz"]
    with httpx.Client(base_url=base, timeout=60) as client:
        stop = time.monotonic() + IDLE_SECONDS
        idle = latencies(client, paths, victim, lambda: time.monotonic() > stop)
        icon_args = [arg for url in urls for arg in ("--icon", url)]
        sender = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.load",
                f"{base}/api/notifications",
                abuser_key,
                *icon_args,
            ],
            stdout=subprocess.PIPE,
        )
        while icons.count() < 1:
            time.sleep(0.005)
        busy = latencies(client, paths, victim, lambda: sender.poll() is not None)
        out, _ = sender.communicate(timeout=60)
    answers: dict[str, int] = json.loads(out)["statuses"]
    return {
        "idle": {p: summary(v) for p, v in idle.items()},
        "busy": {p: summary(v) for p, v in busy.items()},
        "answers": answers,
    }


def slow_icons(runs: int, count: int) -> list[dict[str, Any]]:
    """The slow-icon scenario ``runs`` times, on one server with the default limits."""
    results = []
    with tempfile.TemporaryDirectory() as tmp, running_icon_server() as icons:
        data_dir = Path(tmp)
        port = free_port()
        server = start_server(data_dir, port, DEFAULT_LIMITS)
        base = f"http://127.0.0.1:{port}"
        try:
            abuser_key = api_key(base, data_dir, "hammer")
            victim_key = api_key(base, data_dir, "victim")
            for run in range(runs):
                result = slow_icon_run(base, icons, abuser_key, victim_key, count)
                print("slow icons", run, json.dumps(result), flush=True)
                results.append(result)
        finally:
            stop_server(server)
    return results


def spread(values: list[float]) -> str:
    """The median of ``values`` with their range."""
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def source_commit(source: Path | None) -> str:
    """The commit a source tree is at (``git archive`` trees: the one given by the caller)."""
    where = source or Path(__file__).resolve().parent.parent
    try:
        found = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return where.name
    return found.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slow-icons", type=int, default=80)
    parser.add_argument(
        "--before", type=Path, help="also run the hammering scenarios from this source tree"
    )
    parser.add_argument("--before-label", default=None, help="what to call it in the report")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()

    this = "after" if args.before is not None else "this tree"
    tables = [(f"{this} ({source_commit(None)})", hammering(args.runs, None, "after"))]
    if args.before is not None:
        label = args.before_label or f"before ({source_commit(args.before)})"
        tables.append((label, hammering(args.runs, args.before, "before")))
    icon_runs = slow_icons(args.runs, args.slow_icons)

    body = report(args, tables, icon_runs)
    print(body)
    if not args.no_write:
        write_section("Fairness", body)


def hammer_table(runs_by_label: dict[str, list[dict[str, Any]]]) -> str:
    """One row per scenario: B's p50 and p99 idle and loaded, their ratios, what A got."""
    rows = []
    for label, runs in runs_by_label.items():
        idle50 = [r["idle"][0] for r in runs]
        idle99 = [r["idle"][1] for r in runs]
        busy50 = [r["busy"][0] for r in runs]
        busy99 = [r["busy"][1] for r in runs]
        ratio50 = [r["busy"][0] / r["idle"][0] for r in runs]
        ratio99 = [r["busy"][1] / r["idle"][1] for r in runs]
        refused = sum(r["hammer"]["statuses"].get("429", 0) for r in runs)
        total = sum(sum(r["hammer"]["statuses"].values()) for r in runs)
        rate = [r["hammer"]["rate"] for r in runs]
        rows.append(
            f"| {label} | {spread(idle50)} | {spread(busy50)} | {spread(ratio50)}x | "
            f"{spread(idle99)} | {spread(busy99)} | {spread(ratio99)}x | "
            f"{spread(rate)}/s | {refused / total:.0%} |"
        )
    header = (
        "| A hammers with | B p50 idle | B p50 loaded | p50 ratio | B p99 idle | B p99 loaded"
        " | p99 ratio | A's rate | A's 429s |\n|---|---|---|---|---|---|---|---|---|"
    )
    return header + "\n" + "\n".join(rows)


def report(
    args: argparse.Namespace,
    tables: list[tuple[str, dict[str, list[dict[str, Any]]]]],
    icon_runs: list[dict[str, Any]],
) -> str:
    """The docs/benchmarks.md section."""
    hammer_tables = "\n\n".join(f"{label}:\n\n{hammer_table(runs)}" for label, runs in tables)
    samples = [r["samples"] for _, runs in tables for rs in runs.values() for r in rs]
    idle_n = round(statistics.median(n for n, _ in samples))
    busy_n = round(statistics.median(n for _, n in samples))
    icon_rows = []
    for path in ("/api/devices", "/readyz"):
        idle50 = [r["idle"][path][0] for r in icon_runs]
        busy50 = [r["busy"][path][0] for r in icon_runs]
        busy99 = [r["busy"][path][1] for r in icon_runs]
        icon_rows.append(f"| {path} | {spread(idle50)} | {spread(busy50)} | {spread(busy99)} |")
    answers: dict[str, int] = {}
    for r in icon_runs:
        for status, n in r["answers"].items():
            answers[status] = answers.get(status, 0) + n
    answered = ", ".join(f"{n} x {status}" for status, n in sorted(answers.items()))
    loads = [r["load"] for _, runs in tables for rs in runs.values() for r in rs]
    icon_table = "\n".join(icon_rows)
    before = f" --before {args.before}" if args.before is not None else ""
    before_note = (
        f"\n\nThe before rows are from `pushctl serve` run from {args.before}, an export\n"
        "(`git archive COMMIT | tar -x -C DIR`) of the commit their label names; the\n"
        "hammer and B ran from this tree."
        if args.before is not None
        else ""
    )
    command = (
        f".venv/bin/python -m benchmarks.fairness --runs {args.runs}"
        f" --slow-icons {args.slow_icons}{before}"
    )
    return f"""Command: `{command}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores, shared with other work while it ran (1-minute load average
{min(loads):.1f}-{max(loads):.1f} during the hammering runs). Each figure is the
median of {args.runs} runs, with their range (min-max). One `pushctl serve` process
on SQLite, a new one per scenario. Latencies are account B's, in ms, one request
at a time from the benchmark process, every {PACE * 1000:.0f} ms (within B's own
limit).

Hammering: account A sends requests over many connections from another process
(benchmarks/load.py, aiohttp) for {HAMMER_SECONDS:.0f} s, far over its limit; B's GET
/api/devices is timed for {IDLE_SECONDS:.0f} s idle (about {idle_n} requests), then from
{SETTLE_SECONDS} s after A starts until A stops (about {busy_n} requests; fewer with limits
off, where each takes longer). That leaves out A's first burst (up to 500 requests
at once, which its bucket allows and which B's requests of that moment do wait
behind). A p99 of so few requests is about their 2nd to 5th slowest: read its
range over the runs, not one figure.

{hammer_tables}

Target: with limits on, B's p50 and p99 under load within 2x of idle.

Reading. Each of A's requests refused early (its credential is known and its
bucket empty) is held 0.25 to 0.75 s before its 429 is sent, so a client that
ignores `Retry-After` cannot loop as fast as the server can refuse. The hold
used to be exactly 0.5 s: A's connections then moved in step, all coming back
in the same moment every 0.5 s, where the tokens A's bucket had gained meanwhile
were spent at once (50 requests at 100/s, 200 at 400/s) and the refusals of the
rest were sent together; a request of B's arriving then waited behind them all.
B's median did not move, its p99 did, the more so the more connections and the
higher A's limit (the "before" rows). Spread holds bring A's requests one at a
time, and B's p99 stays near idle. Without limits, every one of A's requests is
served in full and B queues behind them.{before_note}

Slow icons: account A sends {args.slow_icons} notifications at once, each naming a
different icon URL on a loopback server that answers after {ICON_DELAY:.0f} s; B's
requests are timed (alternating) for {IDLE_SECONDS:.0f} s idle, then from A's first check
until A's last answer (A's requests come from another process, benchmarks/load.py).

| B's request | p50 idle | p50 during the checks | p99 during the checks |
|---|---|---|---|
{icon_table}

A's answers: {answered} (at most 4 checks of one account run at once; a check that
cannot start within its 5 s deadline is a 429). Target: B's p99 under 100 ms.
"""


if __name__ == "__main__":
    main()
