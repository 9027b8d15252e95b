"""Ingest benchmark: POST /api/notifications with an API key, and /healthz, under wrk.

    .venv/bin/python -m benchmarks.ingest [--rounds 3] [--seconds 8] [--baseline DIR
        [--baseline-label TEXT]]

A real `pushctl serve` (SQLite, default settings but rate limiting off) per run; wrk (`apt-get
install wrk`) with 32 connections posts a small JSON notification with an
``X-API-Key``, then asks for /healthz. ``--baseline DIR`` also runs the
pushcore of another source tree (e.g. ``git archive main | tar -x -C DIR``),
alternating with this one round by round, since on a shared machine only runs
side by side compare. Medians of requests per second are printed and written
to docs/benchmarks.md (section "Ingest").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from benchmarks.report import write_section
from benchmarks.scheduling import start_server, stop_server
from tests.e2e.server import free_port

# The defaults but for rate limiting (off, as wrk is one account) and the log
# level (start_server's warning would hide the access log being measured).
SETTINGS = {"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_LOG_LEVEL": "info"}

LUA = """wrk.method = "POST"
wrk.body = '{"title": "Deploy finished", "body": "build 1234 is live"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("KEY")
"""


def wrk(url: str, seconds: int, env: dict[str, str], script: Path | None = None) -> float:
    """Requests per second wrk reached (2 threads, 32 connections); every answer a 2xx."""
    command = ["wrk", "-t2", "-c32", f"-d{seconds}s", *(["-s", str(script)] if script else [])]
    out = subprocess.run([*command, url], env=env, capture_output=True, text=True, check=True)
    if "Non-2xx" in out.stdout:
        raise RuntimeError(f"errors under load:\n{out.stdout}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)[1])  # type: ignore[index]


def run(tree: Path | None, settings: dict[str, str], seconds: int) -> tuple[float, float]:
    """(POST/s, /healthz/s) of one fresh server, from ``tree`` (None: this one)."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, script, port = Path(tmp) / "data", Path(tmp) / "post.lua", free_port()
        script.write_text(LUA)
        # `python -m` puts the working directory first on sys.path: that tree's pushcore runs.
        with contextlib.chdir(tree or Path.cwd()):
            server = start_server(data_dir, port, {**SETTINGS, **settings})
        try:
            base = f"http://127.0.0.1:{port}"
            command = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(data_dir)]
            token = subprocess.run(
                [*command, "token", "issue", "bench"], capture_output=True, text=True, check=True
            ).stdout.strip()
            key = httpx.post(
                f"{base}/api/keys",
                json={"name": "bench", "scopes": ["notifications:write"]},
                headers={"Authorization": f"Bearer {token}"},
            ).json()["key"]
            env = {**os.environ, "KEY": key}
            # Which code answers shows here: a lone surrogate was a 500 before issue 12.
            probe = httpx.post(
                f"{base}/api/notifications",
                content=b'{"title": "\\ud800"}',
                headers={"X-API-Key": key, "Content-Type": "application/json"},
            )
            print(f"  (a lone surrogate: {probe.status_code})", end=" ", flush=True)
            wrk(f"{base}/api/notifications", 2, env, script)  # warm-up
            posts = wrk(f"{base}/api/notifications", seconds, env, script)
            return posts, wrk(f"{base}/healthz", seconds, env)
        finally:
            stop_server(server)


def main() -> None:
    """Run the rounds, print and record the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--baseline-label", default="baseline")
    args = parser.parse_args()
    variants: dict[str, tuple[Path | None, dict[str, str]]] = {}
    if args.baseline:
        variants[args.baseline_label] = (args.baseline.resolve(), {})
    variants["this tree"] = (None, {})
    variants["this tree, PUSHCORE_ACCESS_LOG=true"] = (None, {"PUSHCORE_ACCESS_LOG": "true"})
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (tree, settings) in variants.items():
            results[name].append(run(tree, settings, args.seconds))
            print(name, results[name][-1], flush=True)
    rows = [
        f"| {name} | {statistics.median(p for p, _ in runs):,.0f} "
        f"| {statistics.median(h for _, h in runs):,.0f} |"
        for name, runs in results.items()
    ]
    body = "\n".join(
        [
            f"wrk, 2 threads, 32 connections, {args.seconds} s per run, {args.rounds} rounds"
            " alternating; medians of requests per second (`python -m benchmarks.ingest`).",
            "",
            "| server | POST /api/notifications | GET /healthz |",
            "|---|---|---|",
            *rows,
        ]
    )
    print(body)
    write_section("Ingest", body)


if __name__ == "__main__":
    main()
