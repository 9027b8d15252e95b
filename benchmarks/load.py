"""A hammering client: one account's many connections sending requests as fast as answered.

    .venv/bin/python -m benchmarks.load URL API_KEY [--connections 200] [--seconds 5]
        [--post JSON]   (API_KEY "-": none, e.g. to POST sign-ins)
    .venv/bin/python -m benchmarks.load URL API_KEY --icon ICON_URL [--icon ...]
    .venv/bin/python -m benchmarks.load URL API_KEY --patch JSON --ids FILE [...]

The first form GETs URL, or POSTs the JSON text given with --post (creates, when
URL is /api/notifications). The second POSTs one notification per icon URL to
URL, all at once. The third PATCHes URL/<id> with the JSON text, taking the ids
of FILE (one a line) in turn (edits, when URL is /api/notifications).
Prints one JSON line: how many answers of each status, and the rate. Run in a
process of its own, so that its work does not stand in the measuring
process's way (the machine's cores are shared all the same). Used by
benchmarks/fairness.py and by the abuse tests.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp


async def hammer(
    url: str,
    key: str,
    connections: int,
    seconds: float,
    post: str | None = None,
    ids: list[str] | None = None,
) -> dict[str, object]:
    """GET ``url`` (or POST the JSON text ``post`` to it; with ``ids``, PATCH it to
    ``url/<id>``, the ids in turn) with ``key`` over ``connections`` connections for
    ``seconds``."""
    statuses: Counter[int] = Counter()
    stop = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(limit=connections, force_close=False)
    headers = {"X-API-Key": key} if key != "-" else {}  # "-": no credential (sign-ins)
    if post is not None:
        headers["Content-Type"] = "application/json"
    method = "GET" if post is None else "POST" if ids is None else "PATCH"
    turn = itertools.cycle(ids or [""])
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one_connection() -> None:
            while time.monotonic() < stop:
                target = url if ids is None else f"{url}/{next(turn)}"
                try:
                    async with session.request(
                        method, target, headers=headers, data=post
                    ) as response:
                        await response.read()
                        statuses[response.status] += 1
                except aiohttp.ClientError:
                    statuses[0] += 1

        started = time.monotonic()
        await asyncio.gather(*(one_connection() for _ in range(connections)))
        elapsed = time.monotonic() - started
    total = sum(statuses.values())
    return {
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "rate": total / elapsed,
    }


async def send_icons(url: str, key: str, icons: list[str]) -> dict[str, object]:
    """POST one notification naming each of ``icons`` to ``url``, all at once."""
    statuses: Counter[int] = Counter()
    connector = aiohttp.TCPConnector(limit=len(icons))
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(icon: str) -> None:
            body = {"title": "slow icon", "senderIcon": icon}
            async with session.post(url, json=body, headers={"X-API-Key": key}) as response:
                await response.read()
                statuses[response.status] += 1

        started = time.monotonic()
        await asyncio.gather(*(one(icon) for icon in icons))
        elapsed = time.monotonic() - started
    return {"statuses": {str(k): v for k, v in sorted(statuses.items())}, "seconds": elapsed}


def measured(url: str, key: str, connections: int, seconds: float, *extra: str) -> dict[str, Any]:
    """Run this client in a process of its own against ``url`` (``extra``: --post, or
    --patch and --ids); what it printed (statuses and rate)."""
    found = subprocess.run(
        [
            *(sys.executable, "-m", "benchmarks.load", url, key),
            *("--connections", str(connections), "--seconds", str(seconds), *extra),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(found.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("key")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--post", help="POST this JSON text instead of GET")
    parser.add_argument("--icon", action="append", default=[], help="POST with this icon")
    parser.add_argument("--patch", help="PATCH this JSON text to URL/<id> (with --ids)")
    parser.add_argument("--ids", help="a file of ids, one a line, PATCHed in turn")
    args = parser.parse_args()
    if args.icon:
        result = asyncio.run(send_icons(args.url, args.key, args.icon))
    elif args.patch is not None:
        ids = Path(args.ids).read_text(encoding="utf-8").split()
        result = asyncio.run(
            hammer(args.url, args.key, args.connections, args.seconds, args.patch, ids)
        )
    else:
        result = asyncio.run(hammer(args.url, args.key, args.connections, args.seconds, args.post))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
