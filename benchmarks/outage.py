"""Database outages: how pushcore answers while its database is gone, and how soon it is back.

    .venv/bin/python -m benchmarks.outage [--seconds 260] [--rounds 2] [--only postgres,disk]
        [--baseline DIR [--baseline-label TEXT]] [--no-write]

postgres: one `pushctl serve` on a throwaway PostgreSQL cluster
(benchmarks/processes.py), a trickle of creates (one at a time, one every
0.5 s) and of /readyz polls (one every 0.25 s), each in a thread of its own
with a 60 s client timeout. After 10 s PostgreSQL is stopped (``pg_ctl stop
-m fast``) for ``--seconds``, then started again. Per round: the time from
the stop to the first 503, what was answered during the outage, the slowest
answer to a request sent during it, and the time from the database's return
(``pg_ctl start`` returned) to the first ready /readyz and to the first 201.
``--baseline DIR`` first runs one round on the pushcore of another source
tree (an earlier commit: ``git archive <commit> | tar -x -C DIR``), to compare,
named ``--baseline-label`` in the table.

disk (root only): one `pushctl serve` on SQLite with its data directory on a
3 MiB tmpfs, a real full file system: batches of 500 creates until one is
refused, then single creates until they are too (the disk is then full for
every write); for 10 s /readyz and an API-key GET are timed; then the tmpfs
is grown (``mount -o remount,size=64m``) and the time to ready and to a 201
are measured.

Printed, and written to docs/benchmarks.md (section "Database outages").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import httpx

from benchmarks.processes import Postgres, free_port, postgres, pushctl, start_server, stop_server
from benchmarks.report import write_section

SECTION = "Database outages"
WARM_UP = 10.0
CREATE_EVERY = 0.5
READY_EVERY = 0.25
CLIENT_TIMEOUT = 60.0
AFTER_RETURN = 180.0  # how long to wait for ready and a 201 once the database is back
CREATE = {"title": "outage", "delay": "1h"}  # nothing to deliver: only the API is measured
READING = (
    "Reading. The first 503 comes after one wait for a pooled connection (3 s): the"
    " pool's connections died with the server and no new one can be made; from then on"
    " one request at a time waits for the server and the others are answered at once."
    " Before these bounds (the baseline row, if any), a request waited for the pool's"
    " 30 s and got a 500, and readiness came back at psycopg_pool's next reconnection"
    " try, whose gaps double through the outage (1, 2, 4 ... s): anywhere from at once to"
    " about the outage's length after the return, depending on where in that schedule the"
    " database came back (the fault probe of issue 16 saw 3 s after 130 s down, 40 s"
    " after 260 s)."
)
FILL = {"notifications": [{"title": f"fill {i}", "body": "x" * 1500} for i in range(500)]}


@attrs.frozen
class Answer:
    """One request: when it was sent (monotonic), how long its answer took, its status."""

    sent: float
    took: float
    status: int | str  # the HTTP status, or the httpx error's name

    @property
    def done(self) -> float:
        """When the answer came."""
        return self.sent + self.took


class Trickle:
    """Requests of one kind sent one at a time, one every ``every`` seconds, in a thread."""

    def __init__(self, base: str, every: float, method: str, path: str, **kwargs: Any) -> None:
        self._base, self._every = base, every
        self._request = (method, path, kwargs)
        self.answers: list[Answer] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Trickle:
        """Start sending."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sending; wait for the request in flight."""
        self._stop.set()
        self._thread.join(CLIENT_TIMEOUT + 5)

    def _run(self) -> None:
        method, path, kwargs = self._request
        with httpx.Client(base_url=self._base, timeout=CLIENT_TIMEOUT) as client:
            while not self._stop.is_set():
                sent = time.monotonic()
                try:
                    status: int | str = client.request(method, path, **kwargs).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                self.answers.append(Answer(sent, time.monotonic() - sent, status))
                self._stop.wait(max(0.0, self._every - (time.monotonic() - sent)))

    def first(self, after: float, status: int | str) -> Answer | None:
        """The first request sent at or after ``after`` answered with ``status``."""
        return next((a for a in self.answers if a.sent >= after and a.status == status), None)


def api_key(base: str, data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    """X-API-Key headers of a new key of the account ``bench`` (read and write)."""
    token = subprocess.run(
        [*pushctl(data_dir, database_url), "token", "issue", "bench"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    answer = httpx.post(
        f"{base}/api/keys",
        json={"name": "bench", "scopes": ["notifications:write", "notifications:read"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    answer.raise_for_status()
    return {"X-API-Key": answer.json()["key"]}


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll ``condition`` every 0.1 s for up to ``seconds``; whether it came true."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


# -- PostgreSQL stopped --------------------------------------------------------


@attrs.frozen
class Round:
    """What one PostgreSQL outage showed."""

    label: str
    first_503: float | None  # seconds from the stop to the first 503 answer
    first_failure: tuple[float, int | str] | None  # the first create that was not a 201
    during: dict[str, Counter[int | str]]  # statuses answered during the outage, by kind
    slowest: float  # the slowest answer to a request sent during the outage
    ready_after: float | None  # seconds from the return to the first ready /readyz
    created_after: float | None  # ... and to the first 201


def postgres_round(pg: Postgres, seconds: float, label: str, cwd: Path | None) -> Round:
    """Stop the cluster under a running `pushctl serve` for ``seconds``; what it answered."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, port, url = Path(tmp) / "data", free_port(), pg.fresh()
        base = f"http://127.0.0.1:{port}"
        server = start_server(
            data_dir, port, database_url=url, cwd=cwd, log=Path(tmp) / "serve.log"
        )
        try:
            key = api_key(base, data_dir, url)
            creates = Trickle(
                base, CREATE_EVERY, "POST", "/api/notifications", json=CREATE, headers=key
            )
            ready = Trickle(base, READY_EVERY, "GET", "/readyz")
            creates.start()
            ready.start()
            time.sleep(WARM_UP)
            pg.cluster.halt()
            stopped = time.monotonic()
            print(f"  {label}: PostgreSQL stopped for {seconds:.0f} s", flush=True)
            time.sleep(seconds)
            pg.cluster.resume()
            back = time.monotonic()
            wait_for(
                lambda: bool(ready.first(back, 200) and creates.first(back, 201)), AFTER_RETURN
            )
            creates.stop()
            ready.stop()
        finally:
            stop_server(server)
    return summary(label, creates, ready, stopped, back)


def summary(label: str, creates: Trickle, ready: Trickle, stopped: float, back: float) -> Round:
    """The figures of one round from its answers."""
    failures = [a for a in creates.answers if a.done > stopped and a.status != 201]
    first_503 = next((a for a in failures if a.status == 503), None)
    during = {
        name: Counter(a.status for a in trickle.answers if stopped < a.done <= back)
        for name, trickle in (("create", creates), ("/readyz", ready))
    }
    sent_during = [a for t in (creates, ready) for a in t.answers if stopped <= a.sent < back]
    ready_at, created_at = ready.first(back, 200), creates.first(back, 201)
    return Round(
        label=label,
        first_503=None if first_503 is None else first_503.done - stopped,
        first_failure=None if not failures else (failures[0].done - stopped, failures[0].status),
        during=during,
        slowest=max((a.took for a in sent_during), default=0.0),
        ready_after=None if ready_at is None else ready_at.done - back,
        created_after=None if created_at is None else created_at.done - back,
    )


def seconds_cell(value: float | None) -> str:
    """``1.23 s``, or "none" when it never happened."""
    return "none" if value is None else f"{value:.2f} s"


def counts_cell(counts: Counter[int | str]) -> str:
    """``503 ×520, 500 ×3``."""
    return ", ".join(f"{status} ×{n}" for status, n in counts.most_common()) or "none"


def round_row(r: Round) -> str:
    """One table row."""
    first_503 = seconds_cell(r.first_503)
    if r.first_503 is None and r.first_failure is not None:
        first_503 += f" (first failure: {r.first_failure[1]} after {r.first_failure[0]:.1f} s)"
    during = "; ".join(f"{name}: {counts_cell(c)}" for name, c in r.during.items())
    return (
        f"| {r.label} | {first_503} | {during} | {r.slowest:.2f} s"
        f" | {seconds_cell(r.ready_after)} | {seconds_cell(r.created_after)} |"
    )


def spread(values: Sequence[float | None]) -> str:
    """The median, and lowest-highest when there are several; "none" if one never happened."""
    if any(v is None for v in values):
        return "none in " + str(sum(v is None for v in values)) + " round(s)"
    known = [v for v in values if v is not None]
    middle = f"{statistics.median(known):.2f} s"
    return middle if len(known) == 1 else f"{middle} ({min(known):.2f}-{max(known):.2f})"


def postgres_part(args: argparse.Namespace) -> str:
    """The PostgreSQL rounds: a table, and the spread of this tree's rounds."""
    rounds: list[Round] = []
    with postgres() as pg:
        where = pg.describe()
        if args.baseline is not None:
            label = f"baseline: {args.baseline_label or args.baseline.name}"
            rounds.append(postgres_round(pg, args.seconds, label, args.baseline))
            print(round_row(rounds[-1]), flush=True)
        for n in range(1, args.rounds + 1):
            rounds.append(postgres_round(pg, args.seconds, f"round {n}", None))
            print(round_row(rounds[-1]), flush=True)
    ours = [r for r in rounds if r.label.startswith("round")]
    return "\n".join(
        [
            f"PostgreSQL stopped for {args.seconds:.0f} s under one `pushctl serve`, on {where}:"
            f" a create every {CREATE_EVERY} s and a /readyz every {READY_EVERY} s, one at a"
            f" time each, {CLIENT_TIMEOUT:.0f} s client timeout; {WARM_UP:.0f} s of warm-up"
            " first. The return is when `pg_ctl start` returned; the slowest answer is over"
            " the requests sent while the database was down.",
            "",
            "| run | first 503 after the stop | answered during the outage | slowest answer"
            " | ready after the return | first 201 after the return |",
            "|---|---|---|---|---|---|",
            *(round_row(r) for r in rounds),
            "",
            f"Over this tree's {len(ours)} round(s) (median, lowest-highest): first 503"
            f" {spread([r.first_503 for r in ours])} after the stop, slowest answer"
            f" {spread([r.slowest for r in ours])}, ready {spread([r.ready_after for r in ours])}"
            f" and a 201 {spread([r.created_after for r in ours])} after the return.",
            "",
            READING,
        ]
    )


# -- SQLite on a full disk -------------------------------------------------------


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (created), unmounted afterwards."""
    where.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", where], check=True
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], check=False)


def disk_part() -> str:
    """SQLite filled up to a full tmpfs: what writes, /readyz and reads answered; the recovery."""
    if os.geteuid() != 0:
        return "SQLite on a full disk: not run (mounting a tmpfs needs root)."
    with tempfile.TemporaryDirectory() as tmp, small_tmpfs(Path(tmp) / "disk", "3m") as disk:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(disk / "data", port, log=Path(tmp) / "serve.log")
        try:
            key = api_key(base, disk / "data")
            with httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT, headers=key) as client:
                refused, writes = fill(client)
            ready = Trickle(base, READY_EVERY, "GET", "/readyz").start()
            reads = Trickle(base, CREATE_EVERY, "GET", "/api/notifications?limit=20", headers=key)
            creates = Trickle(
                base, CREATE_EVERY, "POST", "/api/notifications", json=CREATE, headers=key
            )
            reads.start()
            creates.start()
            time.sleep(10)
            grown = time.monotonic()
            subprocess.run(["mount", "-o", "remount,size=64m", disk], check=True)
            wait_for(lambda: bool(ready.first(grown, 200) and creates.first(grown, 201)), 60)
            for trickle in (ready, reads, creates):
                trickle.stop()
        finally:
            stop_server(server)
    full = {
        name: [a for a in t.answers if a.sent < grown]
        for name, t in (("/readyz", ready), ("GET /api/notifications", reads), ("create", creates))
    }
    ready_at, created_at = ready.first(grown, 200), creates.first(grown, 201)
    rows = [
        f"| {name} | {counts_cell(Counter(a.status for a in answers))}"
        f" | {max(a.took for a in answers) * 1000:.0f} ms |"
        for name, answers in full.items()
    ]
    return "\n".join(
        [
            "SQLite on a full disk: one `pushctl serve`, its data directory on a 3 MiB tmpfs"
            f" (a real ENOSPC), filled through the API: {writes}; the first refusal was"
            f" {refused}. Then for 10 s, with nothing more able to fit:",
            "",
            "| request | answered | slowest |",
            "|---|---|---|",
            *rows,
            "",
            "After the tmpfs was grown to 64 MiB (`mount -o remount`): ready"
            f" {seconds_cell(None if ready_at is None else ready_at.done - grown)}, a 201"
            f" {seconds_cell(None if created_at is None else created_at.done - grown)} later.",
        ]
    )


def fill(client: httpx.Client) -> tuple[str, str]:
    """Batches of 500 until one is refused, then single creates until they are too:
    (the first refusal, what was stored)."""
    batches = singles = 0
    first = ""
    for path, body in (("/api/notifications/batch", FILL), ("/api/notifications", CREATE)):
        for _ in range(1000):
            answer = client.post(path, json=body)
            if answer.status_code != 201:
                took = answer.elapsed.total_seconds() * 1000
                code = answer.json().get("code")
                first = first or f"{answer.status_code} `{code}` in {took:.0f} ms"
                break
            if body is FILL:
                batches += 1
            else:
                singles += 1
    return first, f"{batches} batches and {singles} single creates stored"


def main() -> None:
    """Run what --only names, print, and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=260.0, help="how long PostgreSQL is down")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="postgres,disk")
    parser.add_argument("--baseline", type=Path, help="the source tree of an earlier pushcore")
    parser.add_argument("--baseline-label", help="its name in the table (default: DIR's name)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    only = args.only.split(",")
    parts = []
    if "postgres" in only:
        parts.append(postgres_part(args))
    if "disk" in only:
        parts.append(disk_part())
    command = (
        f".venv/bin/python -m benchmarks.outage --seconds {args.seconds:.0f}"
        f" --rounds {args.rounds} --only {args.only}"
    )
    if args.baseline is not None:
        command += f" --baseline {args.baseline}"
        if args.baseline_label:
            command += f" --baseline-label '{args.baseline_label}'"
    body = "\n\n".join(
        [
            f"Command: `{command}`",
            f"Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python"
            f" {platform.python_version()}, {os.cpu_count()} cores (shared with other work).",
            *parts,
        ]
    )
    print(body)
    if not args.no_write:
        write_section(SECTION, body)


if __name__ == "__main__":
    main()
