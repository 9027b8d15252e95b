"""Receipts benchmark: POST /api/receipts throughput beside GET /healthz of the same server.

    .venv/bin/python -m benchmarks.receipts [--runs 3] [--connections 50] [--seconds 5]
        [--no-write]

A `pushctl serve --no-engine` process (SQLite, PUSHCORE_RATE_LIMIT=0). One
notification waits for a webhook device; its delivery's receipt token is made
with the key the server keeps in its database, as the engine would put it in
the payload. The load client (benchmarks/load.py, a process of its own) keeps
``connections`` requests in flight for ``seconds``: GET /healthz, then POST
/api/receipts of that token (after the first, each is a repeat the server
checks and answers 202 without changing anything, which is what a flood of
replays costs). Results are printed and written to docs/benchmarks.md
(section "Receipts").
"""

from __future__ import annotations

import argparse
import base64
import json
import platform
import sqlite3
import tempfile
from pathlib import Path

import httpx

from benchmarks.fairness import api_key, spread
from benchmarks.load import measured
from benchmarks.processes import start_server, stop_server
from benchmarks.report import write_section
from pushcore.domain.receipts import receipt_token
from pushcore.receipts import RECEIPT_KEY
from tests.e2e.server import free_port


def a_token(base: str, data_dir: Path) -> str:
    """The receipt token of a delivery waiting on the server (made as the engine does)."""
    key = {"X-API-Key": api_key(base, data_dir, "bench")}
    device = {"platform": "android", "token": "fcm-bench-token"}
    httpx.post(f"{base}/api/devices", json=device, headers=key).raise_for_status()
    created = httpx.post(
        f"{base}/api/notifications", json={"title": "bench", "delay": "1h"}, headers=key
    )
    created.raise_for_status()
    page = httpx.get(f"{base}/api/notifications/{created.json()['id']}/deliveries", headers=key)
    delivery_id = page.json()["items"][0]["id"]
    # The first receipt (even a refused one) makes the server's key.
    httpx.post(f"{base}/api/receipts", json={"token": "rct_x", "event": "opened"})
    with sqlite3.connect(data_dir / "pushcore.db") as db:
        (stored,) = db.execute(
            "SELECT value FROM server_keys WHERE name = ?", (RECEIPT_KEY,)
        ).fetchone()
    return receipt_token(base64.urlsafe_b64decode(stored), delivery_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"GET /healthz": [], "POST /api/receipts": []}
    statuses: dict[str, set[str]] = {name: set() for name in rates}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, port = Path(tmp) / "data", free_port()
        server = start_server(data_dir, port, {"PUSHCORE_RATE_LIMIT": "0"}, engine=False)
        base = f"http://127.0.0.1:{port}"
        try:
            body = json.dumps({"token": a_token(base, data_dir), "event": "displayed"})
            for _ in range(args.runs):
                for name, url, post in (
                    ("GET /healthz", f"{base}/healthz", None),
                    ("POST /api/receipts", f"{base}/api/receipts", body),
                ):
                    extra = () if post is None else ("--post", post)
                    found = measured(url, "-", args.connections, args.seconds, *extra)
                    rates[name].append(found["rate"])
                    statuses[name] |= set(found["statuses"])
        finally:
            stop_server(server)
    lines = [
        f"One `pushctl serve --no-engine` (SQLite, PUSHCORE_RATE_LIMIT=0), {args.connections}"
        f" connections for {args.seconds:g} s each, {args.runs} runs in turn"
        f" ({platform.machine()}, {platform.python_version()}); median (min-max).",
        "",
        "| request | answers/s | statuses seen |",
        "|---|---|---|",
        *(
            f"| {name} | {spread(values)} | {', '.join(sorted(statuses[name]))} |"
            for name, values in rates.items()
        ),
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("Receipts", text)


if __name__ == "__main__":
    main()
