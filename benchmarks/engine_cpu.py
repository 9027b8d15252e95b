"""The engine's CPU per delivery, in process: claims, records and roll-ups against a
gateway that answers at once, on SQLite (or PostgreSQL), no HTTP and no receiver.

    .venv/bin/python -m benchmarks.engine_cpu [--count 5000] [--database URL]
        [--tree DIR] [--lane 32] [--instructions] [--split] [--webhook]

``--count`` notifications (one account, its one device) are made due at once, then
one engine (the server's: ``build_engine``) delivers them all. Printed: the CPU ms a
delivery of the delivering alone (creating excluded), the rate, and the CPU of each
of the engine's transactions (on their own threads) a delivery. The gateway answers
each delivery in a turn of the event loop of its own, as webhooks do, ``--lane`` at a
time, as a host's lane lets them go: the engine's in-flight room fills, and then each
claim takes what the records before it freed, as in `benchmarks.crash --throughput`
(``--lane 0``: a batch gateway, one answer for a batch).

``--tree DIR`` runs another source tree's pushcore (a checkout of an older commit)
for A/B pairs: alternate the two (old, new, old, new), and say the load (uptime).
``--instructions``: instructions a delivery instead, which load does not move:
valgrind's cachegrind counts a delivering process at ``count / 5`` and at ``count``
notifications (the data made beforehand, outside it), and the difference is divided
by the difference in count, so that starting and importing cancel out (slow: about
a minute per 1,000 notifications). ``--split``: the transactions' CPU split by step
as well (benchmarks/engine_split.py). ``--webhook``: the device is a webhook and the
engine's own webhook gateway sends over HTTP to benchmarks/receiver.py in a process of
its own (its CPU not counted): the difference from the in-process gateway is what the
gateway call costs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ACCOUNT = "acct_bench"
PHASES = ("claim", "record", "roll_up", "beat", "roll_up_leftovers")


class Instant:
    """A gateway that delivers everything at once."""

    async def send(self, dispatches: Sequence[Any]) -> Sequence[Any]:
        """Delivered, each."""
        from pushcore.domain.outcomes import Delivered

        return [Delivered()] * len(dispatches)

    async def aclose(self) -> None:
        """Nothing to close."""


class InstantEach(Instant):
    """Answers delivery by delivery, as webhooks do (an ``EachGateway``), at most
    ``lane`` at a time (a host's lane): the rest of what is claimed waits, so the
    engine's in-flight room fills and each claim takes what the last records freed."""

    def __init__(self, lane: int) -> None:
        self._lane = lane
        self._waiting: asyncio.Queue[asyncio.Future[Any]] | None = None
        self._workers: list[asyncio.Task[None]] = []

    def send_each(
        self, dispatches: Sequence[Any], ready: Any = None
    ) -> Sequence[asyncio.Future[Any]]:
        """A future each, answered Delivered in turn."""
        loop = asyncio.get_running_loop()
        if self._waiting is None:
            self._waiting = asyncio.Queue()
            self._workers = [loop.create_task(self._answer()) for _ in range(self._lane)]
        futures = [loop.create_future() for _ in dispatches]
        for future in futures:
            self._waiting.put_nowait(future)
        return futures

    async def _answer(self) -> None:
        from pushcore.domain.outcomes import Delivered

        assert self._waiting is not None
        while True:
            future = await self._waiting.get()
            await asyncio.sleep(0)  # the request's turn of the loop
            if not future.done():
                future.set_result(Delivered())

    async def aclose(self) -> None:
        """Stop answering."""
        for worker in self._workers:
            worker.cancel()


def timed(spent: dict[str, float], calls: dict[str, int]) -> None:
    """Charge each of the ledger's transactions its thread's CPU time (they run on the
    engine's threads, which a profiler of the event loop's thread does not see)."""
    from pushcore.delivery.ledger import Ledger

    for name in PHASES:
        method = getattr(Ledger, name)

        def wrapper(self: Any, *args: Any, _m: Any = method, _n: str = name, **kw: Any) -> Any:
            begin = time.thread_time()
            try:
                return _m(self, *args, **kw)
            finally:
                spent[_n] = spent.get(_n, 0.0) + time.thread_time() - begin
                calls[_n] = calls.get(_n, 0) + 1

        setattr(Ledger, name, wrapper)


def services_for(data: Path, url: str | None) -> Any:
    """The services on ``data`` (SQLite) or ``url``."""
    from pushcore import build_services, load_settings

    env = {"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}
    settings = load_settings(env=env, data_dir=data, database_url=url)
    return build_services(settings)


def prepare(data: Path, url: str | None, count: int, hook: str | None = None) -> None:
    """One device (a webhook to ``hook`` when given) and ``count`` notifications due now:
    a notification is one delivery."""
    from pushcore.converter import structure_request
    from pushcore.domain.inputs import NewDevice, NewNotification

    services = services_for(data, url)
    body = (
        {"token": hook, "platform": "webhook"}
        if hook
        else {"token": "tok-bench", "platform": "android"}
    )
    services.devices.register(ACCOUNT, structure_request(NewDevice, body))

    async def create() -> None:
        now = datetime.now(UTC).isoformat()
        for start in range(0, count, 500):
            items = [
                structure_request(NewNotification, {"title": f"n{i}", "scheduledAt": now})
                for i in range(start, min(count, start + 500))
            ]
            await services.notifications.create_many(ACCOUNT, items)

    asyncio.run(create())
    services.close()


def _split_module() -> Any:
    """benchmarks/engine_split.py beside this file (``--tree``'s may have none)."""
    path = Path(__file__).resolve().parent / "engine_split.py"
    spec = importlib.util.spec_from_file_location("engine_split", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deliver(
    data: Path, url: str | None, count: int, lane: int, split: bool = False, hook: bool = False
) -> str:
    """Deliver what :func:`prepare` made with one engine; the figures, as a line (and,
    with ``split``, the split by step)."""
    from pushcore.bootstrap import build_engine
    from pushcore.domain.model import Platform

    services = services_for(data, url)
    spent: dict[str, float] = {}
    calls: dict[str, int] = {}
    steps = _split_module().Split()
    if split:
        steps.install()
    else:
        timed(spent, calls)

    def delivered() -> int:
        return int(services.notifications.stats(ACCOUNT).by_status.get("DELIVERED", 0))

    async def run() -> tuple[float, float]:
        gateway = InstantEach(lane) if lane else Instant()
        # With ``hook``: the server's gateways (its webhook gateway, over HTTP).
        engine = build_engine(services, None if hook else dict.fromkeys(Platform, gateway))
        cpu, wall = time.process_time(), time.monotonic()
        task = engine.start()
        while delivered() < count:
            await asyncio.sleep(0.05)
        await engine.drain()
        used = time.process_time() - cpu, time.monotonic() - wall
        await engine.stop()
        await task
        return used

    cpu, wall = asyncio.run(run())
    services.close()
    if split:
        return f"{count} deliveries: {cpu / count * 1000:.3f} CPU ms a delivery," + (
            f" {count / wall:,.0f}/s (wall {wall:.2f} s)\n{steps.report(count, cpu)}"
        )
    phases = ", ".join(
        f"{n} {spent[n] / count * 1000:.3f} ({calls[n]} calls)" for n in PHASES if n in spent
    )
    rest = (cpu - sum(spent.values())) / count * 1000
    return (
        f"{count} deliveries: {cpu / count * 1000:.3f} CPU ms a delivery,"
        f" {count / wall:,.0f}/s (wall {wall:.2f} s); of it, ms a delivery: {phases};"
        f" the loop and the rest {rest:.3f}"
    )


def child(args: argparse.Namespace, step: str, data: Path, count: int) -> list[str]:
    """The command line of this script running ``step`` in a process of its own."""
    # By path, without this directory first on sys.path (benchmarks/profile.py would
    # shadow the standard library's profile).
    run = f"import runpy; runpy.run_path({__file__!r}, run_name='__main__')"
    argv = [sys.executable, "-c", run, "--step", step, "--data", str(data)]
    argv += ["--count", str(count)]
    argv += ["--database", args.database] if args.database else []
    argv += ["--split"] if args.split and step == "deliver" else []
    argv += ["--hook", args.hook] if args.hook else []
    return [*argv, "--lane", str(args.lane)]


def _in_tree(env: dict[str, str]) -> dict[str, Any]:
    """A child's environment and working directory: the tree's (``python -c`` puts the
    working directory first on sys.path, before PYTHONPATH: run from another checkout,
    its pushcore was imported instead of the tree's)."""
    return {"env": env, "cwd": env["PYTHONPATH"]}


def instructions(args: argparse.Namespace, env: dict[str, str]) -> str:
    """Instructions a delivery: the difference of two delivering processes' counts."""
    counted = []
    counts = (args.count // 5, args.count)
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(child(args, "prepare", Path(tmp), count), **_in_tree(env), check=True)
            # Here, not at the top: a child runs this file in another tree's checkout.
            from benchmarks.cachegrind import count_instructions

            deliver = child(args, "deliver", Path(tmp), count)
            counted.append(count_instructions(deliver, **_in_tree(env)))
    per = (counted[1] - counted[0]) / (counts[1] - counts[0])
    return f"{per:,.0f} instructions a delivery ({counts[0]} and {counts[1]} delivered)"


def main() -> None:
    """Prepare and deliver in processes of their own, in this tree or ``--tree``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--database", default=None, help="a PostgreSQL URL (default: SQLite)")
    parser.add_argument("--tree", default=None, help="another source tree's pushcore")
    parser.add_argument("--lane", type=int, default=32, help="answers at once (0: a batch gateway)")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--split", action="store_true", help="the CPU split by step")
    parser.add_argument("--webhook", action="store_true", help="the webhook gateway, over HTTP")
    parser.add_argument("--hook", help=argparse.SUPPRESS)  # the receiver's URL
    parser.add_argument("--step", choices=("prepare", "deliver"), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.data, args.database, args.count, args.hook)
        return
    if args.step == "deliver":
        figures = deliver(
            args.data, args.database, args.count, args.lane, args.split, bool(args.hook)
        )
        print(figures, flush=True)
        return
    tree = args.tree or str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": tree}
    print(f"pushcore of {tree}", flush=True)
    if args.webhook:
        with receiver() as args.hook:
            run_steps(args, env)
        return
    run_steps(args, env)


@contextlib.contextmanager
def receiver() -> Iterator[str]:
    """benchmarks/receiver.py in a process of its own (its CPU apart); its URL."""
    here = str(Path(__file__).resolve().parent.parent)
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]);"
        " from benchmarks.receiver import BenchReceiver; r = BenchReceiver().start();"
        " print(r.port, flush=True); time.sleep(10**6)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, here], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/hook"
    finally:
        process.terminate()
        process.wait()


def run_steps(args: argparse.Namespace, env: dict[str, str]) -> None:
    """Prepare, then deliver (or count the instructions of delivering)."""
    if args.instructions:
        print(instructions(args, env), flush=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for step in ("prepare", "deliver"):
            subprocess.run(child(args, step, Path(tmp), args.count), **_in_tree(env), check=True)


if __name__ == "__main__":
    main()
