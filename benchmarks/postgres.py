"""Every benchmark on PostgreSQL with 1 and 2 `pushctl worker` processes: the scale-out figures.

    .venv/bin/python -m benchmarks.postgres [--rounds 3] [--workers 1,2]
        [--only scheduling,fanout,apns,ingest] [--database-url URL] [--no-write]
        [--count 10000] [--rate 1000] [--devices 100000] [--apns-count 20000]
        [--fakes native] [--seconds 8] [--connections 1,32,256] [--batch-connections 4]

On one throwaway PostgreSQL cluster (benchmarks/processes.py: tests/pg.py's,
durability off; or the server of ``--database-url``, a fresh database per
run), one `pushctl serve --no-engine` beside 1, then 2 `pushctl worker`
processes, alternating round by round:

- scheduling (benchmarks/scheduling.py): ``--count`` notifications due at
  ``--rate`` per second; lateness p50/p99 (a fixed rate measures lateness,
  not throughput);
- fan-out (benchmarks/fanout.py): one stream send to ``--devices`` webhook
  subscribers; the delivery rate, first arrival to last;
- APNs (benchmarks/apns.py): ``--apns-count`` notifications due at once to the
  fake APNs (``--fakes``: native by default, granian; h2 is pure Python and
  spends more CPU than pushcore); pushes per second, due to last accepted;
- ingest (benchmarks/ingest.py): creates, /healthz and batches under wrk, in
  the three deployments (one `pushctl serve`; 1 and 2 `serve --no-engine`
  beside one worker; nothing is delivered there, so workers do not count).

Each run reads from /proc the cores each process used (the workers,
PostgreSQL's server processes, the fake) and how busy the machine's cores
were, whoever used them: where 2 workers deliver less than 1.8 times what 1
does, that says whether the two cores were the bound. Printed, and written to
docs/benchmarks.md (section "PostgreSQL: 1 and 2 workers").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import apns, fanout, ingest, scheduling
from benchmarks.processes import Postgres, postgres
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section

SECTION = "PostgreSQL: 1 and 2 workers"
TARGET = 1.8


def spread(values: Sequence[float], digits: int = 0) -> str:
    """The median, and lowest-highest when there are several."""
    return ingest.spread(values, digits)


def median_cores(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    """The median of each process's cores over several runs."""
    names = [name for name in runs[0] if all(name in r for r in runs)]
    return {name: statistics.median(r[name] for r in runs) for name in names}


def cores_cell(cores: dict[str, float]) -> str:
    """Cores of the workers, PostgreSQL, the fake, the machine: "w1 0.6, w2 0.6; pg 0.3; ..."."""
    parts = [
        f"{name.replace('worker-', 'w')} {used:.2f}"
        for name, used in cores.items()
        if name.startswith("worker-")
    ]
    for name in ("postgres", "fake"):
        if name in cores:
            parts.append(f"{name} {cores[name]:.2f}")
    if "machine" in cores:
        parts.append(f"machine {cores['machine']:.1f}/{os.cpu_count()}")
    return ", ".join(parts)


def verdict(
    name: str, rates: dict[int, float], cores: dict[int, dict[str, float]], hint: str = ""
) -> str:
    """What 2 workers gave over 1, and, when short of the target, what bound it."""
    if 1 not in rates or 2 not in rates:
        return ""
    ratio = rates[2] / rates[1]
    text = f"{name}: 2 workers / 1 worker = {ratio:.2f} (target >= {TARGET})."
    if ratio >= TARGET:
        return text
    two = cores[2]
    machine = two.get("machine", 0.0)
    total = os.cpu_count() or 1
    named = {n: used for n, used in two.items() if n not in ("machine",) and used >= 0.005}
    others = max(0.0, machine - sum(named.values()))
    who = ", ".join(f"{n} {used:.2f}" for n, used in named.items())
    busy = (
        f"with 2 workers the machine's {total} cores were {machine:.1f} busy ({who}; the"
        f" other {others:.1f} this benchmark's process and other users' work)"
    )
    if machine >= 0.9 * total:
        crowded = (
            " Much of that was work outside the service: a quieter machine would show more."
            if others >= 0.5
            else ""
        )
        return f"{text} The cores were the bound: {busy}.{crowded}"
    return (
        f"{text} Not the cores: {busy}. The bound is"
        f" elsewhere{hint or ' (claims, locks, a per-host limit)'}, or the run is too short for"
        " a second worker to matter."
    )


def run_scheduling(
    pg: Postgres, receiver: BenchReceiver, args: argparse.Namespace, workers: list[int]
) -> tuple[str, str]:
    """Lateness at a fixed rate with each worker count: (table, verdict)."""
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in workers}
    for _ in range(args.rounds):
        for n in workers:
            result = scheduling.postgres_lateness(pg, receiver, n, args.count, args.rate)
            runs[n].append(result)
            print(
                f"scheduling, {n} worker(s): p50 {result['p50']:.1f} ms, p99 {result['p99']:.1f}"
                f" ms, {result['received']} received; cores: {cores_cell(result['cores'])}",
                flush=True,
            )
    rows = [
        f"| {n} | {sum(r['received'] for r in rs):,} ({sum(r['unique'] for r in rs):,} unique)"
        f" of {args.count * len(rs):,} | {spread([r['p50'] for r in rs], 1)}"
        f" | {spread([r['p99'] for r in rs], 1)} | {spread([r['max'] for r in rs], 1)}"
        f" | {cores_cell(median_cores([r['cores'] for r in rs]))} |"
        for n, rs in runs.items()
    ]
    table = "\n".join(
        [
            f"Scheduling: {args.count:,} notifications due at {args.rate:,.0f}/s, created through"
            " the library; lateness = arrival at the receiver - scheduledAt.",
            "",
            "| workers | received, all runs | p50 ms | p99 ms | max ms | cores (median run) |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    return table, "Scheduling runs at a fixed rate: lateness, not throughput, is its figure."


def run_fanout(
    pg: Postgres, receiver: BenchReceiver, args: argparse.Namespace, workers: list[int]
) -> tuple[str, str]:
    """One stream send to many devices with each worker count: (table, verdict)."""
    runs = fanout.postgres_fanout(pg, receiver, args.devices, workers, args.rounds)
    rows = [
        f"| {n} | {spread([r['rate'] for r in rs])} | {spread([r['last'] for r in rs], 1)}"
        f" | {spread([r['accepted'] * 1000 for r in rs])}"
        f" | {sum(r['unique'] for r in rs):,} of {sum(r['sent'] for r in rs):,}"
        f" | {cores_cell(median_cores([r['cores'] for r in rs]))} |"
        for n, rs in runs.items()
    ]
    table = "\n".join(
        [
            f"Fan-out: one stream send to {args.devices:,} subscribers, one webhook device each"
            " (a receiver in the benchmark process).",
            "",
            "| workers | deliveries/s, first to last | last after the send, s | send accepted, ms"
            " | unique received, all runs | cores (median) |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    rates = {n: statistics.median(r["rate"] for r in rs) for n, rs in runs.items()}
    cores = {n: median_cores([r["cores"] for r in rs]) for n, rs in runs.items()}
    hint = (
        " (every device here is a webhook on one host, 127.0.0.1, and each process sends at"
        " most PUSHCORE_WEBHOOK_HOST_CONCURRENCY = 16 requests to one host at once; one"
        " worker may also claim up to PUSHCORE_DELIVERY_MAX_IN_FLIGHT = 8,192 deliveries"
        " before the other wakes)"
    )
    return table, verdict("Fan-out", rates, cores, hint)


def run_apns(args: argparse.Namespace, pg: Postgres, workers: list[int]) -> tuple[str, str]:
    """Notifications due at once to the fake APNs with each worker count: (tables, verdicts)."""
    tables, verdicts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        key_file = apns.make_key(directory)
        for kind, ca_name in (apns.FAKES[name] for name in args.fakes.split(",")):
            fake = kind(key_file, directory / ca_name)
            try:
                runs = apns.postgres_runs(
                    pg, fake, key_file, directory, args.apns_count, workers, args.rounds
                )
            finally:
                fake.stop()
            rows = [
                f"| {r.processes} | {r.rate:,.0f} ({r.spread[0]:,.0f}-{r.spread[1]:,.0f})"
                f" | {r.service_cpu:.0f} µs | {r.fake_cpu:.0f} µs | {cores_cell(r.cores)} |"
                for r in runs
            ]
            tables.append(
                "\n".join(
                    [
                        f"APNs: {args.apns_count:,} notifications due at once, to the {fake.name};"
                        " due -> last accepted.",
                        "",
                        "| workers | pushes/s | service CPU per push | fake CPU per push"
                        " | cores (median run) |",
                        "|---|---|---|---|---|",
                        *rows,
                    ]
                )
            )
            rates = {r.processes: r.rate for r in runs}
            verdicts.append(
                verdict(f"APNs ({fake.name})", rates, {r.processes: r.cores for r in runs})
            )
    return "\n\n".join(tables), " ".join(verdicts)


def run_ingest(args: argparse.Namespace, pg: Postgres) -> str:
    """Creates, /healthz and batches on PostgreSQL in the three deployments: the tables."""
    connections = [int(c) for c in args.connections.split(",")]
    variants = {ingest.label(kind): (kind, None) for kind in ingest.DEPLOYMENTS}
    results = ingest.measure(
        variants,
        args.rounds,
        pg.fresh,
        args.seconds,
        connections,
        args.batch_connections,
        pg.server_pids,
    )
    method = ingest.method(args.seconds, args.rounds, connections, args.batch_connections)
    return f"Ingest: {method}\n\n{ingest.tables(results, connections)}"


def main() -> None:
    """Run what --only names, print, and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--only", default="scheduling,fanout,apns,ingest")
    parser.add_argument("--database-url", help="a PostgreSQL server of yours (CREATE DATABASE)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--count", type=int, default=10_000, help="scheduling: notifications")
    parser.add_argument("--rate", type=float, default=1000.0, help="scheduling: due per second")
    parser.add_argument("--devices", type=int, default=100_000, help="fan-out: subscribers")
    parser.add_argument("--apns-count", type=int, default=20_000, help="APNs: notifications")
    parser.add_argument("--fakes", default="native", help="APNs: h2, native or both")
    parser.add_argument("--seconds", type=int, default=8, help="ingest: seconds per load")
    parser.add_argument("--connections", default="1,32,256", help="ingest: connection counts")
    parser.add_argument("--batch-connections", type=int, default=4, help="ingest: for batches")
    parser.add_argument(
        "--note", default="", help="a sentence put first in the section (e.g. 'smoke run')"
    )
    args = parser.parse_args()
    workers = [int(n) for n in args.workers.split(",")]
    only = args.only.split(",")
    parts: list[str] = []
    verdicts: list[str] = []
    with postgres(args.database_url) as pg:
        where = pg.describe()
        receiver = BenchReceiver().start()
        try:
            if "scheduling" in only:
                table, said = run_scheduling(pg, receiver, args, workers)
                parts.append(table)
                verdicts.append(said)
            if "fanout" in only:
                table, said = run_fanout(pg, receiver, args, workers)
                parts.append(table)
                verdicts.append(said)
        finally:
            receiver.stop()
        if "apns" in only:
            table, said = run_apns(args, pg, workers)
            parts.append(table)
            verdicts.append(said)
        if "ingest" in only:
            parts.append(run_ingest(args, pg))
    command = " ".join(
        [
            ".venv/bin/python -m benchmarks.postgres",
            f"--rounds {args.rounds} --workers {args.workers} --only {args.only}",
            f"--count {args.count} --rate {args.rate:.0f} --devices {args.devices}",
            f"--apns-count {args.apns_count} --fakes {args.fakes} --seconds {args.seconds}",
            f"--connections {args.connections} --batch-connections {args.batch_connections}",
        ]
    )
    note = f"**{args.note}**\n\n" if args.note else ""
    body = f"""{note}Command: `{command}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores; on {where}. One `pushctl serve --no-engine` (the API) beside 1, then 2
`pushctl worker` processes, alternating, {args.rounds} round(s), each run on a fresh database;
medians, lowest-highest in brackets. Cores: CPU time / wall time over the measured part of
the run, from /proc, per process (w1, w2: the workers; postgres: all of PostgreSQL's server
processes), and the machine's busy cores whoever used them (another user's work included).
Everything shares the machine's {os.cpu_count()} cores: the workers, PostgreSQL, the
receiver or fake, and this process.

{chr(10).join(part + chr(10) for part in parts)}
Reading. {" ".join(v for v in verdicts if v)}
"""
    print(body)
    if not args.no_write:
        write_section(SECTION, body)


if __name__ == "__main__":
    main()
