"""Ingest benchmark: creating notifications over HTTP, one by one and in batches, under wrk.

    .venv/bin/python -m benchmarks.ingest [--rounds 3] [--seconds 8] [--connections 1,32,256]
        [--deployments serve,api1,api2,workers2] [--batch-connections 4] [--no-write]
        [--baseline DIR [--baseline-label TEXT]]... [--postgres | --database-url URL]

Each run starts a fresh service (a new data directory; on PostgreSQL a new
database) the way users run it (benchmarks/processes.py; rate limiting off),
in one of three deployments:

- ``serve``: one `pushctl serve` process (the API and the delivery engine);
- ``api1``: one `pushctl serve --no-engine` beside one `pushctl worker`;
- ``api2``: two `pushctl serve --no-engine` (on two ports) beside one `pushctl
  worker`; each load is then two wrk processes at once, one per port, each
  with half the connections: their requests per second are summed, and the
  latency shown is the higher of the two;
- ``workers2``: one `pushctl serve --workers 2` (two processes on one port, the
  engine in the first).

Against it, wrk (`apt-get install wrk`; 2 threads, 1 for one connection;
``--latency``) drives, at each connection count, ``POST /api/notifications``
with an ``X-API-Key`` (a small JSON notification with ``"delay": "1h"``, to one
webhook device: each create stores a notification and its delivery, and none
falls due during the run), then ``GET /healthz`` of the same server. A second
fresh service of the same deployment takes ``POST /api/notifications/batch``
with 500 such items per request. Every answer must be a 2xx (wrk's
"Non-2xx" line fails the run); afterwards the server's stats must count at
least as many notifications as wrk saw created, none delivered.

Reported, over ``--rounds`` rounds (medians, and lowest-highest): requests/s
and latency p50/p99 of each, the create/healthz ratio (target >= 0.4 at 32
connections on one process, p99 < 50 ms) and batch notifications/s (target >=
20,000/s). ``--baseline DIR`` also runs the pushcore of another source tree
(e.g. ``git archive main | tar -x -C DIR``), alternating with this one round by
round, since on a shared machine only runs side by side compare (``--baseline``
may be given more than once: each tree is another variant). On SQLite the result
is written to docs/benchmarks.md (section "Ingest"); with
``--postgres`` (a throwaway cluster) or ``--database-url`` (a server of yours,
a fresh database per run) it is printed only (benchmarks/postgres.py writes
the PostgreSQL section).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import attrs
import httpx

from benchmarks.processes import CpuWindow, Deployment, key_with_webhook, postgres, pushctl
from benchmarks.report import write_section

ITEM = {"title": "Deploy finished", "body": "build 1234 is live", "delay": "1h"}
BATCH = 500
# Each deployment: (API processes, whether they deliver too, workers, and the processes
# of each API process: `pushctl serve --workers N`).
DEPLOYMENTS = {
    "serve": (1, True, 0, 1),
    "api1": (1, False, 1, 1),
    "api2": (2, False, 1, 1),
    "workers2": (1, True, 0, 2),
}


def lua(body: str) -> str:
    """A wrk script POSTing ``body`` with the API key from $KEY."""
    return f"""wrk.method = "POST"
wrk.body = [==[{body}]==]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("KEY")
"""


@attrs.frozen
class Load:
    """What wrk measured (one process, or several at once added up)."""

    rate: float  # requests/s
    p50: float  # ms
    p99: float  # ms
    requests: int
    connections: int = 0  # all wrk processes' together
    socket_errors: str = ""
    # Cores each process used meanwhile (the API processes, postgres, the machine's).
    cores: dict[str, float] = attrs.field(factory=dict)


UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def parse_wrk(out: str) -> Load:
    """The rate, latency percentiles and counts of one wrk --latency output."""
    if "Non-2xx" in out:
        raise RuntimeError(f"non-2xx answers under load:\n{out}")
    latency = {
        q: float(v) * UNITS[u]
        for q, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.MULTILINE)
    }
    errors = re.search(r"Socket errors: (.*)", out)
    return Load(
        rate=float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1]),  # type: ignore[index]
        p50=latency["50"],
        p99=latency["99"],
        requests=int(re.search(r"(\d+) requests in", out)[1]),  # type: ignore[index]
        socket_errors=errors[1] if errors else "",
    )


def drive(
    urls: Sequence[str], connections: int, seconds: int, key: str, script: Path | None = None
) -> Load:
    """wrk against every URL at once, ``connections`` split between them; summed."""
    each = max(1, connections // len(urls))
    command = ["wrk", f"-t{min(2, each)}", f"-c{each}", f"-d{seconds}s", "--latency"]
    command += ["--timeout", "10s", *(["-s", str(script)] if script else [])]
    env = {**os.environ, "KEY": key}
    processes = [
        subprocess.Popen([*command, url], env=env, stdout=subprocess.PIPE, text=True)
        for url in urls
    ]
    loads = [parse_wrk(p.communicate()[0]) for p in processes]
    return Load(
        rate=sum(load.rate for load in loads),
        p50=max(load.p50 for load in loads),
        p99=max(load.p99 for load in loads),
        requests=sum(load.requests for load in loads),
        connections=each * len(urls),
        socket_errors="; ".join(load.socket_errors for load in loads if load.socket_errors),
    )


@attrs.frozen
class Run:
    """One round of one deployment: per connection count, creates and /healthz; batches."""

    create: dict[int, Load]
    health: dict[int, Load]
    batch: Load  # rate: batch requests/s (of BATCH notifications each)


def prepare(deployment: Deployment) -> str:
    """An API key of account "bench", which has one webhook device."""
    token = subprocess.run(
        [*pushctl(deployment.data_dir, deployment.database_url), "token", "issue", "bench"],
        capture_output=True,
        text=True,
        check=True,
        cwd=deployment.cwd,
    ).stdout.strip()
    # A port nobody answers on: nothing falls due during the run anyway ("delay": "1h").
    return key_with_webhook(deployment.url, token, "http://127.0.0.1:9/hook", "bench")


def check_stored(deployment: Deployment, key: str, created: int) -> None:
    """The server holds at least ``created`` notifications (wrk's count), none delivered."""
    answer = httpx.get(
        f"{deployment.url}/api/notifications/stats",
        headers={"X-API-Key": key},
        timeout=60,
    )
    answer.raise_for_status()
    stats = answer.json()
    delivered = stats["byStatus"].get("DELIVERED", 0) + stats["byStatus"].get("FAILED", 0)
    if stats["total"] < created or delivered:
        raise RuntimeError(f"{created} created by wrk's count, but the server says {stats}")


def deployment_for(
    kind: str, data_dir: Path, database_url: str | None, tree: Path | None
) -> Deployment:
    """A :class:`Deployment` of ``kind`` (a key of DEPLOYMENTS)."""
    apis, engine, workers, serve_workers = DEPLOYMENTS[kind]
    # The default log level (warning would hide the access log, were it turned on).
    return Deployment(
        data_dir,
        database_url,
        apis=apis,
        engine=engine,
        workers=workers,
        serve_workers=serve_workers,
        settings={"PUSHCORE_LOG_LEVEL": "info"},
        cwd=tree,
    )


def measured(
    deployment: Deployment,
    postgres_pids: Callable[[], list[int]] | None,
    load: Callable[[], Load],
) -> Load:
    """``load()``, with the cores the API processes and PostgreSQL used meanwhile."""
    extra = {"postgres": postgres_pids} if postgres_pids is not None else {}
    pids = deployment.pids()
    # The API processes' event loops apart: a create's cores are the loop's and the
    # group writer's, and one interpreter lock lets one of them run Python at a time.
    window = CpuWindow({**pids, **extra}, main_threads=[n for n in pids if n.startswith("serve")])
    done = load()
    cores = {k: v for k, v in window.stop().items() if not k.startswith("worker-")}
    return attrs.evolve(done, cores=cores)


def run(
    kind: str,
    tree: Path | None,
    database: Callable[[], str | None],
    seconds: int,
    connections: Sequence[int],
    batch_connections: int,
    postgres_pids: Callable[[], list[int]] | None = None,
) -> Run:
    """Creates and /healthz on one fresh service, then batches on another."""
    create: dict[int, Load] = {}
    health: dict[int, Load] = {}
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp) / "one.lua", Path(tmp) / "batch.lua"
        one.write_text(lua(json.dumps(ITEM)))
        many.write_text(lua(json.dumps({"notifications": [ITEM] * BATCH})))
        with deployment_for(kind, Path(tmp) / "data", database(), tree) as deployment:
            key = prepare(deployment)
            creates = f"{deployment.url}/api/notifications"
            drive([creates], 32, 2, key, one)  # warm-up
            urls = deployment.urls
            for c in connections:
                posts = [f"{u}/api/notifications" for u in urls]
                posting = partial(drive, posts, c, seconds, key, one)
                create[c] = measured(deployment, postgres_pids, posting)
                health[c] = drive([f"{u}/healthz" for u in urls], c, seconds, key)
            check_stored(deployment, key, sum(load.requests for load in create.values()))
        with deployment_for(kind, Path(tmp) / "batch", database(), tree) as deployment:
            key = prepare(deployment)
            urls = [f"{u}/api/notifications/batch" for u in deployment.urls]
            drive(urls[:1], 2, 2, key, many)  # warm-up
            batch = measured(
                deployment,
                postgres_pids,
                partial(drive, urls, batch_connections, seconds, key, many),
            )
            check_stored(deployment, key, batch.requests * BATCH)
    return Run(create, health, batch)


def spread(values: Sequence[float], digits: int = 0) -> str:
    """The median, and lowest-highest when there are several: "1,234 (1,100-1,300)"."""
    median = f"{statistics.median(values):,.{digits}f}"
    if len(values) < 2:
        return median
    return f"{median} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def cores_cell(loads: Sequence[Load]) -> str:
    """The median cores of each process over ``loads``: "serve-1 0.9, postgres 0.5, machine 2.0"."""
    names = [n for n in loads[0].cores if all(n in load.cores for load in loads)]
    return ", ".join(
        f"{n} {statistics.median(load.cores[n] for load in loads):.{1 if n == 'machine' else 2}f}"
        for n in names
    )


def tables(results: dict[str, list[Run]], connections: Sequence[int]) -> str:
    """The creates-and-/healthz table and the batch table, in markdown."""
    rows = [
        "| deployment | connections | POST /api/notifications req/s | p50 / p99 ms"
        " | GET /healthz req/s | p50 / p99 ms | create / healthz | cores while creating |",
        "|---|---|---|---|---|---|---|---|",
    ]
    batch_rows = [
        "| deployment | batch requests/s | notifications/s | cores |",
        "|---|---|---|---|",
    ]
    for name, runs in results.items():
        for c in connections:
            creates = [r.create[c] for r in runs]
            healths = [r.health[c] for r in runs]
            ratios = [r.create[c].rate / r.health[c].rate for r in runs]
            errors = {e for load in [*creates, *healths] if (e := load.socket_errors)}
            note = f" (socket errors: {'; '.join(sorted(errors))})" if errors else ""
            rows.append(
                f"| {name} | {creates[0].connections} | {spread([x.rate for x in creates])}"
                f" | {statistics.median(x.p50 for x in creates):.1f}"
                f" / {statistics.median(x.p99 for x in creates):.1f}"
                f" | {spread([x.rate for x in healths])}"
                f" | {statistics.median(x.p50 for x in healths):.1f}"
                f" / {statistics.median(x.p99 for x in healths):.1f}"
                f" | {spread(ratios, 2)}{note} | {cores_cell(creates)} |"
            )
        batch_rows.append(
            f"| {name} | {spread([r.batch.rate for r in runs], 1)}"
            f" | {spread([r.batch.rate * BATCH for r in runs])}"
            f" | {cores_cell([r.batch for r in runs])} |"
        )
    return "\n".join(rows) + "\n\n" + "\n".join(batch_rows)


def measure(
    variants: Mapping[str, tuple[str, Path | None]],
    rounds: int,
    database: Callable[[], str | None],
    seconds: int,
    connections: Sequence[int],
    batch_connections: int,
    postgres_pids: Callable[[], list[int]] | None = None,
) -> dict[str, list[Run]]:
    """Every variant (a deployment kind, a source tree) once per round, alternating."""
    results: dict[str, list[Run]] = {name: [] for name in variants}
    for n in range(1, rounds + 1):
        for name, (kind, tree) in variants.items():
            done = run(kind, tree, database, seconds, connections, batch_connections, postgres_pids)
            results[name].append(done)
            summary = ", ".join(
                f"{c}: {done.create[c].rate:,.0f} (p99 {done.create[c].p99:.1f} ms)"
                f" / {done.health[c].rate:,.0f}"
                f" = {done.create[c].rate / max(done.health[c].rate, 1e-9):.2f}"
                for c in connections
            )
            print(
                f"round {n}, {name}: create / healthz req/s by connections {summary};"
                f" batch {done.batch.rate * BATCH:,.0f} notifications/s",
                flush=True,
            )
    return results


def label(kind: str) -> str:
    """A deployment kind as the tables name it."""
    apis, engine, workers, serve_workers = DEPLOYMENTS[kind]
    shape = Deployment(
        Path(), apis=apis, engine=engine, workers=workers, serve_workers=serve_workers
    )
    return shape.describe()


def method(seconds: int, rounds: int, connections: Sequence[int], batch_connections: int) -> str:
    """How the figures were made, for the reports."""
    return (
        f"wrk, `--latency`, 2 threads (1 for one connection), {seconds} s per load, at"
        f" {', '.join(map(str, connections))} connections: POST /api/notifications (one"
        " webhook device, `delay: 1h`), then GET /healthz of the same server. With 2 API"
        " processes, two wrk processes at once, one per port, each with half the"
        ' connections (two in all for "1"); their requests/s summed, their latency the'
        " higher of the two. Batches:"
        f" a second fresh service, {batch_connections} connections, {BATCH} items per"
        f" request. {rounds} round(s), deployments alternating, each run on a fresh service"
        " (rate limiting off); medians, lowest-highest in brackets. wrk runs on the same"
        " two cores as the service. Cores: CPU time / wall time of each API process (and of"
        " PostgreSQL's server processes) while creating, from /proc; `serve-1 loop`: its main"
        " thread's alone (the event loop; the rest is the group writer's thread, mostly);"
        " and the machine's busy cores, whoever used them (wrk, other users)."
    )


def main() -> None:
    """Run the rounds, print and record the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", default="1,32,256")
    parser.add_argument("--deployments", default="serve,api1,api2")
    parser.add_argument("--batch-connections", type=int, default=4)
    parser.add_argument(
        "--baseline", type=Path, action="append", default=[], help="another tree (repeatable)"
    )
    parser.add_argument(
        "--baseline-label", action="append", default=[], help="its name (one per --baseline)"
    )
    parser.add_argument("--postgres", action="store_true", help="on a throwaway cluster")
    parser.add_argument("--database-url", help="on this PostgreSQL server (fresh databases)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    connections = [int(c) for c in args.connections.split(",")]
    kinds = args.deployments.split(",")
    trees: dict[str, Path | None] = {"this tree": None}
    if args.baseline:
        labels = list(args.baseline_label) or (["baseline"] if len(args.baseline) == 1 else [])
        labels += [tree.name for tree in args.baseline[len(labels) :]]
        trees = {
            **{name: tree.resolve() for name, tree in zip(labels, args.baseline, strict=True)},
            **trees,
        }
    variants = {
        f"{label(kind)}{f', {tree_name}' if args.baseline else ''}": (kind, tree)
        for kind in kinds
        for tree_name, tree in trees.items()
    }
    on_postgres = args.postgres or args.database_url
    figures = (args.seconds, connections, args.batch_connections)
    if on_postgres:
        with postgres(args.database_url) as pg:
            results = measure(variants, args.rounds, pg.fresh, *figures, pg.server_pids)
            where = pg.describe()
    else:
        results = measure(variants, args.rounds, lambda: None, *figures)
        where = "SQLite (the data directory's file)"
    command = ".venv/bin/python -m benchmarks.ingest " + " ".join(
        [
            f"--rounds {args.rounds} --seconds {args.seconds} --connections {args.connections}",
            f"--deployments {args.deployments} --batch-connections {args.batch_connections}",
            *(["--baseline DIR"] * len(args.baseline)),
            *(["--postgres"] if args.postgres else []),
        ]
    )
    how = method(args.seconds, args.rounds, connections, args.batch_connections)
    body = f"""Command: `{command}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores; on {where}. {how}

{tables(results, connections)}

Targets: create / healthz >= 0.4 at 32 connections on one process, p99 < 50 ms; batches
>= 20,000 notifications/s.
"""
    print(body)
    if not args.no_write and not on_postgres:
        write_section("Ingest", body)


if __name__ == "__main__":
    main()
