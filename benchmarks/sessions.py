"""Revocation check benchmark: what refusing signed-out sessions costs an authenticated GET.

    .venv/bin/python -m benchmarks.sessions --baseline DIR [--rounds 3] [--seconds 8]
        [--connections 32] [--signed-out 1000] [--postgres] [--no-write]

Every access token pushcore signs names its session, and each request with one is
checked against the sessions signed out (an in-memory set, read again from the
database at most every 0.5 s). This measures what that costs: wrk drives ``GET
/api/account`` with a session's access token (``Authorization: Bearer``) on one
fresh `pushctl serve` (rate limiting off), on the pushcore of ``--baseline DIR``
(e.g. ``git archive main | tar -x -C DIR``: no check) and on this tree, alternating
round by round (on a shared machine only runs side by side compare); this tree
also with ``--signed-out`` other sessions signed out (rows in force, so each read
of the set brings them all). Results are printed and, on SQLite, written to
docs/benchmarks.md (section "Sign-out: the revocation check").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import timeit
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks.ingest import Load, drive, spread
from benchmarks.processes import Deployment, postgres, pushctl
from benchmarks.report import write_section

PASSWORD = "a benchmark's password"  # noqa: S105 (a throwaway server's)
SCRIPT = 'wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY")\n'


def prepare(deployment: Deployment, signed_out: int) -> str:
    """An access token of account "bench" (made with a password), after ``signed_out``
    other sessions of it were signed in and out."""
    create = ["accounts", "create", "bench", "--password-stdin"]
    subprocess.run(
        [*pushctl(deployment.data_dir, deployment.database_url), *create],
        input=PASSWORD,
        text=True,
        check=True,
        capture_output=True,
        cwd=deployment.cwd,
    )
    body = {"account": "bench", "password": PASSWORD}
    with httpx.Client(base_url=deployment.url, timeout=60) as client:

        def sign_in_and_out(_: int) -> None:
            session = client.post("/api/auth/login", json=body).json()
            out = client.post("/api/auth/logout", json={"refreshToken": session["refreshToken"]})
            out.raise_for_status()

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(sign_in_and_out, range(signed_out)))
        answer = client.post("/api/auth/login", json=body)
        answer.raise_for_status()
        token: str = answer.json()["accessToken"]
        assert client.get("/api/account", headers={"Authorization": f"Bearer {token}"}).is_success
    return token


def run(
    tree: Path | None, database: Callable[[], str | None], signed_out: int, args: argparse.Namespace
) -> Load:
    """One fresh server of ``tree``, its GET /api/account under wrk."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "get.lua"
        script.write_text(SCRIPT)
        with Deployment(Path(tmp) / "data", database(), cwd=tree) as deployment:
            token = prepare(deployment, signed_out)
            url = f"{deployment.url}/api/account"
            drive([url], args.connections, 2, token, script)  # warm-up
            return drive([url], args.connections, args.seconds, token, script)


def check_costs(signed_out: int) -> str:
    """What the check itself costs in process (SQLite): a look at a fresh copy, and a
    read of ``signed_out`` rows in force (once per 0.5 s at most), in microseconds."""
    from pushcore import build_services, load_settings
    from pushcore.domain.people import SessionRevocation
    from pushcore.services.revocations import SignedOut

    with tempfile.TemporaryDirectory() as tmp:
        services = build_services(load_settings(env={}, data_dir=Path(tmp)))
        try:
            now = services.clock.now()
            rows = [
                SessionRevocation(f"rtk_{n:026d}", "bench", now, now + timedelta(hours=1))
                for n in range(signed_out)
            ]
            with services.store.transaction() as tx:
                tx.session_revocations.add(rows)
            fresh = SignedOut(services.store, services.clock, max_age=3600)
            assert "rtk_x" not in fresh  # the one read
            looks = timeit.repeat(lambda: "rtk_x" in fresh, number=100_000, repeat=5)
            stale = SignedOut(services.store, services.clock, max_age=0)
            reads = timeit.repeat(lambda: "rtk_x" in stale, number=50, repeat=5)
        finally:
            services.close()
    look = min(looks) / 100_000 * 1e6
    read = min(reads) / 50 * 1e6
    return (
        f"In process (SQLite, best of 5): a request's look at a fresh copy {look:.2f} µs;"
        f" a read of the copy with {signed_out:,} sessions signed out {read:,.0f} µs"
        f" ({read / 500_000:.2%} of a core at one read per 0.5 s)."
    )


def main() -> None:
    """Run the rounds, print and record the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--signed-out", type=int, default=1000)
    parser.add_argument("--postgres", action="store_true", help="on a throwaway cluster")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    variants: dict[str, tuple[Path | None, int]] = {
        "before (no check)": (args.baseline.resolve(), 0),
        "after, no session signed out": (None, 0),
        f"after, {args.signed_out:,} sessions signed out": (None, args.signed_out),
    }
    results: dict[str, list[Load]] = {name: [] for name in variants}

    def rounds(database: Callable[[], str | None]) -> None:
        for n in range(1, args.rounds + 1):
            for name, (tree, signed_out) in variants.items():
                load = run(tree, database, signed_out, args)
                results[name].append(load)
                print(
                    f"round {n}, {name}: {load.rate:,.0f} req/s, p99 {load.p99:.1f} ms", flush=True
                )

    if args.postgres:
        with postgres(None) as pg:
            rounds(pg.fresh)
            where = pg.describe()
    else:
        rounds(lambda: None)
        where = "SQLite (the data directory's file)"
    base = statistics.median(load.rate for load in results["before (no check)"])
    rows = [
        "| pushcore | GET /api/account req/s | p50 / p99 ms | vs before |",
        "|---|---|---|---|",
    ]
    for name, loads in results.items():
        rate = statistics.median(load.rate for load in loads)
        rows.append(
            f"| {name} | {spread([load.rate for load in loads])}"
            f" | {statistics.median(load.p50 for load in loads):.1f}"
            f" / {statistics.median(load.p99 for load in loads):.1f} | {rate / base:.2f} |"
        )
    command = (
        f".venv/bin/python -m benchmarks.sessions --baseline DIR --rounds {args.rounds}"
        f" --seconds {args.seconds} --connections {args.connections}"
        f" --signed-out {args.signed_out}{' --postgres' if args.postgres else ''}"
    )
    body = f"""Command: `{command}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores; on {where}. wrk, `--latency`, 2 threads, {args.connections}
connections, {args.seconds} s per run, `GET /api/account` with a session's access token,
one fresh `pushctl serve` per run (rate limiting off); the baseline (the tree before
sign-out ended sessions: `git archive` of main) and this tree alternating round by
round; {args.rounds} rounds, medians, lowest-highest in brackets. wrk runs on the same
cores as the server.

{chr(10).join(rows)}

{check_costs(args.signed_out)}
"""
    print(body)
    if not args.no_write and not args.postgres:
        write_section("Sign-out: the revocation check", body)


if __name__ == "__main__":
    main()
