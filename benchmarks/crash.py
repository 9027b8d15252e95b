"""Crash repeats: kill -9 at a steady delivery rate; what arrives twice, and how old it is.

    .venv/bin/python -m benchmarks.crash [--repeat 3] [--rates 1000,5000] [--seconds 6]
        [--throughput 20000] [--database sqlite,postgres]
        [--baseline DIR [--baseline-label TEXT]] [--no-write] [--quick]

``--quick``: one run of 2 s per rate, throughput over 2,000 (a smoke run; figures
from it are not for the docs, so it writes nothing). A run that fails keeps its
servers' logs and prints where.

For each database and rate: a fresh `pushctl serve` (rate limiting off, a 5 s
lease) gets ``rate * seconds`` notifications to one webhook, due one after
another at ``rate`` a second from a few seconds later (all created before the
first is due). Half-way through it is killed with SIGKILL, started again on
the same data, and left to deliver the rest. The receiver (raw asyncio, in
this process) notes each arrival; a notification that arrived twice is a
repeat, and its age is the time from its first arrival (the receiver answers
at once) to the kill. API.md: no delivery answered more than 100 ms before a
crash is sent again. "rate reached" is what arrived in the second before the
kill: the rate the machine held.

Throughput: ``--throughput`` notifications due at once to one webhook, from
first to last arrival, on each database: the engine's rate, this tree and the
baseline in turn.

``--baseline DIR`` runs the pushcore of another source tree (a checkout of the
commit before) as well. Results go to docs/benchmarks.md, section "Crash
repeats".
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx

from benchmarks.faults import create_batch, delivered, iso, key_for
from benchmarks.processes import CpuWindow, Deployment, Postgres, postgres
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section

LEASE = {"PUSHCORE_DELIVERY_LEASE_SECONDS": "5"}
# Creating notifications runs at a few thousand a second here: the first is due
# once all are in, so that the kill falls in steady delivery, not in ingest.
CREATE_RATE = 1500


@attrs.frozen
class Crash:
    count: int
    reached: int  # arrivals in the second before the kill
    repeats: int
    oldest: float  # seconds from the oldest repeat's first arrival to the kill
    over_100ms: int  # repeats answered more than 100 ms before the kill
    all_delivered: bool


def schedule(base: str, key: dict[str, str], count: int, rate: int) -> datetime:
    """Create ``count`` notifications due at ``rate`` a second; when the first is due."""
    first = datetime.now(UTC) + timedelta(seconds=3 + count / CREATE_RATE)
    for start in range(0, count, 500):
        items = [
            {"title": f"n{i}", "scheduledAt": iso(first + timedelta(seconds=i / rate))}
            for i in range(start, min(count, start + 500))
        ]
        body = {"notifications": items}
        answer = httpx.post(f"{base}/api/notifications/batch", json=body, headers=key, timeout=60)
        answer.raise_for_status()
    if datetime.now(UTC) > first:
        print("  (creating took longer than planned: deliveries began before it ended)")
    return first


@contextlib.contextmanager
def logs_kept(data_dir: Path) -> Iterator[None]:
    """When the block fails, copy the servers' logs out of ``data_dir`` (a temporary
    directory, gone afterwards) and say where: their tracebacks explain the failure."""
    try:
        yield
    except BaseException:
        logs = data_dir / "logs"
        if logs.is_dir():
            kept = Path(tempfile.mkdtemp(prefix="crash-logs-"))
            shutil.copytree(logs, kept, dirs_exist_ok=True)
            print(f"  run failed; the servers' logs are kept in {kept}", flush=True)
        raise


def wait_until(at: datetime) -> None:
    time.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()))


def run_crash(tree: Path | None, url: str | None, rate: int, seconds: float) -> Crash:
    count = int(rate * seconds)
    receiver = BenchReceiver().start()
    with tempfile.TemporaryDirectory() as tmp, logs_kept(Path(tmp)):
        first_run = Deployment(Path(tmp), url, settings=LEASE, cwd=tree).start()
        try:
            key = key_for(first_run, "crash", f"http://127.0.0.1:{receiver.port}/hook")
            first = schedule(first_run.url, key, count, rate)
            wait_until(first + timedelta(seconds=seconds / 2))
            killed_at = time.time()
            first_run.servers[0].send_signal(signal.SIGKILL)
            first_run.servers[0].wait(10)
        finally:
            first_run.stop(check=False)
        arrived_then = [at for at, _, _ in list(receiver.received)]
        reached = sum(1 for at in arrived_then if killed_at - 1 <= at < killed_at)
        with Deployment(Path(tmp), url, settings=LEASE, cwd=tree) as second_run:
            deadline = time.monotonic() + 5 + seconds + 120
            done = False
            while time.monotonic() < deadline and not done:
                done = delivered(second_run.url, key) >= count
                time.sleep(0.5)
    receiver.stop()
    firsts: dict[str, float] = {}
    for at, notification, _ in receiver.received:
        firsts[notification] = min(at, firsts.get(notification, at))
    counts = Counter(notification for _, notification, _ in receiver.received)
    ages = [killed_at - firsts[n] for n, c in counts.items() if c > 1]
    return Crash(
        count=count,
        reached=reached,
        repeats=sum(c - 1 for c in counts.values()),
        oldest=max(ages, default=0.0),
        over_100ms=sum(1 for age in ages if age > 0.1),
        all_delivered=done and len(counts) == count,
    )


def run_throughput(
    tree: Path | None, url: str | None, count: int, pg: Postgres | None = None
) -> tuple[float, float]:
    """Deliveries a second to one webhook, ``count`` due at once (first to last arrival),
    and the CPU ms the server (and PostgreSQL's processes) spent per delivery meanwhile:
    on a loaded machine the rate follows the load, the CPU cost much less."""
    receiver = BenchReceiver().start()
    with (
        tempfile.TemporaryDirectory() as tmp,
        logs_kept(Path(tmp)),
        Deployment(Path(tmp), url, cwd=tree) as deployment,
    ):
        key = key_for(deployment, "bulk", f"http://127.0.0.1:{receiver.port}/hook")
        due = datetime.now(UTC) + timedelta(seconds=3 + count / CREATE_RATE)
        create_batch(deployment.url, key, count, scheduledAt=iso(due))
        wait_until(due - timedelta(seconds=0.5))
        groups: dict[str, Any] = {"serve": deployment.pids()["serve-1"]}
        if pg is not None:
            groups["postgres"] = pg.server_pids
        window = CpuWindow(groups)
        started = time.monotonic()
        deadline = time.monotonic() + 3 + count / CREATE_RATE + 300
        while len(receiver.received) < count and time.monotonic() < deadline:
            time.sleep(0.2)
        used = window.stop()
        cpu = (used["serve"] + used.get("postgres", 0.0)) * (time.monotonic() - started)
        arrivals = sorted(at for at, _, _ in receiver.received)
    receiver.stop()
    if len(arrivals) < count:
        return float("nan"), float("nan")
    return (count - 1) / (arrivals[-1] - arrivals[0]), cpu * 1000 / count


@contextlib.contextmanager
def databases(names: Sequence[str]) -> Iterator[list[tuple[str, Postgres | None]]]:
    """(name, Postgres or None for SQLite) for each database asked for."""
    if "postgres" not in names:
        yield [("SQLite", None)]
        return
    with postgres() as pg:
        found: list[tuple[str, Postgres | None]] = [("PostgreSQL", pg)]
        yield ([("SQLite", None)] if "sqlite" in names else []) + found


def spread(values: Sequence[float], fmt: str) -> str:
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{format(mid, fmt)} ({format(low, fmt)}-{format(high, fmt)})"


def by_tree(values: dict[tuple[str, str], list[float]], labels: list[str], fmt: str) -> list[str]:
    """A table: a row per database, a column per tree, median (min-max) in each cell."""
    rows = ["| database | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for db in dict.fromkeys(db for db, _ in values):
        rows.append(f"| {db} | " + " | ".join(spread(values[db, t], fmt) for t in labels) + " |")
    return rows


def crash_rows(label: str, db: str, rate: int, runs: Sequence[Crash]) -> list[str]:
    return [
        f"| {db} | {label} {n} | {rate:,}/s | {r.reached:,}/s | {r.count:,} | **{r.repeats}**"
        f" | **{r.oldest * 1000:.0f} ms** | {r.over_100ms} | {'yes' if r.all_delivered else 'NO'} |"
        for n, r in enumerate(runs, 1)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rates", default="1000,5000")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--throughput", type=int, default=20000)
    parser.add_argument("--database", default="sqlite,postgres")
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a short smoke run; writes nothing")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.seconds, args.throughput, args.no_write = 1, 2.0, 2000, True
    rates = [int(r) for r in args.rates.split(",") if r]  # "": throughput alone
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline:
        trees.append((args.baseline_label, args.baseline.resolve()))

    crash_lines: list[str] = []
    speed: dict[tuple[str, str], list[float]] = {}
    cost: dict[tuple[str, str], list[float]] = {}
    with databases(args.database.split(",")) as dbs:
        for db, pg in dbs:
            for rate in rates:
                for label, tree in trees:
                    runs = []
                    for n in range(args.repeat):
                        url = pg.fresh() if pg is not None else None
                        runs.append(run_crash(tree, url, rate, args.seconds))
                        print(db, rate, label, n + 1, runs[-1], flush=True)
                    crash_lines += crash_rows(label, db, rate, runs)
            if args.throughput:
                # In turn, A B A B...: the machine's load drifts.
                for n in range(args.repeat):
                    for label, tree in trees:
                        url = pg.fresh() if pg is not None else None
                        rate_seen, cpu_ms = run_throughput(tree, url, args.throughput, pg)
                        speed.setdefault((db, label), []).append(rate_seen)
                        cost.setdefault((db, label), []).append(cpu_ms)
                        print(
                            db,
                            "throughput",
                            label,
                            n + 1,
                            f"{rate_seen:.0f}/s",
                            f"{cpu_ms:.2f} CPU ms/delivery",
                            flush=True,
                        )

    command = "`.venv/bin/python -m benchmarks.crash " + shlex.join(sys.argv[1:]) + "`"
    body = [
        f"Command: {command}",
        "",
        f"Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python"
        f" {platform.python_version()}, 2 cores shared with other work (read the spread)."
        " One `pushctl serve` per run, rate limiting off, a 5 s lease; the receiver is a raw"
        " asyncio server on loopback in the benchmark process, answering at once.",
        "",
        f"**kill -9 mid-run.** `rate x {args.seconds:g} s` notifications to one webhook, due"
        " one after another at the rate; SIGKILL half-way, then started again on the same"
        " data. Repeats: requests beyond one per notification. Oldest: from the oldest"
        " repeat's first arrival to the kill (API.md: at most 100 ms after its answer).",
        "",
        "| database | run | rate asked | rate reached | notifications | repeats | oldest"
        " | over 100 ms | all delivered |",
        "|---|---|---|---|---|---|---|---|---|",
        *crash_lines,
    ]
    if speed:
        labels = [label for label, _ in trees]
        body += [
            "",
            f"**Throughput.** {args.throughput:,} notifications due at once to one webhook,"
            " deliveries a second from the first arrival to the last; median (min-max) of"
            f" {args.repeat} runs, the trees run in turn.",
            "",
            *by_tree(speed, labels, ",.0f"),
            "",
            "CPU ms per delivery over the same runs (the server process, plus PostgreSQL's"
            " processes on PostgreSQL); less sensitive to the machine's load than the rate.",
            "",
            *by_tree(cost, labels, ".2f"),
        ]
    if not args.no_write:
        write_section("Crash repeats", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
