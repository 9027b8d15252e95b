"""Delivery under faults: a receiver slower than the lease, and a tenant whose host hangs.

    .venv/bin/python -m benchmarks.faults [--repeat 3] [--slow 600] [--answer-after 3]
        [--hanging 5000] [--others 30] [--watch 40] [--baseline DIR [--baseline-label TEXT]]

Two scenarios, each on a fresh `pushctl serve` on SQLite (rate limiting off):

- slow: ``--slow`` notifications to one webhook that answers each request
  ``--answer-after`` seconds after it arrives. Counts what arrived twice, how
  long until all were recorded DELIVERED, and `pushcore_redeliveries_total`;
  then watches ``--watch`` more seconds (past a lease) for late duplicates.
- hanging: account A's ``--hanging`` notifications, all due at once, to a host
  that accepts connections and never answers; account B's ``--others``
  notifications due one a second to a healthy receiver, starting 3 s later.
  B's lateness (arrival - scheduledAt) and how many arrived.

``--baseline DIR`` also runs the pushcore of another source tree (a checkout of
an older commit) once, for comparison. Results go to docs/benchmarks.md,
section "Delivery under faults".
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import httpx

from benchmarks.processes import Deployment, key_with_webhook, pushctl
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section


def iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def key_for(deployment: Deployment, account: str, hook: str) -> dict[str, str]:
    """X-API-Key headers of ``account``, which has one webhook device at ``hook``."""
    token = subprocess.run(
        [*pushctl(deployment.data_dir), "token", "issue", account],
        capture_output=True,
        text=True,
        check=True,
        cwd=deployment.cwd,
    ).stdout.strip()
    return {"X-API-Key": key_with_webhook(deployment.url, token, hook, account)}


def create_batch(base: str, key: dict[str, str], count: int, **fields: object) -> None:
    for start in range(0, count, 500):
        items = [{"title": f"n{i}", **fields} for i in range(start, min(count, start + 500))]
        answer = httpx.post(
            f"{base}/api/notifications/batch",
            json={"notifications": items},
            headers=key,
            timeout=60,
        )
        answer.raise_for_status()


def delivered(base: str, key: dict[str, str]) -> int:
    stats = httpx.get(f"{base}/api/notifications/stats", headers=key, timeout=30).json()
    return int(stats["byStatus"]["DELIVERED"])


def redeliveries(base: str) -> float:
    for line in httpx.get(f"{base}/metrics", timeout=30).text.splitlines():
        if line.startswith("pushcore_redeliveries_total "):
            return float(line.split()[1])
    return float("nan")


@attrs.frozen
class Slow:
    received: int
    unique: int
    duplicates: int
    seconds: float | None  # until all were recorded DELIVERED; None: not within the time
    redelivered: float


@attrs.frozen
class Hanging:
    arrived: int
    late_ms: list[float]
    hole_requests: int


def run_slow(tree: Path | None, count: int, answer_after: float, watch: float) -> Slow:
    receiver = BenchReceiver(delay=answer_after).start()
    with tempfile.TemporaryDirectory() as tmp, Deployment(Path(tmp), cwd=tree) as deployment:
        key = key_for(deployment, "slow", f"http://127.0.0.1:{receiver.port}/hook")
        started = time.monotonic()
        create_batch(deployment.url, key, count, delay="custom", customDelay=1)
        # As long as the receiver itself needs (16 at a time), twice, and a minute.
        deadline = started + 2 * count * answer_after / 16 + 60
        seconds: float | None = None
        while time.monotonic() < deadline:
            if delivered(deployment.url, key) >= count:
                seconds = time.monotonic() - started
                break
            time.sleep(0.5)
        time.sleep(watch)
        counts = Counter(notification for _, notification, _ in receiver.received)
        result = Slow(
            received=sum(counts.values()),
            unique=len(counts),
            duplicates=sum(c - 1 for c in counts.values()),
            seconds=seconds,
            redelivered=redeliveries(deployment.url),
        )
    receiver.stop()
    return result


def run_hanging(tree: Path | None, hanging: int, others: int) -> Hanging:
    hole = BenchReceiver(delay=None).start()
    good = BenchReceiver().start()
    with tempfile.TemporaryDirectory() as tmp, Deployment(Path(tmp), cwd=tree) as deployment:
        alice = key_for(deployment, "alice", f"http://127.0.0.1:{hole.port}/hook")
        bob = key_for(deployment, "bob", f"http://127.0.0.1:{good.port}/hook")
        create_batch(deployment.url, alice, hanging, delay="custom", customDelay=1)
        first = datetime.now(UTC) + timedelta(seconds=3)
        for i in range(others):
            answer = httpx.post(
                f"{deployment.url}/api/notifications",
                json={"title": f"bob {i}", "scheduledAt": iso(first + timedelta(seconds=i))},
                headers=bob,
                timeout=30,
            )
            answer.raise_for_status()
        deadline = time.monotonic() + 3 + others + 60
        while len(good.received) < others and time.monotonic() < deadline:
            time.sleep(0.2)
        late = [
            (at - datetime.fromisoformat(scheduled).timestamp()) * 1000
            for at, _, scheduled in good.received
        ]
        result = Hanging(arrived=len(good.received), late_ms=late, hole_requests=len(hole.received))
    hole.stop()
    good.stop()
    return result


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def slow_rows(label: str, runs: Sequence[Slow], count: int) -> list[str]:
    rows = []
    for n, r in enumerate(runs, 1):
        took = f"{r.seconds:.0f} s" if r.seconds is not None else "not all"
        rows.append(
            f"| {label} {n} | {r.unique:,} of {count:,} | {r.received:,} | **{r.duplicates}**"
            f" | {r.redelivered:.0f} | {took} |"
        )
    return rows


def hanging_rows(label: str, runs: Sequence[Hanging], others: int) -> list[str]:
    rows = []
    for n, r in enumerate(runs, 1):
        if r.late_ms:
            p50 = f"{statistics.median(r.late_ms):.0f}"
            p99 = f"{percentile(r.late_ms, 99):.0f}"
            worst = f"{max(r.late_ms):.0f}"
        else:
            p50 = p99 = worst = "-"
        rows.append(
            f"| {label} {n} | **{r.arrived} of {others}** | {p50} | **{p99}** | {worst}"
            f" | {r.hole_requests:,} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--slow", type=int, default=600)
    parser.add_argument("--answer-after", type=float, default=3.0)
    parser.add_argument("--hanging", type=int, default=5000)
    parser.add_argument("--others", type=int, default=30)
    parser.add_argument("--watch", type=float, default=40.0)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--baseline-label", default="baseline")
    args = parser.parse_args()

    trees: list[tuple[str, Path | None, int]] = [("run", None, args.repeat)]
    if args.baseline:
        trees.append((args.baseline_label, args.baseline.resolve(), 1))
    slow: dict[str, list[Slow]] = {}
    hanging: dict[str, list[Hanging]] = {}
    for label, tree, repeat in trees:
        for n in range(repeat):
            slow.setdefault(label, []).append(
                run_slow(tree, args.slow, args.answer_after, args.watch)
            )
            print(label, n + 1, slow[label][-1], flush=True)
            hanging.setdefault(label, []).append(run_hanging(tree, args.hanging, args.others))
            print(label, n + 1, hanging[label][-1].arrived, flush=True)

    command = "`.venv/bin/python -m benchmarks.faults " + shlex.join(sys.argv[1:]) + "`"
    body = [
        f"Command: {command}",
        "",
        f"Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python"
        f" {platform.python_version()}, 2 cores. One `pushctl serve` on SQLite per run, rate"
        " limiting off; the receivers are raw asyncio servers on loopback in the benchmark"
        " process.",
        "",
        f"**A receiver slower than the lease.** {args.slow} notifications to one webhook that"
        f" answers each request {args.answer_after:g} s after it arrives; then {args.watch:g} s"
        " more watching for late duplicates.",
        "",
        "| run | arrived (unique) | requests | arrived twice | redeliveries | all DELIVERED |",
        "|---|---|---|---|---|---|",
    ]
    for label, runs in slow.items():
        body += slow_rows(label, runs, args.slow)
    body += [
        "",
        f"**A tenant whose host hangs.** Account A: {args.hanging:,} notifications due at once"
        " to a host that accepts connections and never answers. Account B:"
        f" {args.others} notifications due one a second to a healthy receiver, from 3 s later."
        " Lateness of B's = arrival - scheduledAt, in ms; the hanging host's requests are"
        " what reached it during the run.",
        "",
        "| run | B's arrived | p50 | p99 | max | requests to the hanging host |",
        "|---|---|---|---|---|---|",
    ]
    for label, hung in hanging.items():
        body += hanging_rows(label, hung, args.others)
    body += [
        "",
        "Targets (issue 16): 0 arrived twice; every one of B's delivered, lateness p99 <= 2 s.",
    ]
    write_section("Delivery under faults", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
