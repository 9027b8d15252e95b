"""Event webhooks beside the engine: its delivery rate with events off and on, and
how late the events of that rate reach a fast endpoint.

    .venv/bin/python -m benchmarks.events_engine [--count 5000] [--runs 2]
        [--modes off,apart,in] [--before TREE] [--burst-lead S] [--quick] [--write]

One `pushctl serve` on SQLite (benchmarks/processes.py, rate limiting off); one
account with one webhook device on a raw-asyncio receiver in this process
(benchmarks/receiver.py). Each run creates ``--count`` notifications due at once
(each its own notification: one ``notification.delivered`` event per delivery, the
most events a delivery makes) and measures the engine's deliveries a second (first
to last arrival at the device's receiver). The modes: "off", no event endpoint;
otherwise an endpoint subscribed to ``notification.*`` on a receiver in a process
of its own (benchmarks/event_receiver.py), posted to by the sender in a process of
its own ("apart", the default: PUSHCORE_EVENTS_PROCESS=true; "nice0": the same with
that process set back to the engine's priority, as before it ran at niceness 10) or in
the engine's ("in", PUSHCORE_EVENTS_PROCESS=false); ``--before TREE`` adds "before", events on
with the `pushctl serve` of another source tree (a checkout of the commit before
the change). ``--burst-lead S`` starts every mode's server with
PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS=S (its default otherwise). Reported too: the
events acknowledged, their latency from the event's timestamp (the settled
notification's roll-up) to arrival, p50 / p99 / max, and the CPU seconds of the
server's process and of its children (the sender's) from
the batch's creation to the last arrival. Each round runs every mode once, in
turn. ``--write`` puts the table in docs/benchmarks.md ("Event webhooks: beside
the engine").

The steady state a user has: a server whose endpoint exists before the burst has its
sender already running. So, once the endpoint is made, a ``webhook.test`` is sent
and the batch is created only after the receiver has acknowledged it (the sender's
process started and posting); its start-up stays out of the window and the test
event out of the figures. ``--cold`` makes the endpoint just before the batch
instead, without waiting (the sender's start inside the window, as before).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.event_receiver import EventReceiver
from benchmarks.faults import create_batch, iso
from benchmarks.processes import CpuWindow, Deployment, children, key_with_webhook, pushctl
from benchmarks.receiver import BenchReceiver
from benchmarks.report import write_section

SECTION = "Event webhooks: beside the engine"
CREATE_RATE = 1500  # notifications a second the batch creates take, roughly


def _events(base: str, bearer: dict[str, str]) -> dict[str, datetime]:
    """Every notification event's id and timestamp, from GET /api/events."""
    found: dict[str, datetime] = {}
    after = None
    while True:
        params = {"limit": "100", **({"after": after} if after else {})}
        page = httpx.get(f"{base}/api/events", params=params, headers=bearer, timeout=30).json()
        for item in page["items"]:
            if item["type"].startswith("notification."):  # not the warm-up's webhook.test
                found[item["id"]] = datetime.fromisoformat(item["timestamp"].replace("Z", "+00:00"))
        after = page["nextCursor"]
        if not after:
            return found


MODES = {
    "off": {},
    "apart": {},
    "nice0": {},  # apart, the sender's process set back to the engine's priority
    "in": {"PUSHCORE_EVENTS_PROCESS": "false"},
    "before": {},
}


def _renice(server: int, mode: str) -> None:
    """In mode "nice0", the sender's process back to niceness 0 (as root; its start may
    come late, so this is called again while the run waits)."""
    if mode == "nice0":
        for pid in children(server):
            os.setpriority(os.PRIO_PROCESS, pid, 0)


def _until(done: Callable[[], bool], within: float, what: str) -> None:
    """Poll ``done`` until it holds; RuntimeError after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {within:.0f} s: {what}")
        time.sleep(0.05)


def _burst(
    device: BenchReceiver,
    groups: dict[str, Any],
    count: int,
    deadline: float,
    meanwhile: Callable[[], None],
) -> tuple[dict[str, float], float]:
    """Until every delivery arrived: the cores each group used over the burst alone (first
    arrival to last: the engine's CPU per delivery, and what the other processes took of
    the cores meanwhile), and its seconds."""
    while not device.received and time.monotonic() < deadline:
        time.sleep(0.01)
    burst, started = CpuWindow(groups), time.monotonic()
    while len(device.received) < count and time.monotonic() < deadline:
        meanwhile()
        time.sleep(0.05)
    return burst.stop(), time.monotonic() - started


def run(
    count: int,
    mode: str,
    before: Path | None = None,
    cold: bool = False,
    burst_lead: float | None = None,
) -> dict[str, float]:
    """One run; its figures (``cold``: the endpoint made just before the batch, its
    sender not waited for; ``burst_lead``: the engine's, if given)."""
    device = BenchReceiver().start()
    endpoint = EventReceiver() if mode != "off" else None
    tree = before if mode == "before" else None
    settings = dict(MODES[mode])
    if burst_lead is not None:
        settings["PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS"] = f"{burst_lead:g}"
    with (
        tempfile.TemporaryDirectory() as tmp,
        Deployment(Path(tmp), settings=settings, cwd=tree) as deployment,
    ):
        token = subprocess.run(
            [*pushctl(deployment.data_dir), "token", "issue", "bench"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        bearer = {"Authorization": f"Bearer {token}"}
        hook = f"http://127.0.0.1:{device.port}/hook"
        key = {"X-API-Key": key_with_webhook(deployment.url, token, hook, "bench")}
        warm = 0  # events the receiver acknowledged before the batch
        if endpoint is not None:
            made = {"url": endpoint.url(), "events": ["notification.*"]}
            answer = httpx.post(f"{deployment.url}/api/webhooks", json=made, headers=bearer)
            answer.raise_for_status()
            if not cold:
                test = f"{deployment.url}/api/webhooks/{answer.json()['id']}/test"
                httpx.post(test, headers=bearer).raise_for_status()
                _until(lambda: endpoint.acknowledged() >= 1, 60, "the sender's test event")
                warm = endpoint.acknowledged()
        due = datetime.now(UTC) + timedelta(seconds=3 + count / CREATE_RATE)
        server = deployment.servers[0].pid
        _renice(server, mode)
        groups = {
            "server": [server],
            "sender": lambda: children(server),
            # The event endpoint's process, and this one (the devices' receiver).
            "receiver": [endpoint.pid] if endpoint is not None else [],
            "bench": [os.getpid()],
        }
        cpu = CpuWindow(groups)
        create_batch(deployment.url, key, count, scheduledAt=iso(due))
        started = time.monotonic()
        deadline = started + 3 + count / CREATE_RATE + 300
        during, during_wall = _burst(device, groups, count, deadline, lambda: _renice(server, mode))
        while endpoint is not None and endpoint.acknowledged() < count + warm:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        used = cpu.stop()
        wall = time.monotonic() - started
        stamps = _events(deployment.url, bearer) if endpoint is not None else {}
    arrivals = sorted(at for at, _, _ in device.received)
    device.stop()
    figures = {
        "deliveries/s": (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]),
        "server CPU s": used["server"] * wall,
        "sender CPU s": used["sender"] * wall,
        "receiver CPU s": used["receiver"] * wall,
        "bench CPU s": used["bench"] * wall,
        "engine CPU ms/delivery": 1000 * during["server"] * during_wall / count,
        **{f"burst {k} cores": during[k] for k in ("server", "sender", "receiver", "bench")},
        "burst machine cores": during["machine"],
    }
    if endpoint is not None:
        arrived: dict[str, float] = {}
        for at, i, status in endpoint.arrivals():
            if status == 204 and i in stamps:
                arrived.setdefault(i, at)
        endpoint.stop()
        late = sorted(at - stamps[i].timestamp() for i, at in arrived.items() if i in stamps)
        figures.update(
            {
                "events": len(arrived),
                "p50 ms": 1000 * statistics.median(late),
                "p99 ms": 1000 * late[int(0.99 * (len(late) - 1))],
                "max ms": 1000 * late[-1],
            }
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=2, help="rounds of runs (one per mode)")
    parser.add_argument(
        "--modes",
        default="off,apart,in",
        help="off, apart (own process), nice0 (apart at the engine's priority), in (engine's)",
    )
    parser.add_argument(
        "--before", type=Path, help="a source tree whose `pushctl serve` runs mode 'before'"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="make the endpoint just before the batch (the sender's start in the window)",
    )
    parser.add_argument(
        "--burst-lead",
        type=float,
        default=None,
        help="PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS for the server (default: the setting's)",
    )
    parser.add_argument("--quick", action="store_true", help="1,000 notifications, 1 round")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.count, args.runs = 1000, 1
    modes = args.modes.split(",") + (["before"] if args.before else [])
    if not set(modes) <= set(MODES):
        parser.error(f"--modes: any of {', '.join(MODES)}")
    rows = []
    columns = ("deliveries/s", "events", "p50 ms", "p99 ms", "max ms")
    for n in range(args.runs):
        for label in modes:
            load = os.getloadavg()[0]
            f = run(args.count, label, args.before, args.cold, args.burst_lead)
            print(f"run {n + 1} events {label} (load {load:.1f}): "
                  + ", ".join(f"{k} {v:,.{3 if v < 10 else 1}f}" for k, v in f.items()),
                  flush=True)  # fmt: skip
            cells = [f"{f[k]:,.0f}" if k in f else "-" for k in columns]
            cells += [f"{f[k]:.1f}" for k in ("server CPU s", "sender CPU s", "receiver CPU s")]
            rows.append(f"| {n + 1} | {label} | {load:.1f} | " + " | ".join(cells) + " |")
    if args.write:
        write_section(
            SECTION,
            f"Command: `.venv/bin/python -m benchmarks.events_engine --count {args.count}"
            f" --runs {args.runs} --modes {args.modes}"
            + (" --before TREE" if args.before else "")
            + (" --cold" if args.cold else "")
            + (f" --burst-lead {args.burst_lead:g}" if args.burst_lead is not None else "")
            + " --write`\n\n"
            f"Run on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC:"
            f" {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()}"
            f" cores; {args.count:,} notifications due at once, one webhook device each.\n\n"
            "| run | events | load | deliveries/s | events acknowledged | latency p50 ms"
            " | p99 ms | max ms | server CPU s | sender process CPU s | event receiver CPU s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows),
        )


if __name__ == "__main__":
    main()
