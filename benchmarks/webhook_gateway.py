"""The webhook gateway alone: its CPU (or instructions) a post, no engine, no database.

    .venv/bin/python -m benchmarks.webhook_gateway [--count 5000] [--batch 64]
        [--tree DIR] [--instructions]

One process posts ``--count`` deliveries through ``WebhookGateway.send_each`` (its
lanes, the SSRF check and pin, aiohttp), ``--batch`` at a time as the engine hands
them, to benchmarks/receiver.py in a process of its own (its CPU not counted). Printed:
the event loop thread's CPU ms a post (``time.thread_time``: the engine's database
threads are not here), or with ``--instructions`` instructions a post under
cachegrind (the process at ``count / 5`` and at ``count`` posts, differenced, so that
starting and importing cancel out). The engine's split (benchmarks/engine_cpu.py
``--webhook``) says what the gateway costs inside a delivery; this says which of the
gateway's parts a change moved, with less noise. ``--tree DIR``: another source
tree's pushcore, for A/B pairs (alternate them, and say the load).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.engine_cpu import receiver


def post(hook: str, count: int, batch: int) -> str:
    """Post ``count`` deliveries in batches; the loop thread's CPU ms a post."""
    from pushcore.gateways.webhook import WebhookGateway
    from pushcore.outbound.guard import NetworkGuard
    from tests.fakes.clock import FakeClock
    from tests.gateways.support import dispatch, notification

    note = notification("ntf_bench")
    dispatches = [dispatch(hook, note, str(n)) for n in range(count)]

    async def run() -> tuple[float, float, int]:
        gateway = WebhookGateway(NetworkGuard(allow_private=True), FakeClock())
        # One post first, so that the connection's setup is not in the figure.
        await asyncio.gather(*gateway.send_each(dispatches[:1]))
        cpu, wall, delivered = time.thread_time(), time.monotonic(), 0
        for start in range(0, count, batch):
            outcomes = await asyncio.gather(*gateway.send_each(dispatches[start : start + batch]))
            delivered += sum(type(o).__name__ == "Delivered" for o in outcomes)
        used = time.thread_time() - cpu, time.monotonic() - wall
        await gateway.aclose()
        return used[0], used[1], delivered

    cpu, wall, delivered = asyncio.run(run())
    assert delivered == count, f"{delivered} of {count} delivered"
    return f"{count} posts: {cpu / count * 1000:.4f} CPU ms a post, {count / wall:,.0f}/s"


def child(hook: str, count: int, batch: int) -> list[str]:
    """This script posting in a process of its own."""
    run = f"import runpy; runpy.run_path({__file__!r}, run_name='__main__')"
    return [sys.executable, "-c", run, "--hook", hook, "--count", str(count), "--batch", str(batch)]


def main() -> None:
    """Post in a child process of ``--tree`` (this tree by default)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--tree", default=None, help="another source tree's pushcore")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--hook", help=argparse.SUPPRESS)  # the receiver's URL: post here
    args = parser.parse_args()
    if args.hook:
        print(post(args.hook, args.count, args.batch), flush=True)
        return
    tree = args.tree or str(Path(__file__).resolve().parent.parent)
    # The child runs in the tree, for `python -c` puts its working directory first.
    env = {**os.environ, "PYTHONPATH": tree, "PUSHCORE_RATE_LIMIT": "0"}
    print(f"pushcore of {tree}", flush=True)
    with receiver() as hook:
        if not args.instructions:
            subprocess.run(child(hook, args.count, args.batch), env=env, cwd=tree, check=True)
            return
        counts, counted = (args.count // 5, args.count), []
        for count in counts:
            # Here, not at the top: a child runs this file in another tree's checkout.
            from benchmarks.cachegrind import count_instructions

            counted.append(count_instructions(child(hook, count, args.batch), env=env, cwd=tree))
        per = (counted[1] - counted[0]) / (counts[1] - counts[0])
        print(f"{per:,.0f} instructions a post ({counts[0]} and {counts[1]} posted)", flush=True)


if __name__ == "__main__":
    main()
