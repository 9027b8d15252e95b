"""After sending: PATCH against create, and 1,000 PATCHes each racing its due instant.

    .venv/bin/python -m benchmarks.edits [--runs 3] [--count 1000] [--seconds 5]
        [--backend both|sqlite|postgres] [--database-url URL] [--quick] [--no-write]

Throughput (SQLite, one fresh `pushctl serve`, rate limiting off, one webhook
device): wrk at 32 connections, ``--seconds`` each, alternating ``POST
/api/notifications`` and ``PATCH /api/notifications/:id`` (a new title) of
1,000 notifications made first, in turn; each run gives both rates, their
p99 and the server's CPU per request. The issue's target: a PATCH within 10%
of a create.

The race, on SQLite (`pushctl serve`) and on PostgreSQL (`pushctl serve
--workers 2`, whose first process runs the engine, plus a `pushctl worker`:
two API processes and two engines on one database; a throwaway cluster unless
``--database-url`` names a server): ``count`` notifications titled "rev1",
due one after another ``--spacing`` ms apart; each gets one PATCH of its title
to "rev2" with ``If-Match: 1``, sent at its own due instant plus an offset
spread evenly over -20 ms..+20 ms (the issue's window), so that every PATCH
meets its own claim at a rate the server keeps up with. API.md: either the
PATCH answers 200 and the device gets the new title (revision 2), or it
answers 409 `not_editable` and the device gets the old one; never a mix, never
twice. Counted: each answer (200, 409, 412, other) split by whether it was
sent before or after the due instant, the deliveries whose title or revision
does not match their answer, the deliveries beyond one per notification, when
each PATCH was answered against its due instant, and the deliveries' lateness.
Results are printed and written to docs/benchmarks.md ("After sending: edits").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from benchmarks.fairness import spread
from benchmarks.ingest import ITEM, Load, drive, lua
from benchmarks.patch_profile import make_ids, measure, patch_lua
from benchmarks.processes import Deployment, key_with_webhook, postgres, pushctl
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section

LEAD = 4.0  # seconds from the race's set-up to its first due instant
WINDOW = 0.04  # each PATCH is sent within ±20 ms of its notification's due instant


@contextlib.contextmanager
def deployment(backend: str, tmp: Path, database_url: str | None) -> Iterator[Deployment]:
    """A fresh SQLite `serve`, or `serve --workers 2` + `worker` on a fresh PostgreSQL."""
    if backend == "sqlite":
        with Deployment(tmp / "data") as started:
            yield started
        return
    with (
        postgres(database_url) as pg,
        Deployment(tmp / "data", pg.fresh(), workers=1, serve_workers=2) as started,
    ):
        yield started


def account_key(started: Deployment, hook: str) -> str:
    """An API key of account "bench", which has one webhook device at ``hook``."""
    token = subprocess.run(
        [*pushctl(started.data_dir, started.database_url), "token", "issue", "bench"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return key_with_webhook(started.url, token, hook, "bench")


def throughput(started: Deployment, key: str, rounds: int, seconds: int) -> dict[str, list[Any]]:
    """Creates and PATCHes alternated under wrk: (Load, server CPU µs per request) each."""
    rows: dict[str, list[tuple[Load, float]]] = {"create": [], "patch": []}
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {"create": Path(tmp) / "create.lua", "patch": Path(tmp) / "patch.lua"}
        scripts["create"].write_text(lua(json.dumps(ITEM)))
        ids = make_ids(started.url, key)
        scripts["patch"].write_text(patch_lua(ids, json.dumps({"title": "edited"})))
        url = f"{started.url}/api/notifications"
        pid = started.pids()["serve-1"][0]
        for kind in ("create", "patch"):  # warm-up
            drive([url], 32, 1, key, scripts[kind])
        for _ in range(rounds):
            for kind in ("create", "patch"):
                rows[kind].append(measure(pid, url, key, scripts[kind], seconds))
    return rows


def make_due(base: str, key: str, dues: list[float]) -> list[str]:
    """A notification titled "rev1" due at each of ``dues`` (epoch seconds); their ids."""
    ids: list[str] = []
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=60) as client:
        for start in range(0, len(dues), 500):
            items = [
                {"title": "rev1", "scheduledAt": _stamp(due)} for due in dues[start : start + 500]
            ]
            answer = client.post("/api/notifications/batch", json={"notifications": items})
            answer.raise_for_status()
            ids += [n["id"] for n in answer.json()["items"]]
    return ids


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def offsets(count: int) -> list[float]:
    """Each PATCH's offset from its due instant: -20..+20 ms, evenly, in a scattered order."""
    # A stride coprime with count visits every step once, neighbours far apart.
    stride = next(s for s in range(count // 3 + 1, count + 1) if _coprime(s, count))
    return [-WINDOW / 2 + WINDOW * ((i * stride) % count) / max(1, count - 1) for i in range(count)]


def _coprime(a: int, b: int) -> bool:
    while b:
        a, b = b, a % b
    return a == 1


async def race(
    base: str, key: str, ids: list[str], dues: list[float], shifts: list[float]
) -> list[dict[str, Any]]:
    """One PATCH per notification at its due instant + its shift; per PATCH: its status,
    and when it was sent and answered (seconds from the due instant)."""
    outcomes: list[dict[str, Any]] = [{} for _ in ids]
    headers = {"X-API-Key": key, "Content-Type": "application/json", "If-Match": "1"}
    body = json.dumps({"title": "rev2"})
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as session:
        # Open the connections before the first due instant: none is opened in the window.
        await asyncio.gather(*(session.get(f"{base}/healthz") for _ in range(50)))

        async def one(i: int) -> None:
            await asyncio.sleep(max(0.0, dues[i] + shifts[i] - time.time()))
            sent = time.time()
            url = f"{base}/api/notifications/{ids[i]}"
            async with session.patch(url, data=body, headers=headers) as response:
                await response.read()
            outcomes[i] = {
                "status": response.status,
                "sent": sent - dues[i],
                "answered": time.time() - dues[i],
            }

        await asyncio.gather(*(one(i) for i in range(len(ids))))
    return outcomes


def run_race(backend: str, count: int, spacing: float, database_url: str | None) -> dict[str, Any]:
    """One fresh deployment: ``count`` notifications, each PATCHed around its due instant."""
    receiver = BenchReceiver(keep_bodies=True).start()
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            deployment(backend, Path(tmp), database_url) as d,
        ):
            key = account_key(d, f"http://127.0.0.1:{receiver.port}/hook")
            first = time.time() + LEAD
            dues = [first + i * spacing for i in range(count)]
            ids = make_due(d.url, key, dues)
            if time.time() > first - 1:
                raise RuntimeError("the set-up took longer than LEAD: raise it")
            outcomes = asyncio.run(race(d.url, key, ids, dues, offsets(count)))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(_raced(receiver, ids)) < count:
                time.sleep(0.2)
            time.sleep(2)  # anything sent twice would come now
            description = d.describe()
    finally:
        receiver.stop()
    return judge(ids, dues, outcomes, receiver) | {"backend": backend, "deployment": description}


def judge(
    ids: list[str], dues: list[float], outcomes: list[dict[str, Any]], receiver: BenchReceiver
) -> dict[str, Any]:
    """The race's figures: answers, wrong content, repeats, timings."""
    status = {n: o["status"] for n, o in zip(ids, outcomes, strict=True)}
    due_of = dict(zip(ids, dues, strict=True))
    bodies = _raced(receiver, ids)
    per: Counter[str] = Counter(b["notificationId"] for b in bodies)
    wrong = 0
    for b in bodies:
        won = status[b["notificationId"]] == 200
        wrong += (b["title"], b.get("revision")) != (("rev2", 2) if won else ("rev1", 1))
    answers: Counter[tuple[int, str]] = Counter(
        (o["status"], "before" if o["sent"] < 0 else "after") for o in outcomes
    )
    arrivals = [at - due_of[n] for at, n, _ in receiver.received if n in due_of]
    return {
        "answers": answers,
        "delivered": len(per),
        "twice": sum(n - 1 for n in per.values()),
        "wrong": wrong,
        "answered": sorted(o["answered"] for o in outcomes),
        "answered_200": sorted(o["answered"] for o in outcomes if o["status"] == 200),
        "late": sorted(arrivals),
    }


def _raced(receiver: BenchReceiver, ids: list[str]) -> list[dict[str, Any]]:
    wanted = set(ids)
    return [b for b in list(receiver.bodies or []) if b.get("notificationId") in wanted]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (0 when empty)."""
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def _ms(values: list[float], *quantiles: float) -> str:
    return " / ".join(f"{percentile(values, q) * 1000:+.0f}" for q in quantiles)


def report(
    rates: list[dict[str, list[Any]]], races: list[dict[str, Any]], args: argparse.Namespace
) -> str:
    """The docs/benchmarks.md section."""
    command = (
        f".venv/bin/python -m benchmarks.edits --runs {args.runs} --count {args.count}"
        f" --seconds {args.seconds} --spacing {args.spacing:g} --backend {args.backend}"
    )
    lines = [
        f"Command: `{command}`",
        "",
        f"Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python"
        f" {platform.python_version()}, 2 cores; rate limiting off, one webhook device at a raw"
        " asyncio receiver.",
    ]
    if rates:
        creates = [load.rate for r in rates for load, _ in r["create"]]
        patches = [load.rate for r in rates for load, _ in r["patch"]]
        ratio = [p / c * 100 for p, c in zip(patches, creates, strict=True)]
        cpu = {k: [us for r in rates for _, us in r[k]] for k in ("create", "patch")}
        p99 = {k: [load.p99 for r in rates for load, _ in r[k]] for k in ("create", "patch")}
        cpu_ratio = [p / c * 100 for p, c in zip(cpu["patch"], cpu["create"], strict=True)]
        lines += [
            "",
            f"**PATCH against create**: one `pushctl serve` on SQLite, wrk at 32 connections,"
            f" {args.seconds} s each, creates and PATCHes alternated; median (lowest-highest) of"
            f" {len(creates)} rounds:",
            "",
            "| | per s | p99 ms | server CPU µs per request |",
            "|---|---|---|---|",
            f"| POST /api/notifications | {spread(creates)} | {spread(p99['create'])}"
            f" | {spread(cpu['create'])} |",
            f"| PATCH /api/notifications/:id | {spread(patches)} | {spread(p99['patch'])}"
            f" | {spread(cpu['patch'])} |",
            f"| PATCH / create | {spread(ratio)} % | | {spread(cpu_ratio)} % |",
        ]
    lines += [
        "",
        f"**The race**: {args.count} notifications due {args.spacing:g} ms apart, each PATCHed"
        " once (`If-Match: 1`) at its own due instant plus an offset spread evenly over"
        " -20..+20 ms. Answers split by when the PATCH was sent (before / after its due"
        ' instant); "answered" is when its answer came, from the due instant.',
        "",
        "| backend | 200 before / after | 409 before / after | 412 | other | delivered"
        " | wrong content | delivered twice | answered p1 / p50 / p99 ms | last 200 answered ms"
        " | lateness p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in races:
        a: Counter[tuple[int, str]] = r["answers"]
        other = sum(v for (s, _), v in a.items() if s not in (200, 409, 412))
        last = percentile(r["answered_200"], 1.0) * 1000 if r["answered_200"] else 0.0
        lines.append(
            f"| {r['deployment']}{' on PostgreSQL' if r['backend'] == 'postgres' else ''}"
            f" | {a[(200, 'before')]} / {a[(200, 'after')]}"
            f" | {a[(409, 'before')]} / {a[(409, 'after')]}"
            f" | {a[(412, 'before')] + a[(412, 'after')]} | {other} | {r['delivered']}"
            f" | **{r['wrong']}** | **{r['twice']}** | {_ms(r['answered'], 0.01, 0.5, 0.99)}"
            f" | {last:+.0f} | {_ms(r['late'], 0.5, 0.99)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=5, help="each wrk load")
    parser.add_argument("--spacing", type=float, default=10.0, help="ms between due instants")
    parser.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--database-url", help="a PostgreSQL server (default: a throwaway one)")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--quick", action="store_true", help="1 run, 200 notifications, 3 s")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.count, args.seconds = 1, 200, 3
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    rates: list[dict[str, list[Any]]] = []
    races: list[dict[str, Any]] = []
    for i in range(args.runs):
        if not args.no_throughput:
            with tempfile.TemporaryDirectory() as tmp, deployment("sqlite", Path(tmp), None) as d:
                key = account_key(d, "http://127.0.0.1:9/hook")  # nothing falls due
                rates.append(throughput(d, key, 1, args.seconds))
            (create, cu), (patch, pu) = rates[-1]["create"][0], rates[-1]["patch"][0]
            print(
                f"run {i + 1}: create {create.rate:.0f}/s p99 {create.p99:.0f} ms {cu:.0f} µs,"
                f" patch {patch.rate:.0f}/s p99 {patch.p99:.0f} ms {pu:.0f} µs",
                flush=True,
            )
        for backend in backends:
            races.append(run_race(backend, args.count, args.spacing / 1000, args.database_url))
            r = races[-1]
            print(
                f"run {i + 1} {backend}: {dict(r['answers'])}, delivered {r['delivered']},"
                f" wrong {r['wrong']}, twice {r['twice']}, lateness p99 {_ms(r['late'], 0.99)} ms",
                flush=True,
            )
    text = report(rates, races, args)
    print(text)
    if not args.no_write:
        write_section("After sending: edits", text)
    if any(r["wrong"] or r["twice"] for r in races):
        sys.exit(1)


if __name__ == "__main__":
    main()
